import VoiceEngine
import Foundation
import VoiceCore
import VoiceNetSim
import VoiceSRTP

/// Why the demo call could not run or write its reports.
public enum DemoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An option is out of range or unknown: the option's name and why.
    case invalidOption(String, String)
    /// An input WAV is missing or unusable.
    case badInput(path: String, reason: String)
    /// An output file or folder could not be written.
    case cannotWrite(path: String, reason: String)
    /// The call could not be set up (sockets, streams, network conditions).
    case setupFailed(String)

    public var description: String {
        switch self {
        case .invalidOption(let option, let reason): "\(option): \(reason)"
        case .badInput(let path, let reason): "input \(path): \(reason)"
        case .cannotWrite(let path, let reason): "cannot write \(path): \(reason)"
        case .setupFailed(let reason): "the demo call could not be set up: \(reason)"
        }
    }
}

/// The demo call (`voice-engine demo`): two ``MediaStream``s in one process talk over real loopback UDP with SRTP,
/// through a simulated network (``DemoNetworkProfile``), each fed by a speech WAV, with an acoustic echo path at B
/// so B's echo canceller works. It runs a ``CallSimulation`` over a ``UDPCallPacketPath`` — in fast time by
/// default, at wall-clock pace with ``Options/realtime`` — and writes what each side heard, B's microphone, a JSON
/// report and a self-contained HTML report with charts.
///
/// SRTP keys are exchanged as SDES `a=crypto` lines (each side parses the other's line, as signalling would carry
/// it); they are never printed, logged or written to the reports — only the suite is.
public enum DemoCall {
    /// Default speech for A and B (generated from `TestVectors/manifest.json`, different seeds).
    public static let defaultInputA = "TestVectors/speech_like_16k.wav"
    public static let defaultInputB = "TestVectors/speech_like_16k_b.wav"
    /// Media played after the longer input ends when no duration is given, so the last words arrive.
    public static let drainMilliseconds = 500

    public struct Options: Sendable {
        /// Mono WAV files (8–48 kHz, 16-bit or float): what A and B say. Looped when the call is longer.
        public var inputA: String
        public var inputB: String
        /// Call length; nil: the longer input plus ``DemoCall/drainMilliseconds``.
        public var durationSeconds: Double?
        /// Where the WAVs and reports go (created when missing).
        public var outputDirectory: String
        public var network: DemoNetworkProfile
        /// Seed of the network simulators and the streams (SSRC, sequence numbers); keys are always fresh.
        public var seed: UInt64
        /// Run at wall-clock pace instead of fast time.
        public var realtime: Bool
        /// SRTP suite, or nil for plain RTP.
        public var srtpSuite: SRTPCryptoSuite?
        public var jitterBuffer: MediaStreamJitterBuffer
        /// The loudspeaker-to-microphone path at B, or nil for none.
        public var echoPathB: Bool
        /// A conversation in turns of this many seconds (A talks first, then B, and so on; 20 ms fades at the
        /// turn changes), so B's echo canceller sees single talk while B listens and its ERLE means something.
        /// nil: both talk all the time (continuous double talk).
        public var turnSeconds: Double?
        /// Write every datagram as it arrives at A or B into this pcapng file (``CapturingPacketPath``).
        public var capturePath: String?

        public init(
            inputA: String = DemoCall.defaultInputA, inputB: String = DemoCall.defaultInputB,
            durationSeconds: Double? = nil, outputDirectory: String = "demo-out", network: DemoNetworkProfile = .wifi,
            seed: UInt64 = 1, realtime: Bool = false, srtpSuite: SRTPCryptoSuite? = .aesCM128HmacSHA1_80,
            jitterBuffer: MediaStreamJitterBuffer = .adaptive(), echoPathB: Bool = true, turnSeconds: Double? = 2.5,
            capturePath: String? = nil
        ) {
            self.inputA = inputA
            self.inputB = inputB
            self.durationSeconds = durationSeconds
            self.outputDirectory = outputDirectory
            self.network = network
            self.seed = seed
            self.realtime = realtime
            self.srtpSuite = srtpSuite
            self.jitterBuffer = jitterBuffer
            self.echoPathB = echoPathB
            self.turnSeconds = turnSeconds
            self.capturePath = capturePath
        }

