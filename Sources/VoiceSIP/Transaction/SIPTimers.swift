/// A point on the clock that drives transactions: the time since an origin the owner chooses. Transactions never
/// read a clock; they are handed `now` and say when they next need to be woken (`nextDeadline`), so a test can run
/// Timer B's 32 s in microseconds and a NIO handler can schedule one task on its event loop.
public struct SIPInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var sinceOrigin: Duration

    public init(_ sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    public static let origin = SIPInstant(.zero)

    public static func < (a: SIPInstant, b: SIPInstant) -> Bool { a.sinceOrigin < b.sinceOrigin }
    public static func + (a: SIPInstant, b: Duration) -> SIPInstant { SIPInstant(a.sinceOrigin + b) }
    public static func - (a: SIPInstant, b: SIPInstant) -> Duration { a.sinceOrigin - b.sinceOrigin }

    public var nanoseconds: Int64 {
        sinceOrigin.components.seconds * 1_000_000_000 + sinceOrigin.components.attoseconds / 1_000_000_000
    }

    public var description: String { "\(sinceOrigin)" }
}

/// RFC 3261 §17.1.1.1 / Table 4's T1, T2, T4; every transaction timer derives from them.
public struct SIPTimerConfiguration: Equatable, Sendable {
    /// Round-trip estimate: first retransmission interval (500 ms).
    public var t1: Duration
    /// Longest retransmission interval of non-INVITE requests and INVITE responses (4 s).
    public var t2: Duration
    /// How long a message can stay in the network (5 s).
    public var t4: Duration

    public init(t1: Duration = .milliseconds(500), t2: Duration = .seconds(4), t4: Duration = .seconds(5)) {
        self.t1 = t1
        self.t2 = t2
        self.t4 = t4
    }

    /// 64·T1: Timers B, F, H, J, L and M.
    public var transactionTimeout: Duration { t1 * 64 }
}

/// The timers of RFC 3261 §17 (A–K) and RFC 6026 (L, M).
public enum SIPTimer: String, Hashable, Sendable, CaseIterable {
    /// INVITE client: retransmit the INVITE (unreliable transports).
    case a = "A"
    /// INVITE client: give up waiting for any response.
    case b = "B"
    /// INVITE client, Completed: absorb retransmitted final responses.
    case d = "D"
    /// Non-INVITE client: retransmit the request.
    case e = "E"
    /// Non-INVITE client: give up waiting for a final response.
    case f = "F"
    /// INVITE server, Completed: retransmit the final response.
    case g = "G"
    /// INVITE server, Completed: give up waiting for the ACK.
    case h = "H"
    /// INVITE server, Confirmed: absorb retransmitted ACKs.
    case i = "I"
    /// Non-INVITE server, Completed: absorb retransmitted requests.
    case j = "J"
    /// Non-INVITE client, Completed: absorb retransmitted responses.
    case k = "K"
    /// INVITE server, Accepted (RFC 6026): absorb retransmitted INVITEs after a 2xx.
    case l = "L"
    /// INVITE client, Accepted (RFC 6026): pass further 2xx (forked or retransmitted) to the TU.
    case m = "M"
}

/// The timers one transaction has running, with their deadlines.
struct SIPTimerSet: Equatable, Sendable {
    private var deadlines: [SIPTimer: SIPInstant] = [:]

    mutating func start(_ timer: SIPTimer, at deadline: SIPInstant) { deadlines[timer] = deadline }
    mutating func cancel(_ timer: SIPTimer) { deadlines[timer] = nil }
    mutating func cancelAll() { deadlines.removeAll() }
    func isRunning(_ timer: SIPTimer) -> Bool { deadlines[timer] != nil }

    var nextDeadline: SIPInstant? { deadlines.values.min() }

    /// Removes and returns the earliest timer due at `now`, if any, with the deadline it was due at: a
    /// retransmission timer restarts from that deadline, not from a late wake-up, so its schedule does not drift.
    mutating func popExpired(at now: SIPInstant) -> (timer: SIPTimer, deadline: SIPInstant)? {
        guard
            let (timer, deadline) = deadlines.min(by: {
                $0.value < $1.value || ($0.value == $1.value && $0.key.rawValue < $1.key.rawValue)
            }),
            deadline <= now
        else { return nil }
        deadlines[timer] = nil
        return (timer, deadline)
    }
}
