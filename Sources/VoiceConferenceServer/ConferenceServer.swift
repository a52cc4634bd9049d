import Foundation
import NIOCore
import NIOPosix
import VoiceConference
import VoiceEngine
import VoiceSIP
import VoiceWebRTC

/// How a conference server listens and what it offers its participants.
public struct ConferenceServerConfiguration: Sendable {
    /// The SIP listener (UDP): what the dispatcher's list names.
    public var sipAddress: SocketAddress
    /// Our domain: the host of our address-of-record (`sip:conference@domain`).
    public var domain: String
    /// The address participants send media to (announced in SDP and bound): the SIP address's host by default,
    /// loopback when that is a wildcard.
    public var mediaHost: String
    /// A pair of UDP ports per participant from here: RTP on the even one, RTCP on the next when the participant
    /// does not multiplex it.
    public var rtpPorts: ClosedRange<Int>
    /// SDES-SRTP required (RTP/SAVP) by default; `.optional` also admits plain-RTP participants.
    public var srtp: SRTPPolicy
    /// What each participant is sent: Opus at 16 kHz in 20 ms frames, FEC and DTX when the participant accepts them.
    public var send: OpusEncoderConfiguration
    public var timers: SIPTimerConfiguration
    /// Where a JSON report per room is written when it closes (and for every open room on `writeReports()`).
    public var statisticsDirectory: URL?
    /// How every room mixes (N loudest talkers, 16 kHz, …).
    public var room: ConferenceRoomConfiguration
    /// Media threads that tick the rooms (a fixed pool: one per core by default).
    public var mediaThreads: Int
    /// Whether offers keyed by DTLS-SRTP (RFC 5763/5764: `UDP/TLS/RTP/SAVP(F)`, `a=fingerprint`, no `a=crypto`)
    /// are accepted: answered with our fingerprint and `a=setup:passive`, the handshake run on the participant's
    /// media port. On by default; SDES offers are answered as before either way.
    public var acceptsDTLSSRTP: Bool
    /// The certificate our fingerprint names; a fresh self-signed one per server when nil.
    public var dtlsCertificate: DTLSCertificate?
    /// How long a DTLS-SRTP participant has to finish its handshake after our answer.
    public var dtlsHandshakeTimeout: Duration

    public init(
        sipAddress: SocketAddress, domain: String, mediaHost: String? = nil,
        rtpPorts: ClosedRange<Int> = 28_500...28_799,
        srtp: SRTPPolicy = .required([.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32]),
        send: OpusEncoderConfiguration? = nil,
        timers: SIPTimerConfiguration = SIPTimerConfiguration(), statisticsDirectory: URL? = nil,
        room: ConferenceRoomConfiguration = ConferenceRoomConfiguration(),
        mediaThreads: Int = ProcessInfo.processInfo.activeProcessorCount, acceptsDTLSSRTP: Bool = true,
        dtlsCertificate: DTLSCertificate? = nil, dtlsHandshakeTimeout: Duration = .seconds(10)
    ) {
        self.acceptsDTLSSRTP = acceptsDTLSSRTP
        self.dtlsCertificate = dtlsCertificate
        self.dtlsHandshakeTimeout = dtlsHandshakeTimeout
        self.sipAddress = sipAddress
        self.domain = domain
        let host = sipAddress.ipAddress ?? "127.0.0.1"
        self.mediaHost = mediaHost ?? (host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host)
        self.rtpPorts = rtpPorts
        self.srtp = srtp
        self.send = send ?? Self.defaultSend
        self.timers = timers
        self.statisticsDirectory = statisticsDirectory
        self.room = room
        self.mediaThreads = max(1, mediaThreads)
    }

    /// Wideband voice: what the mixer runs at (16 kHz), 20 ms, in-band FEC and DTX.
    public static var defaultSend: OpusEncoderConfiguration {
        var send = OpusEncoderConfiguration()
        send.sampleRate = 16_000
        send.bitrate = 24_000
        send.inbandFEC = true
        send.dtx = true
        return send
    }
}

