import VoiceEngine
import VoiceSIP

/// The media of a negotiated SIP call: a `LiveCall` on the stream the offer/answer agreed (`NegotiatedAudio`
/// from `SIPCallEvent.established`), on a microphone and speaker opened for it, following the re-INVITEs that
/// hold, resume or re-key the call (`SIPCallEvent.mediaUpdated`) until it is stopped. The one place a SIP call
/// is wired to media, for the client's calls (`CallLink`) and the CLI's `sip call` and `sip listen`.
package final class SIPCallMedia: Sendable {
    /// The running media (its events, counters and microphone switch).
    package let live: LiveCall

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
    package init(
        negotiated: NegotiatedAudio, callID: CallID, transport: UDPMediaTransport, devices: CallAudioDevices,
        options: LiveCallOptions = LiveCallOptions(), tones: AudioController? = nil,
        adjust: (MediaStreamConfiguration) -> MediaStreamConfiguration = { $0 }
    ) throws {
        try transport.setRemote(negotiated: negotiated)
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
    /// `inactive`) our RTP stops, resumed it flows again, new SRTP keys take over.
    /// - Throws: `LiveCallError.stream` when libsrtp refuses the new keys.
    package func update(_ negotiated: NegotiatedAudio) throws {
        try live.updateMedia(negotiated)
    }

    /// Stops the devices and the media thread and returns the end-of-call report.
    package func stop(cause: AudioSessionEndReason) async -> LiveCallResult {
        await live.stop(cause: cause)
    }
}
