import VoiceCore

/// Where a ``MediaStream`` hands the datagrams it produces (SRTP-protected RTP and RTCP): a UDP transport, a
/// simulated network, a capture file.
///
/// The bytes are valid only during the call (they live in the stream's preallocated buffer): copy them if they
/// must outlive it. Called on the thread that drives the stream; must not block.
public protocol MediaPacketSink: AnyObject {
    func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime)
}

/// A sink that calls a closure; for tests and small tools.
public final class ClosurePacketSink: MediaPacketSink {
    private let body: (UnsafeRawBufferPointer, MediaPacketKind, MediaTime) -> Void

    public init(_ body: @escaping (UnsafeRawBufferPointer, MediaPacketKind, MediaTime) -> Void) {
        self.body = body
    }

    public func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
        body(datagram, kind, now)
    }
}

/// A sink that drops everything (a receive-only stream, capture replay).
public final class NullPacketSink: MediaPacketSink {
    public init() {}
    public func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {}
}

/// A hook on the playout path for the audio controller: ringtones and progress tones are mixed into each
/// decoded block here, before the block becomes the echo canceller's far-end reference (so tones are cancelled
/// too) and before resampling to the device rate.
public protocol MediaStreamPlayoutMixer: AnyObject {
    /// Mixes into `block` (10 ms mono at `sampleRate`, the processing rate) in place. Must not allocate or block.
    func mix(into block: UnsafeMutableBufferPointer<Int16>, sampleRate: Int, now: MediaTime)
}
