import Foundation
import NIOCore
import Testing
import VoiceCore
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// DTMF both ways with baresip (Debian's, v1.0): the engine calls it, each side sends keys while the call runs, and
/// each reports the other's in order — the engine's as `LiveCallEvent.dtmfReceived`, baresip's as the
/// `CALL_DTMF_START` events its `ctrl_tcp` module sends (which is also how baresip is told to send, `sndcode`).
/// baresip offers and answers only `telephone-event/8000`, beside Opus too. Ports 25160–25169 are this suite's.
@Suite(
    "baresip DTMF", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct BaresipDTMFTests {
    @Test func keysGoBothWaysAsTelephoneEvents() async throws {
        let directory = try makeTemporaryDirectory("baresip-dtmf")
        defer { try? FileManager.default.removeItem(at: directory) }
        let silence = directory.appendingPathComponent("silence.wav").path
        try WAVFile.write(
            pcm16: [Int16](repeating: 0, count: 16_000 * 40), format: AudioFormat(sampleRate: 16_000), to: silence)
        let arguments = try BaresipPeer.configure(
            directory: directory, port: 25160, microphone: silence, controlPort: 25162)
        let baresip = try PeerProcess(
            name: "baresip", executable: BaresipPeer.executable, arguments: arguments, directory: directory)
        defer { baresip.stop() }
        guard await waitUntilUDPPortBound(25160), baresip.isRunning else {
            try Test.cancel("baresip did not start:\n\(baresip.logTail)")
        }
        let control = try BaresipControl(port: 25162)
        defer { control.close() }

        try await withEventLoop { loop in
            let (agent, _) = try await makeAgent("engine", on: loop)
            let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
            let capabilities = AudioCapabilities(address: "127.0.0.1", port: Int(transport.localEndpoint.port))
            let call = try await agent.call(
                SIPURI(user: "b", host: "127.0.0.1", port: 25160), offering: capabilities)
            let log = CallEventLog(call)
            let negotiated = try await log.established()
            #expect(negotiated.telephoneEventClockRate == 8_000, "\(negotiated)")
            try transport.setRemote(negotiated: negotiated)
            let (live, heard) = try KeyLog.startCall(negotiated: negotiated, transport: transport)
            try await Task.sleep(for: .milliseconds(500))

            try live.sendDTMF("159*#D")
            try control.send(command: "sndcode", parameters: "2580")
            let deadline = ContinuousClock.now + .seconds(6)
            while ContinuousClock.now < deadline, heard.text.count < 4 || control.dtmfKeys.count < 6 {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(heard.text == "2580", "baresip's log:\n\(baresip.logTail)")
            #expect(control.dtmfKeys == "159*#D", "baresip's events: \(control.received.suffix(2000))")
            await call.hangUp()
            _ = await live.stop()
            try await agent.endpoint.close()
        }
    }
}

/// baresip's `ctrl_tcp`: netstring-framed JSON both ways; commands out, its events and responses in.
final class BaresipControl: @unchecked Sendable {
    private let socket: Int32
    private let lock = NSLock()
    private var text = ""

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var connected = false
        for _ in 0..<50 where !connected {
            connected =
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                } == 0
            if !connected { usleep(100_000) }
        }
        guard connected else {
            Glibc.close(socket)
            throw SIPCallError("baresip's ctrl_tcp did not accept a connection on \(port)")
        }
        let fd = socket
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { return }
                let chunk = String(decoding: buffer[0..<n], as: UTF8.self)
                lock.withLock { text += chunk }
            }
        }
    }

    func send(command: String, parameters: String) throws {
        let json = #"{"command":"\#(command)","params":"\#(parameters)","token":"dtmf"}"#
        let frame = Array("\(json.utf8.count):\(json),".utf8)
        guard write(socket, frame, frame.count) == frame.count else { throw SIPCallError("ctrl_tcp write failed") }
    }

    /// Everything baresip sent so far.
    var received: String { lock.withLock { text } }

    /// The keys of its `CALL_DTMF_START` events, in order.
    var dtmfKeys: String {
        var keys = ""
        for event in received.split(separator: "{").map(String.init) where event.contains("CALL_DTMF_START") {
            guard let range = event.range(of: #""param":""#), let key = event[range.upperBound...].first else {
                continue
            }
            keys.append(key)
        }
        return keys
    }

    func close() {
        Glibc.shutdown(socket, Int32(SHUT_RDWR))
        Glibc.close(socket)
    }
}
