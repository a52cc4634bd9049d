import Foundation
import Testing
import VoiceEngine
@testable import VoiceWebRTC
import VoiceTestSupport

let chromiumPath = "/usr/bin/chromium"
/// Real speech from the shared test set (outside the repository) when it is there, else the repository's own
/// speech-like vector (TestVectors/speech_like_48k.wav), so the test also runs on a fresh clone.
let speechPath: String = {
    let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    let shared = here.appendingPathComponent("../../../shared/testdata/speech/jfk_48k_mono.wav").standardizedFileURL
        .path
    if ProcessInfo.processInfo.environment["VOICEENGINE_WEBRTC_SPEECH"] == "vector"
        || !FileManager.default.fileExists(atPath: shared)
    {
        return here.appendingPathComponent("../../TestVectors/speech_like_48k.wav").standardizedFileURL.path
    }
    return shared
}()

/// Ends a peer process the test started: SIGTERM, `grace` to exit, then SIGKILL; waits by polling (Foundation's
/// `waitUntilExit` has hung in async tests while another `Process` ran).
func stopPeer(_ process: Process, grace: TimeInterval) {
    if process.isRunning { process.terminate() }
    let deadline = Date().addingTimeInterval(grace)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
}

/// Headless Chromium started by the test: fake microphone playing a WAV, the page from ``WebRTCDemoPage`` over
/// HTTP on loopback, killed (and waited for by polling) when the test ends.
final class ChromiumPeer: @unchecked Sendable {
    let process = Process()
    let profile: URL
    let log: URL

    init(url: String, audioFile: String) throws {
        profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voiceengine-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        log = profile.appendingPathComponent("chromium.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: chromiumPath)
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile.path)",
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            "--use-file-for-fake-audio-capture=\(audioFile)", "--autoplay-policy=no-user-gesture-required",
            "--allow-loopback-in-peer-connection", url
        ]
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    func stop() {
        stopPeer(process, grace: 5)
        try? FileManager.default.removeItem(at: profile)
    }
}

/// What the test collects from the call and the page (locked: the server's tasks and the call's thread write).
final class BrowserCallRecord: @unchecked Sendable {
    let lock = NSLock()
    var call: WebRTCAudioCall?
    var received: [Int16] = []
    var browserStats: [String: Double] = [:]
    var timing: [String: Double] = [:]
    var pageErrors: [String] = []
    var offerAt: Date?
    /// Trickle ICE: the server (to push the engine's candidates) and the candidates the page applied ("" is
    /// end-of-candidates).
    var server: WebRTCSignallingServer?
    var candidatesAdded: [String] = []
    /// Where the engine's speech source is (the call's thread only).
    var cursor = 0
}

/// Envelope similarity: the best normalized correlation, over every circular lag of `reference`, of the two
/// signals' 10 ms RMS envelopes (robust to codec phase changes; the browser loops its file).
func bestEnvelopeCorrelation(_ heard: ArraySlice<Int16>, _ reference: [Int16], block: Int = 480) -> Double {
    func envelope(_ s: some Collection<Int16>) -> [Double] {
        let a = Array(s)
        return stride(from: 0, to: a.count - block + 1, by: block).map { start in
            var e = 0.0
            for i in start..<start + block { e += Double(a[i]) * Double(a[i]) }
            return (e / Double(block)).squareRoot()
        }
    }
    let h = envelope(heard), r = envelope(reference)
    guard h.count > 50, r.count > h.count else { return 0 }
    let hm = h.reduce(0, +) / Double(h.count)
    let hd = h.map { $0 - hm }
    let hn = (hd.reduce(0) { $0 + $1 * $1 }).squareRoot()
    var best = -1.0
    for lag in 0..<r.count {
        let seg = (0..<h.count).map { r[($0 + lag) % r.count] }
        let sm = seg.reduce(0, +) / Double(seg.count)
        var dot = 0.0, sn = 0.0
        for i in 0..<h.count {
            let d = seg[i] - sm
            dot += hd[i] * d
            sn += d * d
        }
        if hn > 0, sn > 0 { best = max(best, dot / (hn * sn.squareRoot())) }
    }
    return best
}

