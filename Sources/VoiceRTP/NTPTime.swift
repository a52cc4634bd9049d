public import VoiceCore

/// A 64-bit NTP timestamp (RFC 5905): seconds since 1900-01-01 in the high 32 bits, fraction in the low 32.
/// RTCP sender reports carry it; LSR and the RTT computation use its middle 32 bits (RFC 3550 6.4.1).
public struct NTPTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Seconds between the NTP epoch (1900) and the Unix epoch (1970).
    public static let unixEpochOffset: UInt64 = 2_208_988_800

    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(seconds: UInt32, fraction: UInt32) {
        rawValue = UInt64(seconds) << 32 | UInt64(fraction)
    }

    public var seconds: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) }
    public var fraction: UInt32 { UInt32(truncatingIfNeeded: rawValue) }

    /// The middle 32 bits (16.16 fixed point seconds): the LSR field of a report block.
    public var middle32: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 16) }

    /// The NTP time of `unixTime`, a duration since 1970-01-01 UTC (e.g. from `clock_gettime(CLOCK_REALTIME)`).
    /// Times from 2036 on wrap into NTP era 1, as NTP itself does.
    public init(unixTime: MediaTime) {
        let ns = unixTime.nanoseconds
        let secs = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
        var wholeSeconds = secs.quotient
        var remainder = secs.remainder
        if remainder < 0 {
            wholeSeconds -= 1
            remainder += 1_000_000_000
        }
        let fraction = (UInt64(remainder) << 32) / 1_000_000_000
        let ntpSeconds = UInt64(bitPattern: wholeSeconds &+ Int64(NTPTimestamp.unixEpochOffset))
        rawValue = ntpSeconds << 32 | fraction
    }

    /// This timestamp as a duration since the Unix epoch (era 0: 1900–2036), to the nanosecond (rounded).
    public var unixTime: MediaTime {
        let secs = Int64(seconds) - Int64(NTPTimestamp.unixEpochOffset)
        let ns = (UInt64(fraction) * 1_000_000_000 + (1 << 31)) >> 32
        return MediaTime(nanoseconds: secs * 1_000_000_000 + Int64(ns))
    }

    public static func < (a: NTPTimestamp, b: NTPTimestamp) -> Bool { a.rawValue < b.rawValue }

    public var description: String { "NTP \(seconds).\(String(fraction, radix: 16))" }
}

/// Maps the engine's media time line onto wall-clock NTP time: one anchor pair taken at stream start (media time
/// `mediaTime` happened at wall time `ntp`). The pipeline never reads the wall clock itself (ARCHITECTURE.md §3).
public struct NTPTimeBase: Sendable, Hashable {
    public var mediaTime: MediaTime
    public var ntp: NTPTimestamp

    public init(mediaTime: MediaTime, ntp: NTPTimestamp) {
        self.mediaTime = mediaTime
        self.ntp = ntp
    }

    /// The NTP time at media time `time`.
    public func ntp(at time: MediaTime) -> NTPTimestamp {
        let delta = time - mediaTime
        return NTPTimestamp(rawValue: ntp.rawValue &+ UInt64(bitPattern: NTPDuration.fixed32_32(delta)))
    }

    /// The media time at which the wall clock read `ntp`.
    public func mediaTime(of ntp: NTPTimestamp) -> MediaTime {
        let delta = Int64(bitPattern: ntp.rawValue &- self.ntp.rawValue)
        return mediaTime + NTPDuration.mediaTime(fixed32_32: delta)
    }
}

/// Conversions for the NTP fixed-point durations used by RTCP.
public enum NTPDuration {
    /// A duration as signed 32.32 fixed point seconds.
    public static func fixed32_32(_ time: MediaTime) -> Int64 {
        let q = time.nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return q.quotient << 32 + (q.remainder << 32) / 1_000_000_000
    }

    /// Signed 32.32 fixed point seconds as a duration (nanosecond resolution, truncated toward −∞ on the fraction).
    public static func mediaTime(fixed32_32 value: Int64) -> MediaTime {
        let secs = value >> 32
        let frac = value & 0xFFFF_FFFF
        return MediaTime(nanoseconds: secs * 1_000_000_000 + (frac * 1_000_000_000) >> 32)
    }

    /// A 16.16 "short NTP" value (LSR, DLSR, RTT) as a duration.
    public static func mediaTime(short value: UInt32) -> MediaTime {
        MediaTime(nanoseconds: (Int64(value) * 1_000_000_000) >> 16)
    }

    /// A duration as 16.16 "short NTP" (DLSR), rounded, clamped to 0...0xFFFFFFFF.
    public static func short(_ time: MediaTime) -> UInt32 {
        if time.nanoseconds <= 0 { return 0 }
        let value = (Double(time.nanoseconds) * 65_536 / 1e9).rounded()
        return value >= Double(UInt32.max) ? .max : UInt32(value)
    }
}

/// Round-trip time from a report block (RFC 3550 6.4.1, Figure 2).
public enum RTCPRoundTrip {
    /// RTT = A − LSR − DLSR in 16.16 seconds, where A is the middle 32 bits of the NTP time the report arrived.
    ///
    /// Returns nil when no SR has been received yet (LSR = 0) or when the result is more negative than a peer's
    /// rounding explains (clock skew or a bogus report). A peer that counts DLSR in whole milliseconds (libre's
    /// timer, so baresip) overstates it by up to 1 ms, so on a sub-millisecond path the result can come out just
    /// under zero: that counts as 0 (WebRTC likewise takes a negative RTT for its minimum). The subtraction wraps,
    /// so arrival times that crossed a 65536 s boundary are handled.
    public static func rtt(arrivalMiddle32 a: UInt32, lsr: UInt32, dlsr: UInt32) -> UInt32? {
        guard lsr != 0 else { return nil }
        let rtt = a &- lsr &- dlsr
        let signed = Int32(bitPattern: rtt)
        if signed < 0 { return signed >= -roundingTolerance ? 0 : nil }
        return rtt
    }

    /// 2 ms in 16.16 seconds: a millisecond-counted DLSR's rounding, with a margin.
    static let roundingTolerance: Int32 = 131

    /// The RTT as a duration; see ``rtt(arrivalMiddle32:lsr:dlsr:)``.
    public static func rtt(arrival: NTPTimestamp, lsr: UInt32, dlsr: UInt32) -> MediaTime? {
        rtt(arrivalMiddle32: arrival.middle32, lsr: lsr, dlsr: dlsr).map { NTPDuration.mediaTime(short: $0) }
    }
}
