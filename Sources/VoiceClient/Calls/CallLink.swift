import Foundation
import VoiceEngine
import VoiceSIP
import VoiceWebRTC

/// Binds a ``Call`` (the SDK's call object and its state machine) to its SIP dialog (`SIPCall`) and its media
/// (`LiveCall`, Opus over DTLS-SRTP, or SDES-SRTP over encrypted signalling): SIP events become ``CallEvent``s,
/// the call's `send…` effects become SIP requests and responses, establishment starts the media on the negotiated
/// stream and the end stops it.
///
/// While the media runs, its health drives the call: device interruptions pause it (``CallEvent/mediaInterrupted(_:)``,
/// the audio session's interruption timeout applies through ``Call/tick()``), and a ``CallHealthMonitor`` fed with
/// the media's reception every ``sampleInterval`` reports quality and ends a call whose media stopped arriving.
actor CallLink {
    let call: Call
    let sip: SIPCall
    private let transport: UDPMediaTransport
    /// What our offers and answers say: the address and ICE credentials change with an ICE restart.
    private(set) var capabilities: AudioCapabilities
    /// The certificate whose fingerprint our SDP announced: a DTLS-SRTP handshake authenticates with it.
    private let certificate: DTLSCertificate
    /// ICE on the media port: its candidates are in our SDP; checks run when the peer's SDP has ICE too.
    private let ice: ICEMediaPort
    /// The devices the call's audio runs on when it is not held (``Call/setAudioDevices(_:)`` changes them).
    private var devices: CallAudioDevices
    /// Where the tones play before the media starts.
    private nonisolated let firstSpeaker: String
    private let tones: CallTones
    private let clock: any MediaClock
    private let health: CallHealthConfiguration
    private var media: SIPCallMedia?
    /// The latest offer/answer (the first, then each re-INVITE's): what media moved to other devices runs with.
    private var negotiated: NegotiatedAudio?
    /// The media started and counts in ``CallTones`` (until the call ends, held or not).
    private var countedInTones = false
    /// Media is being moved to other devices (``media`` is nil meanwhile).
    private var moving = false
    /// The latest hold or resume re-INVITE, which the next one waits for.
    private var reofferInFlight: Task<Void, Never>?
    /// The reports of the media's earlier stretches (before each move), for the call at the end.
    private var earlierReports: [CallReport] = []
    private var muted = false
    private var onHold = false
    private var finished = false
    private var finishedHandlers: [@Sendable (Call) async -> Void] = []
    private var finishComplete = false, endSeen = false, mediaRan = false, tonesReleased = false
    private var awaitingByeAnswer = false
    /// Told once when the service keeps the call for a callee with no connection ("180 Ringing (Push Pending)"):
    /// the client asks the app to push (app-sent push).
    private var onPushPending: (@Sendable () async -> Void)?
    /// Told once when this caller cancels a call that was pushed: the app pushes the cancel too.
    private var onPushedCallCanceled: (@Sendable () async -> Void)?
    private var pushed = false
    /// A provisional response came: the service is reachable (a later Timer B is a timeout, not a failure).
    private var heardFromNetwork = false
    /// Our ICE credentials and candidates for the answer to the peer's next ICE restart (the SIP session has them).
    private var preparedRestart: SDPICEParameters?
    /// An ICE restart (ours or the peer's) is under way.
    private var restartingICE = false

    init(
        call: Call, sip: SIPCall, media: BoundMedia, devices: CallAudioDevices, tones: CallTones,
        clock: any MediaClock, health: CallHealthConfiguration = CallHealthConfiguration()
    ) {
        self.clock = clock
        self.health = health
        self.call = call
        self.sip = sip
        (transport, capabilities, certificate, ice) = (
            media.transport, media.capabilities, media.certificate, media.ice
        )
        self.devices = devices
        firstSpeaker = devices.speaker
        self.tones = tones
    }

    func whenPushPending(_ handler: @escaping @Sendable () async -> Void) { onPushPending = handler }

    func whenPushedCallCanceled(_ handler: @escaping @Sendable () async -> Void) { onPushedCallCanceled = handler }

    /// The reason phrase of the service's provisional response for a kept call (Services/kamailio/kamailio.cfg).
    static let pushPendingReason = "Push Pending"

    /// A call's RTP socket, what its offer or answer may say, and the DTLS certificate its fingerprint names.
    struct BoundMedia {
        let transport: UDPMediaTransport
        let capabilities: AudioCapabilities
        let certificate: DTLSCertificate
        let ice: ICEMediaPort
        /// The TURN server refused our allocation (the call has no relayed candidate).
        var turnRefusal: TURNRefusal? = nil
    }

    /// The RTP socket and the offer/answer capabilities of one call, with an RTCP socket (RTP + 1 when free, else
    /// any port) announced as `a=rtcp:` for a peer that does not multiplex.
    ///
    /// SRTP is keyed by DTLS-SRTP (RFC 5763/5764) on the media port, with a fresh certificate per call, so no key
    /// crosses the network. SDES keys travel in the SDP itself: they are offered next to DTLS-SRTP (for peers that
    /// only do SDES) and accepted only when `signallingEncrypted` (SIP over TLS); otherwise an SDES-only offer
    /// is refused (``SDPError/sdesRefused``).
    ///
    /// ICE (RFC 8445/8839) runs on the same port, bound to every interface: the SDP carries its credentials and a
    /// host candidate per interface address (loopback ones only when `host` is loopback, a service on this
    /// machine), and with `turnServers` (the grant's) a server-reflexive and a relayed candidate from the first
    /// one; the caller controls (`iceRole`). The c=/m= address, where a peer without ICE sends its media, is the
    /// candidate most likely to reach us (``ICEMediaPort/defaultCandidate``: the relayed one, else the
    /// server-reflexive one), or `host`, the address SIP uses towards the service, when there are only host
    /// candidates. `a=rtcp:` (a port of its own for RTCP) is announced with the host address only: a relay
    /// allocation or a NAT mapping covers the media port alone. `relayOnly` gathers no host candidate (WebRTC's
    /// `iceTransportPolicy: "relay"`): the peer learns no address of ours but the relay's, and every check and all
    /// media cross the relay.
    static func bindMedia(
        host: String, signallingEncrypted: Bool, iceRole: ICEAgent.Role, turnServers: [TURNServer] = [],
        relayOnly: Bool = false
    ) async throws -> BoundMedia {
        let certificate = try DTLSCertificate(commonName: "VoiceClient")
        let hostAddress = TransportAddress(host, port: 0)
        // Polled by the handshake, then by the call's media thread. The IPv6 wildcard is dual-stack; without IPv6
        // the IPv4 one.
        let configuration = UDPMediaTransport.Configuration(receive: .consumerPolls)
        let transport: UDPMediaTransport
        do {
            transport = try await UDPMediaTransport.bind(host: "::", port: 0, configuration: configuration)
        } catch {
            transport = try await UDPMediaTransport.bind(
                host: hostAddress?.family == .ipv6 ? host : "0.0.0.0", port: 0, configuration: configuration)
        }
        let rtcp: UDPEndpoint
        do {
            do { rtcp = try transport.bindRTCPPort() } catch { rtcp = try transport.bindRTCPPort(port: 0) }
        } catch {
            await transport.close()
            throw error
        }
        let loopback = hostAddress.map { $0.addressBytes == [127, 0, 0, 1] || $0.host == "::1" } ?? false
        let ice = ICEMediaPort(
            transport: transport, role: iceRole, hosts: relayOnly ? [] : nil, includeLoopback: loopback)
        var refusal: TURNRefusal?
        if let turn = turnServers.first {
            for case .rejected(let code, let reason) in await ice.gather(turn: turn) {
                refusal = TURNRefusal(server: turn.address.description, code: code, reason: reason)
            }
        }
        let suites: [SRTPCryptoSuite] = signallingEncrypted ? [.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32] : []
        let defaultCandidate = ice.defaultCandidate
        let capabilities = AudioCapabilities(
            address: defaultCandidate?.host ?? host, port: Int(defaultCandidate?.port ?? transport.localEndpoint.port),
            srtp: .required(suites), rtcpPort: defaultCandidate == nil ? Int(rtcp.port) : nil,
            dtlsFingerprint: certificate.fingerprint.sdpValue, offersSDESWithDTLS: signallingEncrypted, ice: ice.sdp)
        return BoundMedia(
            transport: transport, capabilities: capabilities, certificate: certificate, ice: ice, turnRefusal: refusal)
    }

    /// Follows both sides until the call ends.
    nonisolated func run() {
        tones.callBegan(speaker: firstSpeaker)
        let sipEvents = sip.events
        let effects = call.driverEffects
        Task { for await event in sipEvents { await self.handle(event) } }
        Task { for await effect in effects { await self.perform(effect) } }
    }

    // MARK: SIP → call

    private func handle(_ event: SIPCallEvent) async {
        switch event {
        case .progress(let status, let reason, _):
            heardFromNetwork = true
            if reason.contains(Self.pushPendingReason), let handler = onPushPending {
                onPushPending = nil
                pushed = true
                await handler()
            }
            _ = try? await call.dialog(status == 180 ? .ringing : .progress)
        case .established(let media, _):
            do {
                try await startMedia(media)
                _ = try? await call.dialog(.established)
            } catch SIPCallMediaError.iceFailed(let error) {
                let reason = SIPCallMediaError.iceFailed(error).description
                _ = try? await call.dialog(.failed(.network(reason)))
            } catch let error as SIPCallMediaError {
                _ = try? await call.dialog(.failed(.encryption(error.description)))
            } catch {
                _ = try? await call.dialog(.failed(.media("\(error)")))
            }
        case .mediaUpdated(let media, let byPeer):
            // A re-INVITE (ours or the peer's) held, resumed or re-keyed the call: the running media follows —
            // held by the peer (our side recvonly/inactive) we stop sending RTP, resumed we send again.
            let before = negotiated?.remoteICE
            negotiated = media
            try? self.media?.update(media)
            if byPeer, let before, let after = media.remoteICE, before.ufrag != after.ufrag, self.media?.ice != nil {
                Task { await self.followPeerICERestart(after) }
            }
        case .dtmfReceived(let digit, _):
            await call.yield(.dtmfReceived(digit), toApp: true, toDriver: false)
        case .ended(let end):
            // The media stops first, so its report is on the call when the app sees the end.
            await finish()
            if let event = Self.callEvent(for: end, direction: call.direction, heardFromNetwork: heardFromNetwork) {
                _ = try? await call.dialog(event)
            }
        }
    }

    /// The call event a SIP end means; nil when the call itself ended the dialog (our hang-up, decline, cancel).
    /// No answer at all to the INVITE (Timer B before any provisional response) means the service is unreachable:
    /// a failure in the network domain; a 408 after the service answered is a timeout. A 480 or 408 final
    /// response to a ringing call (the callee's no-answer timeout) is *no answer* (see ``CallEvent/remoteNoAnswer``).
    static func callEvent(for end: SIPCallEnd, direction: CallDirection, heardFromNetwork: Bool) -> CallEvent? {
        switch (end.cause, direction) {
        case (.remoteHangup, _): return .remoteHangup
        case (.localHangup, _): return nil
        case (.cancelled, .incoming):
            // A forking proxy cancels the devices that did not answer with `Reason: SIP;cause=200` (RFC 3326).
            return end.cancelReasonSIPCause == 200 ? .answeredElsewhere : .remoteCanceled
        case (.cancelled, .outgoing): return nil
        case (.rejected, .incoming): return nil
        case (.rejected, .outgoing):
            let status = end.statusCode ?? 0
            if [486, 600, 603].contains(status) { return .remoteDeclined(status: status, reason: end.reasonPhrase) }
            if status == 480 || status == 408 { return .remoteNoAnswer(status: status, reason: end.reasonPhrase) }
            return .failed(.sip(status: status, reason: end.reasonPhrase))
        case (.failed, .incoming) where end.statusCode == 488 && end.reasonPhrase.hasSuffix(sdesRefusal):
            return .failed(.encryption(sdesRefusal))
        case (.failed, _):
            if end.statusCode == 408 {
                return heardFromNetwork
                    ? .networkTimeout : .failed(.network("the service did not answer (\(end.reasonPhrase))"))
            }
            if end.statusCode == nil || (end.statusCode == 503 && end.reasonPhrase == "Transport Error") {
                return .failed(.network(end.reasonPhrase))
            }
            return .failed(.sip(status: end.statusCode ?? 0, reason: end.reasonPhrase))
        }
    }

    /// Why we answered an SDES-only offer with 488 (the end's reason phrase ends with it).
    private static let sdesRefusal = SDPError.sdesRefused.description

    private func startMedia(_ negotiated: NegotiatedAudio) async throws {
        guard media == nil else { return }
        // The tone player lets go of the speaker first; the call's playout mixes the tones instead when it runs
        // at their rate (a file microphone may set another).
        tones.mediaStarting()
        do {
            let started = try await SIPCallMedia.start(
                negotiated: negotiated, callID: call.id, transport: transport, certificate: certificate, ice: ice,
                devices: devices, tones: tones.controller)
            guard !finished else {
                // The call ended during the DTLS-SRTP handshake: its socket is closed already.
                _ = await started.stop(cause: .localHangup)
                tones.mediaStopped()
                return
            }
            started.live.setMicrophoneMuted(muted || onHold)
            media = started
            self.negotiated = negotiated
            countedInTones = true
            watch(started.live)
            started.ice?.onFailure { [weak self] error in Task { await self?.connectivityLost(error) } }
            if started.ice != nil { await prepareForPeerICERestart() }
        } catch {
            tones.mediaStopped()
            throw error
        }
    }

    /// Our capabilities for a re-INVITE: Opus at the payload type the call runs with (the offer's when we
    /// answered), so the peer goes on sending what the running media decodes.
    private var reoffer: AudioCapabilities {
        var offer = capabilities
        if let negotiated, negotiated.codec == .opus { offer.payloadType = negotiated.payloadType }
        return offer
    }

    // MARK: Devices

    /// What a held call's media runs on: no device, so the call that is talking has the real ones.
    private var heldDevices: CallAudioDevices {
        CallAudioDevices(microphone: "null", speaker: "null", sampleRate: devices.sampleRate, voiceProcessing: false)
    }

    /// Changes the devices the call's audio runs on. A running (not held) media moves now; when `devices`
    /// cannot be opened it goes back to the old ones and the error is thrown.
    func setDevices(_ new: CallAudioDevices) async throws(CallDeviceError) {
        guard !finished else { throw .ended }
        let old = devices
        devices = new
        guard media != nil, !onHold else { return }
        do { try await moveMedia(to: new, mixingTones: true) } catch {
            devices = old
            if (try? await moveMedia(to: old, mixingTones: true)) == nil {
                _ = try? await call.dialog(.failed(.media("cannot reopen \(old.microphone) / \(old.speaker)")))
            }
            throw .cannotOpen("\(error)")
        }
    }

    /// Hands the running media over to `target` devices on the same socket and keys; its sampling and events
    /// follow the new `LiveCall`.
    private func moveMedia(to target: CallAudioDevices, mixingTones: Bool) async throws {
        guard let current = media, let negotiated, !finished else { return }
        media = nil
        moving = true
        defer { moving = false }
        let moved: SIPCallMedia
        do {
            let result = try await current.moved(
                to: target, negotiated: negotiated, tones: mixingTones ? tones.controller : nil)
            moved = result.media
            earlierReports.append(result.report.report)
        } catch {
            // Spent (its devices closed) but still able to move again, and to stop.
            media = current
            throw error
        }
        guard !finished else {
            _ = await moved.stop(cause: .localHangup)
            return
        }
        moved.live.setMicrophoneMuted(muted || onHold)
        media = moved
        monitor = nil
        watch(moved.live)
    }

    /// Hold moves the media to no device, resume back to the call's. The held media still counts in ``CallTones``:
    /// the tone player would otherwise take the held call's speaker (a `file:` speaker would be written over).
    private func moveMediaForHold(_ on: Bool) async {
        guard media != nil else { return }
        do {
            try await moveMedia(to: on ? heldDevices : devices, mixingTones: !on)
        } catch {
            _ = try? await call.dialog(.failed(.media("cannot open the devices: \(error)")))
        }
    }

    /// The peer stopped answering consent checks (RFC 7675): it is gone, so the call fails in the network domain.
    private func connectivityLost(_ error: ICEError) async {
        guard !finished else { return }
        _ = try? await call.dialog(.failed(.network("ICE: \(error)")))
    }

    // MARK: Network changes

    /// Moves the running call to the address the host has now (`host`, where SIP leaves from after the client
    /// registered again): an ICE restart (RFC 8445 §9) — new credentials, host candidates on the current
    /// interfaces, srflx/relay from a new allocation on `turnServers`' first — offered in a re-INVITE (RFC 8839
    /// §4.4.1.1) on the dialog, whose answer brings the peer's new credentials; the checks then pick a new pair and
    /// media goes there. The DTLS association and its SRTP keys stay (same fingerprint and role, RFC 8842 §5), so
    /// audio resumes as soon as the pair is selected. The media keeps running (to the old pair) meanwhile.
    /// - Returns: whether a new pair was selected; false when the call has no ICE or no media, or the peer refused
    ///   the re-INVITE or no pair answered (the caller may try again; the call goes on).
    func restartICE(host: String, turnServers: [TURNServer]) async -> Bool {
        guard !finished, !restartingICE, let media, let ice = media.ice, negotiated?.remoteICE != nil else {
            return false
        }
        restartingICE = true
        defer { restartingICE = false }
        await ice.restart(turn: turnServers.first)
        var offer = reoffer
        offer.address = host
        offer.ice = ice.sdp
        let answered: NegotiatedAudio
        do {
            answered = try await sip.reoffer(
                direction: onHold ? .sendonly : .sendrecv, freshKeys: false, offering: offer)
        } catch {
            return false
        }
        capabilities.address = host
        capabilities.ice = offer.ice
        guard let remote = answered.remoteICE else { return false }
        let connected = await connectICE(ice, to: remote)
        await prepareForPeerICERestart()
        return connected
    }

    /// The peer restarted ICE (its re-offer had new credentials; the SIP session answered with the prepared ones):
    /// our agent restarted too, and the new checks pick the pair media goes to from now on.
    private func followPeerICERestart(_ remote: SDPICEParameters) async {
        guard !finished, let ice = media?.ice else { return }
        if let prepared = preparedRestart { capabilities.ice = prepared }
        preparedRestart = nil
        _ = await connectICE(ice, to: remote)
        await prepareForPeerICERestart()
    }

    /// Runs the checks of a restarted ICE against the peer's `remote`; the port points the media at the selected
    /// pair (and at any pair selected later).
    private func connectICE(_ ice: ICEMediaPort, to remote: SDPICEParameters) async -> Bool {
        guard case .success = await ice.connect(to: remote, timeout: SIPCallMedia.iceTimeout) else { return false }
        return !finished
    }

    /// Gives the SIP session the credentials to answer a peer's ICE restart with (re-INVITEs are answered as they
    /// come, without asking us).
    private func prepareForPeerICERestart() async {
        guard !finished, let ice = media?.ice else { return }
        let parameters = ice.prepareRestart()
        preparedRestart = parameters
        await sip.prepareICERestart(parameters)
    }

    // MARK: Media → call

    /// How often the media's reception is sampled: often enough that a quality interval and the media timeout
    /// are met within a quarter of the shorter one, at most twice a second.
    var sampleInterval: MediaTime {
        let shorter = min(health.qualityInterval, health.mediaTimeout)
        return MediaTime(nanoseconds: min(shorter.nanoseconds / 4, MediaTime.milliseconds(500).nanoseconds))
    }

    /// Follows the media's events (interruptions, the peer's RFC 4733 keys — `events` has one reader, this) and
    /// samples its health until the media stops.
    private func watch(_ live: LiveCall) {
        let events = live.events
        Task { [call] in
            for await event in events {
                switch event {
                case .interruptionBegan(let reason): _ = try? await call.dialog(.mediaInterrupted(reason))
                case .interruptionEnded: _ = try? await call.dialog(.mediaResumed)
                case .dtmfReceived(let digit): await call.yield(.dtmfReceived(digit), toApp: true, toDriver: false)
                default: break
                }
            }
        }
        let interval = Duration.nanoseconds(sampleInterval.nanoseconds)
        Task { [weak self] in
            while let self, await self.sampleHealth(live) {
                try? await Task.sleep(for: interval)
            }
        }
    }

    private var monitor: CallHealthMonitor?

    /// Feeds one sample to the health monitor and the call; false once the media stopped.
    private func sampleHealth(_ live: LiveCall) async -> Bool {
        guard !finished, media?.live === live else { return false }
        if monitor == nil { monitor = CallHealthMonitor(configuration: health) }
        for output in monitor!.observe(live.reception, at: clock.now) {
            switch output {
            case .quality(let quality): _ = try? await call.dialog(.mediaQuality(quality))
            case .mediaTimedOut(let silence): _ = try? await call.dialog(.mediaTimeout(silence: silence))
            }
        }
        // The audio session's interruption deadline is checked here too, not only at the client's tick.
        await call.tick()
        return !finished
    }

    // MARK: Call → SIP

    private func perform(_ effect: CallEffect) async {
        switch effect {
        case .sendAnswer:
            // An offer we cannot meet ends the SIP call (488), which ends the call through `handle`.
            _ = try? await sip.answer(with: capabilities)
        case .sendDecline(let status):
            await sip.reject(status: status, reason: status == 603 ? "Decline" : nil)
        case .sendCancel:
            // The SIP call ends with the INVITE's final answer (487), which the service may hold while it waits on
            // a branch that never answered: neither the media's end nor a pushed callee's devices (who hear of the
            // cancel now) wait for it.
            Task { [sip] in await sip.hangUp() }
            if pushed, let handler = onPushedCallCanceled {
                onPushedCallCanceled = nil
                await handler()
            }
        case .sendBye:
            // A peer that is gone answers the BYE only with the transaction's timeout (32 s): the media ends now,
            // and `isFinished` waits for the BYE's answer.
            awaitingByeAnswer = true
            Task { [weak self, sip] in
                await sip.hangUp()
                await self?.byeAnswered()
            }
        case .sendHold(let on):
            onHold = on
            media?.live.setMicrophoneMuted(muted || onHold)
            await moveMediaForHold(on)
            // The re-INVITEs go out in order, but the effects after them (a resume's devices, the end) do not wait
            // for the peer's answer.
            let previous = reofferInFlight, offer = reoffer
            reofferInFlight = Task { [sip] in
                await previous?.value
                _ = try? await sip.reoffer(direction: on ? .sendonly : .sendrecv, freshKeys: false, offering: offer)
            }
        case .setMicrophoneMuted(let on):
            muted = on
            media?.live.setMicrophoneMuted(muted || onHold)
        case .mediaInterrupted, .mediaResumed, .qualityUpdated, .reconnecting, .reconnected:
            break  // for the app; the media pauses and resumes by itself
        case .startRingtone:
            tones.startRingtone()
        case .stopRingtone:
            tones.stopRingtone()
        case .stateChanged(.ended):
            let cause = await call.details.endCause
            if call.direction == .outgoing, cause == .denied || cause == .failure {
                tones.playBusyTone(on: devices.speaker)
            }
            endSeen = true
            await finish()
            releaseTones()
            await runFinishedHandlers()
        case .stateChanged, .dtmfReceived:
            break
        case .sendDTMF(let digits):
            await sendDTMF(digits)
        }
    }

    /// Runs `handler` with the call once it has ended and its media has stopped with the report attached (at once
    /// if both happened).
    func whenFinished(_ handler: @escaping @Sendable (Call) async -> Void) async {
        finishedHandlers.append(handler)
        await runFinishedHandlers()
    }

    private func runFinishedHandlers() async {
        guard finishComplete, endSeen, !finishedHandlers.isEmpty else { return }
        let handlers = finishedHandlers
        finishedHandlers = []
        for handler in handlers { await handler(call) }
    }

    /// Stops the media and closes the RTP socket, once.
    private func finish() async {
        guard !finished else { return }
        finished = true
        // Held at the end, the tones no longer count this call's media.
        mediaRan = countedInTones
        // A move under way ends first, so its media is stopped and reported here.
        while moving { try? await Task.sleep(for: .milliseconds(10)) }
        for report in earlierReports { await call.attachMedia(report) }
        earlierReports = []
        if let media {
            self.media = nil
            let result = await media.stop(cause: .localHangup)
            await call.attachMedia(result.report)
        }
        await transport.close()
        finishComplete = true
        releaseTones()
        await runFinishedHandlers()
    }

    /// Tells the tones this call is over once both its media stopped and its end was carried out (the busy tone
    /// decided), so the tone player neither stops between the two (a file speaker would be rewritten for the
    /// busy tone) nor starts between a call's media and its end.
    private func releaseTones() {
        guard finishComplete, endSeen, !tonesReleased else { return }
        tonesReleased = true
        tones.callEnded(hadMedia: mediaRan)
    }

    /// Whether the media has stopped, the RTP socket is closed and a BYE of ours has its answer (or timed out).
    var isFinished: Bool { finished && !awaitingByeAnswer }

    private func byeAnswered() { awaitingByeAnswer = false }

    /// The media's counters, while it runs.
    var mediaStatistics: LiveCallStatistics? { media?.live.statistics }

    /// The running media, for DTMF (Call+DTMF.swift).
    var mediaLive: LiveCall? { media?.live }
}