        /// Checks the options that do not need the files.
        /// - Throws: ``DemoError/invalidOption(_:_:)``.
        public func validate() throws(DemoError) {
            if let d = durationSeconds, !(d >= 0.5 && d <= 3_600) {
                throw .invalidOption("--duration", "\(d) must be within 0.5...3600 seconds")
            }
            try network.validate()
            if let t = turnSeconds, !(t >= 0.2 && t <= 600) {
                throw .invalidOption("--turns", "\(t) must be within 0.2...600 seconds")
            }
            if outputDirectory.isEmpty { throw .invalidOption("--out", "needs a folder path") }
        }
    }

    /// One direction of the call, as the summary table, the JSON and the HTML report show it.
    public struct DirectionSummary: Sendable, Codable {
        /// `A → B` or `B → A`.
        public var direction: String
        public var sender: CallSide
        public var receiver: CallSide
        /// The receiver's E-model estimate (ITU-T G.107) of what it heard.
        public var mos: Double
        public var rFactor: Double
        /// Network loss the receiver saw (RFC 3550), percent, and the residual loss after FEC and late packets.
        public var lossPercent: Double
        public var residualLossPercent: Double
        /// Share of played audio that was concealed (PLC or FEC), percent.
        public var concealmentPercent: Double
        public var fecRecoveredFrames: Int
        /// Jitter-buffer delay at the receiver: mean over the call, 95th percentile over every 10 ms tick.
        public var meanBufferDelayMilliseconds: Double
        public var p95BufferDelayMilliseconds: Double
        /// The sender's mean RTCP round-trip time, when measured.
        public var roundTripMilliseconds: Double?
        /// RFC 3550 interarrival jitter at the receiver.
        public var jitterMilliseconds: Double
        /// Echo-return-loss enhancement of the sender's echo canceller, when the sender has an echo path.
        public var erleDecibels: Double?
        /// RFC 3550 counters at the receiver: received + lost == expected.
        public var expected: Int
        public var received: Int
        public var lost: Int
        public var late: Int
        /// RTP packets the sender sent.
        public var sent: Int
    }

    /// The receiving side's counters every 100 ms (sampled at tick boundaries), for the per-second charts.
    public struct IntervalSample: Sendable, Codable {
        public var timeSeconds: Double
        /// The side that receives (and plays) this direction.
        public var side: CallSide
        public var playedSamples: Int
        public var concealedSamples: Int
        public var expectedPackets: Int
        public var lostPackets: Int
        public var fecRecoveredFrames: Int
    }

    /// What the call was run with (no keys).
    public struct RunConfiguration: Sendable, Codable {
        public var inputA: String
        public var inputB: String
        public var sampleRateA: Int
        public var sampleRateB: Int
        public var durationSeconds: Double
        /// `fast` or `realtime`.
        public var mode: String
        public var network: DemoNetworkProfile
        public var seed: UInt64
        public var srtpSuite: String?
        public var jitterBuffer: String
        public var processingRate: Int
        public var opusBitrate: Int
        public var packetTimeMilliseconds: Int
        /// B's echo path: direct-sound delay and gain, and the number of taps (nil: no echo path).
        public var echoPathB: EchoPathSummary?
        /// `turns of 2.5 s` or `double talk`.
        public var conversation: String
        /// Where the two sockets were bound.
        public var endpointA: String
        public var endpointB: String
    }

    public struct EchoPathSummary: Sendable, Codable {
        public var delayMilliseconds: Double
        public var gainDecibels: Double
        public var taps: Int
    }

    public struct TransportSummary: Sendable, Codable {
        public var aToB: UDPCallPacketPath.Counters
        public var bToA: UDPCallPacketPath.Counters
    }

