import VoiceEngine

/// Why ``Call/sendDTMF(_:)`` sent nothing.
public enum CallDTMFError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not a string of DTMF keys (0–9, `*`, `#`, A–D).
    case invalidKeys(DTMFDigitError)
    /// Keys go only in an established call.
    case notEstablished(CallState)

    public var description: String {
        switch self {
        case .invalidKeys(let error): "\(error)"
        case .notEstablished(let state): "DTMF needs an established call (the call is \(state))"
        }
    }
}

extension Call {
    /// Sends `keys` (`"123#"`) to the peer, in order: as RFC 4733 telephone-events in the media when the peer
    /// negotiated them (100 ms tones), else as one SIP INFO (`application/dtmf-relay`) per key. Returns once they
    /// are queued; the peer's digits come as ``CallEffect/dtmfReceived(_:)`` on ``updates``.
    /// - Throws: ``CallDTMFError`` (nothing is sent).
    public func sendDTMF(_ keys: String) throws(CallDTMFError) {
        let digits: [DTMFDigit]
        do { digits = try DTMFDigit.parse(keys) } catch { throw .invalidKeys(error) }
        guard state == .established else { throw .notEstablished(state) }
        yield(.sendDTMF(digits), toApp: false, toDriver: true)
    }
}

extension CallLink {
    /// Sends keys in the media when telephone-events were negotiated, else by SIP INFO (a failure of either is
    /// not the app's to handle: the keys are lost as a tone the peer did not hear would be).
    func sendDTMF(_ digits: [DTMFDigit]) async {
        if let live = mediaLive, live.sendsTelephoneEvents {
            try? live.sendDTMF(digits)
        } else {
            try? await sip.sendDTMF(digits)
        }
    }

    /// Reports the keys the media receives (RFC 4733) to the app, until the media ends.
    nonisolated func reportDTMF(of live: LiveCall) {
        let events = live.events
        let call = call
        Task {
            for await event in events {
                if case .dtmfReceived(let digit) = event {
                    await call.yield(.dtmfReceived(digit), toApp: true, toDriver: false)
                }
            }
        }
    }
}