/// Chromium to Chromium in one tab, the reference for the offer→first-audio figure: two peer connections, both with
/// the fake microphone, candidates limited to 127.0.0.1, the same measure as the demo page (createOffer() to the
/// offerer's first decoded inbound audio).
let chromiumToChromiumPage = #"""
    <!doctype html><html><body><script>
    "use strict";
    const loopbackOnly = (sdp) => sdp.split("\r\n").filter((l) => !l.startsWith("a=candidate:") || l.includes(" 127.0.0.1 ")).join("\r\n");
    async function gathered(pc) {
      await new Promise((resolve) => {
        if (pc.iceGatheringState === "complete") resolve();
        pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") resolve(); };
        setTimeout(resolve, 2000);
      });
    }
    (async () => {
      const ws = new WebSocket(`ws://${location.host}/ws`);
      await new Promise((resolve) => { ws.onopen = resolve; });
      const send = (o) => ws.send(JSON.stringify(o));
      try {
        const mic = await navigator.mediaDevices.getUserMedia({audio: true});
        const a = new RTCPeerConnection(), b = new RTCPeerConnection();
        mic.getTracks().forEach((t) => { a.addTrack(t, mic); b.addTrack(t.clone(), mic); });
        // Chromium decodes received audio only for a sink: play both sides, as the demo page does.
        for (const pc of [a, b]) pc.ontrack = (e) => { const el = new Audio(); el.srcObject = e.streams[0]; el.play(); };
        const started = performance.now();
        await a.setLocalDescription(await a.createOffer());
        await gathered(a);
        const gatheredAt = performance.now();
        const lines = a.localDescription.sdp.split("\r\n").filter((l) => l.startsWith("a=candidate:"));
        if (!lines.some((l) => l.includes(" 127.0.0.1 "))) throw new Error("no loopback candidate among: " + lines.join(" | "));
        setTimeout(() => send({type: "error", message: "no audio after 10 s; candidates: " + lines.join(" | ") + "; ice " + a.iceConnectionState}), 10000);
        await b.setRemoteDescription({type: "offer", sdp: loopbackOnly(a.localDescription.sdp)});
        await b.setLocalDescription(await b.createAnswer());
        await gathered(b);
        await a.setRemoteDescription({type: "answer", sdp: loopbackOnly(b.localDescription.sdp)});
        for (;;) {
          let samples = 0;
          (await a.getStats()).forEach((s) => { if (s.type === "inbound-rtp" && s.kind === "audio") samples = s.totalSamplesReceived || 0; });
          if (samples > 0) break;
          await new Promise((r) => setTimeout(r, 5));
        }
        send({type: "timing", offerToFirstAudioMs: performance.now() - started, gatheringMs: gatheredAt - started});
      } catch (e) { send({type: "error", message: String(e)}); }
    })();
    </script></body></html>
    """#

@Suite(
    "Headless Chromium calls the engine", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: chromiumPath),
        "chromium is not installed (make test-deps installs it)"),
    .enabled(
        if: FileManager.default.fileExists(atPath: speechPath),
        "no speech file (../shared/testdata/speech or TestVectors)"))
struct ChromiumInteropTests {
    @Test func engineAnswersAndSpeechArrivesBothWays() async throws { try await call(engineOffers: false) }

    @Test func engineOffersAndSpeechArrivesBothWays() async throws { try await call(engineOffers: true) }

    /// The offer's fingerprint altered in signalling: the engine must refuse Chromium's certificate with a typed error.
    @Test func aFingerprintThatDoesNotMatchChromiumEndsTheCall() async throws {
        try await call(engineOffers: false, tamperFingerprint: true)
    }

    /// The browser sends its offer before gathering (trickle): the ICE-lite engine needs no candidates from it.
    @Test func engineAnswersATrickledOffer() async throws { try await call(engineOffers: false, extraQuery: "trickle") }

    /// Trickle ICE of the engine's own candidates (RFC 8838/8840): the engine, a full agent, answers with no
    /// candidates, then sends its host candidate at once over the WebSocket and its srflx and relay candidates as a
    /// slow TURN server (coturn behind a proxy that delays every request by 1 s) answers, then end-of-candidates;
    /// Chromium trickles its own. The call must connect and carry speech on the host pair while relay gathering is
    /// still pending, and Chromium's `addIceCandidate` must take every candidate and the end.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: turnserverPath), "coturn is not installed"))
    func engineTricklesItsCandidatesAndConnectsBeforeRelayGatheringEnds() async throws {
        let coturn = try Coturn()
        defer { coturn.stop() }
        let proxy = try DelayingUDPProxy(
            to: TransportAddress("127.0.0.1", port: Coturn.port)!, delay: .milliseconds(1000))
        defer { proxy.stop() }
        let call = try await call(engineOffers: false, extraQuery: "trickle", trickleTURN: proxy.address)
        let trickled = call.trickled
        print(
            "engine trickled:",
            trickled.map {
                "\($0.candidate.map { "\($0.kind) \($0.host):\($0.port)" } ?? "end-of-candidates") at \(($0.at - call.startedAt).milliseconds) ms"
            },
            "gathering errors:", call.gatheringErrors)
        #expect(call.gatheringErrors.isEmpty, "\(call.gatheringErrors)")
        #expect(trickled.first?.candidate?.kind == .host, "the host candidate goes first, at once")
        #expect(trickled.last.map { $0.candidate == nil } == true, "end-of-candidates last")
        #expect(trickled.contains { $0.candidate?.kind == .srflx }, "the proxy's mapping is a srflx candidate")
        let relay = try #require(trickled.first { $0.candidate?.kind == .relay }, "no relay candidate trickled")
        let firstAudio = try #require(call.firstAudioAt)
        let firstMs = (firstAudio - call.startedAt).milliseconds, relayMs = (relay.at - call.startedAt).milliseconds
        #expect(
            firstAudio < relay.at,
            "media must flow on the host pair before the relay candidate was gathered (first packet \(firstMs) ms, relay \(relayMs) ms)"
        )
        #expect(call.transport?.remoteAddress.map { !(27500...27599).contains($0.port) } == true, "host pair selected")
    }

    /// Chromium allowed relayed candidates only, through coturn with TURN REST credentials: the engine must see
    /// every check and packet come from coturn's relay ports, and speech must still pass both ways.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: turnserverPath), "coturn is not installed"))
    func callForcedThroughCoturnRelay() async throws {
        let coturn = try Coturn()
        defer { coturn.stop() }
        let credentials = TURNCredentials.restAPI(secret: Coturn.secret, user: "chromium")
        let query =
            "turn=127.0.0.1:\(Coturn.port)&user=\(credentials.username)&pass="
            + (credentials.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        let call = try await call(engineOffers: false, extraQuery: query)
        let remote = try #require(call.transport?.remoteAddress)
        #expect(
            remote.host == "127.0.0.1" && (27500...27599).contains(remote.port),
            "media came from \(remote), not from coturn's relay ports 27500–27599")
    }

    /// One call: Chromium loads the page, the engine answers its offer (or offers), both send the speech file for
    /// 8 s; the engine's received audio must follow the file, the page must report the engine's audio.
    @discardableResult
    /// `trickleTURN`: the engine answers as a full agent trickling its candidates, gathered through this TURN
    /// server (coturn's secret); the page must apply all of them and the end.
    func call(
        engineOffers: Bool, extraQuery: String = "", tamperFingerprint: Bool = false,
        trickleTURN: TransportAddress? = nil
    ) async throws -> WebRTCAudioCall {
        let speech = try WAVFile(contentsOfFile: speechPath).int16Samples
        let certificate = try DTLSCertificate()
        let record = BrowserCallRecord()
        let server = try await WebRTCSignallingServer(page: WebRTCDemoPage.html) { text, connection in
            guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                let type = json["type"] as? String
            else { return [] }
            switch type {
            case "offer", "ready":
                var sdp = json["sdp"] as? String ?? ""
                if tamperFingerprint, let r = sdp.range(of: "a=fingerprint:sha-256 ") {
                    // Signalling that lies about the browser's certificate (a man in the middle would).
                    let byte = sdp.index(r.upperBound, offsetBy: 0)..<sdp.index(r.upperBound, offsetBy: 2)
                    sdp.replaceSubrange(byte, with: sdp[byte] == "00" ? "01" : "00")
                }
                do {
                    let capture: (inout AudioFrame) -> Void = { frame in
                        frame.withUnsafeMutableSamples { out in
                            for i in 0..<out.count { out[i] = speech[(record.cursor + i) % speech.count] }
                        }
                        record.cursor = (record.cursor + frame.samplesPerChannel) % speech.count
                    }
                    let playout: (AudioFrame) -> Void = { frame in
                        frame.withUnsafeSamples { s in record.lock.withLock { record.received += s } }
                    }
                    let turn = trickleTURN.map {
                        TURNServer(address: $0, credentials: .restAPI(secret: Coturn.secret, user: "engine"))
                    }
                    let call =
                        type == "ready"
                        ? try WebRTCAudioCall(offeringWith: certificate, capture: capture, playout: playout)
                        : try WebRTCAudioCall(
                            answering: sdp, certificate: certificate, fullICE: turn != nil,
                            trickle: turn != nil, turnServer: turn, capture: capture, playout: playout)
                    if turn != nil {
                        // In gathering order: one task sends what the transport thread yields.
                        let (messages, continuation) = AsyncStream.makeStream(of: String.self)
                        call.onLocalCandidate = { candidate in
                            let json = try! JSONSerialization.data(
                                withJSONObject: ["type": "candidate", "candidate": candidate?.sdpValue ?? ""])
                            continuation.yield(String(decoding: json, as: UTF8.self))
                            if candidate == nil { continuation.finish() }
                        }
                        Task {
                            for await message in messages {
                                await record.lock.withLock { record.server }?.send(message, to: connection)
                            }
                        }
                    }
                    record.lock.withLock {
                        record.call = call
                        record.offerAt = Date()
                    }
                    if type == "offer" { call.start() }
                    let reply = try JSONSerialization.data(
                        withJSONObject: ["type": type == "ready" ? "offer" : "answer", "sdp": call.localDescription])
                    return [String(decoding: reply, as: UTF8.self)]
                } catch {
                    record.lock.withLock { record.pageErrors.append("engine refused the offer: \(error)") }
                    return []
                }
            case "answer":
                do {
                    try record.lock.withLock { record.call }?.accept(answer: json["sdp"] as? String ?? "")
                } catch {
                    record.lock.withLock { record.pageErrors.append("engine refused the answer: \(error)") }
                }
            case "candidate":
                // Chromium's trickled candidates (an empty one is its end-of-candidates).
                let line = json["candidate"] as? String ?? ""
                let call = record.lock.withLock { record.call }
                if line.isEmpty {
                    call?.addRemoteCandidate(nil)
                } else if let c = ICECandidate(sdpValue: line) {
                    call?.addRemoteCandidate(c)
                }
            case "candidate-added":
                record.lock.withLock { record.candidatesAdded.append(json["candidate"] as? String ?? "?") }
            case "timing":
                record.lock.withLock {
                    for (k, v) in json { if let d = v as? Double { record.timing[k] = d } }
                }
            case "stats":
                record.lock.withLock {
                    for (k, v) in json {
                        if let d = v as? Double {
                            record.browserStats[k] = d
                        } else if let i = v as? Int {
                            record.browserStats[k] = Double(i)
                        }
                    }
                }
            case "error":
                record.lock.withLock { record.pageErrors.append(json["message"] as? String ?? text) }
            default: break
            }
            return []
        }
        record.lock.withLock { record.server = server }
        let chromium = try ChromiumPeer(
            url: "http://127.0.0.1:\(server.port)/?autocall&raw" + (engineOffers ? "&engineOffers" : "")
                + (extraQuery.isEmpty ? "" : "&" + extraQuery), audioFile: speechPath)
        defer { chromium.stop() }

        // Wait for 6 s of audio at the engine after its first packet, and the page's report of 6 s received.
        let deadline = Date().addingTimeInterval(40)
        while Date() < deadline {
            let done = record.lock.withLock {
                record.received.count > 48_000 * 8 && (record.browserStats["packetsReceived"] ?? 0) > 300
                    && (trickleTURN == nil || record.candidatesAdded.contains(""))
                    || !record.pageErrors.isEmpty || record.call?.failure != nil
            }
            if done { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let call = record.lock.withLock { record.call }
        call?.stop()
        await server.close()
        let log = (try? String(contentsOf: chromium.log, encoding: .utf8)) ?? ""
        let (received, stats, errors) = record.lock.withLock {
            (record.received, record.browserStats, record.pageErrors)
        }
        #expect(errors.isEmpty, "page: \(errors)")
        if trickleTURN != nil, let c = call {
            let added = record.lock.withLock { record.candidatesAdded }
            #expect(
                added == c.trickled.map { $0.candidate?.sdpValue ?? "" },
                "Chromium applied \(added), the engine trickled \(c.trickled.map { $0.candidate?.sdpValue ?? "" })")
        }
        let c = try #require(call, "Chromium sent no offer; its log ends:\n\(log.suffix(2000))")
        if tamperFingerprint {
            guard case .dtls(.fingerprintMismatch) = c.failure else {
                Issue.record(
                    "a wrong fingerprint must end the call with fingerprintMismatch, got \(String(describing: c.failure))"
                )
                return c
            }
            #expect(c.statistics == nil, "no media may flow without an authenticated peer")
            return c
        }
        #expect(c.failure == nil, "\(String(describing: c.failure))")
        let engineStats = try #require(
            c.statistics, "DTLS never completed (\(String(describing: c.transport?.received)))")
        // Engine side: Chromium's fake microphone (the speech file) decoded by the engine.
        #expect(engineStats.packetsReceived > 250, "engine received \(engineStats.packetsReceived) packets")
        let firstAudio = try #require(c.firstAudioAt)
        let decoded = c.firstDecodedAt.map { "\(($0 - c.startedAt).milliseconds) ms" } ?? "none"
        print(
            engineOffers ? "engine offered:" : "engine answered:",
            trickleTURN != nil
                ? "(trickling its candidates)" : extraQuery.isEmpty ? "" : "(?\(extraQuery.prefix(12))…)",
            "engine-side from the offer/answer exchange: DTLS up \(((c.connectedAt ?? firstAudio) - c.startedAt).milliseconds) ms,",
            "first packet \((firstAudio - c.startedAt).milliseconds) ms, first decoded frame \(decoded);",
            "page-side: \(record.lock.withLock { record.timing })")
        let skip = 48_000 * 2  // the stream's first blocks are silence while the jitter buffer fills
        let heard = received.count > skip + 48_000 * 4 ? received[skip...] : received[...]
        let correlation = bestEnvelopeCorrelation(heard, speech)
        print("engine heard the browser's speech: envelope correlation \(correlation) over \(heard.count / 48) ms")
        // A control that shares the file's level and spectrum but not its timing: the same speech reversed.
        let control = bestEnvelopeCorrelation(heard, Array(speech.reversed()))
        print("control (reversed speech): \(control)")
        #expect(
            correlation > 0.6 && correlation > control + 0.2,
            "engine's received audio does not follow the file Chromium played (\(correlation), control \(control))")
        // Browser side: what the engine sent, as the page's getStats saw it.
        print("browser inbound-rtp: \(stats)")
        #expect((stats["packetsReceived"] ?? 0) > 250)
        let samples = stats["totalSamplesReceived"] ?? 0, concealed = stats["concealedSamples"] ?? 0
        #expect(samples > 0 && concealed / samples < 0.05, "browser concealed \(concealed) of \(samples) samples")
        #expect(
            (stats["totalAudioEnergy"] ?? 0) > 0.01, "browser heard silence (energy \(stats["totalAudioEnergy"] ?? 0))")
        return c
    }

    /// The reference figure: Chromium to Chromium, measured the same way (no assertion on speed; the figure is printed).
    @Test func chromiumToChromiumReferenceTiming() async throws {
        let record = BrowserCallRecord()
        let server = try await WebRTCSignallingServer(page: chromiumToChromiumPage) { text, _ in
            guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                return []
            }
            record.lock.withLock {
                if json["type"] as? String == "error" { record.pageErrors.append(json["message"] as? String ?? text) }
                for (k, v) in json { if let d = v as? Double { record.timing[k] = d } }
            }
            return []
        }
        let chromium = try ChromiumPeer(url: "http://127.0.0.1:\(server.port)/", audioFile: speechPath)
        defer { chromium.stop() }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, record.lock.withLock({ record.timing.isEmpty && record.pageErrors.isEmpty }) {
            try await Task.sleep(for: .milliseconds(50))
        }
        await server.close()
        let (timing, errors) = record.lock.withLock { (record.timing, record.pageErrors) }
        #expect(errors.isEmpty, "page: \(errors)")
        print("Chromium to Chromium (one tab, loopback candidates): \(timing)")
        #expect((timing["offerToFirstAudioMs"] ?? 0) > 0, "no first audio reported")
    }
}

/// A UDP relay between the engine and a server that holds every datagram towards the server for `delay` (answers
/// pass at once): a slow TURN server. One client; runs on its own thread until ``stop()``.
final class DelayingUDPProxy: @unchecked Sendable {
    let front: DatagramSocket
    private let back: DatagramSocket
    private let server: TransportAddress
    private let delay: Duration
    private let lock = NSLock()
    private var running = true
    private var thread: Thread?
    var address: TransportAddress { front.localAddress }

    init(to server: TransportAddress, delay: Duration) throws {
        front = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        back = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        self.server = server
        self.delay = delay
        let thread = Thread { [self] in run() }
        self.thread = thread
        thread.start()
    }

    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buffer.deallocate() }
        var client: TransportAddress?
        var held: [(due: ContinuousClock.Instant, bytes: [UInt8])] = []
        while lock.withLock({ running }) {
            if let (n, from) = front.receive(into: buffer, timeoutMilliseconds: 2) {
                client = from
                held.append((.now + delay, Array(buffer[0..<n])))
            }
            if let (n, from) = back.receive(into: buffer, timeoutMilliseconds: 2), from == server, let client {
                front.send(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), to: client)
            }
            while let first = held.first, first.due <= .now {
                held.removeFirst()
                back.send(first.bytes, to: server)
            }
        }
    }

    func stop() {
        lock.withLock { running = false }
        while thread?.isFinished == false { Thread.sleep(forTimeInterval: 0.005) }
    }
}