    /// Everything `report.json` holds.
    public struct Report: Sendable, Codable {
        public var schemaVersion = 1
        public var configuration: RunConfiguration
        public var directions: [DirectionSummary]
        /// Each side's end-of-call report (``CallReport``, schema version 1): A's describes what A received and sent.
        public var a: CallReport
        public var b: CallReport
        /// What the UDP sockets and the simulator did with each direction's datagrams (RTP and RTCP).
        public var transport: TransportSummary
        /// Every 100 ms: buffer delay and target, cumulative loss and concealment, levels, RTT, per side.
        public var timeline: [CallSimulation.TimelineSample]
        public var intervals: [IntervalSample]
        /// How long the run took on the wall clock.
        public var wallClockSeconds: Double

        /// Pretty-printed JSON with sorted keys (non-finite numbers as strings, as ``CallReport`` writes them).
        public func jsonData() throws -> Data { try ReportJSON.encode(self) }

        /// Reads a `report.json`.
        public static func decode(_ data: Data) throws -> Report {
            let decoder = JSONDecoder()
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(
                positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
            return try decoder.decode(Report.self, from: data)
        }
    }

    /// The files a run writes.
    public struct Files: Sendable, Codable {
        public var directory: String
        /// What A heard (B's speech after the network), what B heard, and B's microphone (its speech plus echo).
        public var aReceived: String
        public var bReceived: String
        public var bMicrophone: String
        public var json: String
        public var html: String
        /// The pcapng capture (`--capture`), when asked for.
        public var capture: String?

        init(directory: String, capture: String? = nil) {
            let d = URL(fileURLWithPath: directory)
            self.directory = directory
            aReceived = d.appendingPathComponent("a_received.wav").path
            bReceived = d.appendingPathComponent("b_received.wav").path
            bMicrophone = d.appendingPathComponent("b_microphone.wav").path
            json = d.appendingPathComponent("report.json").path
            html = d.appendingPathComponent("report.html").path
            self.capture = capture
        }

        public var all: [String] { [aReceived, bReceived, bMicrophone, json, html] + (capture.map { [$0] } ?? []) }
    }

    public struct Outcome: Sendable {
        public var report: Report
        public var files: Files
        /// The summary table printed by the command.
        public var summaryTable: String
    }