/// `voice-engine conference-server`: a SIP user agent whose every INVITE for `sip:conf-<id>@…` joins room `<id>`.
///
/// A room is created by its first participant and closed after its last one leaves (its report printed and
/// written). Each participant gets a media port of its own from `rtpPorts`, an SDES-SRTP answer (or, to a DTLS-SRTP
/// offer, our fingerprint and `a=setup:passive`, then the handshake on that port whose keys its leg runs with; a
/// failed handshake hangs it up and the room's report names the reason), and a leg in the room's mixer; the room plays a join tone and a leave tone to everyone. A participant mutes itself with a
/// re-INVITE that takes away our receive direction (`a=sendonly` from it, which the engine's `hold()` sends, or
/// `inactive`): it is then neither mixed nor, with `sendonly`, sent to; `sendrecv` brings it back. OPTIONS outside
/// a dialog are answered 200 (the dispatcher's liveness probe). Other request URIs are refused: 404 when the user is
/// not a room, 400 for an unusable room id.
public final class ConferenceServer: @unchecked Sendable {
    public let configuration: ConferenceServerConfiguration
    public let endpoint: SIPEndpoint
    public let agent: SIPUserAgent
    let ports: RTPPortRange
    let threads: ConferenceMediaThreads
    /// Our DTLS identity (nil when DTLS-SRTP is not accepted).
    public let dtlsCertificate: DTLSCertificate?
    private let lock = NSLock()
    private var rooms: [String: ConferenceServerRoom] = [:]
    private var closedReports: [ConferenceRoomReport] = []
    private var accepting: Task<Void, Never>?
    private let onRoomClosed: @Sendable (ConferenceRoomReport) -> Void

    /// Starts listening. `onRoomClosed` gets each room's final report (after it was written to the statistics
    /// directory, if any).
    public static func start(
        _ configuration: ConferenceServerConfiguration, on loop: any EventLoop,
        onRoomClosed: @escaping @Sendable (ConferenceRoomReport) -> Void = { _ in }
    ) async throws -> ConferenceServer {
        let endpoint = try await SIPEndpoint.start(
            on: loop, udp: configuration.sipAddress,
            configuration: SIPEndpointConfiguration(timers: configuration.timers))
        let agent = SIPUserAgent(
            endpoint: endpoint, credentials: nil,
            configuration: SIPUserAgentConfiguration(
                addressOfRecord: SIPURI(user: "conference", host: configuration.domain), transport: .udp))
        let certificate =
            configuration.acceptsDTLSSRTP
            ? try configuration.dtlsCertificate ?? DTLSCertificate(commonName: "voice-engine conference-server") : nil
        let server = ConferenceServer(
            configuration: configuration, endpoint: endpoint, agent: agent, certificate: certificate,
            onRoomClosed: onRoomClosed)
        server.accepting = Task { await server.acceptCalls() }
        return server
    }

    private init(
        configuration: ConferenceServerConfiguration, endpoint: SIPEndpoint, agent: SIPUserAgent,
        certificate: DTLSCertificate?,
        onRoomClosed: @escaping @Sendable (ConferenceRoomReport) -> Void
    ) {
        self.configuration = configuration
        dtlsCertificate = certificate
        self.endpoint = endpoint
        self.agent = agent
        self.onRoomClosed = onRoomClosed
        ports = RTPPortRange(configuration.rtpPorts)
        threads = ConferenceMediaThreads(threadCount: configuration.mediaThreads)
    }

    /// The SIP listener's address (its port when 0 was asked for).
    public var sipAddress: SocketAddress? { get async { await endpoint.localAddress(.udp) } }

