import Foundation
import Synchronization
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// Two real-time ``LiveCall``s in one process over loopback UDP with SRTP, file microphones and file speakers.
@Suite(.tags(.live), .scheduledByTags, .serialized) struct LiveCallTests {
    static let speech = "TestVectors/speech_like_16k.wav"
    static let format = AudioFormat(sampleRate: 16_000)

    /// One side of a loopback call: its call, the files it reads and writes, and the events it published.
    struct Side {
        let call: LiveCall
        let speaker: String
        let events: EventLog
    }

    /// Collects a call's events from its stream.
    final class EventLog: Sendable {
        private let storage = Mutex<[LiveCallEvent]>([])
        var all: [LiveCallEvent] { storage.withLock { $0 } }
        /// The events once the recording task has taken the last one, `.ended` (at most 2 s later).
        func untilEnded() async -> [LiveCallEvent] {
            for _ in 0..<200 {
                if case .ended = all.last { break }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return all
        }
        func record(_ stream: AsyncStream<LiveCallEvent>) {
            Task { for await event in stream { storage.withLock { $0.append(event) } } }
        }
    }

    static func makeSide(
        name: String, directory: URL, srtp: MediaStreamSRTP?, transport: UDPMediaTransport,
        voiceProcessing: Bool, session: AudioSession?, options: LiveCallOptions = LiveCallOptions()
    ) throws -> Side {
        let speaker = directory.appendingPathComponent("\(name)-speaker.wav").path
        // Real-time priority for the device clocks, as `LiveDeviceName` and ALSA devices ask for.
        let capture = try FileCaptureDevice(path: speech, format: format, clocking: .realTime, realtimePriority: 10)
        let playout = try FilePlayoutDevice(path: speaker, format: format, clocking: .realTime, realtimePriority: 10)
        let configuration = StreamTestSupport.configuration(
            seed: name == "a" ? 11 : 22, srtp: srtp, voiceProcessing: voiceProcessing)
        let call = try LiveCall(
            callID: CallID(name), configuration: configuration, transport: transport, capture: capture,
            playout: playout, session: session, options: options)
        let log = EventLog()
        log.record(call.events)
        return Side(call: call, speaker: speaker, events: log)
    }

    /// A listens on loopback with no remote (it latches on B's first authenticated packet); B calls A.
    static func makePair(
        directory: URL, keysA: MediaStreamSRTP?, keysB: MediaStreamSRTP?, processingOnA: Bool = false,
        sessions: (AudioSession?, AudioSession?) = (nil, nil), options: LiveCallOptions = LiveCallOptions(),
        receive: UDPMediaTransport.ReceiveMode = .consumerPolls
    ) async throws -> (a: Side, b: Side) {
        // As `voice-engine call` binds: the media thread reads the socket.
        let configuration = UDPMediaTransport.Configuration(receive: receive)
        let transportA = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0, configuration: configuration)
        let transportB = try await UDPMediaTransport.bind(
            host: "127.0.0.1", port: 0, remote: transportA.localEndpoint, configuration: configuration)
        let a = try makeSide(
            name: "a", directory: directory, srtp: keysA, transport: transportA, voiceProcessing: processingOnA,
            session: sessions.0, options: options)
        let b = try makeSide(
            name: "b", directory: directory, srtp: keysB, transport: transportB, voiceProcessing: false,
            session: sessions.1, options: options)
        return (a, b)
    }

    /// An SRTP pair with an audio session on each side (voice processing on A): the microphone opens only when
    /// the control plane has seen the call established and the session opens it.
    static func makeSessionPair(directory: URL) async throws -> (a: Side, b: Side) {
        let (keysA, keysB) = StreamTestSupport.srtpPair()
        let sessionA = AudioSession(clock: MonotonicClock())
        let sessionB = AudioSession(clock: MonotonicClock())
        await sessionA.startEngine()
        await sessionB.startEngine()
        return try await makePair(
            directory: directory, keysA: keysA, keysB: keysB, processingOnA: true, sessions: (sessionA, sessionB))
    }

    /// Normalised cross-correlation of `test` against `reference` after the best alignment (lag ≤ 0.6 s).
    static func alignedCorrelation(reference: ArraySlice<Int16>, test: ArraySlice<Int16>) -> (
        correlation: Double, lag: Int
    ) {
        let lag = StreamTestSupport.lag(reference: Array(reference), test: Array(test), maxLag: 9_600)
        let aligned = test.dropFirst(lag)
        let n = min(reference.count, aligned.count)
        var rt = 0.0, rr = 0.0, tt = 0.0
        for i in 0..<n {
            let r = Double(reference[reference.startIndex + i]), t = Double(aligned[aligned.startIndex + i])
            rt += r * t
            rr += r * r
            tt += t * t
        }
        return (rr > 0 && tt > 0 ? rt / (rr * tt).squareRoot() : 0, lag)
    }

    /// The median over 0.25 s windows of what the speaker played of each window of the input, each window aligned
    /// on its own (the jitter buffer may stretch time between windows, so one global lag would understate it).
    static func medianWindowCorrelation(input: [Int16], heard: [Int16]) -> (median: Double, lags: [Int]) {
        let window = 4_000
        var results: [(Double, Int)] = []
        var start = 0
        while start + window + 9_600 <= heard.count && start + window <= input.count {
            let reference = input[start..<(start + window)]
            guard StreamTestSupport.level(reference) > -50 else {
                start += window
                continue
            }
            results.append(alignedCorrelation(reference: reference, test: heard[start..<(start + window + 9_600)]))
            start += window
        }
        let sorted = results.map(\.0).sorted()
        return (sorted.isEmpty ? 0 : sorted[sorted.count / 2], results.map(\.1))
    }

    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing"),
        .timeLimit(.minutes(1)))
    func twoCallsOverLoopbackExchangeSpeechWithSRTPInRealTime() async throws {
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (a, b) = try await Self.makeSessionPair(directory: dir)
        let transportB = b.call.transport

        try a.call.start()
        try b.call.start()
        try await Task.sleep(for: .seconds(3))
        async let endA = a.call.stop()
        async let endB = b.call.stop()
        let (resultA, resultB) = await (endA, endB)
        // A second stop returns the first one's result.
        #expect(await a.call.stop(cause: .failure).cause == .localHangup)

        for (name, result, peer) in [("A", resultA, resultB), ("B", resultB, resultA)] {
            let r = result.report
            print(
                "live \(name): sent \(r.rtp.packetsSent) received \(r.rtp.received)/\(r.rtp.expected) "
                    + "lost \(r.rtp.lost) drops \(r.drops.total) rtcp \(r.rtcp.sent)/\(r.rtcp.received) "
                    + "buffer \(r.jitterBuffer.meanDelayMilliseconds) ms concealed \(r.jitterBuffer.concealmentRatio) "
                    + "stats \(result.statistics)")
            #expect(result.wasEstablished, "\(name) never saw media both ways")
            #expect(result.cause == .localHangup)
            // One 20 ms packet per two 10 ms ticks, for however long the call ran (3 s, longer when the test's
            // own wake-up is late on a busy machine).
            let ticks = result.statistics.ticks
            #expect(abs(r.rtp.packetsSent - ticks / 2) <= 3, "\(name) sent \(r.rtp.packetsSent) in \(ticks) ticks")
            #expect(r.rtp.received >= 110, "\(name) received \(r.rtp.received)")
            #expect(r.rtp.received + r.rtp.lost == r.rtp.expected)
            #expect(r.rtp.received <= peer.report.rtp.packetsSent)
            #expect(r.drops.counts.authenticationFailed == 0 && r.drops.counts.rtcpAuthenticationFailed == 0)
            #expect(r.stream.srtpSuite == "AES_CM_128_HMAC_SHA1_80")
            // Every datagram the stream produced was offered to the transport exactly once.
            let s = result.statistics
            #expect(s.datagramsSent + s.datagramsNoRemote + s.datagramsFailed == r.rtp.packetsSent + r.rtcp.sent)
            #expect(s.datagramsSent == result.transport.sent)
            #expect(s.datagramsReceived <= result.transport.receivedRTP + result.transport.receivedRTCP)
            #expect(s.ticks >= 280 && s.captureBlocks >= s.ticks)
            #expect(result.transport.latches >= 1)
            // The session saw the call established and ended.
            let session = try #require(r.session)
            #expect(session.establishedAt != nil && session.endCause == .localHangup)
            #expect(result.playoutWriteError == nil)
        }
        // The caller knew A's address; A learnt B's from B's authenticated packets.
        #expect(resultA.transport.latches == 1)
        #expect(a.events.all.contains(.remoteLatched(transportB.localEndpoint)))
        for side in [a, b] {
            let events = await side.events.untilEnded()
            #expect(events.first == .started(local: side.call.transport.localEndpoint))
            #expect(events.contains(.established))
            #expect(events.last == .ended(.localHangup))
        }

        let input = try WAVFile.read(path: Self.speech).int16Samples
        for (name, side) in [("A", a), ("B", b)] {
            let heard = try WAVFile.read(path: side.speaker)
            #expect(heard.format == Self.format)
            let samples = heard.int16Samples
            #expect(samples.count >= 16_000 * 2, "\(name)'s speaker file holds \(samples.count) samples")
            let level = StreamTestSupport.level(samples[...])
            let (correlation, lags) = Self.medianWindowCorrelation(input: input, heard: samples)
            print("live \(name) heard: level \(level) dBFS, median window correlation \(correlation), lags \(lags)")
            // Decoded speech at about the input's level (silence would be below -90 dBFS).
            let inputLevel = StreamTestSupport.level(input.prefix(samples.count))
            #expect(level > inputLevel - 6, "\(name) heard \(level) dBFS, the input is \(inputLevel) dBFS")
            #expect(lags.count >= 6)
            #expect(
                correlation > 0.6, "\(name)'s speaker does not carry the peer's speech (\(correlation), lags \(lags))")
            // Mouth-to-ear delay: the typical window's lag (a window of mostly pause may align anywhere).
            let typicalLag = lags.sorted()[lags.count / 2]
            #expect(typicalLag > 160 && typicalLag < 8_000, "lags \(lags)")
        }
    }

    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing"),
        .timeLimit(.minutes(1)))
    func callsOnThreadsOfTheirOwnReadByTheEventLoopExchangeSpeechAndLeaveThem() async throws {
        // The opt-outs of both defaults: a media thread per call, and the NIO event loop reading the sockets.
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = StreamTestSupport.srtpPair()
        let (a, b) = try await Self.makePair(
            directory: dir, keysA: keys.0, keysB: keys.1, options: LiveCallOptions(sharedMediaThread: false),
            receive: .eventLoop)
        try a.call.start()
        try b.call.start()
        try await Task.sleep(for: .seconds(2))
        let resultA = await a.call.stop()
        let resultB = await b.call.stop()
        let input = try WAVFile.read(path: Self.speech).int16Samples
        for (name, side, result) in [("A", a, resultA), ("B", b, resultB)] {
            #expect(result.wasEstablished, "\(name) never saw media both ways")
            #expect(result.statistics.ticks >= 150, "\(name) ticked \(result.statistics.ticks) times in 2 s")
            #expect(result.report.rtp.received >= 70 && result.report.rtp.lost == 0)
            let heard = try WAVFile.read(path: side.speaker).int16Samples
            let (correlation, _) = Self.medianWindowCorrelation(input: input, heard: heard)
            #expect(correlation > 0.6, "\(name)'s speaker does not carry the peer's speech (\(correlation))")
        }
        // Both threads ended: their ticks stopped when the calls did.
        #expect(a.call.statistics.ticks == resultA.statistics.ticks)
    }

    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing"),
        .timeLimit(.minutes(1)))
    func thePeersByeEndsTheCallAsARemoteHangupWithoutWaitingForATimeout() async throws {
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (keysA, keysB) = StreamTestSupport.srtpPair()
        let (a, b) = try await Self.makePair(directory: dir, keysA: keysA, keysB: keysB)
        try a.call.start()
        try b.call.start()
        try await Task.sleep(for: .milliseconds(1_500))
        let resultB = await b.call.stop()  // B hangs up: its last RTCP packet carries a BYE
        #expect(resultB.wasEstablished && resultB.cause == .localHangup)
        // A has no media timeout configured: only the BYE can end it.
        var waited = 0
        while !a.events.all.contains(.ended(.remoteHangup)) && waited < 2_000 {
            try await Task.sleep(for: .milliseconds(20))
            waited += 20
        }
        let resultA = await a.call.stop(cause: .localHangup)  // returns the result of the call's own ending
        #expect(resultA.cause == .remoteHangup, "A ended as \(resultA.cause) after \(waited) ms")
        #expect(waited < 1_000, "A took \(waited) ms to notice the BYE")
        #expect(resultA.report.rtcp.byeReceived)
        #expect(resultA.report.drops.counts.rtcpAuthenticationFailed == 0)
    }

    @Test func aByeFromAnotherSourceOrBeforeThePeerIsKnownIsIgnored() throws {
        let stream = try MediaStream(
            configuration: StreamTestSupport.configuration(seed: 5, srtp: nil, voiceProcessing: false),
            sink: NullPacketSink())
        func bye(_ ssrc: UInt32) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 64)
            let n = bytes.withUnsafeMutableBytes {
                RTCPPacket.serialize(
                    compound: [
                        .receiverReport(RTCPReceiverReport(ssrc: ssrc, reportBlocks: [])), .bye(RTCPBye(ssrcs: [ssrc]))
                    ],
                    into: $0)
            }
            return Array(bytes.prefix(n))
        }
        // No RTP yet: whose BYE it is cannot be known, so it does not end anything.
        stream.receiveDatagram(bye(0x1234), arrival: MediaTime(nanoseconds: 0))
        #expect(stream.statistics.rtcpReceived == 1 && !stream.statistics.remoteSentBye)
        // RTP from 0x1234 makes it the peer; a BYE from someone else is ignored, the peer's is not.
        var rtp = [UInt8](repeating: 0, count: 20)
        rtp[0] = 0x80
        rtp[1] = stream.configuration.payloadType
        rtp[8] = 0
        rtp[9] = 0
        rtp[10] = 0x12
        rtp[11] = 0x34
        stream.receiveDatagram(rtp, arrival: MediaTime(nanoseconds: 10_000_000))
        #expect(stream.statistics.packetsReceived == 1)
        stream.receiveDatagram(bye(0x9999), arrival: MediaTime(nanoseconds: 20_000_000))
        #expect(!stream.statistics.remoteSentBye)
        stream.receiveDatagram(bye(0x1234), arrival: MediaTime(nanoseconds: 30_000_000))
        #expect(stream.statistics.remoteSentBye)
    }

    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing"),
        .timeLimit(.minutes(1)))
    func aPeerWithTheWrongKeyIsNeitherHeardNorLatched() async throws {
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (keysA, keysB) = StreamTestSupport.srtpPair()
        var wrongB = keysB
        wrongB.localKey = SRTPMasterKey.random(for: keysB.suite)  // A expects keysB.localKey
        let (a, b) = try await Self.makePair(directory: dir, keysA: keysA, keysB: wrongB)
        try a.call.start()
        try b.call.start()
        try await Task.sleep(for: .milliseconds(1_500))
        let resultA = await a.call.stop()
        let resultB = await b.call.stop()

        #expect(!resultA.wasEstablished && !resultB.wasEstablished)
        #expect(resultA.report.drops.counts.authenticationFailed > 20)
        #expect(resultA.report.rtp.received == 0)
        // A never learnt where to send: nothing left it, and B heard nothing.
        #expect(resultA.transport.latches == 0 && resultA.transport.sent == 0)
        #expect(resultA.statistics.datagramsNoRemote > 20)
        #expect(resultB.report.rtp.received == 0 && resultB.transport.receivedRTP == 0)
        #expect(!a.events.all.contains(.established))
        let heard = try WAVFile.read(path: a.speaker).int16Samples
        #expect(heard.count > 16_000 && heard.allSatisfy { $0 == 0 })
    }

    /// ALSA microphones drive their calls: each call's tick runs on its microphone's thread after every period
    /// (no media thread, no second clock). No sound card here: ALSA `file` plugins over `null` slaves stand in —
    /// A's microphone reads the speech from a raw file (`infile`), B's speaker writes what it plays to one —,
    /// paced by the device thread's period timer because a null slave completes transfers at once. The `poll`
    /// wake-up of a real card is not exercised here.
    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing"),
        .timeLimit(.minutes(1)))
    func alsaMicrophonesCarryTheirCallsTicksOnTheirOwnWakeUps() async throws {
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try WAVFile.read(path: Self.speech).int16Samples
        let raw = dir.appendingPathComponent("mic.raw").path
        let heardPath = dir.appendingPathComponent("b-speaker.raw").path
        try input.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: raw))
        func device(_ name: String, _ direction: AudioDirection, _ definition: String) throws -> ALSADevice {
            var configuration = ALSADevice.Configuration()
            configuration.alsaConfiguration = definition
            configuration.pacing = .timer
            configuration.realtimePriority = nil
            return try ALSADevice(name: name, direction: direction, format: Self.format, configuration: configuration)
        }
        let nullSlave = "pcm.quiet { type null }\n"
        let (keysA, keysB) = StreamTestSupport.srtpPair()
        let transportA = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: .init(receive: .consumerPolls))
        let transportB = try await UDPMediaTransport.bind(
            host: "127.0.0.1", remote: transportA.localEndpoint, configuration: .init(receive: .consumerPolls))
        let a = try LiveCall(
            callID: "a", configuration: StreamTestSupport.configuration(seed: 11, srtp: keysA, voiceProcessing: false),
            transport: transportA,
            capture: try device(
                "mic", .capture,
                nullSlave + "pcm.mic { type file slave.pcm quiet file \"/dev/null\" infile \"\(raw)\" format raw }"),
            playout: try device("quiet", .playout, nullSlave))
        let b = try LiveCall(
            callID: "b", configuration: StreamTestSupport.configuration(seed: 22, srtp: keysB, voiceProcessing: false),
            transport: transportB, capture: try device("quiet", .capture, nullSlave),
            playout: try device(
                "speaker", .playout,
                nullSlave + "pcm.speaker { type file slave.pcm quiet file \"\(heardPath)\" format raw }"))
        try a.start()
        try b.start()
        try await Task.sleep(for: .seconds(2))
        let resultA = await a.stop()
        let resultB = await b.stop()
        for (name, result) in [("A", resultA), ("B", resultB)] {
            #expect(result.wasEstablished, "\(name) never saw media both ways")
            #expect(result.statistics.drivenByDevice, "\(name) was not ticked by its microphone")
            // One tick per microphone period, give or take the periods before the call ran and after it stopped.
            let periods = Int(result.capture.periods)
            #expect(
                abs(result.statistics.ticks - periods) <= 3 && periods >= 150,
                "\(name): \(result.statistics.ticks) ticks for \(periods) microphone periods")
            #expect(result.report.rtp.received >= 70 && result.report.rtp.lost == 0)
        }
        let heardBytes = try Data(contentsOf: URL(fileURLWithPath: heardPath))
        let heard = heardBytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let (correlation, _) = Self.medianWindowCorrelation(input: input, heard: heard)
        #expect(correlation > 0.6, "B's ALSA speaker does not carry A's ALSA microphone (\(correlation))")
    }

    @Test func stoppingACallThatNeverStartedReportsNothingEstablished() async throws {
        let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
        let capture = try NullAudioDevice(direction: .capture, format: Self.format, clocking: .realTime)
        let playout = try NullAudioDevice(direction: .playout, format: Self.format, clocking: .realTime)
        let call = try LiveCall(
            configuration: StreamTestSupport.configuration(seed: 3), transport: transport, capture: capture,
            playout: playout)
        let result = await call.stop(cause: .denied)
        #expect(result.cause == .denied && !result.wasEstablished)
        #expect(result.report.rtp.packetsSent == 0 && result.statistics.ticks == 0)
        #expect(throws: LiveCallError.self) { try call.start() }
    }

    @Test func devicesInDifferentFormatsAreRejected() async throws {
        let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
        defer { Task { await transport.close() } }
        let capture = try NullAudioDevice(direction: .capture, format: Self.format, clocking: .realTime)
        let playout = try NullAudioDevice(
            direction: .playout, format: AudioFormat(sampleRate: 48_000), clocking: .realTime)
        #expect {
            _ = try LiveCall(
                configuration: StreamTestSupport.configuration(seed: 3), transport: transport, capture: capture,
                playout: playout)
        } throws: { error in
            guard case LiveCallError.deviceMismatch(let reason) = error else { return false }
            return reason.contains("48000") || reason.contains("48 kHz") || reason.contains("48")
        }
        #expect(throws: LiveCallError.self) {
            _ = try LiveCall(
                configuration: StreamTestSupport.configuration(seed: 3), transport: transport, capture: playout,
                playout: capture)
        }
    }

    @Test func cryptoLinesAndBase64KeysGiveMatchingStreamKeys() throws {
        let ours = try LiveCallKeys.localAttribute(suite: .aesCM128HmacSHA1_80)
        let theirs = try LiveCallKeys.localAttribute(suite: .aesCM128HmacSHA1_80)
        #expect(ours.key != theirs.key)
        // The peer pastes our printed line; we take theirs as a base64 key.
        let pasted = try LiveCallKeys.remoteAttribute(line: "  " + ours.attributeLine + "\r\n", suite: .aeadAES128GCM)
        #expect(pasted.key == ours.key && pasted.suite == .aesCM128HmacSHA1_80)
        let base64 = Data(theirs.key.bytes).base64EncodedString()
        let fromFlag = try LiveCallKeys.remoteAttribute(suite: .aesCM128HmacSHA1_80, base64Key: base64)
        #expect(fromFlag.key == theirs.key)
        let keys = try LiveCallKeys.streamKeys(local: ours, remote: fromFlag)
        #expect(keys.localKey == ours.key && keys.remoteKey == theirs.key)
        let givenLocal = try LiveCallKeys.localAttribute(suite: .aesCM128HmacSHA1_80, base64Key: base64)
        #expect(givenLocal.key == theirs.key)

        #expect(throws: SDESError.self) {
            _ = try LiveCallKeys.remoteAttribute(suite: .aesCM128HmacSHA1_80, base64Key: "c2hvcnQ=")
        }
        #expect(throws: SDESError.self) {
            _ = try LiveCallKeys.remoteAttribute(suite: .aesCM128HmacSHA1_80, base64Key: "not base64!")
        }
        #expect(throws: SDESError.self) {
            _ = try LiveCallKeys.remoteAttribute(line: "a=rtpmap:111 opus/48000/2", suite: .aesCM128HmacSHA1_80)
        }
        let gcm = try LiveCallKeys.localAttribute(suite: .aeadAES128GCM)
        #expect(throws: SDESError.self) { _ = try LiveCallKeys.streamKeys(local: ours, remote: gcm) }
    }

    @Test func deviceNamesParse() {
        #expect(LiveDeviceName("null") == .null)
        #expect(LiveDeviceName("file:/tmp/x.wav") == .file("/tmp/x.wav"))
        #expect(LiveDeviceName("plughw:1,0") == .alsa("plughw:1,0"))
        #expect(throws: LiveCallError.self) {
            _ = try LiveDeviceName.openPair(microphone: .file("/nonexistent/mic.wav"), speaker: .null)
        }
    }
}