    /// Runs the call and writes its files.
    ///
    /// - Parameters:
    ///   - progress: called with the fraction done (0...1) about once per second of call time.
    /// - Throws: ``DemoError``.
    public static func run(_ options: Options, progress: (@Sendable (Double) -> Void)? = nil) async throws(DemoError)
        -> Outcome
    {
        try options.validate()
        // Opened first: an unwritable capture path fails before any work.
        var captureFile: PcapFileWriter?
        if let capturePath = options.capturePath {
            do { captureFile = try PcapFileWriter(path: capturePath) } catch {
                throw .cannotWrite(path: capturePath, reason: Self.reason(error))
            }
        }
        let fileA = try readInput(options.inputA)
        let fileB = try readInput(options.inputB)
        let rateA = fileA.format.sampleRate
        let rateB = fileB.format.sampleRate
        let inputSeconds = max(Double(fileA.frameCount) / Double(rateA), Double(fileB.frameCount) / Double(rateB))
        let durationMilliseconds =
            options.durationSeconds.map { Int(($0 * 1000 / 10).rounded(.up)) * 10 }
            ?? Int((inputSeconds * 1000 / 10).rounded(.up)) * 10 + drainMilliseconds
        var samplesA = looped(fileA.int16Samples, to: durationMilliseconds * rateA / 1000)
        var samplesB = looped(fileB.int16Samples, to: durationMilliseconds * rateB / 1000)
        if let turn = options.turnSeconds {
            samplesA = inTurns(samplesA, rate: rateA, turnSeconds: turn, speaksFirst: true)
            samplesB = inTurns(samplesB, rate: rateB, turnSeconds: turn, speaksFirst: false)
        }

        // Keys: each side offers its own a=crypto line and learns the peer's by parsing the peer's line.
        var srtpA: MediaStreamSRTP?
        var srtpB: MediaStreamSRTP?
        if let suite = options.srtpSuite {
            let lineA = SDESCryptoAttribute.generate(tag: 1, suite: suite)
            let lineB = SDESCryptoAttribute.generate(tag: 1, suite: suite)
            do {
                let seenByB = try SDESCryptoAttribute(parsing: lineA.attributeLine)
                let seenByA = try SDESCryptoAttribute(parsing: lineB.attributeLine)
                srtpA = MediaStreamSRTP(suite: suite, localKey: lineA.keys[0].key, remoteKey: seenByA.keys[0].key)
                srtpB = MediaStreamSRTP(suite: suite, localKey: lineB.keys[0].key, remoteKey: seenByB.keys[0].key)
            } catch {
                throw .setupFailed("SDES key exchange: \(error)")
            }
        }
        let streamA = MediaStreamConfiguration(
            deviceFormat: AudioFormat(sampleRate: rateA), jitterBuffer: options.jitterBuffer, srtp: srtpA,
            rtcp: MediaStreamRTCPSettings(cname: "demo-a@voice-engine"), seed: options.seed)
        let streamB = MediaStreamConfiguration(
            deviceFormat: AudioFormat(sampleRate: rateB), jitterBuffer: options.jitterBuffer, srtp: srtpB,
            rtcp: MediaStreamRTCPSettings(cname: "demo-b@voice-engine"), seed: options.seed &+ 1)
        let echoDelay = 40.0
        let echoGain = -6.0
        let echo =
            options.echoPathB
            ? EchoPath.syntheticRoom(sampleRate: rateB, delayMilliseconds: echoDelay, gainDecibels: echoGain) : nil

        let path: UDPCallPacketPath
        do {
            path = try await UDPCallPacketPath.open(
                aToB: .conditions(options.network.conditions(seed: options.seed &* 1_000_003 &+ 11)),
                bToA: .conditions(options.network.conditions(seed: options.seed &* 1_000_003 &+ 29)))
        } catch {
            throw .setupFailed("\(error)")
        }
        let wallStart = MonotonicClock().now
        let simulation: CallSimulation
        let capturing = captureFile.map { file in
            CapturingPacketPath(
                wrapping: path, file: file, endpointA: Self.pcapEndpoint(path.endpoint(of: .a)),
                endpointB: Self.pcapEndpoint(path.endpoint(of: .b)))
        }
        do {
            simulation = try CallSimulation(
                configuration: .init(
                    streamA: streamA, streamB: streamB, inputA: samplesA, inputB: samplesB, echoPathB: echo,
                    durationMilliseconds: durationMilliseconds),
                path: capturing ?? path)
        } catch {
            await path.close()
            throw .setupFailed("\(error)")
        }
        if options.realtime { path.pacer = RealtimePacer(mediaStart: simulation.clock.now) }
        var intervals: [IntervalSample] = []
        // Buffer delay at every tick once playout started (the 100 ms time line always lands on the same phase
        // of the 20 ms packet cycle, so its samples would bias a percentile).
        var delays: [CallSide: [Double]] = [.a: [], .b: []]
        let start = simulation.clock.now
        path.onDeliver = { [unowned simulation] side, now in
            let s = (side == .a ? simulation.streamA : simulation.streamB).statistics
            if s.jitterBuffer.ticks > 0 { delays[side]!.append(s.jitterBuffer.currentDelayMilliseconds) }
            let elapsed = now - start
            guard elapsed.nanoseconds % 100_000_000 == 0 else { return }
            intervals.append(
                IntervalSample(
                    timeSeconds: elapsed.seconds, side: side, playedSamples: s.jitterBuffer.playedSamples,
                    concealedSamples: s.jitterBuffer.concealedSamples, expectedPackets: s.expectedPackets,
                    lostPackets: s.lostPackets, fecRecoveredFrames: s.jitterBuffer.fecRecoveredFrames))
        }
        let result = simulation.run(progress: progress)
        path.onDeliver = nil
        let wallSeconds = (MonotonicClock().now - wallStart).seconds
        await path.close()
        if let captureFile, let capturePath = options.capturePath {
            do { try captureFile.close() } catch { throw .cannotWrite(path: capturePath, reason: Self.reason(error)) }
        }

        let duration = Double(result.ticks) / 100
        let reportA = CallReport(
            stream: simulation.streamA, durationSeconds: duration,
            networkOneWayMilliseconds: OneWaySimulation.meanTransit(path.fates(from: .b)))
        let reportB = CallReport(
            stream: simulation.streamB, durationSeconds: duration,
            networkOneWayMilliseconds: OneWaySimulation.meanTransit(path.fates(from: .a)))
        let jitterBufferName: String
        switch options.jitterBuffer {
        case .adaptive: jitterBufferName = "adaptive"
        case .speexdsp: jitterBufferName = "speexdsp"
        }
        let configuration = RunConfiguration(
            inputA: options.inputA, inputB: options.inputB, sampleRateA: rateA, sampleRateB: rateB,
            durationSeconds: duration, mode: options.realtime ? "realtime" : "fast", network: options.network,
            seed: options.seed, srtpSuite: options.srtpSuite?.rawValue, jitterBuffer: jitterBufferName,
            processingRate: streamA.processingRate, opusBitrate: streamA.opus.bitrate,
            packetTimeMilliseconds: streamA.packetTimeMilliseconds,
            echoPathB: echo.map {
                EchoPathSummary(delayMilliseconds: echoDelay, gainDecibels: echoGain, taps: $0.taps.count)
            },
            conversation: options.turnSeconds.map { "turns of \(String(format: "%g", $0)) s" } ?? "double talk",
            endpointA: path.endpoint(of: .a).description, endpointB: path.endpoint(of: .b).description)
        let directions = [
            summary(
                sender: .a, receiverReport: reportB, senderReport: reportA, delays: delays[.b]!, senderHasEcho: false),
            summary(
                sender: .b, receiverReport: reportA, senderReport: reportB, delays: delays[.a]!,
                senderHasEcho: echo != nil)
        ]
        let report = Report(
            configuration: configuration, directions: directions, a: reportA, b: reportB,
            transport: TransportSummary(aToB: path.counters(from: .a), bToA: path.counters(from: .b)),
            timeline: result.timeline, intervals: intervals, wallClockSeconds: wallSeconds)

        let files = Files(directory: options.outputDirectory, capture: options.capturePath)
        do {
            try FileManager.default.createDirectory(
                atPath: options.outputDirectory, withIntermediateDirectories: true)
        } catch {
            throw .cannotWrite(path: options.outputDirectory, reason: "\(error.localizedDescription)")
        }
        try write(result.playedA, rate: rateA, to: files.aReceived)
        try write(result.playedB, rate: rateB, to: files.bReceived)
        try write(result.microphoneB, rate: rateB, to: files.bMicrophone)
        do {
            try report.jsonData().write(to: URL(fileURLWithPath: files.json))
        } catch {
            throw .cannotWrite(path: files.json, reason: "\(error)")
        }
        do {
            try DemoHTMLReport.render(report, files: files).write(
                toFile: files.html, atomically: true, encoding: .utf8)
        } catch {
            throw .cannotWrite(path: files.html, reason: "\(error.localizedDescription)")
        }
        return Outcome(report: report, files: files, summaryTable: summaryTable(report))
    }

