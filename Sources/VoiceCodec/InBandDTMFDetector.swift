internal import CSpanDSP

/// Keys sent as tones in the audio (peers and gateways that do not send RFC 4733 events), found by spandsp's DTMF
/// receiver: Goertzel filters on the eight DTMF frequencies with ITU-T Q.24 level, twist and duration checks and
/// its dial-tone filter, on 8 kHz audio. A key is reported once per tone, when the tone has lasted long enough.
/// The receiver's state is created in `init`; ``process(_:)`` and ``nextKey()`` never allocate. Not thread-safe.
public final class InBandDTMFDetector {
    /// The rate ``process(_:)`` expects (spandsp's receiver works on telephone-band audio).
    public static let sampleRate = 8_000

    private let state: OpaquePointer
    /// One key and spandsp's terminating NUL.
    private let key = UnsafeMutablePointer<CChar>.allocate(capacity: 2)

    public init() {
        guard let state = dtmf_rx_init(nil, nil, nil) else {
            preconditionFailure("dtmf_rx_init could not allocate its state")
        }
        self.state = state
        key.initialize(repeating: 0, count: 2)
    }

    deinit {
        dtmf_rx_free(state)
        key.deallocate()
    }

    /// Feeds `samples` (mono, 8 kHz) to the receiver; the keys it completes wait for ``nextKey()``.
    public func process(_ samples: UnsafeBufferPointer<Int16>) {
        guard let base = samples.baseAddress, !samples.isEmpty else { return }
        _ = dtmf_rx(state, base, Int32(clamping: samples.count))
    }

    /// The oldest detected key not taken yet, as its character code (`0`–`9`, `*`, `#`, `A`–`D`), or nil.
    public func nextKey() -> UInt8? {
        guard dtmf_rx_get(state, key, 1) == 1 else { return nil }
        return UInt8(bitPattern: key[0])
    }
}
