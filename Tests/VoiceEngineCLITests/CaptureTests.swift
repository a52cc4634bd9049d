import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `--capture` on `call`, `demo` and `simulate`: the pcapng opens in tshark, `rtp-dump`'s analysis finds exactly
/// the receivers' own RFC 3550 figures, and `replay` of a captured direction conceals what its live receiver did.
@Suite(.tags(.live, .cli), .scheduledByTags, .serialized) struct CaptureTests {
    static let speech = "TestVectors/speech_like_16k.wav"
    static let speechB = "TestVectors/speech_like_16k_b.wav"
    static var binary: URL? { CommandTestSupport.voiceEngineBinary }
    static let tshark: String? = ["/usr/bin/tshark", "/usr/local/bin/tshark"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Frames tshark reads from a capture, or nil when tshark is not installed (apt: tshark).
    static func tsharkFrameCount(_ path: String) throws -> Int? {
        guard let tshark else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tshark)
        process.arguments = ["-r", path, "-T", "fields", "-e", "frame.number"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return -1 }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").count
    }

    /// The figures of the capture's stream from `ssrc` must be the receiver's own.
    static func expectStatistics(
        _ stream: RTPCaptureAnalysis.Stream?, equal report: CallReport, jitterTolerance: Double,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let stream else {
            Issue.record("the stream is not in the capture", sourceLocation: sourceLocation)
            return
        }
        #expect(stream.expected == report.rtp.expected, sourceLocation: sourceLocation)
        #expect(stream.packets == report.rtp.received, sourceLocation: sourceLocation)
        #expect(stream.lost == report.rtp.lost, sourceLocation: sourceLocation)
        #expect(
            abs(stream.jitterMilliseconds - report.jitter.interarrivalMilliseconds) <= jitterTolerance,
            "jitter \(stream.jitterMilliseconds) vs the receiver's \(report.jitter.interarrivalMilliseconds)",
            sourceLocation: sourceLocation)
    }

    @Test(
        "call --capture on both sides of a two-process SRTP call: tshark reads it, rtp-dump finds the receiver's figures, replay conceals what the live receiver did",
        .enabled(
            if: binary != nil && FileManager.default.fileExists(atPath: speech),
            "voice-engine binary or TestVectors/speech_like_16k.wav missing"),
        .timeLimit(.minutes(1)))
    func liveCallCapture() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let listenerKey = SRTPMasterKey.random(for: .aesCM128HmacSHA1_80)
        let callerKey = SRTPMasterKey.random(for: .aesCM128HmacSHA1_80)
        let b64 = { (key: SRTPMasterKey) in Data(key.bytes).base64EncodedString() }
        let port = CallCommandTests.freePort()
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let listener = try CallCommandTests.Child([
            "call", "--listen", "\(port)", "--bind", "127.0.0.1", "--mic", "file:\(Self.speech)",
            "--speaker", "file:\(path("listener.wav"))", "--duration", "5", "--report", path("listener.json"),
            "--local-key", b64(listenerKey), "--remote-key", b64(callerKey), "--no-voice-processing",
            "--capture", path("listener.pcapng")
        ])
        usleep(200_000)
        let caller = try CallCommandTests.Child([
            "call", "--connect", "127.0.0.1:\(port)", "--bind", "127.0.0.1", "--mic", "file:\(Self.speechB)",
            "--speaker", "file:\(path("caller.wav"))", "--duration", "3", "--report", path("caller.json"),
            "--local-key", b64(callerKey), "--remote-key", b64(listenerKey), "--no-voice-processing",
            "--capture", path("caller.pcapng")
        ])
        let deadline = Date().addingTimeInterval(20)
        let callerEnd = caller.wait(until: deadline)
        let listenerEnd = listener.wait(until: deadline)
        for (name, end) in [("listener", listenerEnd), ("caller", callerEnd)] {
            #expect(!end.killed && end.status == 0, "\(name): \(end.output)")
        }
        guard listenerEnd.status == 0, callerEnd.status == 0 else { return }

        for (name, end) in [("listener", listenerEnd), ("caller", callerEnd)] {
            // "capture: N datagrams written to PATH"
            let line = try #require(end.output.split(separator: "\n").first { $0.hasPrefix("capture: ") })
            let written = Int(line.split(separator: " ")[1])
            #expect(written != nil && written! > 200, "\(line)")
            #expect(!line.contains("not recorded"), "\(line)")
            if let frames = try Self.tsharkFrameCount(path("\(name).pcapng")) {
                #expect(frames == written, "tshark reads every datagram of \(name)'s capture")
            }
        }
        let liveReport = try JSONDecoder().decode(
            CallReport.self, from: Data(contentsOf: URL(fileURLWithPath: path("listener.json"))))
        // "media thread: N ticks (M late), …"
        let lateTicks =
            listenerEnd.output.split(separator: "\n").first { $0.hasPrefix("media thread:") }
            .flatMap { line in line.split(separator: "(").dropFirst().first?.split(separator: " ").first }
            .flatMap { Int($0) } ?? 0

        // The listener's capture holds both directions; the caller's key authenticates the caller's stream only.
        let analysis = try RTPCaptureAnalysis(
            contentsOfFile: path("listener.pcapng"), srtp: (.aesCM128HmacSHA1_80, callerKey))
        #expect(analysis.streams.count == 2)
        let received = analysis.streams.first { $0.authenticated > 0 }
        let sent = analysis.streams.first { $0.authenticated == 0 }
        #expect(received?.authenticationFailures == 0 && sent?.authenticationFailures == sent?.packetsInCapture)
        // Same arrival stamps as the receiver's: the RFC 3550 figures agree (jitter up to the RTP-tick rounding
        // of a different time base).
        Self.expectStatistics(received, equal: liveReport, jitterTolerance: 0.05)

        let bytes = try PcapReader.readFile(path("listener.pcapng"))
        let replay = try CaptureReplay.run(
            capture: bytes, options: .init(srtp: (.aesCM128HmacSHA1_80, callerKey), sampleRate: 16_000))
        #expect(replay.ssrc == received?.ssrc, "the stream the key authenticates")
        #expect(replay.statistics.receivedPackets == liveReport.rtp.received)
        #expect(replay.statistics.lostPackets == liveReport.rtp.lost)
        let live = liveReport.jitterBuffer.concealmentRatio * 100
        let replayed = replay.report.jitterBuffer.concealmentRatio * 100
        // A late media-thread tick can conceal a block the replay (fed the same arrivals) does not.
        let allowance = 1.0 + Double(lateTicks) * 10 / (liveReport.durationSeconds * 1000) * 100
        print("live call: concealed \(live) %, replay \(replayed) %, late ticks \(lateTicks)")
        #expect(abs(replayed - live) <= allowance, "replay conceals \(replayed) %, the live receiver \(live) %")

        // The other direction's key: replay says which SSRC that key authenticates instead of decoding nothing.
        #expect {
            _ = try CaptureReplay.run(
                capture: bytes,
                options: .init(srtp: (.aesCM128HmacSHA1_80, listenerKey), ssrc: received?.ssrc, sampleRate: 16_000))
        } throws: { error in
            guard case .keyDoesNotAuthenticate(let ssrc, _, let authenticated) = error as? CaptureReplayError else {
                return false
            }
            return ssrc == received?.ssrc && authenticated.map(\.ssrc) == [sent?.ssrc].compactMap { $0 }
        }
    }

    @Test(
        "demo --capture: each direction's RFC 3550 figures are the receiver's, and replay conceals what it did",
        .enabled(
            if: FileManager.default.fileExists(atPath: speech) && FileManager.default.fileExists(atPath: speechB),
            "TestVectors speech missing"),
        arguments: [SRTPCryptoSuite.aesCM128HmacSHA1_80, nil] as [SRTPCryptoSuite?])
    func demoCapture(suite: SRTPCryptoSuite?) async throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = dir.appendingPathComponent("demo.pcapng").path
        let outcome = try await DemoCall.run(
            .init(
                inputA: Self.speech, inputB: Self.speechB, durationSeconds: 6, outputDirectory: dir.path,
                srtpSuite: suite, capturePath: capture))
        #expect(outcome.files.capture == capture)
        let analysis = try RTPCaptureAnalysis(contentsOfFile: capture)
        let receiverOf = [
            outcome.report.configuration.endpointA: outcome.report.a,
            outcome.report.configuration.endpointB: outcome.report.b
        ]
        #expect(analysis.streams.count == 2)
        for stream in analysis.streams {
            let destination = try #require(analysis.packets.first { $0.ssrc == stream.ssrc && $0.kind == .rtp })
                .destination.description
            let report = try #require(receiverOf[destination], "\(destination) is A or B")
            #expect(report.rtp.lost > 0, "the wifi profile loses packets")
            Self.expectStatistics(stream, equal: report, jitterTolerance: 0.05)
            guard suite == nil else { continue }
            // Plain RTP: replay each direction and compare with its live receiver.
            let replay = try CaptureReplay.run(
                capture: try PcapReader.readFile(capture), options: .init(ssrc: stream.ssrc, sampleRate: 16_000))
            #expect(replay.statistics.receivedPackets == report.rtp.received)
            let live = report.jitterBuffer.concealmentRatio * 100
            let replayed = replay.report.jitterBuffer.concealmentRatio * 100
            print("demo \(destination): concealed live \(live) %, replay \(replayed) %")
            #expect(abs(replayed - live) <= 1.0, "replay conceals \(replayed) %, the live receiver \(live) %")
        }
        if let frames = try Self.tsharkFrameCount(capture) { #expect(frames == analysis.datagrams) }
    }

    @Test(
        "simulate --capture: the receiver's figures, and replay of the plain-RTP capture",
        .enabled(if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing"))
    func simulateCapture() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = dir.appendingPathComponent("simulate.pcapng").path
        let file = try WAVFile.read(path: Self.speech)
        let conditions = NetworkConditions(
            baseDelayMilliseconds: 40, jitter: .normal(meanMilliseconds: 10, standardDeviationMilliseconds: 10),
            loss: .bernoulli(probability: 0.03), seed: 7)
        let result = try OneWaySimulation.run(
            input: file.int16Samples, sampleRate: 16_000,
            options: .init(network: .conditions(conditions), srtpSuite: nil, capturePath: capture))
        let analysis = try RTPCaptureAnalysis(contentsOfFile: capture)
        #expect(analysis.streams.count == 1)
        #expect(analysis.packets.contains { $0.kind == .rtcp }, "the receiver's RTCP back to the sender")
        Self.expectStatistics(analysis.streams.first, equal: result.receiverReport, jitterTolerance: 0.05)
        let replay = try CaptureReplay.run(
            capture: try PcapReader.readFile(capture), options: .init(sampleRate: 16_000))
        let live = result.receiverReport.jitterBuffer.concealmentRatio * 100
        let replayed = replay.report.jitterBuffer.concealmentRatio * 100
        print("simulate: concealed live \(live) %, replay \(replayed) %")
        #expect(abs(replayed - live) <= 1.0)
    }

    @Test(
        "an unwritable --capture path fails before the call starts, with one error line",
        .enabled(if: binary != nil && FileManager.default.fileExists(atPath: speech), "voice-engine or speech missing"),
        .timeLimit(.minutes(1)))
    func unwritableCapturePathFailsFirst() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = "/nonexistent-\(UUID().uuidString)/call.pcapng"
        let runs: [[String]] = [
            ["demo", "--out", dir.appendingPathComponent("demo").path, "--capture", bad],
            ["simulate", "--input", Self.speech, "--out", dir.appendingPathComponent("s.wav").path, "--capture", bad],
            [
                "call", "--listen", "0", "--bind", "127.0.0.1", "--mic", "null", "--speaker", "null", "--no-srtp",
                "--duration", "30", "--capture", bad
            ]
        ]
        for arguments in runs {
            let started = Date()
            let end = try CallCommandTests.Child(arguments).wait(until: Date().addingTimeInterval(20))
            #expect(!end.killed && end.status != 0, "\(arguments[0]): \(end.output)")
            #expect(end.output.contains(bad) && end.output.contains("No such file or directory"), "\(end.output)")
            #expect(Date().timeIntervalSince(started) < 10, "\(arguments[0]) failed only after working")
            #expect(!end.output.contains("listening on") && !end.output.contains("progress"), "\(end.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("demo").path))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("s.wav").path))
    }
}
