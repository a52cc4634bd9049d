import VoiceEngine

/// Why a WebRTC call ended before or during media.
public enum WebRTCCallError: Error, Equatable, Sendable {
    /// The DTLS-SRTP association failed (fingerprint mismatch, alert, no common profile, timeout…).
    case dtls(DTLSError)
    /// The media stream could not start with what was negotiated.
    case stream(String)
}

/// The engine's side of a call with a browser or another engine, answering an offer
/// (``init(answering:certificate:host:fullICE:capture:playout:)``) or offering
/// (``init(offeringWith:host:fullICE:capture:playout:)`` then ``accept(answer:)``): ICE-lite with one host
/// candidate (a browser, always a full agent, checks and nominates), or with `fullICE` a full ``ICEAgent`` (an
/// engine on each side: the offerer controls), DTLS-SRTP, one Opus audio line. Once DTLS is up a ``MediaStream`` keyed by DTLS runs on the
/// transport's thread: each 10 ms it takes one block from `capture` (what the engine sends) and gives one to
/// `playout` (what it received).
///
/// Threads: `capture`, `playout` and every stream call run on the transport's one thread.
public final class WebRTCAudioCall: @unchecked Sendable {
    /// Our SDP: the answer, or the offer.
    public let localDescription: String
    public private(set) var transport: WebRTCTransport?
    public private(set) var negotiated: NegotiatedAudio?
    private let capture: (inout AudioFrame) -> Void
    private let playout: (AudioFrame) -> Void
    private let clock = MonotonicClock()
    private let certificate: DTLSCertificate
    /// The first is the one ICE-lite and the SDP's c= line use; a full agent has one per host address.
    private let sockets: [DatagramSocket]
    private let localICE: ICECredentials
    /// The full agent (nil for ICE-lite).
    public let agent: ICEAgent?
    /// The TURN allocation a full agent gathered srflx and relay candidates through (nil without a server).
    public let turn: TURNClient?
    private let capabilities: AudioCapabilities
    private var offerBase: SessionDescription?
    private var stream: MediaStream?
    private var captureFrame = AudioFrame(format: .mono48k)
    private var playoutFrame = AudioFrame(format: .mono48k)
    /// Set on the transport thread: the DTLS failure, or a stream that could not start. Media never starts (or
    /// stops) once it is set.
    public private(set) var failure: WebRTCCallError?
    /// When the call was made, when DTLS completed and when the first media packet arrived (offer→audio figures).
    public let startedAt: MediaTime
    public private(set) var connectedAt: MediaTime?
    public private(set) var firstAudioAt: MediaTime?
    /// When the first block with sound (a decoded frame, not silence) left the stream's playout.
    public private(set) var firstDecodedAt: MediaTime?
    /// Trickle ICE of our candidates (``init(answering:certificate:host:fullICE:trickle:turnServer:capture:playout:)``
    /// with `trickle`): each candidate as gathered, nil for end-of-candidates, on the transport thread — signal
    /// them (`a=candidate` lines without `a=`, RFC 8840). Set before ``start()``.
    public var onLocalCandidate: ((ICECandidate?) -> Void)?
    /// What was trickled and when (transport thread; read after ``stop()``): nil is end-of-candidates.
    public private(set) var trickled: [(candidate: ICECandidate?, at: MediaTime)] = []
    private let trickle: Bool

