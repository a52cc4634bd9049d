#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import VoiceEngine

/// `voice-bench live`: what real-time calls cost, not only their audio work. N calls in this process, each two
/// ``LiveCall``s (A listens, B calls it) over loopback UDP with SRTP, a looping WAV microphone and a null speaker,
/// both real-time clocked, sockets read by the media thread (`ReceiveMode.consumerPolls`) and the calls on the
/// process's shared media threads, as `voice-engine call` runs them (`--thread-per-call`: a thread per end); after
/// a warm-up, the process's CPU time and wake-ups (every thread's context switches,
/// from `/proc/self/task`) over a fixed window. Reported per call-second: CPU, wake-ups, the threads; and the
/// ratio to the same two streams driven in fast time on one thread (the "runtime overhead"). With baresip
/// installed, the same call between two baresip processes (Opus 16 kHz 32 kb/s complexity 5, SRTP, the same WAV;
/// `speex_pp` with --voice-processing), measured the same way, side by side; from 6 pairs the first row's target is
/// judged on the 95 % interval of the median per-pair ratio (``verdict(ratios:interval:target:)``). Every call must arrive intact
/// (established, every packet authenticated, none lost, concealment under 5 %) or the run fails.
struct LiveBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "CPU and wake-ups per call-second of N real-time calls (loopback, SRTP), vs fast time and baresip.",
        discussion: """
            JSON (--json, last line): {"suite":"live","voice_processing":…,"results":[{"calls","cpu_ms_per_call_s",\
            "fast_ms_per_call_s","overhead","threads","wakeups_per_call_s","baresip_cpu_ms_per_call_s",\
            "baresip_wakeups_per_call_s","ratio_to_baresip","ratio_ci95"}]} (ratio_ci95: [low, high] from 6 pairs, else null). A call is two endpoints (both ends of it), \
            as the baresip column is two processes. See Benchmarks/README.md.
            """)

    @Option(help: "Simultaneous calls in this process; repeat for several rows (e.g. --calls 1 --calls 10).")
    var calls: [Int] = [1]

    @Option(help: "Seconds of established calls measured per run.")
    var seconds = 10.0

    @Option(help: "Seconds after the start before measuring (establishment, buffers settled).")
    var warmUp = 2.0

    @Option(
        help:
            "Runs per row; the medians are reported (engine and baresip alternate, the order flipped every pair). With 6 or more, the first row's target is judged on the paired ratio's 95 % CI."
    )
    var repeats = 3

    @Option(
        help:
            "Opus application of the baresip reference: voip (as the engine's MediaStreamConfiguration.defaultOpus) or audio (baresip's own default, which at 16 kHz 32 kb/s c5 encodes CELT instead of SILK)."
    )
    var baresipApplication = BaresipCall.defaultApplication

    @Option(help: "Microphone WAV (16 kHz mono), looped.")
    var speech = "TestVectors/speech_like_16k.wav"

    @Flag(help: "Voice processing on (AEC, NS, VAD; baresip: speex_pp). Off by default.")
    var voiceProcessing = false

    @Flag(
        help:
            "With --voice-processing: no echo canceller, noise suppression and VAD only (EchoCanceller.Stage.echoFilter off), as baresip's speex_pp."
    )
    var noEchoCanceller = false

    @Flag(
        help:
            "A media thread per call end (LiveCallOptions.sharedMediaThread false) instead of the process's shared media threads."
    )
    var threadPerCall = false

    @Flag(help: "Sockets read by NIO's event loop (ReceiveMode.eventLoop) instead of by the media thread at its tick.")
    var eventLoopReceive = false

    @Flag(help: "Skip the baresip column.")
    var noBaresip = false

    @Flag(help: "Print the threads of the last engine run: CPU and wake-ups per second, by thread name.")
    var threads = false

    @Flag(help: "End with one JSON line.")
    var json = false

    func validate() throws {
        guard calls.allSatisfy({ (1...1000).contains($0) }) else { throw ValidationError("--calls takes 1...1000") }
        guard seconds.isFinite, (1...600).contains(seconds) else { throw ValidationError("--seconds takes 1...600") }
        guard warmUp.isFinite, (0.5...60).contains(warmUp) else { throw ValidationError("--warm-up takes 0.5...60") }
        guard (1...50).contains(repeats) else { throw ValidationError("--repeats takes 1...50") }
        guard voiceProcessing || !noEchoCanceller else {
            throw ValidationError("--no-echo-canceller needs --voice-processing")
        }
        guard ["voip", "audio"].contains(baresipApplication) else {
            throw ValidationError("--baresip-application takes voip or audio")
        }
        guard FileManager.default.isReadableFile(atPath: speech) else {
            throw ValidationError("--speech \(speech): no such readable file")
        }
    }

    func run() throws {
        let wav: WAVFile
        do { wav = try WAVFile(contentsOfFile: speech) } catch { throw ValidationError("--speech \(speech): \(error)") }
        guard wav.format == AudioFormat(sampleRate: 16_000) else {
            throw ValidationError("--speech \(speech): \(wav.format), expected 16 kHz mono")
        }
        let baresip = noBaresip ? nil : BaresipCall.find()
        let processing =
            (voiceProcessing
                ? (noEchoCanceller
                    ? "on without the echo canceller (NS, VAD; baresip speex_pp)"
                    : "on (AEC, NS, VAD; baresip speex_pp)") : "off")
            + (threadPerCall ? ", a media thread per call end" : ", shared media threads (at most one per core)")
            + (eventLoopReceive ? ", sockets read by the NIO event loop" : "")
        print(
            "voice-bench live: real-time calls in one process (two LiveCalls each, looping WAV microphone, null "
                + "speaker, loopback UDP, SRTP, Opus 16 kHz 32 kb/s c5), voice processing \(processing); "
                + "\(fixed(seconds, 0)) s measured after \(fixed(warmUp, 0)) s, median of \(repeats) runs")
        print(
            "Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(loadAverage()) at the start — CPU time, not wall time"
        )
        if baresip == nil && !noBaresip { print("baresip column skipped: baresip is not installed") }
        if baresip != nil { print("baresip: Opus application \(baresipApplication) (the engine's: voip)") }
        print(
            "calls  CPU ms/call-s  fast ms/call-s  overhead  threads  wake-ups/call-s"
                + (baresip == nil ? "" : "  baresip ms/call-s  baresip wake-ups/call-s  ratio"))
        var rows: [String] = []
        var failures: [String] = []
        var verdict: String?
        for count in calls {
            var engine: [LiveRun] = []
            var reference: [LiveRun] = []
            for index in 0..<repeats {
                // Pairs alternate which program runs first (engine-baresip, baresip-engine, …), so a load that
                // drifts over the row does not favour the one that always runs second.
                let referenceFirst = index % 2 == 1
                func runReference() throws {
                    if let baresip, count == calls.first {
                        reference.append(
                            try baresip.run(
                                speech: wav, seconds: seconds, warmUp: warmUp, processing: voiceProcessing,
                                application: baresipApplication))
                    }
                }
                if referenceFirst { try runReference() }
                engine.append(try EngineCalls.run(calls: count, wav: wav, speech: speech, options: self))
                if !referenceFirst { try runReference() }
            }
            let fast = FastTimeCall.cpuNanosecondsPerCallSecond(
                wav: wav, voiceProcessing: voiceProcessing, cancelEcho: !noEchoCanceller, seconds: 10)
            let cpu = SideBySideRunner.median(engine.map(\.cpuMillisecondsPerCallSecond))
            let wakeups = SideBySideRunner.median(engine.map(\.wakeupsPerCallSecond))
            let threadCount = engine.last!.threadCount
            let overhead = cpu / (fast / 1e6)
            var line =
                pad("\(count)", 5) + pad(fixed(cpu, 2), 15) + pad(fixed(fast / 1e6, 2), 16)
                + pad(fixed(overhead, 2) + "×", 10) + pad("\(threadCount)", 9) + pad(fixed(wakeups, 0), 17)
            var jsonExtra =
                ",\"baresip_cpu_ms_per_call_s\":null,\"baresip_wakeups_per_call_s\":null,\"ratio_to_baresip\":null"
            if !reference.isEmpty {
                let bCPU = SideBySideRunner.median(reference.map(\.cpuMillisecondsPerCallSecond))
                let bWake = SideBySideRunner.median(reference.map(\.wakeupsPerCallSecond))
                let ratios = zip(engine, reference).map {
                    $0.cpuMillisecondsPerCallSecond / $1.cpuMillisecondsPerCallSecond
                }
                let ratio = SideBySideRunner.median(ratios)
                let interval = SideBySideRunner.medianConfidenceInterval(ratios)
                line +=
                    pad(fixed(bCPU, 2), 19) + pad(fixed(bWake, 0), 25) + fixed(ratio, 2) + "×"
                    + " (runs \(fixed(ratios.min()!, 2))–\(fixed(ratios.max()!, 2))"
                    + (interval.map { ", 95 % CI \(fixed($0.low, 2))–\(fixed($0.high, 2))" } ?? "") + ")"
                jsonExtra =
                    ",\"baresip_cpu_ms_per_call_s\":\(fixed(bCPU, 3)),\"baresip_wakeups_per_call_s\":"
                    + "\(fixed(bWake, 1)),\"ratio_to_baresip\":\(fixed(ratio, 3)),\"ratio_ci95\":"
                    + (interval.map { "[\(fixed($0.low, 3)),\(fixed($0.high, 3))]" } ?? "null")
                verdict = Self.verdict(ratios: ratios, interval: interval, target: voiceProcessing ? 1.3 : 1.0)
            }
            let damaged = engine.compactMap(\.damage)
            if !damaged.isEmpty { line += "  NOT INTACT in \(damaged.count)/\(repeats) runs: \(damaged[0])" }
            failures += damaged.isEmpty ? [] : ["\(count) calls: \(damaged[0])"]
            print(line + "  load \(loadAverage())")
            // Whether a damaged run was the engine missing its deadlines on a machine with room, or a machine with
            // no room left: per run, the cores the media threads used, how long they waited runnable for a CPU,
            // and how many of the machine's cores were busy (every process) over the window.
            print(
                "    per run: "
                    + engine.map { run in
                        "media \(run.mediaThreads) thr \(fixed(run.mediaCores, 2)) cores, waited \(fixed(run.mediaWaitMillisecondsPerSecond, 0)) ms/s"
                            + ", ticks begun ≥ 10 ms late \(fixed(100 * run.delayedTickShare, 1)) %"
                            + ", machine \(fixed(run.machineBusyCores, 2))/\(ProcessInfo.processInfo.activeProcessorCount)"
                            + " (stolen \(fixed(run.machineStolenCores, 3)))"
                            + ", ends not intact \(run.damagedEnds)/\(2 * count)"
                            + ", worst end concealed \(fixed(100 * run.worstConcealment, 2)) %"
                            + " (late packets \(run.worstLatePackets), accelerated \(run.worstAcceleratedSamples) samples)"
                    }.joined(separator: "; "))
            fflush(nil)
            if threads, let last = engine.last {
                for group in last.threads.byName {
                    print(
                        "    " + pad("\(group.name) ×\(group.count)", 34)
                            + pad(fixed(Double(group.cpuNanoseconds) / 1e6 / seconds, 2) + " ms/s", 14)
                            + fixed(Double(group.switches) / seconds, 0) + " wake-ups/s")
                }
            }
            rows.append(
                "{\"calls\":\(count),\"cpu_ms_per_call_s\":\(fixed(cpu, 3)),\"fast_ms_per_call_s\":"
                    + "\(fixed(fast / 1e6, 3)),\"overhead\":\(fixed(overhead, 3)),\"threads\":\(threadCount),"
                    + "\"wakeups_per_call_s\":\(fixed(wakeups, 1)),\"intact\":\(damaged.isEmpty)\(jsonExtra)}")
        }
        if let verdict { print(verdict) }
        if json {
            print(
                "{\"suite\":\"live\",\"voice_processing\":\(voiceProcessing),\"echo_canceller\":\(voiceProcessing && !noEchoCanceller),\"results\":[\(rows.joined(separator: ","))]}"
            )
        }
        if !failures.isEmpty {
            throw LiveBenchFailure("audio did not arrive intact (\(failures.joined(separator: "; ")))")
        }
    }

    /// The rule fixed before measuring (Benchmarks/README.md, "Live calls"): the target engine/baresip ratio is
    /// met when the upper end of the 95 % sign-test interval of the median per-pair ratio is at or under it, not
    /// met when the lower end is over it, and undecided in between. A single median of a few runs moves more than
    /// the margin on this machine, so no verdict is given from fewer than 6 pairs.
    static func verdict(ratios: [Double], interval: (low: Double, high: Double)?, target: Double) -> String {
        let rule =
            "Target engine/baresip ≤ \(fixed(target, 1)), judged on the upper end of the 95 % CI of the median "
            + "paired ratio (sign-test interval, \(ratios.count) pairs): "
        guard let interval else { return rule + "too few pairs (at least 6; --repeats)" }
        if interval.high <= target { return rule + "met (CI \(fixed(interval.low, 3))–\(fixed(interval.high, 3)))" }
        if interval.low > target { return rule + "not met (CI \(fixed(interval.low, 3))–\(fixed(interval.high, 3)))" }
        return rule + "undecided (CI \(fixed(interval.low, 3))–\(fixed(interval.high, 3)) spans the target)"
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

/// A run whose audio did not arrive intact, or a peer that failed: one line, no usage text.
struct LiveBenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One measured run: per call-second figures and the threads' deltas.
struct LiveRun {
    var cpuMillisecondsPerCallSecond: Double
    var wakeupsPerCallSecond: Double
    var threadCount: Int
    var threads: ThreadCost
    /// Why the audio of some call did not arrive intact (nil: every call did).
    var damage: String? = nil
    /// Call ends (two per call) whose audio did not arrive intact.
    var damagedEnds = 0
    /// `voice-media` threads, the cores they used together, and how long each waited runnable for a CPU (ms per
    /// second of the window, averaged over them): waiting is time the machine gave to something else.
    var mediaThreads = 0
    var mediaCores = 0.0
    var mediaWaitMillisecondsPerSecond = 0.0
    /// Share of the call ends' ticks that began 10 ms or more after their deadline (`LiveCallStatistics.delayedTicks`):
    /// the media threads behind their schedule.
    var delayedTickShare = 0.0
    /// Cores of the whole machine busy over the window (every process, `/proc/stat`), and of those the time the
    /// hypervisor gave to other guests.
    var machineBusyCores = 0.0
    var machineStolenCores = 0.0
    /// The call end that concealed most (the intact check allows under 5 %): its share, its late packets and the
    /// samples its buffer time-compressed — what tells a stall's aftermath (late packets, then stretching) apart.
    var worstConcealment = 0.0
    var worstLatePackets = 0
    var worstAcceleratedSamples = 0
}

/// N engine calls in this process.
enum EngineCalls {
    static func run(calls: Int, wav: WAVFile, speech: String, options: LiveBench) throws -> LiveRun {
        var callOptions = LiveCallOptions()
        callOptions.sharedMediaThread = !options.threadPerCall
        return try run(
            calls: calls, speech: speech, seconds: options.seconds, warmUp: options.warmUp,
            processing: options.voiceProcessing, cancelEcho: !options.noEchoCanceller, callOptions: callOptions,
            receive: options.eventLoopReceive ? .eventLoop : .consumerPolls, keying: .sdes)
    }

    /// - Parameter keying: SDES keys given to both ends, or ICE and a DTLS-SRTP handshake per call first (as a
    ///   client call runs them), their consent checks and DTLS hooks kept for the whole call.
    static func run(
        calls: Int, speech: String, seconds: Double, warmUp: Double, processing: Bool, cancelEcho: Bool,
        callOptions: LiveCallOptions, receive: UDPMediaTransport.ReceiveMode, keying: CallKeying
    ) throws -> LiveRun {
        /// Written by the task before it signals, read after the wait: the semaphore orders the two.
        final class Outcome: @unchecked Sendable { var result: Result<LiveRun, Error>? }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                outcome.result = .success(
                    try await measure(
                        calls, speech, seconds, warmUp, processing, cancelEcho, callOptions, receive, keying))
            } catch {
                outcome.result = .failure(error)
            }
            done.signal()
        }
        done.wait()
        return try outcome.result!.get()
    }

    private static func measure(
        _ count: Int, _ speech: String, _ seconds: Double, _ warmUp: Double, _ processing: Bool, _ cancelEcho: Bool,
        _ callOptions: LiveCallOptions, _ receive: UDPMediaTransport.ReceiveMode, _ keying: CallKeying = .sdes
    ) async throws -> LiveRun {
        var pairs: [(LiveCall, LiveCall)] = []
        var keyedCalls: [DTLSICEKeyedCall] = []
        defer { for keyed in keyedCalls { keyed.stop() } }
        for index in 0..<count {
            var generator = SeededGenerator(seed: UInt64(index + 1))
            let polled = UDPMediaTransport.Configuration(receive: receive)
            let transportA = try await UDPMediaTransport.bind(host: "127.0.0.1", configuration: polled)
            let transportB = try await UDPMediaTransport.bind(
                host: "127.0.0.1", remote: transportA.localEndpoint, configuration: polled)
            let keysA: MediaStreamSRTP, keysB: MediaStreamSRTP
            switch keying {
            case .sdes:
                let suite = SRTPCryptoSuite.aesCM128HmacSHA1_80
                let keyA = SRTPMasterKey.random(for: suite, using: &generator)
                let keyB = SRTPMasterKey.random(for: suite, using: &generator)
                keysA = MediaStreamSRTP(suite: suite, localKey: keyA, remoteKey: keyB)
                keysB = MediaStreamSRTP(suite: suite, localKey: keyB, remoteKey: keyA)
            case .dtlsICE:
                let keyed = try await DTLSICEKeyedCall.connect(transportA, transportB)
                keyedCalls.append(keyed)
                (keysA, keysB) = (keyed.keysA, keyed.keysB)
            }
            func call(_ transport: UDPMediaTransport, keys: MediaStreamSRTP) throws -> LiveCall {
                let format = AudioFormat(sampleRate: 16_000)
                // As `voice-engine call` opens file and null devices: driven by the call's media thread.
                let clocking = DeviceClocking.manual(MonotonicClock())
                let capture = try FileCaptureDevice(path: speech, format: format, clocking: clocking, endOfFile: .loop)
                let playout = try NullAudioDevice(direction: .playout, format: format, clocking: clocking)
                var configuration = MediaStreamConfiguration(
                    opus: MediaStreamConfiguration.defaultOpus, deviceFormat: format,
                    srtp: keys, voiceProcessing: processing)
                if !cancelEcho { configuration.echoCanceller.stages.remove(.echoFilter) }
                return try LiveCall(
                    configuration: configuration, transport: transport, capture: capture, playout: playout,
                    options: callOptions)
            }
            pairs.append((try call(transportA, keys: keysA), try call(transportB, keys: keysB)))
        }
        for (a, b) in pairs {
            try a.start()
            try b.start()
        }
        try await Task.sleep(for: .milliseconds(Int(warmUp * 1000)))
        let before = ThreadCost.read(pid: getpid())
        let machineBefore = MachineCPU.read()
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        let after = ThreadCost.read(pid: getpid())
        let machineAfter = MachineCPU.read()
        var results: [LiveCallResult] = []
        for (a, b) in pairs {
            results.append(await a.stop())
            results.append(await b.stop())
        }
        var damage: String?
        var damagedEnds = 0
        var ticks = 0, delayed = 0
        var worst: CallReport.JitterBuffer?
        for (index, result) in results.enumerated() {
            ticks += result.statistics.ticks
            delayed += result.statistics.delayedTicks
            let r = result.report
            if r.jitterBuffer.concealmentRatio >= worst?.concealmentRatio ?? 0 { worst = r.jitterBuffer }
            let intact =
                result.wasEstablished && r.rtp.lost == 0 && r.rtp.received >= r.rtp.expected - 1
                && r.drops.counts.authenticationFailed == 0 && r.jitterBuffer.concealmentRatio < 0.05
                && r.rtp.received > Int((seconds + warmUp) * 40)
            if !intact { damagedEnds += 1 }
            if !intact && damage == nil {
                damage =
                    "call \(index / 2 + 1) side \(index % 2 == 0 ? "A" : "B") did not arrive intact: received "
                    + "\(r.rtp.received)/\(r.rtp.expected), lost \(r.rtp.lost), authentication failures "
                    + "\(r.drops.counts.authenticationFailed), concealed \(r.jitterBuffer.concealmentRatio)"
            }
        }
        let delta = after.since(before)
        let callSeconds = seconds * Double(count)
        let media = delta.threads.values.filter { $0.name == "voice-media" }
        if damagedEnds > 1, let first = damage { damage = "\(damagedEnds) of \(2 * count) ends; first: " + first }
        return LiveRun(
            cpuMillisecondsPerCallSecond: Double(delta.cpuNanoseconds) / 1e6 / callSeconds,
            wakeupsPerCallSecond: Double(delta.switches) / callSeconds, threadCount: after.threads.count,
            threads: delta, damage: damage, damagedEnds: damagedEnds, mediaThreads: media.count,
            mediaCores: Double(media.reduce(0) { $0 + $1.cpuNanoseconds }) / 1e9 / seconds,
            mediaWaitMillisecondsPerSecond: media.isEmpty
                ? 0 : Double(media.reduce(0) { $0 + $1.waitNanoseconds }) / 1e6 / seconds / Double(media.count),
            delayedTickShare: ticks > 0 ? Double(delayed) / Double(ticks) : 0,
            machineBusyCores: machineAfter.busyCores(
                since: machineBefore, cores: ProcessInfo.processInfo.activeProcessorCount),
            machineStolenCores: machineAfter.stolenCores(
                since: machineBefore, cores: ProcessInfo.processInfo.activeProcessorCount),
            worstConcealment: worst?.concealmentRatio ?? 0, worstLatePackets: worst?.latePackets ?? 0,
            worstAcceleratedSamples: worst?.acceleratedSamples ?? 0)
    }
}

