/// RFC 4733 telephone-events in offer/answer: `a=rtpmap:<pt> telephone-event/<clock>` with `a=fmtp:<pt> 0-16`
/// beside each audio clock rate offered, and the one at the chosen codec's clock rate in the answer (events use
/// the audio's clock and SSRC, so a telephone-event at another rate is of no use to that stream).
extension SessionDescription {
    /// The events we send and receive: the sixteen DTMF keys and flash (RFC 4733 §3.2).
    static let telephoneEventRange = "0-16"

    /// The telephone-event formats an offer carries: one per distinct clock rate of `codecs`, the first at
    /// `local.telephoneEventPayloadType` and the next ones at the following free dynamic types. Empty when
    /// telephone-events are off.
    static func telephoneEventFormats(for codecs: [RTPFormat], local: AudioCapabilities) -> [RTPFormat] {
        guard let first = local.telephoneEventPayloadType else { return [] }
        var used = Set(codecs.map(\.payloadType))
        var rates: [Int] = []
        for rate in codecs.compactMap(\.rtpmap?.clockRate) where !rates.contains(rate) { rates.append(rate) }
        var formats: [RTPFormat] = []
        var candidate = first
        for rate in rates {
            while used.contains(candidate) || (64...95).contains(candidate) {
                candidate = candidate >= 127 ? 96 : candidate + 1
            }
            used.insert(candidate)
            formats.append(telephoneEvent(payloadType: candidate, clockRate: rate))
        }
        return formats
    }

    static func telephoneEvent(payloadType: UInt8, clockRate: Int) -> RTPFormat {
        RTPFormat(
            payloadType: payloadType, rtpmap: RTPMap(encodingName: "telephone-event", clockRate: clockRate),
            fmtp: telephoneEventRange)
    }
}

extension AudioMediaDescription {
    /// The payload type of this section's `telephone-event` at `clockRate`, if it lists one.
    public func telephoneEventPayloadType(clockRate: Int) -> UInt8? {
        formats.first {
            $0.rtpmap?.encodingName.lowercased() == "telephone-event" && $0.rtpmap?.clockRate == clockRate
        }?.payloadType
    }
}
