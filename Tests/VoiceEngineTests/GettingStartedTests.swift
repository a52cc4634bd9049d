import Foundation
import Synchronization
import Testing
import VoiceEngine
import VoiceTestSupport

// The media loop of the GettingStarted article, copied verbatim (GettingStartedTests checks that it is).
func runMediaLoop(
    stream: MediaStream, transport: UDPMediaTransport, microphoneWAV: String, speakerWAV: String, seconds: Double
) throws {
    let clock = MonotonicClock()
    let format = stream.configuration.deviceFormat
    let microphone = try WAVFile.read(path: microphoneWAV).int16Samples  // mono, at format.sampleRate
    let block = format.samplesPerBlock
    var captured = AudioFrame(format: format)  // both frames are made once and filled in place
    var played = AudioFrame(format: format)
    var heard: [Int16] = []
    heard.reserveCapacity(Int(seconds * 100) * block)
    var deadline = clock.now
    for tick in 0..<Int(seconds * 100) {
        // 1. The network: every datagram the transport queued since the last tick.
        for kind in [MediaPacketKind.rtp, .rtcp] {
            while transport.withNextPacket(kind, { stream.receiveDatagram($0.bytes, arrival: $0.arrival) }) != nil {}
        }
        // 2. 10 ms of microphone into the send chain (out through the transport, the stream's sink).
        let start = tick * block % (microphone.count - block)
        captured.withUnsafeMutableSamples { _ = $0.update(fromContentsOf: microphone[start..<(start + block)]) }
        stream.processCapture(captured, now: clock.now)
        // 3. 10 ms for the speaker from the receive chain.
        stream.renderPlayout(into: &played, now: clock.now)
        played.withUnsafeSamples { heard.append(contentsOf: $0) }
        // 4. RTCP when its interval is due.
        _ = stream.pollRTCP(now: clock.now)
        // Absolute deadlines: a late tick does not push every later one back.
        deadline = deadline + .milliseconds(10)
        let wait = deadline - clock.now
        if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }
    }
    try WAVFile.write(pcm16: heard, format: format, to: speakerWAV)
}

/// The article's media loop compiles and carries a call: two streams calling each other over loopback UDP with
/// SRTP, each driven by `runMediaLoop` on its own thread for 2.5 s, each writing what it heard.
@Suite(.tags(.live), .scheduledByTags) struct GettingStartedTests {
    /// One side of the call, handed to its thread.
    struct Leg: @unchecked Sendable {
        // @unchecked Sendable: each leg's stream is used by its own thread only, and read again after that
        // thread has finished.
        let stream: MediaStream
        let transport: UDPMediaTransport
        let out: String
    }

    static let speech = "TestVectors/speech_like_16k.wav"

    @Test("the article's media loop is the one this test runs")
    func articleHoldsThisLoop() throws {
        let article = try String(
            contentsOfFile: "Sources/VoiceEngine/VoiceEngine.docc/GettingStarted.md", encoding: .utf8)
        let test = try String(contentsOfFile: #filePath, encoding: .utf8)
        let loop = try #require(article.range(of: "func runMediaLoop(").map { article[$0.lowerBound...] })
        let body = String(loop[..<(loop.range(of: "\n}\n")!.upperBound)])
        #expect(test.contains(body))
    }

    @Test(
        "two streams driven by the article's loop hear each other",
        .enabled(if: FileManager.default.fileExists(atPath: speech), "TestVectors missing"), .timeLimit(.minutes(1)))
    func articleLoopCarriesACall() async throws {
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try await UDPMediaTransport.bind(host: "127.0.0.1")
        let b = try await UDPMediaTransport.bind(host: "127.0.0.1", remote: a.localEndpoint)
        a.setRemote(b.localEndpoint)
        let keyA = SRTPMasterKey.random(for: .aesCM128HmacSHA1_80)
        let keyB = SRTPMasterKey.random(for: .aesCM128HmacSHA1_80)
        func configuration(_ local: SRTPMasterKey, _ remote: SRTPMasterKey) -> MediaStreamConfiguration {
            MediaStreamConfiguration(
                deviceFormat: .mono16k,
                srtp: MediaStreamSRTP(suite: .aesCM128HmacSHA1_80, localKey: local, remoteKey: remote))
        }
        let streamA = try MediaStream(configuration: configuration(keyA, keyB), sink: a, now: MonotonicClock().now)
        let streamB = try MediaStream(configuration: configuration(keyB, keyA), sink: b, now: MonotonicClock().now)
        let heardA = dir.appendingPathComponent("a.wav").path
        let heardB = dir.appendingPathComponent("b.wav").path
        let failures = Mutex<[String]>([])
        let threads = [Leg(stream: streamA, transport: a, out: heardA), Leg(stream: streamB, transport: b, out: heardB)]
            .map { leg in
                let thread = Thread {
                    do {
                        try runMediaLoop(
                            stream: leg.stream, transport: leg.transport, microphoneWAV: Self.speech,
                            speakerWAV: leg.out,
                            seconds: 2.5)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                thread.start()
                return thread
            }
        while threads.contains(where: { !$0.isFinished }) { try await Task.sleep(for: .milliseconds(20)) }
        await a.close()
        await b.close()
        #expect(failures.withLock { $0 }.isEmpty)
        for (stream, out) in [(streamA, heardA), (streamB, heardB)] {
            #expect(stream.statistics.packetsReceived > 50, "received \(stream.statistics.packetsReceived)")
            #expect(stream.statistics.drops.authenticationFailed == 0)
            let heard = try WAVFile.read(path: out).int16Samples
            #expect(heard.count == 250 * 160)
            // The input talks for 0.75 s, pauses until 1.5 s, then talks again at about -37 dBFS.
            #expect(StreamTestSupport.level(heard[...]) > -50, "\(out) is (near) silent")
            #expect(StreamTestSupport.level(heard[(1_600 * 10)...]) > -50, "\(out) fell silent after the pause")
        }
    }
}
