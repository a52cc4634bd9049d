/// Builds a stream's configuration from the outcome of an offer/answer exchange, so a calling client goes from
/// SDP to media in one step.
extension MediaStreamConfiguration {
    /// The configuration that sends and receives what `negotiated` agreed: the codec and the peer's payload type
    /// (for Opus its preferences for our encoder), the negotiated ptime, and the SRTP suite with both sides' keys.
    /// A telephony codec sets the processing rate to its own (8 kHz G.711, 16 kHz G.722): the echo canceller,
    /// jitter buffer and playout run at it, and the device resamplers convert.
    ///
    /// - Parameters:
    ///   - negotiated: the result of ``SessionDescription/makeAnswer(to:localCapabilities:sessionID:)`` (answerer) or
    ///     ``SessionDescription/negotiate(answer:localCapabilities:)`` (offerer).
    ///   - deviceFormat: the capture and playout devices' format.
    ///   - voiceProcessing: echo cancellation, noise suppression and AGC (the session's `voiceChat` mode).
    public init(negotiated: NegotiatedAudio, deviceFormat: AudioFormat = .mono48k, voiceProcessing: Bool = true) {
        var opus = negotiated.encoder
        if let duration = OpusFrameDuration(rawValue: negotiated.ptime) { opus.frameDuration = duration }
        self.init(
            opus: opus, codec: negotiated.codec, processingRate: negotiated.codec.fixedSampleRate ?? 16_000,
            deviceFormat: deviceFormat,
            srtp: negotiated.srtp.map {
                MediaStreamSRTP(suite: $0.suite, localKey: $0.localKey, remoteKey: $0.remoteKey)
            },
            voiceProcessing: voiceProcessing, payloadType: negotiated.payloadType)
        lossAdaptation.startingBitrateCeiling = negotiated.peerMaximumBitrate
        telephoneEventPayloadType = negotiated.telephoneEventPayloadType
        telephoneEventClockRate = negotiated.telephoneEventClockRate
    }
}