    /// Reports of the open rooms, as of now.
    public func openRoomReports() async -> [ConferenceRoomReport] {
        var reports: [ConferenceRoomReport] = []
        for room in lock.withLock({ Array(rooms.values) }).sorted(by: { $0.address.id < $1.address.id }) {
            reports.append(await room.report())
        }
        return reports
    }

    /// Reports of the rooms closed so far, oldest first.
    public func closedRoomReports() -> [ConferenceRoomReport] { lock.withLock { closedReports } }

    /// The ids of the open rooms and how many participants each has.
    public func roomOccupancy() -> [String: Int] {
        lock.withLock { rooms.mapValues { $0.participantCount } }
    }

    /// Media port pairs handed to calls and not yet given back. A refused or ended call gives its pair back just
    /// after its final response or BYE, once its sockets are closed.
    public var mediaPortPairsInUse: Int { ports.portsInUse }

    /// Writes every open room's report to the statistics directory (SIGUSR1) and returns the reports.
    @discardableResult
    public func writeReports() async -> [ConferenceRoomReport] {
        let reports = await openRoomReports()
        for report in reports { write(report) }
        return reports
    }

    /// Hangs up every participant, closes the rooms (their reports are written), the SIP endpoint and the media
    /// threads.
    public func close() async {
        accepting?.cancel()
        let open = lock.withLock { Array(rooms.values) }
        await withTaskGroup(of: Void.self) { group in
            for room in open { group.addTask { await room.hangUpEveryone() } }
        }
        // Each participant's task takes it out of its room after its BYE: wait (briefly) for the rooms to close.
        let deadline = ContinuousClock.now + .seconds(3)
        while lock.withLock({ !rooms.isEmpty }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        try? await endpoint.close()
        threads.shutdown()
    }

    // MARK: Calls

    private func acceptCalls() async {
        for await call in agent.incomingCalls {
            Task { await self.admit(call) }
        }
    }

    private func admit(_ call: SIPCall) async {
        let address: ConferenceRoomAddress
        do { address = try ConferenceRoomAddress(requestURI: call.requestURI) } catch {
            await call.reject(status: error.statusCode, reason: error.reason)
            return
        }
        let media: (transport: UDPMediaTransport, port: Int)
        do { media = try await ports.bind(host: configuration.mediaHost) } catch {
            await call.reject(status: 503, reason: "Service Unavailable (no free media port)")
            return
        }
        let capabilities = AudioCapabilities(
            address: configuration.mediaHost, port: media.port, send: configuration.send, receiveDTX: true,
            maxPlaybackRate: 16_000, srtp: configuration.srtp, rtcpPort: media.port + 1,
            dtlsFingerprint: dtlsCertificate?.fingerprint.sdpValue,
            // Opus first; G.722 and G.711 legs (trunks, desk phones) are decoded and encoded by their own streams.
            codecs: AudioCapabilities.defaultCodecs)
        var negotiated: NegotiatedAudio
        do { negotiated = try await call.answer(with: capabilities) } catch {
            // answer(with:) refused the offer with 488 itself.
            await releaseMedia(media)
            return
        }
        // The room ticks every 20 ms, so it sends 10 or 20 ms packets. A longer a=ptime is the participant's
        // preference, not a limit (RFC 4566 §6; a=maxptime is the limit), and our answer announced 20 ms.
        if negotiated.ptime > 20 {
            negotiated.ptime = 20
            negotiated.encoder.frameDuration = .ms20
        }
        // Until the room latches onto its authenticated packets; RTCP to the participant's RTCP port when it does
        // not multiplex (its reports come to the pair's RTCP port).
        try? media.transport.setRemote(negotiated: negotiated)
        // DTLS-SRTP: the handshake on the media port (the peer starts it once it has our answer, maybe before its
        // ACK arrives); the room gets the participant only with the keys it produced.
        var handshake: DTLSSRTPMediaPortHandshake?
        var dtlsKeys: MediaStreamSRTP?
        if let dtls = negotiated.dtls, let certificate = dtlsCertificate {
            let outcome: Result<DTLSSRTPKeys, DTLSError>
            do {
                let running = try DTLSSRTPMediaPortHandshake(
                    certificate: certificate, negotiated: dtls, transport: media.transport)
                handshake = running
                outcome = await running.run(timeout: configuration.dtlsHandshakeTimeout)
            } catch {
                outcome = .failure(error)
            }
            switch outcome {
            case .success(let keys):
                dtlsKeys = keys.mediaStreamKeys
            case .failure(let error):
                let reason = "DTLS-SRTP handshake failed: \(error)"
                await call.hangUp(headers: [("Reason", "SIP;cause=488;text=\"\(reason)\"")])
                await refuse(address, call: call, reason: reason)
                handshake?.stop()
                for await _ in call.events {}
                await releaseMedia(media)
                return
            }
        }
        var participant: ConferenceServerRoom.Member?
        for await event in call.events {
            switch event {
            case .established:
                do {
                    participant = try await join(
                        address, call: call, negotiated: negotiated, transport: media.transport, dtlsKeys: dtlsKeys)
                } catch {
                    await call.hangUp(headers: [("Reason", "SIP;cause=503;text=\"\(error)\"")])
                }
            case .mediaUpdated(let update, _):
                try? media.transport.followRenegotiation(update)
                if let participant { await participant.room.update(participant, negotiated: update) }
            case .dtmfReceived(let key, _):
                participant?.room.keyPressed(key, leg: call.callID)
            case .ended, .progress:
                break
            }
        }
        if let participant { await leave(participant) }
        handshake?.stop()
        await releaseMedia(media)
    }

    private func releaseMedia(_ media: (transport: UDPMediaTransport, port: Int)) async {
        await media.transport.close()
        ports.release(media.port)
    }

    /// Adds the participant to its room, opening the room for the first one.
    private func join(
        _ address: ConferenceRoomAddress, call: SIPCall, negotiated: NegotiatedAudio, transport: UDPMediaTransport,
        dtlsKeys: MediaStreamSRTP?
    ) async throws -> ConferenceServerRoom.Member {
        let room = try reserve(address)
        do {
            return try await room.add(call: call, negotiated: negotiated, transport: transport, dtlsKeys: dtlsKeys)
        } catch {
            await closeIfEmpty(room)
            throw error
        }
    }

    /// The room (opened if needed) with a place reserved, so that it cannot close before the caller is in.
    private func reserve(_ address: ConferenceRoomAddress) throws -> ConferenceServerRoom {
        try lock.withLock {
            let room =
                try rooms[address.id]
                ?? ConferenceServerRoom(address: address, configuration: configuration.room, threads: threads)
            rooms[address.id] = room
            room.reserve()
            return room
        }
    }

    /// Notes a participant whose DTLS-SRTP handshake failed in its room's report (a room it opened closes again).
    private func refuse(_ address: ConferenceRoomAddress, call: SIPCall, reason: String) async {
        guard let room = try? reserve(address) else { return }
        room.refuse(call: call, reason: reason)
        await closeIfEmpty(room)
    }

    /// Takes the participant out; the room closes (report written) when it was the last one.
    private func leave(_ member: ConferenceServerRoom.Member) async {
        await member.room.remove(member)
        await closeIfEmpty(member.room)
    }

    private func closeIfEmpty(_ room: ConferenceServerRoom) async {
        let closing: Bool = lock.withLock {
            guard room.participantCount == 0, rooms[room.address.id] === room else { return false }
            rooms[room.address.id] = nil
            return true
        }
        guard closing else { return }
        let report = await room.close()
        lock.withLock { closedReports.append(report) }
        write(report)
        onRoomClosed(report)
    }

    private func write(_ report: ConferenceRoomReport) {
        guard let directory = configuration.statisticsDirectory, let data = try? report.json() else { return }
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try? data.write(to: directory.appendingPathComponent("\(report.room).json"), options: .atomic)
    }
}
