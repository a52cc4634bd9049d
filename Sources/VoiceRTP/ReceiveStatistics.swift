public import VoiceCore

/// What ``ReceiveStatistics/update(sequenceNumber:rtpTimestamp:arrival:)`` decided about a packet.
public enum ReceiveUpdate: Sendable, Hashable {
    /// The source is still on probation (RFC 3550 A.1, MIN_SEQUENTIAL); the packet is not yet counted.
    case probation
    /// Counted: in order, after a gap, reordered or duplicated.
    case accepted
    /// Counted, and it was a duplicate of a recently received sequence number.
    case duplicate
    /// A very large jump; dropped until the next packet confirms it (the `bad_seq` rule).
    case badSequence
    /// The packet confirmed a large jump: the sequence state was re-initialised (peer restarted).
    case restarted
}

/// Per-source receive statistics exactly as RFC 3550 Appendix A.1 (sequence validation), A.3 (expected and lost)
/// and A.8 (interarrival jitter) define them, plus a duplicate counter, and the report block built from them.
///
/// All state is a few integers and a 128-bit duplicate window: `update` never allocates. Times are in RTP
/// timestamp units of the stream's clock (48 000 for Opus); ``update(sequenceNumber:rtpTimestamp:arrival:)``
/// takes a ``MediaTime`` and converts.
public struct ReceiveStatistics: Sendable {
    /// RFC 3550 A.1 constants.
    public static let maxDropout: UInt16 = 3000
    public static let maxMisorder: UInt16 = 100
    public static let minSequential = 2
    static let seqMod: UInt32 = 1 << 16

    /// The RTP clock rate, used to convert arrival times and the jitter.
    public let clockRate: Int

    // RFC 3550 A.1 `source` fields.
    public private(set) var maxSequence: UInt16 = 0
    public private(set) var cycles: UInt32 = 0
    public private(set) var baseSequence: UInt32 = 0
    var badSequence: UInt32 = seqMod + 1
    public private(set) var probation: Int = minSequential
    /// Packets counted (RFC semantics: duplicates are counted, so "lost" may be negative).
    public private(set) var received: UInt32 = 0
    var expectedPrior: UInt32 = 0
    var receivedPrior: UInt32 = 0
    var transit: Int32 = 0
    var haveTransit = false
    /// Interarrival jitter J(i) in timestamp units (RFC 3550 6.4.1, A.8 floating-point form).
    public private(set) var jitter: Double = 0
    /// Duplicates seen within the last 128 sequence numbers.
    public private(set) var duplicates: UInt64 = 0
    /// Every packet handed to `update`, including those on probation or rejected.
    public private(set) var packetsSeen: UInt64 = 0
    var started = false
    // Duplicate window: bit i set ⇔ extended sequence (highest − i) was received.
    var window: (UInt64, UInt64) = (0, 0)

    // Last SR from this source, for LSR/DLSR.
    public private(set) var lastSenderReportNTP: UInt32 = 0
    public private(set) var lastSenderReportArrival: MediaTime?

    public init(clockRate: Int) {
        precondition(clockRate > 0, "clock rate must be positive")
        self.clockRate = clockRate
    }

    /// Whether the source has passed probation (is "valid" in RFC 3550 terms).
    public var isValid: Bool { started && probation == 0 }

    /// The extended highest sequence number received (cycles + max_seq).
    public var extendedHighestSequence: UInt32 { cycles &+ UInt32(maxSequence) }

    /// Packets expected: extended highest − base + 1 (A.3); 0 before the source is valid.
    public var expected: UInt32 {
        isValid ? extendedHighestSequence &- baseSequence &+ 1 : 0
    }

    /// Cumulative packets lost, expected − received, clamped to the 24-bit signed field of a report block.
    public var cumulativeLost: Int32 {
        let lost = Int64(expected) - Int64(received)
        return Int32(min(max(lost, -0x80_0000), 0x7F_FFFF))
    }

    /// The jitter as carried in a report block (timestamp units, truncated).
    public var reportedJitter: UInt32 { UInt32(jitter) }

    /// Updates the statistics with one received packet, `arrival` in RTP timestamp units of the receiver's clock.
    @discardableResult
    public mutating func update(sequenceNumber seq: UInt16, rtpTimestamp: UInt32, arrivalTicks: UInt32)
        -> ReceiveUpdate
    {
        packetsSeen &+= 1
        let result = updateSequence(seq)
        switch result {
        case .probation, .badSequence:
            break
        case .accepted, .duplicate, .restarted:
            updateJitter(rtpTimestamp: rtpTimestamp, arrival: arrivalTicks)
        }
        return result
    }

    /// Updates the statistics with one received packet that arrived at media time `arrival`.
    @discardableResult
    public mutating func update(sequenceNumber seq: UInt16, rtpTimestamp: UInt32, arrival: MediaTime)
        -> ReceiveUpdate
    {
        update(sequenceNumber: seq, rtpTimestamp: rtpTimestamp, arrivalTicks: ticks(arrival))
    }

