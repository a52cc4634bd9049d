public import VoiceCore

/// What the SSRC table concluded about a received packet (RFC 3550 8.2).
public enum SSRCEvent: Sendable, Hashable {
    /// The packet belongs to a known source; statistics were updated.
    case known(ssrc: UInt32, ReceiveUpdate)
    /// A source seen for the first time (it starts on probation).
    case newSource(ssrc: UInt32)
    /// A source passed probation and is now the active remote source; its statistics start here.
    case sourceValidated(ssrc: UInt32)
    /// A remote participant uses our SSRC: send BYE for it and pick a new one (``SSRCTable/resolveCollision(using:)``).
    case collision(ssrc: UInt32)
    /// A known SSRC arrived from a different transport address (a third-party collision or a loop): dropped.
    case addressConflict(ssrc: UInt32)
    /// The table is full; the packet from an unknown source was dropped (bounds memory under SSRC floods).
    case tableFull(ssrc: UInt32)
}

/// The receive side's SSRC bookkeeping and the sender's collision policy (RFC 3550 8.2), as pure logic.
///
/// Each remote source gets its own ``ReceiveStatistics`` (with its probation), keyed by SSRC and tied to the
/// transport address it was first seen from (any `Hashable` address type). A new SSRC replaces the active
/// source only once it has passed probation, so a stray packet cannot reset a call's statistics. A packet
/// carrying our own SSRC from elsewhere is a collision: the sender picks a new random SSRC and sends BYE for the
/// old one.
public struct SSRCTable<Address: Hashable & Sendable>: Sendable {
    public struct Source: Sendable {
        public let address: Address
        public var statistics: ReceiveStatistics
    }

    public private(set) var localSSRC: UInt32
    public private(set) var sources: [UInt32: Source] = [:]
    /// The source whose media is being played: the last one to pass probation.
    public private(set) var activeSSRC: UInt32?
    public let clockRate: Int
    public let capacity: Int
    /// SSRCs this participant used before collisions, never chosen again.
    public private(set) var retiredLocalSSRCs: Set<UInt32> = []

    public init(localSSRC: UInt32, clockRate: Int, capacity: Int = 32) {
        self.localSSRC = localSSRC
        self.clockRate = clockRate
        self.capacity = capacity
    }

    /// Handles a received RTP packet's SSRC, sequence number and timestamp from `address`.
    public mutating func receivedRTP(
        ssrc: UInt32, sequenceNumber: UInt16, rtpTimestamp: UInt32, arrival: MediaTime, from address: Address
    ) -> SSRCEvent {
        if ssrc == localSSRC { return .collision(ssrc: ssrc) }
        guard var source = sources[ssrc] else {
            guard sources.count < capacity else { return .tableFull(ssrc: ssrc) }
            var statistics = ReceiveStatistics(clockRate: clockRate)
            statistics.update(sequenceNumber: sequenceNumber, rtpTimestamp: rtpTimestamp, arrival: arrival)
            sources[ssrc] = Source(address: address, statistics: statistics)
            return .newSource(ssrc: ssrc)
        }
        guard source.address == address else { return .addressConflict(ssrc: ssrc) }
        let wasValid = source.statistics.isValid
        let update = source.statistics.update(
            sequenceNumber: sequenceNumber, rtpTimestamp: rtpTimestamp, arrival: arrival)
        sources[ssrc] = source
        if !wasValid && source.statistics.isValid {
            activeSSRC = ssrc
            return .sourceValidated(ssrc: ssrc)
        }
        return .known(ssrc: ssrc, update)
    }

    /// Handles the sender SSRC of a received RTCP packet: a collision if it is ours.
    public func receivedRTCP(senderSSRC: UInt32, from address: Address) -> SSRCEvent? {
        if senderSSRC == localSSRC { return .collision(ssrc: senderSSRC) }
        if let source = sources[senderSSRC], source.address != address { return .addressConflict(ssrc: senderSSRC) }
        return nil
    }

    /// A BYE from `ssrc`: forgets the source.
    public mutating func receivedBye(ssrc: UInt32) {
        sources[ssrc] = nil
        if activeSSRC == ssrc { activeSSRC = nil }
    }

    /// The statistics of `ssrc`, if known.
    public func statistics(of ssrc: UInt32) -> ReceiveStatistics? { sources[ssrc]?.statistics }

    /// Records a sender report from `ssrc` (for LSR/DLSR).
    public mutating func receivedSenderReport(ssrc: UInt32, ntp: NTPTimestamp, arrival: MediaTime) {
        sources[ssrc]?.statistics.receivedSenderReport(ntp: ntp, arrival: arrival)
    }

    /// Report blocks for every valid source (at most 31, RFC 3550 6.4), advancing their fraction-lost intervals.
    public mutating func makeReportBlocks(now: MediaTime) -> [RTCPReportBlock] {
        var blocks: [RTCPReportBlock] = []
        for ssrc in sources.keys.sorted() where blocks.count < 31 {
            guard sources[ssrc]!.statistics.isValid else { continue }
            blocks.append(sources[ssrc]!.statistics.makeReportBlock(ssrc: ssrc, now: now))
        }
        return blocks
    }

    /// The outcome of resolving a collision: send BYE for `old` (``byePacket``) and use `new` from now on.
    public struct SSRCChange: Sendable, Hashable {
        public let old: UInt32
        public let new: UInt32
        /// The BYE to send for the old SSRC (RFC 3550 8.2).
        public var byePacket: RTCPBye { RTCPBye(ssrcs: [old], reason: "SSRC collision") }
    }

    /// Picks a new random local SSRC that no known source, and no SSRC we used before, has.
    public mutating func resolveCollision(using generator: inout some RandomNumberGenerator) -> SSRCChange {
        let old = localSSRC
        retiredLocalSSRCs.insert(old)
        var candidate: UInt32
        repeat {
            candidate = UInt32.random(in: .min ... .max, using: &generator)
        } while candidate == old || sources[candidate] != nil || retiredLocalSSRCs.contains(candidate)
        localSSRC = candidate
        return SSRCChange(old: old, new: candidate)
    }
}
