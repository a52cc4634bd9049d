/// The fixed-capacity packet store of the adaptive jitter buffer, ordered by extended sequence number.
///
/// All storage (slot metadata and a `capacity × maxPayloadBytes` byte arena) is allocated once in `init`;
/// insert, lookup and removal never allocate. Capacity is small (hundreds), so ordered insertion by binary
/// search and shifting an index array is cheaper than any tree.
public struct PacketBuffer {
    /// Metadata of one buffered packet.
    public struct Entry: Sendable, Hashable {
        public var sequence: Int64
        public var timestamp: Int64
        /// Duration in RTP timestamp units.
        public var duration: Int64
        public var arrivalNanoseconds: Int64
        public var payloadLength: Int
        /// Whether the payload carries in-band FEC for the frame before it.
        public var hasFEC: Bool

        public init(
            sequence: Int64, timestamp: Int64, duration: Int64, arrivalNanoseconds: Int64, payloadLength: Int,
            hasFEC: Bool
        ) {
            self.sequence = sequence
            self.timestamp = timestamp
            self.duration = duration
            self.arrivalNanoseconds = arrivalNanoseconds
            self.payloadLength = payloadLength
            self.hasFEC = hasFEC
        }
    }

    /// Result of `insert`.
    public enum InsertResult: Sendable, Hashable {
        case inserted
        case duplicate
        case full
        case tooLarge
    }

    public let capacity: Int
    public let maxPayloadBytes: Int
    private var entries: [Entry]
    private var bytes: [UInt8]
    /// Slot indices sorted by sequence; only the first `count` are valid.
    private var order: [Int]
    private var freeSlots: [Int]
    public private(set) var count = 0

    public init(capacity: Int, maxPayloadBytes: Int = 1_500) {
        precondition(capacity > 0 && maxPayloadBytes > 0, "PacketBuffer needs a positive capacity")
        self.capacity = capacity
        self.maxPayloadBytes = maxPayloadBytes
        entries = [Entry](
            repeating: Entry(
                sequence: 0, timestamp: 0, duration: 0, arrivalNanoseconds: 0, payloadLength: 0, hasFEC: false),
            count: capacity)
        bytes = [UInt8](repeating: 0, count: capacity * maxPayloadBytes)
        order = [Int](repeating: 0, count: capacity)
        freeSlots = Array((0..<capacity).reversed())
    }

    public var isEmpty: Bool { count == 0 }

    /// The i-th packet in sequence order (0 = oldest).
    public func entry(at position: Int) -> Entry {
        precondition(position < count)
        return entries[order[position]]
    }

    /// Position of the packet with `sequence`, or nil.
    public func position(ofSequence sequence: Int64) -> Int? {
        let p = lowerBound(sequence)
        return p < count && entries[order[p]].sequence == sequence ? p : nil
    }

    /// Position of the first packet whose timestamp is at or after `timestamp`, or nil.
    public func firstPosition(atOrAfterTimestamp timestamp: Int64) -> Int? {
        for p in 0..<count where entries[order[p]].timestamp >= timestamp { return p }
        return nil
    }

    /// Stores a packet. Does not allocate.
    public mutating func insert(_ entry: Entry, payload: UnsafeBufferPointer<UInt8>) -> InsertResult {
        guard payload.count <= maxPayloadBytes else { return .tooLarge }
        let p = lowerBound(entry.sequence)
        if p < count && entries[order[p]].sequence == entry.sequence { return .duplicate }
        guard let slot = freeSlots.popLast() else { return .full }
        var stored = entry
        stored.payloadLength = payload.count
        entries[slot] = stored
        bytes.withUnsafeMutableBufferPointer { arena in
            let base = slot * maxPayloadBytes
            for i in 0..<payload.count { arena[base + i] = payload[i] }
        }
        var i = count
        while i > p {
            order[i] = order[i - 1]
            i -= 1
        }
        order[p] = slot
        count += 1
        return .inserted
    }

    /// Removes the packet at `position`.
    public mutating func remove(at position: Int) {
        precondition(position < count)
        freeSlots.append(order[position])
        for i in position..<(count - 1) { order[i] = order[i + 1] }
        count -= 1
    }

    /// Removes every packet; returns how many there were.
    @discardableResult
    public mutating func removeAll() -> Int {
        let removed = count
        while count > 0 { remove(at: count - 1) }
        return removed
    }

    /// Calls `body` with the payload of the packet at `position`, without copying.
    public func withPayload<R>(at position: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let slot = order[position]
        let length = entries[slot].payloadLength
        return try bytes.withUnsafeBufferPointer { arena in
            try body(UnsafeBufferPointer(rebasing: arena[(slot * maxPayloadBytes)..<(slot * maxPayloadBytes + length)]))
        }
    }

    private func lowerBound(_ sequence: Int64) -> Int {
        var lo = 0
        var hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[order[mid]].sequence < sequence { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
