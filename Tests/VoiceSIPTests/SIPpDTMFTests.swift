import Foundation
import NIOCore
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// SIPp plays Debian's packaged RFC 2833 DTMF captures (sip-tester's dtmf_2833_*.pcap) into an engine that answers
/// its call: every key is reported once, in order, whatever the captures' end-packet retransmissions
/// (Peers/sipp/uac-dtmf-2833.xml). SIPp sends captures through a raw socket, so the test needs root. Ports
/// 25150–25159 are this suite's.
@Suite(
    "SIPp RFC 2833 DTMF captures", .tags(.interop, .live, .root), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: sippPath)
            && FileManager.default.fileExists(atPath: "/usr/share/sip-tester/dtmf_2833_1.pcap"),
        "sipp or its DTMF captures are not installed (make test-deps installs sip-tester)"))
struct SIPpDTMFTests {
    @Test func capturedKeysAreReportedOnceEachInOrder() async throws {
        guard getuid() == 0 else { try Test.cancel("SIPp plays captures through a raw socket: needs root") }
        try await withEventLoop { loop in
            let (agent, _) = try await makeAgent("voiceengine", on: loop)
            let local = try #require(await agent.endpoint.localAddress(.udp))
            let directory = try makeTemporaryDirectory("sipp-dtmf")
            defer { try? FileManager.default.removeItem(at: directory) }
            let sipp = try PeerProcess(
                name: "sipp", executable: sippPath,
                arguments: [
                    "-sf", peersDirectory.appendingPathComponent("sipp/uac-dtmf-2833.xml").path, "-i", "127.0.0.1",
                    "-p", "25150", "-mp", "25152", "-m", "1", "-timeout", "20s", "-timeout_error", "-nostdin", "-s",
                    "voiceengine", "-trace_err", "-error_file", directory.appendingPathComponent("errors.log").path,
                    "127.0.0.1:\(local.port ?? 0)"
                ],
                directory: directory)
            defer { sipp.stop() }

            var incoming = agent.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let log = CallEventLog(call)
            let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
            var capabilities = AudioCapabilities(
                address: "127.0.0.1", port: Int(transport.localEndpoint.port), srtp: .optional([.aesCM128HmacSHA1_80]))
            capabilities.telephoneEventPayloadType = 101
            let negotiated = try await call.answer(with: capabilities)
            #expect(negotiated.telephoneEventPayloadType == 101 && negotiated.srtp == nil)
            try transport.setRemote(negotiated: negotiated)
            let (live, keys) = try KeyLog.startCall(negotiated: negotiated, transport: transport)

            let end = try await log.ended()
            #expect(end.cause == .remoteHangup)
            try await Task.sleep(for: .milliseconds(50))
            _ = await live.stop(cause: .remoteHangup)
            #expect(keys.text == "123456789*#", "SIPp: \(sipp.logTail)")
            let status = await sipp.waitForExit(timeout: .seconds(5))
            let errors =
                (try? String(contentsOf: directory.appendingPathComponent("errors.log"), encoding: .utf8)) ?? ""
            #expect(status == 0, "SIPp: \(errors.suffix(1500))\n\(sipp.logTail)")
        }
    }
}

/// Keys reported by a call's events, in order (appended from the event task, read by the test).
final class KeyLog: @unchecked Sendable {
    private let lock = NSLock()
    private var keys = ""
    func append(_ digit: DTMFDigit) { lock.withLock { keys.append(digit.character) } }
    var text: String { lock.withLock { keys } }

    /// Starts a live call on null devices (16 kHz, real-time clocking) whose received keys this log collects
    /// (also those heard as tones in the audio with `detectsInBandDTMF`).
    static func startCall(
        negotiated: NegotiatedAudio, transport: UDPMediaTransport, detectsInBandDTMF: Bool = false
    ) throws -> (LiveCall, KeyLog) {
        let format = AudioFormat(sampleRate: 16_000)
        var configuration = MediaStreamConfiguration(negotiated: negotiated, deviceFormat: format)
        configuration.detectsInBandDTMF = detectsInBandDTMF
        let live = try LiveCall(
            configuration: configuration,
            transport: transport,
            capture: NullAudioDevice(direction: .capture, format: format, clocking: .realTime),
            playout: NullAudioDevice(direction: .playout, format: format, clocking: .realTime))
        let keys = KeyLog()
        let events = live.events
        Task { for await event in events { if case .dtmfReceived(let digit) = event { keys.append(digit) } } }
        try live.start()
        return (live, keys)
    }
}