    private init(
        certificate: DTLSCertificate, host: String, capture: @escaping (inout AudioFrame) -> Void,
        playout: @escaping (AudioFrame) -> Void, fullICE: ICEAgent.Role?, trickle: Bool, turnServer: TURNServer?,
        describe: (WebRTCLocalParameters, AudioCapabilities) throws -> String
    ) throws {
        startedAt = clock.now
        let first = String(host.split(separator: ",").first ?? "").trimmingCharacters(in: .whitespaces)
        guard let bind = TransportAddress(first, port: 0) else {
            throw WebRTCSDPError.badAttribute("host", reason: host)
        }
        // A full agent gathers on every address in `host` (comma-separated); ICE-lite on the first.
        let extra = fullICE == nil ? [] : host.split(separator: ",").dropFirst().map(String.init)
        let sockets =
            try [DatagramSocket(bind: bind)]
            + extra.map { text throws in
                guard let address = TransportAddress(text.trimmingCharacters(in: .whitespaces), port: 0) else {
                    throw WebRTCSDPError.badAttribute("host", reason: text)
                }
                return try DatagramSocket(bind: address)
            }
        let socket = sockets[0]
        self.sockets = sockets
        localICE = ICECredentials.random()
        var candidates = [
            ICECandidate(
                foundation: "1", priority: ICECandidate.priority(kind: .host),
                host: socket.localAddress.host, port: socket.localAddress.port, kind: .host)
        ]
        if let role = fullICE {
            let agent = ICEAgent(role: role, local: localICE)
            let turn = turnServer.map { TURNClient(socket: socket, server: $0.address, credentials: $0.credentials) }
            if trickle {
                // Host candidates now, trickled once the transport runs; srflx/relay gathered by the transport.
                candidates = []
                sockets.forEach {
                    agent.addLocalCandidate(kind: .host, address: $0.localAddress, base: $0.localAddress)
                }
            } else {
                candidates = try agent.gather(sockets: sockets, turn: turn)  // a refused allocation throws TURNError
                agent.localGatheringDone()
            }
            self.agent = agent
            self.turn = turn
        } else {
            agent = nil
            turn = nil
        }
        self.trickle = trickle && fullICE != nil
        capabilities = AudioCapabilities(address: socket.localAddress.host, port: Int(socket.localAddress.port))
        self.certificate = certificate
        self.capture = capture
        self.playout = playout
        localDescription = try describe(
            WebRTCLocalParameters(
                ice: localICE, fingerprint: certificate.fingerprint, candidates: candidates,
                iceLite: fullICE == nil, trickle: self.trickle), capabilities)
    }

    /// Answers a browser's offer; ``start()`` then waits for its checks and the DTLS handshake. With `trickle`
    /// (a full agent only) the answer carries no candidates: they go to ``onLocalCandidate`` as gathered.
    public convenience init(
        answering offerText: String, certificate: DTLSCertificate, host: String = "127.0.0.1",
        fullICE: Bool = false, trickle: Bool = false, turnServer: TURNServer? = nil,
        capture: @escaping (inout AudioFrame) -> Void, playout: @escaping (AudioFrame) -> Void
    ) throws {
        let offer = try WebRTCSessionDescription(parsing: offerText)
        var outcome: (NegotiatedAudio, DTLSSRTPAssociation.Role)?
        // RFC 8445 §6.1.1: between two full agents the offerer controls; facing a lite one, we do.
        let role: ICEAgent.Role? = fullICE ? (offer.transport.iceLite ? .controlling : .controlled) : nil
        try self.init(
            certificate: certificate, host: host, capture: capture, playout: playout,
            fullICE: role, trickle: trickle, turnServer: turnServer
        ) { local, capabilities in
            let (text, negotiated, role) = try WebRTCSessionDescription.answer(
                to: offer, localCapabilities: capabilities, local: local)
            outcome = (negotiated, role)
            return text
        }
        negotiated = outcome!.0
        try makeTransport(remote: offer.transport, role: outcome!.1)
    }

    /// Makes an offer (``localDescription``) for a browser; call ``accept(answer:)`` with its answer.
    public convenience init(
        offeringWith certificate: DTLSCertificate, host: String = "127.0.0.1", fullICE: Bool = false,
        trickle: Bool = false, turnServer: TURNServer? = nil, capture: @escaping (inout AudioFrame) -> Void,
        playout: @escaping (AudioFrame) -> Void
    ) throws {
        var base: SessionDescription?
        try self.init(
            certificate: certificate, host: host, capture: capture, playout: playout,
            fullICE: fullICE ? .controlling : nil, trickle: trickle, turnServer: turnServer
        ) { local, capabilities in
            let (text, b) = WebRTCSessionDescription.offer(localCapabilities: capabilities, local: local)
            base = b
            return text
        }
        offerBase = base
    }

    /// Applies the browser's answer to our offer and starts the transport.
    public func accept(answer text: String) throws {
        guard let offerBase, transport == nil else {
            throw WebRTCSDPError.missingAttribute("offer (accept once, after offering)")
        }
        let (negotiated, remote, role) = try WebRTCSessionDescription.negotiate(
            offer: offerBase, answer: text, localCapabilities: capabilities)
        self.negotiated = negotiated
        try makeTransport(remote: remote, role: role)
        start()
    }

