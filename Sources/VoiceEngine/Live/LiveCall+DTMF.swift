import VoiceRTP

/// Why ``LiveCall/sendDTMF(_:)`` sent nothing.
public enum DTMFSendError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not a string of DTMF keys.
    case invalidKeys(DTMFDigitError)
    /// The peer did not negotiate RFC 4733 telephone-events (send the keys by SIP INFO instead).
    case telephoneEventsNotNegotiated
    /// Too many keys are still waiting to be sent; none of these was queued.
    case tooManyPending(waiting: Int)

    public var description: String {
        switch self {
        case .invalidKeys(let error): "\(error)"
        case .telephoneEventsNotNegotiated:
            "the peer did not negotiate telephone-event (RFC 4733): DTMF cannot go in the media"
        case .tooManyPending(let waiting): "\(waiting) DTMF keys are still waiting to be sent"
        }
    }
}

extension LiveCall {
    /// Whether the call sends DTMF as RFC 4733 telephone-events (the peer negotiated them).
    public var sendsTelephoneEvents: Bool { configuration.telephoneEventPayloadType != nil }

    /// Sends `keys` (`"123#"`: 0–9, `*`, `#`, A–D) as RFC 4733 telephone-events in place of the audio, 100 ms
    /// each, 60 ms apart, from the media thread's next tick. All or nothing: every key is checked and queued, or
    /// none. Any task may call it.
    /// - Throws: ``DTMFSendError``.
    public func sendDTMF(_ keys: String) throws(DTMFSendError) {
        let digits: [DTMFDigit]
        do { digits = try DTMFDigit.parse(keys) } catch { throw .invalidKeys(error) }
        try sendDTMF(digits)
    }

    /// ``sendDTMF(_:)-(String)`` with parsed keys.
    public func sendDTMF(_ digits: [DTMFDigit]) throws(DTMFSendError) {
        guard sendsTelephoneEvents else { throw .telephoneEventsNotNegotiated }
        let queue = shared.dtmfToSend
        try shared.dtmfProducer.withLock { _ throws(DTMFSendError) in
            guard queue.capacity - queue.count >= digits.count else { throw .tooManyPending(waiting: queue.count) }
            for digit in digits { queue.push(digit) }
        }
    }
}

extension LiveCallMediaLoop {
    /// Moves keys the control side queued into the stream's sender while it has room (no allocation).
    func moveDTMFToStream() {
        let queue = shared.dtmfToSend
        while stream.pendingDTMFCount < TelephoneEventSender.capacity, let digit = queue.pop() {
            stream.sendDTMF(digit)
        }
    }
}
