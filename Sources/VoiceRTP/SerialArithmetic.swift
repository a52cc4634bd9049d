/// RFC 1982 serial-number comparison for RTP sequence numbers (16 bits) and timestamps (32 bits).
///
/// `a` is newer than `b` when the forward distance from `b` to `a` is less than half the number space. RFC 1982
/// leaves the exact half undefined; here the numerically larger value wins, so the relation stays antisymmetric.
@inlinable
public func isNewer<T: FixedWidthInteger & UnsignedInteger>(_ a: T, than b: T) -> Bool {
    let half = T(1) << (T.bitWidth - 1)
    let distance = a &- b
    if distance == half { return a > b }
    return distance != 0 && distance < half
}

/// The signed forward distance from `b` to `a` in serial arithmetic (positive when `a` is newer).
@inlinable
public func serialDistance<T: FixedWidthInteger & UnsignedInteger>(from b: T, to a: T) -> Int64 {
    let half = Int64(1) << (T.bitWidth - 1)
    var d = Int64(a &- b)
    if d > half || (d == half && a < b) { d -= half * 2 }
    return d
}

/// Turns wrapping sequence numbers or timestamps into monotonic 64-bit values that keep counting across the wrap
/// (65535 → 0 is 65535 → 65536), robust to reordering: each value is placed within half the number space of the
/// previous one, so a late packet from before the wrap unwraps below one from after it.
///
/// The first value unwraps to itself; a packet reordered before the very first one around a wrap may unwrap to a
/// negative number. State is one optional integer; `unwrap` never allocates.
///
/// Inlinable so other modules (the jitter buffer, per packet) get it specialized for UInt16/UInt32 instead of
/// running the generic code through witness tables (seen in `perf` of the conference room's receive path).
public struct SerialUnwrapper<T: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable, Hashable {
    @usableFromInline var reference: Int64?

    /// The last unwrapped value, or nil before the first.
    @inlinable public var last: Int64? { reference }

    @inlinable public init() {}

    /// The extended value of `value`, which becomes the reference for the next call.
    @inlinable
    public mutating func unwrap(_ value: T) -> Int64 {
        let result = peek(value)
        reference = result
        return result
    }

    /// The extended value of `value` without changing the reference.
    @inlinable
    public func peek(_ value: T) -> Int64 {
        guard let last = reference else { return Int64(value) }
        return last + serialDistance(from: T(truncatingIfNeeded: last), to: value)
    }

    /// Forgets the reference (a new stream, an SSRC change).
    @inlinable public mutating func reset() { reference = nil }
}

/// Extends 16-bit RTP sequence numbers.
public typealias SequenceUnwrapper = SerialUnwrapper<UInt16>
/// Extends 32-bit RTP timestamps.
public typealias TimestampUnwrapper = SerialUnwrapper<UInt32>