    private func makeTransport(remote: WebRTCTransportParameters, role: DTLSSRTPAssociation.Role) throws {
        let ice: WebRTCTransport.ICERole
        if let agent {
            agent.setRemoteCredentials(remote.ice)
            remote.candidates.forEach(agent.addRemoteCandidate)
            // Without trickle the SDP holds every candidate; with it, more may come (addRemoteCandidate).
            if !remote.trickle { agent.remoteGatheringDone() }
            // The relay forwards only from permitted peers (RFC 8656 §9): here the peer's relayed addresses, before
            // the checks start. (Permitting its host and srflx addresses too made coturn's relaying stop after the
            // first exchange in NATTraversalTests — cause not found yet — so relay-to-srflx pairs are not tried.)
            if let turn, !trickle {
                for address in Set(remote.candidates.filter { $0.kind == .relay }.compactMap(\.address)) {
                    try? turn.createPermission(for: address, timeout: .milliseconds(500))
                }
            }
            ice = .full(agent)
        } else {
            ice = .liteControlled(ICELiteAgent(local: localICE, remote: remote.ice))
        }
        let transport = WebRTCTransport(
            sockets: sockets, ice: ice,
            dtls: try DTLSSRTPAssociation(certificate: certificate, role: role, remoteFingerprint: remote.fingerprint))
        transport.relay = turn
        if trickle {
            transport.trickleLocalCandidates = true
            transport.onLocalCandidate = { [unowned self, clock] candidate in
                trickled.append((candidate, clock.now))
                onLocalCandidate?(candidate)
            }
        }
        transport.onConnected = { [unowned self] result in connected(result) }
        transport.onSRTP = { [unowned self] datagram, now in
            guard let stream else { return }
            stream.receiveDatagram(UnsafeRawBufferPointer(datagram), arrival: now)
            if firstAudioAt == nil, stream.statistics.packetsReceived > 0 { firstAudioAt = now }
        }
        transport.onTick = { [unowned self] now in tick(now) }
        self.transport = transport
    }

    /// A candidate the peer trickled (nil: its end-of-candidates), from any thread; taken by a full agent.
    public func addRemoteCandidate(_ candidate: ICECandidate?) { transport?.addRemoteCandidate(candidate) }

    /// Why srflx/relay gathering failed in a trickling call (the call goes on with what was gathered).
    public var gatheringErrors: [TURNError] { transport?.gatheringErrors ?? [] }

    /// Starts the transport's thread (an answerer calls this after sending its answer).
    public func start() { transport?.start { [clock] in clock.now } }
    public func stop() { transport?.stop() }

    /// The stream's counters (read after ``stop()``).
    public var statistics: MediaStreamStatistics? { stream?.statistics }

    private func connected(_ result: Result<DTLSSRTPKeys, DTLSError>) {
        switch result {
        case .failure(let error):
            failure = .dtls(error)
        case .success(let keys):
            connectedAt = clock.now
            guard let negotiated, let transport else { return }
            var configuration = MediaStreamConfiguration(
                negotiated: negotiated, deviceFormat: .mono48k, voiceProcessing: false)
            configuration.srtp = MediaStreamSRTP(suite: keys.suite, localKey: keys.localKey, remoteKey: keys.remoteKey)
            do {
                stream = try MediaStream(configuration: configuration, sink: TransportSink(transport), now: clock.now)
            } catch {
                failure = .stream("\(error)")
            }
        }
    }

    private func tick(_ now: MediaTime) {
        guard let stream else { return }
        capture(&captureFrame)
        stream.processCapture(captureFrame, now: now)
        stream.renderPlayout(into: &playoutFrame, now: now)
        if firstDecodedAt == nil, playoutFrame.withUnsafeSamples({ $0.contains { $0 != 0 } }) { firstDecodedAt = now }
        playout(playoutFrame)
    }
}

/// Hands a stream's SRTP datagrams to the WebRTC transport (to the nominated pair, while consent lasts).
final class TransportSink: MediaPacketSink {
    unowned let transport: WebRTCTransport
    init(_ transport: WebRTCTransport) { self.transport = transport }
    func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
        transport.sendOnTransportThread(datagram, now: now)
    }
}

/// A TURN server for a full agent's srflx and relay candidates.
public struct TURNServer: Sendable {
    public var address: TransportAddress
    public var credentials: TURNCredentials
    public init(address: TransportAddress, credentials: TURNCredentials) {
        self.address = address
        self.credentials = credentials
    }
}
