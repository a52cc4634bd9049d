import Foundation
import VoiceEngine
import VoiceSIP

/// Binds a ``Call`` (the SDK's call object and its state machine) to its SIP dialog (`SIPCall`) and its media
/// (`LiveCall`, Opus over SDES-SRTP): SIP events become ``CallEvent``s, the call's `send…` effects become SIP
/// requests and responses, establishment starts the media on the negotiated stream and the end stops it.
actor CallLink {
    let call: Call
    let sip: SIPCall
    private let transport: UDPMediaTransport
    let capabilities: AudioCapabilities
    private let devices: CallAudioDevices
    private let tones: CallTones
    private var media: SIPCallMedia?
    private var muted = false
    private var onHold = false
    private var finished = false
    private var finishComplete = false, endSeen = false, mediaRan = false, tonesReleased = false
    /// Told once when the service keeps the call for a callee with no connection ("180 Ringing (Push Pending)"):
    /// the client asks the app to push (app-sent push).
    private var onPushPending: (@Sendable () async -> Void)?
    /// A provisional response came: the service is reachable (a later Timer B is a timeout, not a failure).
    private var heardFromNetwork = false

    init(
        call: Call, sip: SIPCall, transport: UDPMediaTransport, capabilities: AudioCapabilities,
        devices: CallAudioDevices, tones: CallTones
    ) {
        self.call = call
        self.sip = sip
        self.transport = transport
        self.capabilities = capabilities
        self.devices = devices
        self.tones = tones
    }

    func whenPushPending(_ handler: @escaping @Sendable () async -> Void) { onPushPending = handler }

    /// The reason phrase of the service's provisional response for a kept call (Services/kamailio/kamailio.cfg).
    static let pushPendingReason = "Push Pending"

    /// The RTP socket and the offer/answer capabilities of one call, on `host` (the address SIP uses), with an
    /// RTCP socket (RTP + 1 when free, else any port) announced as `a=rtcp:` for a peer that does not multiplex.
    static func bindMedia(host: String) async throws -> (UDPMediaTransport, AudioCapabilities) {
        let transport = try await UDPMediaTransport.bind(host: host, port: 0)
        let rtcp: UDPEndpoint
        do { rtcp = try transport.bindRTCPPort() } catch { rtcp = try transport.bindRTCPPort(port: 0) }
        let suites: [SRTPCryptoSuite] = [.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32]
        return (
            transport,
            AudioCapabilities(
                address: host, port: Int(transport.localEndpoint.port), srtp: .required(suites),
                rtcpPort: Int(rtcp.port))
        )
    }

    /// Follows both sides until the call ends.
    nonisolated func run() {
        tones.callBegan(speaker: devices.speaker)
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
                await handler()
            }
            _ = try? await call.dialog(status == 180 ? .ringing : .progress)
        case .established(let media, _):
            do {
                try startMedia(media)
                _ = try? await call.dialog(.established)
            } catch {
                _ = try? await call.dialog(.failed(.media("\(error)")))
            }
        case .mediaUpdated(let media, _):
            // A re-INVITE (ours or the peer's) held, resumed or re-keyed the call: the running media follows —
            // held by the peer (our side recvonly/inactive) we stop sending RTP, resumed we send again.
            try? self.media?.update(media)
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

    private func startMedia(_ negotiated: NegotiatedAudio) throws {
        guard media == nil else { return }
        // The tone player lets go of the speaker first; the call's playout mixes the tones instead when it runs
        // at their rate (a file microphone may set another).
        tones.mediaStarting()
        do {
            let started = try SIPCallMedia(
                negotiated: negotiated, callID: call.id, transport: transport, devices: devices, tones: tones.controller
            )
            started.live.setMicrophoneMuted(muted || onHold)
            media = started
            reportDTMF(of: started.live)
        } catch {
            tones.mediaStopped()
            throw error
        }
    }

    // MARK: Call → SIP

    private func perform(_ effect: CallEffect) async {
        switch effect {
        case .sendAnswer:
            // An offer we cannot meet ends the SIP call (488), which ends the call through `handle`.
            _ = try? await sip.answer(with: capabilities)
        case .sendDecline(let status):
            await sip.reject(status: status, reason: status == 603 ? "Decline" : nil)
        case .sendCancel, .sendBye:
            await sip.hangUp()
        case .sendHold(let on):
            onHold = on
            media?.live.setMicrophoneMuted(muted || onHold)
            _ = try? await (on ? sip.hold() : sip.resume())
        case .setMicrophoneMuted(let on):
            muted = on
            media?.live.setMicrophoneMuted(muted || onHold)
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
        case .stateChanged, .dtmfReceived:
            break
        case .sendDTMF(let digits):
            await sendDTMF(digits)
        }
    }

    /// Stops the media and closes the RTP socket, once.
    private func finish() async {
        guard !finished else { return }
        finished = true
        if let media {
            self.media = nil
            let result = await media.stop(cause: .localHangup)
            mediaRan = true
            await call.attachMedia(result.report)
        }
        await transport.close()
        finishComplete = true
        releaseTones()
    }

    /// Tells the tones this call is over once both its media stopped and its end was carried out (the busy tone
    /// decided), so the tone player neither stops between the two (a file speaker would be rewritten for the
    /// busy tone) nor starts between a call's media and its end.
    private func releaseTones() {
        guard finishComplete, endSeen, !tonesReleased else { return }
        tonesReleased = true
        tones.callEnded(hadMedia: mediaRan)
    }

    /// Whether the media has stopped and the RTP socket is closed (after the SIP side was carried out).
    var isFinished: Bool { finished }

    /// The media's counters, while it runs.
    var mediaStatistics: LiveCallStatistics? { media?.live.statistics }

    /// The running media, for DTMF (Call+DTMF.swift).
    var mediaLive: LiveCall? { media?.live }
}