/// The same two streams as one engine call, driven in fast time on this thread: the audio work alone.
enum FastTimeCall {
    /// Datagrams one stream sent during a tick, delivered to the other at the next.
    final class Mailbox: MediaPacketSink {
        var storage = [UInt8](repeating: 0, count: 16 * 1500)
        var lengths = [Int](repeating: 0, count: 16)
        var count = 0
        func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
            guard count < lengths.count, datagram.count <= 1500 else { return }
            storage.withUnsafeMutableBytes {
                UnsafeMutableRawBufferPointer(rebasing: $0[(count * 1500)...]).copyMemory(from: datagram)
            }
            lengths[count] = datagram.count
            count += 1
        }
        func deliver(to stream: MediaStream, at now: MediaTime) {
            storage.withUnsafeBytes { bytes in
                for i in 0..<count {
                    stream.receiveDatagram(
                        UnsafeRawBufferPointer(rebasing: bytes[(i * 1500)..<(i * 1500 + lengths[i])]), arrival: now)
                }
            }
            count = 0
        }
    }

    /// Thread CPU nanoseconds per call-second (both streams) over `seconds` of fast time, after 2 s of warm-up.
    static func cpuNanosecondsPerCallSecond(wav: WAVFile, voiceProcessing: Bool, cancelEcho: Bool = true, seconds: Int)
        -> Double
    {
        let format = AudioFormat(sampleRate: 16_000)
        let suite = SRTPCryptoSuite.aesCM128HmacSHA1_80
        var generator = SeededGenerator(seed: 7)
        let keyA = SRTPMasterKey.random(for: suite, using: &generator)
        let keyB = SRTPMasterKey.random(for: suite, using: &generator)
        let boxA = Mailbox(), boxB = Mailbox()
        func stream(_ box: Mailbox, _ local: SRTPMasterKey, _ remote: SRTPMasterKey) -> MediaStream {
            var configuration = MediaStreamConfiguration(
                opus: MediaStreamConfiguration.defaultOpus, deviceFormat: format,
                srtp: MediaStreamSRTP(suite: suite, localKey: local, remoteKey: remote),
                voiceProcessing: voiceProcessing)
            if !cancelEcho { configuration.echoCanceller.stages.remove(.echoFilter) }
            return try! MediaStream(configuration: configuration, sink: box, now: MediaTime(nanoseconds: 0))
        }
        let a = stream(boxA, keyA, keyB), b = stream(boxB, keyB, keyA)
        let samples = wav.int16Samples
        let block = format.samplesPerBlock
        var frame = AudioFrame(format: format)
        var played = AudioFrame(format: format)
        var position = 0
        func tick(_ index: Int) {
            let now = MediaTime(nanoseconds: Int64(index) * 10_000_000)
            for s in [a, b] {
                frame.withUnsafeMutableSamples { out in
                    for i in 0..<block { out[i] = samples[(position + i) % samples.count] }
                }
                s.processCapture(frame, now: now)
            }
            position = (position + block) % samples.count
            boxA.deliver(to: b, at: now)
            boxB.deliver(to: a, at: now)
            a.renderPlayout(into: &played, now: now)
            b.renderPlayout(into: &played, now: now)
            _ = a.pollRTCP(now: now)
            _ = b.pollRTCP(now: now)
        }
        for index in 0..<200 { tick(index) }
        let start = threadCPUNanoseconds()
        for index in 200..<(200 + seconds * 100) { tick(index) }
        return Double(threadCPUNanoseconds() - start) / Double(seconds)
    }
}
