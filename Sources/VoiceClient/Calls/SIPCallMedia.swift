import VoiceEngine
import VoiceSIP
import VoiceWebRTC

/// The media of a negotiated SIP call: a `LiveCall` on the stream the offer/answer agreed (`NegotiatedAudio`
/// from `SIPCallEvent.established`), on a microphone and speaker opened for it, following the re-INVITEs that
/// hold, resume or re-key the call (`SIPCallEvent.mediaUpdated`) until it is stopped. The one place a SIP call
/// is wired to media, for the client's calls (`CallLink`) and the CLI's `sip call` and `sip listen`.
package final class SIPCallMedia: Sendable {
    /// The running media (its events, counters and microphone switch).
    package let live: LiveCall
    /// The DTLS-SRTP association that keyed the call, still answering the peer's late records until ``stop(cause:)``.
    private let handshake: DTLSSRTPMediaPortHandshake?
    /// ICE on the media port when both sides do it: answering checks and keeping consent until ``stop(cause:)``.
    package let ice: ICEMediaPort?
    /// The call's RTP socket (and its RTCP socket without rtcp-mux), which a re-negotiation may re-point.
    private let transport: UDPMediaTransport

    /// Points `transport` (the RTP socket whose address the SDP announced) at the peer, its RTCP at the peer's RTCP
    /// port when RTCP is not multiplexed, opens the devices and
    /// starts a `LiveCall` on them. When it throws, the devices are closed again and nothing runs; the
    /// transport stays open (it belongs to the caller, who bound it before the offer/answer).
    ///
    /// - Parameters:
    ///   - devices: the microphone, speaker and rate (a file microphone's own rate wins) and whether voice
    ///     processing runs in the send chain; the ringtone is not used here.
    ///   - tones: a controller mixed over the call's audio (ringback as early media, call waiting) when the
    ///     speaker was opened at its format; otherwise the call plays without it.
    ///   - adjust: changes to the stream configuration made from `negotiated`, before the call is built.
    /// - Throws: `UDPTransportError.badAddress` for a peer address that is not an IP address, `UDPTransportError`
    ///   when RTCP needs its own port and the RTP port + 1 cannot be bound, or a
    ///   `LiveCallError` (devices, stream, start).
    package convenience init(
        negotiated: NegotiatedAudio, callID: CallID, transport: UDPMediaTransport, devices: CallAudioDevices,
        options: LiveCallOptions = LiveCallOptions(), tones: AudioController? = nil,
        adjust: (MediaStreamConfiguration) -> MediaStreamConfiguration = { $0 }
    ) throws {
        try self.init(
            negotiated: negotiated, callID: callID, transport: transport, devices: devices, options: options,
            tones: tones, handshake: nil, ice: nil, adjust: adjust)
    }

    /// Starts the media of a call SDES or DTLS-SRTP keyed (``NegotiatedAudio/dtls``), over ICE when both sides do
    /// it. With `ice` and the peer's ICE parameters (``NegotiatedAudio/remoteICE``) the connectivity checks run
    /// first on `transport` and media goes to the selected pair's address instead of the SDP's c=/m= one; for a
    /// peer without ICE while our c=/m= is the relayed candidate, media goes to its c=/m= through the relay. For
    /// DTLS-SRTP the handshake then runs on `transport` with `certificate`, in the role the offer/answer gave us,
    /// and its exported keys become the call's SRTP keys; no RTP flows before. `transport` must be bound
    /// ``UDPMediaTransport/ReceiveMode/consumerPolls`` for either.
    /// - Throws: ``SIPCallMediaError`` (the transport stays open, nothing runs), or what
    ///   ``init(negotiated:callID:transport:devices:options:tones:adjust:)`` throws.
    package static func start(
        negotiated: NegotiatedAudio, callID: CallID, transport: UDPMediaTransport, certificate: DTLSCertificate,
        ice: ICEMediaPort? = nil, devices: CallAudioDevices, options: LiveCallOptions = LiveCallOptions(),
        tones: AudioController? = nil, handshakeTimeout: Duration = SIPCallMedia.dtlsHandshakeTimeout
    ) async throws -> SIPCallMedia {
        try transport.setRemote(negotiated: negotiated)
        // The handshake keeps the peer's first flight while our checks still run (the peer may finish first).
        var handshake: DTLSSRTPMediaPortHandshake?
        if let dtls = negotiated.dtls {
            do throws(DTLSError) {
                handshake = try DTLSSRTPMediaPortHandshake(
                    certificate: certificate, negotiated: dtls, transport: transport)
            } catch {
                throw SIPCallMediaError.dtlsHandshakeFailed(error)
            }
            handshake?.listen()
        }
        var connectedICE: ICEMediaPort?
        if let ice, let remote = negotiated.remoteICE {
            switch await ice.connect(to: remote, timeout: Self.iceTimeout) {
            case .success:  // the transport sends to the selected pair now, and follows a renomination
                connectedICE = ice
            case .failure(let error):
                ice.stop()
                handshake?.stop()
                throw SIPCallMediaError.iceFailed(error)
            }
        } else if let ice, ice.defaultCandidate?.kind == .relay, let peer = transport.remote {
            // A peer without ICE sends to our c=/m= address, the relay: ours goes to it from there too.
            switch await ice.relayWithoutICE(to: peer, timeout: Self.iceTimeout) {
            case .success: connectedICE = ice
            case .failure(let error):
                ice.stop()
                handshake?.stop()
                throw SIPCallMediaError.iceFailed(error)
            }
        }
        guard let handshake else {
            return try SIPCallMedia(
                negotiated: negotiated, callID: callID, transport: transport, devices: devices, options: options,
                tones: tones, handshake: nil, ice: connectedICE, remoteSet: true)
        }
        let keys: DTLSSRTPKeys
        do throws(DTLSError) {
            keys = try await handshake.run(timeout: handshakeTimeout).get()
        } catch {
            handshake.stop()
            connectedICE?.stop()
            throw SIPCallMediaError.dtlsHandshakeFailed(error)
        }
        do {
            return try SIPCallMedia(
                negotiated: negotiated, callID: callID, transport: transport, devices: devices, options: options,
                tones: tones, handshake: handshake, ice: connectedICE, remoteSet: true
            ) {
                var keyed = $0
                keyed.srtp = keys.mediaStreamKeys
                return keyed
            }
        } catch {
            handshake.stop()
            connectedICE?.stop()
            throw error
        }
    }

    /// How long a DTLS-SRTP handshake may take (its flights are retransmitted meanwhile) before the call fails.
    package static let dtlsHandshakeTimeout: Duration = .seconds(10)
    /// How long ICE connectivity checks may take before the call fails.
    package static let iceTimeout: Duration = .seconds(10)

    private init(
        negotiated: NegotiatedAudio, callID: CallID, transport: UDPMediaTransport, devices: CallAudioDevices,
        options: LiveCallOptions, tones: AudioController?, handshake: DTLSSRTPMediaPortHandshake?,
        ice: ICEMediaPort?, remoteSet: Bool = false,
        adjust: (MediaStreamConfiguration) -> MediaStreamConfiguration = { $0 }
    ) throws {
        self.handshake = handshake
        self.ice = ice
        self.transport = transport
        if !remoteSet { try transport.setRemote(negotiated: negotiated) }
        let pair = try LiveDeviceName.openPair(
            microphone: LiveDeviceName(devices.microphone), speaker: LiveDeviceName(devices.speaker),
            sampleRate: devices.sampleRate)
        do {
            let mixed = tones.flatMap { $0.deviceFormat == pair.playout.format ? $0 : nil }
            let configuration = adjust(
                MediaStreamConfiguration(negotiated: negotiated, voiceProcessing: devices.voiceProcessing))
            live = try LiveCall(
                callID: callID, configuration: configuration, transport: transport, capture: pair.capture,
                playout: pair.playout, options: options, tones: mixed)
            try live.start()
        } catch {
            pair.capture.close()
            pair.playout.close()
            throw error
        }
    }

    /// Applies a re-negotiation (a re-INVITE, ours or the peer's): held by the peer (our side `recvonly` or
    /// `inactive`) our RTP stops, resumed it flows again, new SRTP keys take over, RTCP follows a moved RTCP port.
    /// - Throws: `LiveCallError.stream` when libsrtp refuses the new keys.
    package func update(_ negotiated: NegotiatedAudio) throws {
        try transport.followRenegotiation(negotiated)
        try live.updateMedia(negotiated)
    }

    /// Moves the running call to other devices: the media thread and devices stop (no RTCP BYE, the transport
    /// stays open), and a new `LiveCall` runs on `devices` with the same transport, keys, DTLS association and ICE,
    /// in the direction and with the keys `negotiated` (the latest offer/answer) gives. Devices that cannot be
    /// opened throw and leave nothing running: the caller moves the call back or ends it.
    /// - Returns: the media on the new devices (this object is spent) and the report of the media on the old ones.
    package func moved(
        to devices: CallAudioDevices, negotiated: NegotiatedAudio, tones: AudioController? = nil
    ) async throws -> (media: SIPCallMedia, report: LiveCallResult) {
        let report = await live.handOver()
        let keys = live.configuration.srtp
        let media = try SIPCallMedia(
            negotiated: negotiated, callID: live.callID, transport: live.transport, devices: devices,
            options: live.options, tones: tones, handshake: handshake, ice: ice, remoteSet: true
        ) {
            var keyed = $0
            // DTLS-SRTP keys are the association's, not the SDP's; SDES keys follow the latest offer/answer.
            if negotiated.dtls != nil { keyed.srtp = keys }
            return keyed
        }
        try media.live.updateMedia(srtp: nil, direction: negotiated.direction)
        return (media, report)
    }

    /// Stops the devices and the media thread and returns the end-of-call report.
    package func stop(cause: CallEndCause) async -> LiveCallResult {
        let result = await live.stop(cause: cause)
        handshake?.stop()
        ice?.stop()
        return result
    }
}

/// Why a call's media could not start.
package enum SIPCallMediaError: Error, Equatable, CustomStringConvertible {
    /// The DTLS-SRTP handshake the offer/answer agreed on failed (fingerprint mismatch, alert, no common SRTP
    /// profile, no answer in time): the call has no keys and no media.
    case dtlsHandshakeFailed(DTLSError)
    /// Both sides do ICE and no candidate pair answered its connectivity checks: the peer is not reachable at any
    /// address it announced.
    case iceFailed(ICEMediaPortError)

    package var description: String {
        switch self {
        case .dtlsHandshakeFailed(let error): "DTLS-SRTP handshake failed: \(error)"
        case .iceFailed(let error): "ICE found no working candidate pair: \(error)"
        }
    }
}
