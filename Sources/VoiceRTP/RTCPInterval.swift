public import VoiceCore

/// The RFC 3550 RTCP transmission interval (6.2, 6.3, A.7) as pure functions.
public enum RTCPInterval {
    /// e − 3/2: divides the randomized interval to compensate for timer reconsideration (RFC 3550 6.3.1).
    public static let compensation = 2.718_281_828_459_045 - 1.5
    /// The fixed minimum interval, 5 s.
    public static let minimumSeconds = 5.0
    /// The share of the RTCP bandwidth that senders get when they are at most a quarter of the members.
    public static let senderFraction = 0.25

    /// The "reduced minimum" of RFC 3550 6.2: 360 / session bandwidth in kb/s seconds.
    public static func reducedMinimum(sessionBandwidth bitsPerSecond: Double) -> Double {
        360.0 / (bitsPerSecond / 1000.0)
    }

    /// The deterministic interval Td before randomization (RFC 3550 A.7 up to the randomization step).
    ///
    /// - Parameters:
    ///   - members: current estimate of session members, this participant included.
    ///   - senders: members that sent RTP since the last two reports.
    ///   - rtcpBandwidth: RTCP bandwidth in octets per second (normally 5 % of the session bandwidth).
    ///   - weSent: whether this participant sent RTP in that time.
    ///   - averagePacketSize: average compound RTCP size in octets, lower-layer headers included.
    ///   - initial: true before the first report (the minimum is halved).
    ///   - minimum: the minimum interval in seconds (5, or the reduced minimum).
    public static func deterministic(
        members: Int, senders: Int, rtcpBandwidth: Double, weSent: Bool, averagePacketSize: Double, initial: Bool,
        minimum: Double = minimumSeconds
    ) -> Double {
        precondition(rtcpBandwidth > 0, "RTCP bandwidth must be positive")
        let minTime = initial ? minimum / 2 : minimum
        var n = Double(max(members, 1))
        var bandwidth = rtcpBandwidth
        if Double(senders) <= Double(members) * senderFraction {
            if weSent {
                bandwidth *= senderFraction
                n = Double(max(senders, 1))
            } else {
                bandwidth *= 1 - senderFraction
                n = Double(max(members - senders, 1))
            }
        }
        let t = averagePacketSize * n / bandwidth
        return max(t, minTime)
    }

    /// The interval to wait: Td × U[0.5, 1.5) / (e − 3/2), with the random factor from `generator`.
    public static func randomized(deterministic td: Double, using generator: inout some RandomNumberGenerator)
        -> Double
    {
        td * Double.random(in: 0.5..<1.5, using: &generator) / compensation
    }
}

/// The small state behind RTCP scheduling (RFC 3550 6.3, A.7): members, senders, average size, tp/tn, with
/// timer reconsideration on expiry and reverse reconsideration when members leave. Time is injected.
public struct RTCPScheduler: Sendable {
    /// Session bandwidth in bits per second (e.g. the Opus bitrate plus IP/UDP/RTP overhead).
    public var sessionBandwidth: Double
    /// RTCP share of the session bandwidth (5 %).
    public var rtcpFraction: Double = 0.05
    /// Use the reduced minimum (360 / kb/s) instead of 5 s.
    public var useReducedMinimum: Bool
    public var members = 1
    public var senders = 0
    public var weSent = false
    public private(set) var previousMembers = 1
    public private(set) var averagePacketSize: Double
    public private(set) var initial = true
    /// When the last RTCP packet was sent (tp).
    public private(set) var lastSent: MediaTime
    /// When the next one is scheduled (tn).
    public private(set) var nextScheduled: MediaTime

    /// Octets of IPv4 + UDP headers counted in the average size (RFC 3550 6.2).
    public static let lowerLayerOverhead = 28

    /// Starts scheduling at `now` with the size of the first compound packet to be sent.
    public init(
        sessionBandwidth: Double, firstPacketSize: Int, now: MediaTime, useReducedMinimum: Bool = false,
        using generator: inout some RandomNumberGenerator
    ) {
        self.sessionBandwidth = sessionBandwidth
        self.useReducedMinimum = useReducedMinimum
        averagePacketSize = Double(firstPacketSize + Self.lowerLayerOverhead)
        lastSent = now
        nextScheduled = now
        nextScheduled = now + .seconds(interval(using: &generator))
    }

    /// RTCP bandwidth in octets per second.
    public var rtcpBandwidth: Double { sessionBandwidth * rtcpFraction / 8 }

    var minimum: Double {
        useReducedMinimum
            ? min(RTCPInterval.reducedMinimum(sessionBandwidth: sessionBandwidth), RTCPInterval.minimumSeconds)
            : RTCPInterval.minimumSeconds
    }

    /// The deterministic interval for the current state.
    public var deterministicInterval: Double {
        RTCPInterval.deterministic(
            members: members, senders: senders, rtcpBandwidth: rtcpBandwidth, weSent: weSent,
            averagePacketSize: averagePacketSize, initial: initial, minimum: minimum)
    }

    /// A freshly randomized interval in seconds.
    public func interval(using generator: inout some RandomNumberGenerator) -> Double {
        RTCPInterval.randomized(deterministic: deterministicInterval, using: &generator)
    }

    /// Accounts for a received compound RTCP packet of `size` octets (without lower-layer headers).
    public mutating func receivedPacket(size: Int) {
        averagePacketSize = (Double(size + Self.lowerLayerOverhead) + 15 * averagePacketSize) / 16
    }

    /// What to do when the timer fires.
    public enum Decision: Sendable, Hashable {
        /// Send a report now, then call ``sent(size:now:using:)``.
        case send
        /// Timer reconsideration moved the time: wait until then.
        case wait(until: MediaTime)
    }

    /// RFC 3550 A.7 OnExpire for a report: send if the reconsidered time has passed, else reschedule.
    public mutating func timerExpired(now: MediaTime, using generator: inout some RandomNumberGenerator) -> Decision {
        let tn = lastSent + .seconds(interval(using: &generator))
        previousMembers = members
        if tn <= now { return .send }
        nextScheduled = tn
        return .wait(until: tn)
    }

    /// Records that a compound packet of `size` octets was sent at `now`; returns the next scheduled time.
    @discardableResult
    public mutating func sent(size: Int, now: MediaTime, using generator: inout some RandomNumberGenerator)
        -> MediaTime
    {
        averagePacketSize = (Double(size + Self.lowerLayerOverhead) + 15 * averagePacketSize) / 16
        lastSent = now
        initial = false
        nextScheduled = now + .seconds(interval(using: &generator))
        return nextScheduled
    }

    /// Reverse reconsideration (RFC 3550 6.3.4) after members left (BYE or timeout): pulls tn and tp closer.
    public mutating func membersLeft(now: MediaTime) {
        guard members < previousMembers, previousMembers > 0 else { return }
        let ratio = Double(members) / Double(previousMembers)
        nextScheduled = now + .seconds((nextScheduled - now).seconds * ratio)
        lastSent = now - .seconds((now - lastSent).seconds * ratio)
        previousMembers = members
    }
}
