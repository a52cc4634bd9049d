/// RFC 4733 telephone-events in offer/answer: `a=rtpmap:<pt> telephone-event/<clock>` with `a=fmtp:<pt> 0-16`
/// beside each audio clock rate offered and at 8000 Hz, and in the answer the one at the chosen codec's clock rate
/// (RFC 4733 §2.1: events share the audio's clock and SSRC), else the one at 8000 Hz: baresip and Asterisk offer
/// only `telephone-event/8000`, also beside Opus, and send its events with the audio's timestamps and 8 kHz
/// durations.
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
        for rate in codecs.compactMap(\.rtpmap?.clockRate) + [8_000] where !rates.contains(rate) {
            rates.append(rate)
        }
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
    /// The telephone-event to use beside a codec at `clockRate`: the section's at that rate, else its 8000 Hz one.
    func telephoneEventMatching(clockRate: Int) -> (payloadType: UInt8, clockRate: Int)? {
        for rate in [clockRate, 8_000] {
            if let type = telephoneEventPayloadType(clockRate: rate) { return (type, rate) }
        }
        return nil
    }

    /// The payload type of this section's `telephone-event` at `clockRate`, if it lists one.
    public func telephoneEventPayloadType(clockRate: Int) -> UInt8? {
        formats.first {
            $0.rtpmap?.encodingName.lowercased() == "telephone-event" && $0.rtpmap?.clockRate == clockRate
        }?.payloadType
    }
}
