import VoiceCore

/// Fixed-size packet slots handed from the network event loop (producer) to one consumer thread.
///
/// Slots are indices into one preallocated block. Two SPSC queues of indices move them around: `filled`
/// (event loop → consumer) and `free` (consumer → event loop). When no slot is free the consumer has fallen
/// `slotCount` packets behind, and the event loop drops the packet (counted by the caller). Neither side allocates.
final class PacketSlotPool {
    let slotSize: Int
    let slotCount: Int
    private let storage: UnsafeMutableRawPointer
    private let lengths: UnsafeMutablePointer<Int>
    private let sources: UnsafeMutablePointer<UDPEndpoint>
    private let arrivals: UnsafeMutablePointer<Int64>
    private let filled: SPSCQueue<Int32>
    private let free: SPSCQueue<Int32>

    init(slotCount: Int, slotSize: Int) {
        precondition(slotCount > 0 && slotSize > 0)
        self.slotSize = slotSize
        self.slotCount = slotCount
        storage = .allocate(byteCount: slotCount * slotSize, alignment: 16)
        lengths = .allocate(capacity: slotCount)
        lengths.initialize(repeating: 0, count: slotCount)
        sources = .allocate(capacity: slotCount)
        sources.initialize(repeating: UDPEndpoint(address: 0, port: 0), count: slotCount)
        arrivals = .allocate(capacity: slotCount)
        arrivals.initialize(repeating: 0, count: slotCount)
        filled = SPSCQueue(capacity: slotCount)
        free = SPSCQueue(capacity: slotCount)
        // Before the pool is shared: this thread is the free queue's only producer for now; the channel setup that
        // publishes the pool to the event loop orders these pushes before the event loop's first pop.
        for index in 0..<slotCount { free.push(Int32(index)) }
    }

    deinit {
        storage.deallocate()
        lengths.deallocate()
        sources.deallocate()
        arrivals.deallocate()
    }

    /// Packets waiting for the consumer.
    var pending: Int { filled.count }

    /// Producer: copies `bytes` (at most `slotSize`) into a free slot and queues it. False when none is free.
    func deposit(_ bytes: UnsafeRawBufferPointer, source: UDPEndpoint, arrival: Int64) -> Bool {
        precondition(bytes.count <= slotSize)
        guard let index = free.pop() else { return false }
        let i = Int(index)
        if let base = bytes.baseAddress, bytes.count > 0 {
            (storage + i * slotSize).copyMemory(from: base, byteCount: bytes.count)
        }
        lengths[i] = bytes.count
        sources[i] = source
        arrivals[i] = arrival
        let queued = filled.push(index)
        assert(queued, "filled has room for every slot")
        return true
    }

    /// Consumer: lends the oldest packet to `body`, then returns its slot to the free list.
    func withNext<R>(_ body: (UnsafeRawBufferPointer, UDPEndpoint, Int64) throws -> R) rethrows -> R? {
        guard let index = filled.pop() else { return nil }
        let i = Int(index)
        defer { free.push(index) }
        return try body(
            UnsafeRawBufferPointer(start: storage + i * slotSize, count: lengths[i]), sources[i], arrivals[i])
    }

    /// Consumer: drops every queued packet (e.g. after an interruption); returns how many.
    func discardAll() -> Int {
        var n = 0
        while withNext({ _, _, _ in () }) != nil { n += 1 }
        return n
    }
}

// @unchecked Sendable: slot i's bytes and metadata are written only by the producer while i is in neither queue
// after it popped i from `free`, and read only by the consumer after popping i from `filled`; the queues' acquire /
// release ordering publishes them. One producer (the channel's event loop) and one consumer thread per pool.
extension PacketSlotPool: @unchecked Sendable {}
