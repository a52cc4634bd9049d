import VoiceRTP

/// The arrival bookkeeping both jitter-buffer strategies share: extended sequence numbers and timestamps, a
/// window of recently seen sequence numbers for dropping duplicates, and the span of sequence numbers received
/// (packets expected). One copy, so the two strategies count packets the same way and can be compared.
struct PacketArrivals {
    /// A packet admitted (not a duplicate), in extended numbering.
    struct Admitted {
        var sequence: Int64
        var timestamp: Int64
        /// Whether no earlier packet had a sequence number as high (the stream's newest so far).
        var isNewest: Bool
    }

    private(set) var timestampUnwrapper = TimestampUnwrapper()
    private var sequenceUnwrapper = SequenceUnwrapper()
    private var seen = [Int64](repeating: -1, count: 4096)
    private var firstSequence: Int64?
    private var highestSequence: Int64 = .min

    /// Records a packet and updates `statistics` (duplicates, received, expected); nil for a duplicate.
    mutating func admit(
        sequenceNumber: UInt16, rtpTimestamp: UInt32, statistics: inout JitterBufferStatistics
    ) -> Admitted? {
        let sequence = sequenceUnwrapper.unwrap(sequenceNumber)
        let timestamp = timestampUnwrapper.unwrap(rtpTimestamp)
        let slot = Int(UInt64(bitPattern: sequence) % UInt64(seen.count))
        if seen[slot] == sequence {
            statistics.duplicatePackets += 1
            return nil
        }
        seen[slot] = sequence
        statistics.packetsReceived += 1
        let isNewest = firstSequence == nil || sequence > highestSequence
        let first = firstSequence ?? sequence
        firstSequence = first
        highestSequence = max(highestSequence, sequence)
        statistics.packetsExpected = Int(highestSequence - first + 1)
        return Admitted(sequence: sequence, timestamp: timestamp, isNewest: isNewest)
    }
}
