import VoiceEngine

/// The engine's side of a call with a browser: answers its offer (ICE-lite, DTLS client, one Opus audio line),
/// and once DTLS is up runs a ``MediaStream`` keyed by DTLS on the transport's thread — each 10 ms it takes one
/// block from `capture` (what the engine sends) and gives one to `playout` (what it received).
///
/// Threads: `capture`, `playout` and every stream call run on the transport's one thread.
public final class WebRTCAudioCall: @unchecked Sendable {
    public let answer: String
    public let transport: WebRTCTransport
    public let negotiated: NegotiatedAudio
    private let capture: (inout AudioFrame) -> Void
    private let playout: (AudioFrame) -> Void
    private let clock = MonotonicClock()
    private var stream: MediaStream?
    private var captureFrame = AudioFrame(format: .mono48k)
    private var playoutFrame = AudioFrame(format: .mono48k)
    /// Set on the transport thread: the DTLS failure, or a stream that could not start.
    public private(set) var failure: String?
    /// When DTLS completed and when the first packet from the browser was decoded (for offer→audio figures).
    public private(set) var connectedAt: MediaTime?
    public private(set) var firstAudioAt: MediaTime?
    public let startedAt: MediaTime

    /// - Parameters:
    ///   - offer: the browser's SDP offer.
    ///   - certificate: the engine's DTLS identity.
    ///   - host: the address to bind and announce (a host candidate), loopback by default.
    public init(offer text: String, certificate: DTLSCertificate, host: String = "127.0.0.1",
                capture: @escaping (inout AudioFrame) -> Void, playout: @escaping (AudioFrame) -> Void) throws {
        startedAt = clock.now
        let offer = try WebRTCSessionDescription(parsing: text)
        guard let bind = TransportAddress(host, port: 0) else { throw WebRTCSDPError.badAttribute("host", reason: host) }
        let socket = try DatagramSocket(bind: bind)
        let localICE = ICECredentials.random()
        let candidate = ICECandidate(foundation: "1", priority: ICECandidate.priority(kind: .host),
                                     host: socket.localAddress.host, port: socket.localAddress.port, kind: .host)
        let capabilities = AudioCapabilities(address: socket.localAddress.host, port: Int(socket.localAddress.port))
        let (answer, negotiated, role) = try WebRTCSessionDescription.answer(
            to: offer, localCapabilities: capabilities,
            local: WebRTCLocalParameters(ice: localICE, fingerprint: certificate.fingerprint, candidates: [candidate]))
        self.answer = answer
        self.negotiated = negotiated
        self.capture = capture
        self.playout = playout
        transport = WebRTCTransport(
            socket: socket, ice: .liteControlled(ICELiteAgent(local: localICE, remote: offer.transport.ice)),
            dtls: try DTLSSRTPAssociation(certificate: certificate, role: role, remoteFingerprint: offer.transport.fingerprint))
        transport.onConnected = { [unowned self] result in connected(result) }
        transport.onSRTP = { [unowned self] datagram, now in
            guard let stream else { return }
            stream.receiveDatagram(UnsafeRawBufferPointer(datagram), arrival: now)
            if firstAudioAt == nil, stream.statistics.packetsReceived > 0 { firstAudioAt = now }
        }
        transport.onTick = { [unowned self] now in tick(now) }
    }

    public func start() { transport.start { [clock] in clock.now } }
    public func stop() { transport.stop() }

    /// The stream's counters (read after ``stop()``).
    public var statistics: MediaStreamStatistics? { stream?.statistics }

    private func connected(_ result: Result<DTLSSRTPKeys, DTLSError>) {
        switch result {
        case .failure(let error):
            failure = "DTLS: \(error)"
        case .success(let keys):
            connectedAt = clock.now
            var configuration = MediaStreamConfiguration(negotiated: negotiated, deviceFormat: .mono48k, voiceProcessing: false)
            configuration.srtp = MediaStreamSRTP(suite: keys.suite, localKey: keys.localKey, remoteKey: keys.remoteKey)
            do {
                stream = try MediaStream(configuration: configuration, sink: TransportSink(transport), now: clock.now)
            } catch {
                failure = "stream: \(error)"
            }
        }
    }

    private func tick(_ now: MediaTime) {
        guard let stream else { return }
        capture(&captureFrame)
        stream.processCapture(captureFrame, now: now)
        stream.renderPlayout(into: &playoutFrame, now: now)
        playout(playoutFrame)
    }
}

/// Hands a stream's SRTP datagrams to the WebRTC transport (to the nominated pair, while consent lasts).
final class TransportSink: MediaPacketSink {
    unowned let transport: WebRTCTransport
    init(_ transport: WebRTCTransport) { self.transport = transport }
    func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
        transport.send(datagram, now: now)
    }
}
