import ArgumentParser
import Foundation
import VoiceEngine
import VoiceWebRTC

/// `voice-engine webrtc-demo`: serves the WebRTC page so a person can open it in a browser and talk to the engine,
/// which echoes back what it hears (through Opus, DTLS-SRTP and its jitter buffer both ways).
/// Prints one line and flushes it at once, even into a file or pipe: each line is news for whoever watches.
private func announce(_ line: String) {
    print(line)
    fflush(nil)
}

struct WebRTCDemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webrtc-demo",
        abstract: "Serve a page on which a browser calls the engine over WebRTC; the engine echoes the caller's voice.",
        discussion: """
            Open the printed URL and press "Call the engine": the browser's microphone goes to the engine over \
            ICE (the engine is an ICE-lite agent with one host candidate on --host), DTLS-SRTP and Opus, and comes \
            back about half a second later. Browsers allow the microphone on http:// only for localhost, so use \
            the default --host unless the page is reached through a tunnel.
            """)

    @Option(help: "Address to serve the page on and to take media on (a numeric IPv4 or IPv6 address).")
    var host = "127.0.0.1"

    @Option(help: "TCP port of the page (0: any free one).")
    var port = 0

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    func validate() throws {
        try OptionRange("--port", 0...65_535, "").check(port)
        try OptionRange("--seconds", 0.1...86_400, "seconds").check(seconds)
        guard TransportAddress(host, port: 0) != nil else {
            throw ValidationError("--host '\(host)' is not a numeric IPv4 or IPv6 address")
        }
    }

    func run() throws {
        let certificate = try DTLSCertificate()
        let host = host
        let calls = CallList()
        let ready = DispatchSemaphore(value: 0)
        let started = StartResult()
        Task {
            do {
                let server = try await WebRTCSignallingServer(host: host, port: port, page: WebRTCDemoPage.html) {
                    text, connection in
                    guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                        return []
                    }
                    if json["type"] as? String == "stats" {
                        // Once per call: tell the person at the terminal that the echo reaches the browser.
                        let packets = (json["packetsReceived"] as? Int) ?? 0
                        let energy = (json["totalAudioEnergy"] as? Double) ?? 0
                        if packets >= 50, energy > 0, calls.announce(connection) {
                            announce(
                                "call: the browser receives the engine's echo (\(packets) packets, audio energy \(energy))"
                            )
                        }
                        return []
                    }
                    guard json["type"] as? String == "offer", let sdp = json["sdp"] as? String else { return [] }
                    do {
                        let echo = EchoLine()
                        let call = try WebRTCAudioCall(
                            answering: sdp, certificate: certificate, host: host,
                            capture: { echo.take(into: &$0) }, playout: { echo.put($0) })
                        call.start()
                        calls.add(call)
                        announce(
                            "call: answered an offer; media on \(call.transport?.socket.localAddress.description ?? "?")"
                        )
                        let reply = try JSONSerialization.data(withJSONObject: [
                            "type": "answer", "sdp": call.localDescription
                        ])
                        return [String(decoding: reply, as: UTF8.self)]
                    } catch {
                        announce("call: refused an offer: \(error)")
                        return []
                    }
                }
                started.set(.success(server.port))
            } catch {
                started.set(.failure(error))
            }
            ready.signal()
        }
        ready.wait()
        let bound = try started.get()
        let shown = host.contains(":") ? "[\(host)]" : host
        announce("Open http://\(shown):\(bound)/ in a browser and press \"Call the engine\" (Ctrl-C to stop).")
        let end = seconds.map { Date().addingTimeInterval($0) } ?? .distantFuture
        while Date() < end { Thread.sleep(forTimeInterval: 0.2) }
        calls.stopAll()
    }
}

/// The demo's echo: what the engine plays out is what it captures next (one call's thread only).
private final class EchoLine: @unchecked Sendable {
    private var samples: [Int16] = []
    private var start = 0
    func put(_ frame: AudioFrame) { frame.withUnsafeSamples { samples += $0 } }
    func take(into frame: inout AudioFrame) {
        let n = frame.samplesPerChannel
        frame.withUnsafeMutableSamples { out in
            for i in 0..<out.count { out[i] = start + i < samples.count ? samples[start + i] : 0 }
        }
        start = min(start + n, samples.count)
        if start > 48_000 {
            samples.removeFirst(start)
            start = 0
        }
    }
}

private final class CallList: @unchecked Sendable {
    private let lock = NSLock()
    private var calls: [WebRTCAudioCall] = []
    private var announced: Set<Int> = []
    /// True the first time for a connection.
    func announce(_ connection: Int) -> Bool { lock.withLock { announced.insert(connection).inserted } }
    func add(_ call: WebRTCAudioCall) { lock.withLock { calls.append(call) } }
    func stopAll() { lock.withLock { calls.forEach { $0.stop() } } }
}

private final class StartResult: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<Int, any Error> = .failure(CancellationError())
    func set(_ r: Result<Int, any Error>) { lock.withLock { result = r } }
    func get() throws -> Int { try lock.withLock { result }.get() }
}