    /// `time` in RTP timestamp units (wrapping), as the A.8 arrival value.
    public func ticks(_ time: MediaTime) -> UInt32 {
        let q = time.nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        let rate = Int64(clockRate)
        return UInt32(truncatingIfNeeded: q.quotient &* rate &+ (q.remainder * rate) / 1_000_000_000)
    }

    // RFC 3550 A.1 init_seq.
    mutating func initSequence(_ seq: UInt16) {
        baseSequence = UInt32(seq)
        maxSequence = seq
        badSequence = Self.seqMod + 1
        cycles = 0
        received = 0
        receivedPrior = 0
        expectedPrior = 0
        window = (0, 0)
    }

    // RFC 3550 A.1 update_seq, with the duplicate window added. `max_seq + 1` is computed modulo 2^16 (the C
    // code's int promotion would never match seq 0 after 65535 during probation).
    mutating func updateSequence(_ seq: UInt16) -> ReceiveUpdate {
        if !started {
            started = true
            initSequence(seq)
            maxSequence = seq &- 1
            probation = Self.minSequential
        }
        let udelta = seq &- maxSequence
        if probation > 0 {
            if seq == maxSequence &+ 1 {
                probation -= 1
                maxSequence = seq
                if probation == 0 {
                    initSequence(seq)
                    received &+= 1
                    markReceived(distance: 0)
                    return .accepted
                }
            } else {
                probation = Self.minSequential - 1
                maxSequence = seq
            }
            return .probation
        } else if udelta < Self.maxDropout {
            if seq < maxSequence { cycles &+= Self.seqMod }
            maxSequence = seq
            shiftWindow(by: Int(udelta))
            if markReceived(distance: 0) {
                // udelta == 0: the highest packet again.
                duplicates &+= 1
                received &+= 1
                return .duplicate
            }
        } else if UInt32(udelta) <= Self.seqMod - UInt32(Self.maxMisorder) {
            if UInt32(seq) == badSequence {
                initSequence(seq)
                received &+= 1
                markReceived(distance: 0)
                return .restarted
            } else {
                badSequence = UInt32(seq &+ 1)
                return .badSequence
            }
        } else {
            // Duplicate or reordered packet.
            let behind = Int(maxSequence &- seq)
            if markReceived(distance: behind) {
                duplicates &+= 1
                received &+= 1
                return .duplicate
            }
        }
        received &+= 1
        return .accepted
    }

    /// Marks `distance` packets behind the highest as received; returns true if it already was (a duplicate).
    @discardableResult
    mutating func markReceived(distance: Int) -> Bool {
        guard distance < 128 else { return false }
        if distance < 64 {
            let bit = UInt64(1) << UInt64(distance)
            defer { window.0 |= bit }
            return window.0 & bit != 0
        }
        let bit = UInt64(1) << UInt64(distance - 64)
        defer { window.1 |= bit }
        return window.1 & bit != 0
    }

    mutating func shiftWindow(by n: Int) {
        if n == 0 { return }
        if n >= 128 {
            window = (0, 0)
        } else if n >= 64 {
            window = (0, window.0 << UInt64(n - 64))
        } else {
            window = (window.0 << UInt64(n), window.1 << UInt64(n) | window.0 >> UInt64(64 - n))
        }
    }

    // RFC 3550 A.8, floating-point form: J += (|D| − J) / 16.
    mutating func updateJitter(rtpTimestamp: UInt32, arrival: UInt32) {
        let transit = Int32(bitPattern: arrival &- rtpTimestamp)
        defer {
            self.transit = transit
            haveTransit = true
        }
        guard haveTransit else { return }
        let d = abs(Int64(transit) - Int64(self.transit))
        jitter += (Double(d) - jitter) / 16
    }

    /// Loss since the previous call (RFC 3550 A.3): the 8-bit fraction lost, and advances the interval.
    /// Call exactly once per report.
    public mutating func takeFractionLost() -> UInt8 {
        let expected = self.expected
        let expectedInterval = expected &- expectedPrior
        expectedPrior = expected
        let receivedInterval = received &- receivedPrior
        receivedPrior = received
        let lostInterval = Int64(expectedInterval) - Int64(receivedInterval)
        if expectedInterval == 0 || lostInterval <= 0 { return 0 }
        return UInt8(truncatingIfNeeded: (lostInterval << 8) / Int64(expectedInterval))
    }

    /// Records a sender report from this source (for LSR/DLSR in the next report block).
    public mutating func receivedSenderReport(ntp: NTPTimestamp, arrival: MediaTime) {
        lastSenderReportNTP = ntp.middle32
        lastSenderReportArrival = arrival
    }

    /// The report block about this source at media time `now`, advancing the fraction-lost interval.
    public mutating func makeReportBlock(ssrc: UInt32, now: MediaTime) -> RTCPReportBlock {
        let fraction = takeFractionLost()
        var dlsr: UInt32 = 0
        if let arrival = lastSenderReportArrival { dlsr = NTPDuration.short(now - arrival) }
        return RTCPReportBlock(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: cumulativeLost,
            extendedHighestSequence: extendedHighestSequence, jitter: reportedJitter,
            lastSenderReport: lastSenderReportNTP, delaySinceLastSenderReport: dlsr)
    }
}