    // MARK: Pieces

    static func pcapEndpoint(_ endpoint: UDPEndpoint) -> PcapEndpoint {
        PcapEndpoint(address: endpoint.address, port: endpoint.port)
    }

    /// A capture-file error without the path (``DemoError/cannotWrite(path:reason:)`` names it once).
    static func reason(_ error: PcapError) -> String {
        guard case .io(let text) = error else { return "\(error)" }
        // "cannot create PATH: reason" → "reason"
        return text.split(separator: ": ", maxSplits: 1).last.map(String.init) ?? text
    }

    static func readInput(_ path: String) throws(DemoError) -> WAVFile {
        guard FileManager.default.fileExists(atPath: path) else {
            throw .badInput(
                path: path,
                reason: "no such file (run from the package folder, or `voice-engine vectors generate` first)")
        }
        let file: WAVFile
        do { file = try WAVFile.read(path: path) } catch { throw .badInput(path: path, reason: "\(error)") }
        guard file.format.channels == 1 else {
            throw .badInput(path: path, reason: "\(file.format): the demo needs mono input")
        }
        let rate = file.format.sampleRate
        guard (8_000...48_000).contains(rate), rate % 100 == 0 else {
            throw .badInput(path: path, reason: "\(rate) Hz: use 8000...48000 Hz, a multiple of 100")
        }
        guard file.frameCount >= rate / 10 else {
            throw .badInput(path: path, reason: "shorter than 100 ms")
        }
        return file
    }

    /// `samples` kept only in this talker's turns (turn k belongs to the first talker when k is even), with 20 ms
    /// fades at each turn change so the gating does not click.
    static func inTurns(_ samples: [Int16], rate: Int, turnSeconds: Double, speaksFirst: Bool) -> [Int16] {
        let turn = turnSeconds * Double(rate)
        let fade = 0.02 * Double(rate)
        return samples.enumerated().map { n, sample in
            let position = Double(n) / turn
            let k = Int(position)
            guard (k % 2 == 0) == speaksFirst else { return 0 }
            let intoTurn = (position - Double(k)) * turn
            let gain = min(1, intoTurn / fade, (turn - intoTurn) / fade)
            return Int16((Double(sample) * max(0, gain)).rounded())
        }
    }

    /// `samples` repeated until `count` (or unchanged when long enough: the call pads with silence).
    static func looped(_ samples: [Int16], to count: Int) -> [Int16] {
        guard samples.count < count, !samples.isEmpty else { return samples }
        var out: [Int16] = []
        out.reserveCapacity(count)
        while out.count < count { out.append(contentsOf: samples.prefix(count - out.count)) }
        return out
    }

    static func write(_ samples: [Int16], rate: Int, to path: String) throws(DemoError) {
        do { try WAVFile.write(pcm16: samples, format: AudioFormat(sampleRate: rate), to: path) } catch {
            throw .cannotWrite(path: path, reason: "\(error)")
        }
    }

    static func summary(
        sender: CallSide, receiverReport r: CallReport, senderReport s: CallReport,
        delays: [Double], senderHasEcho: Bool
    ) -> DirectionSummary {
        let receiver = sender.peer
        return DirectionSummary(
            direction: "\(sender.rawValue.uppercased()) → \(receiver.rawValue.uppercased())", sender: sender,
            receiver: receiver, mos: r.quality.mos, rFactor: r.quality.rFactor, lossPercent: r.rtp.lossPercent,
            residualLossPercent: r.quality.packetLossPercent,
            concealmentPercent: r.jitterBuffer.concealmentRatio * 100, fecRecoveredFrames: r.fec.recoveredFrames,
            meanBufferDelayMilliseconds: r.jitterBuffer.meanDelayMilliseconds,
            p95BufferDelayMilliseconds: percentile(delays, 0.95), roundTripMilliseconds: s.rtt.meanMilliseconds,
            jitterMilliseconds: r.jitter.interarrivalMilliseconds,
            erleDecibels: senderHasEcho ? s.echo.erleDecibels : nil, expected: r.rtp.expected,
            received: r.rtp.received, lost: r.rtp.lost, late: r.jitterBuffer.latePackets, sent: s.rtp.packetsSent)
    }

    /// Nearest-rank percentile; 0 for no values.
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    /// The table `voice-engine demo` prints.
    public static func summaryTable(_ report: Report) -> String {
        func f(_ x: Double?, _ digits: Int = 1) -> String { x.map { String(format: "%.\(digits)f", $0) } ?? "-" }
        let header = [
            "direction", "MOS", "R", "loss %", "conceal %", "FEC rec", "delay ms", "p95 ms", "RTT ms", "jitter ms",
            "ERLE dB", "recv+lost=exp"
        ]
        var rows = [header]
        for d in report.directions {
            rows.append([
                d.direction, f(d.mos, 2), f(d.rFactor), f(d.lossPercent), f(d.concealmentPercent, 2),
                String(d.fecRecoveredFrames), f(d.meanBufferDelayMilliseconds), f(d.p95BufferDelayMilliseconds),
                f(d.roundTripMilliseconds), f(d.jitterMilliseconds), f(d.erleDecibels),
                "\(d.received)+\(d.lost)=\(d.expected)"
            ])
        }
        let widths = header.indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, cell in
                c == 0
                    ? cell.padding(toLength: widths[c], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[c] - cell.count) + cell
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
