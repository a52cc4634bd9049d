import Atomics

/// A fixed-capacity ring of 16-bit samples between exactly one producer thread and one consumer thread.
///
/// It carries audio between a device thread and the processing chain without locks, allocation or blocking:
/// `write` takes what fits and says how much, `read` takes what is there and says how much; neither waits and
/// neither overwrites unread samples, so each side decides itself what to do with an overrun or underrun.
///
/// Which side may call what:
/// - producer only: ``write(_:)``
/// - consumer only: ``read(into:)``, ``discard(upTo:)``, ``discardAll()``
/// - either side: ``capacity``, ``availableToRead``, ``availableToWrite`` (a snapshot: exact for the side
///   asking about its own work, a lower bound of what the other side may since have changed)
///
/// Positions are two monotonically increasing counters (`Int`, which at 48 kHz overflows after millions of
/// years): the producer alone advances `tail`, the consumer alone advances `head`. Each side publishes its
/// counter with a releasing store after touching the storage and reads the other's with an acquiring load
/// before touching it, which orders every sample copy against the matching counter update.
public final class SampleRing: @unchecked Sendable {
    // @unchecked Sendable: the storage is shared mutable memory, but the producer only writes the slots in
    // [tail, head + capacity) and the consumer only reads the slots in [head, tail); the acquire/release pairs
    // on `head` and `tail` hand each slot from one side to the other. This holds only with at most one
    // producer thread and one consumer thread at a time, which is this type's documented contract.

    /// Maximum number of samples the ring holds.
    public let capacity: Int
    private let storage: UnsafeMutablePointer<Int16>
    /// Samples ever read; written by the consumer only.
    private let head = ManagedAtomic<Int>(0)
    /// Samples ever written; written by the producer only.
    private let tail = ManagedAtomic<Int>(0)

    /// Allocates the storage once; nothing is allocated afterwards.
    /// - Parameter capacity: samples the ring can hold (interleaved samples for multichannel audio); > 0.
    public init(capacity: Int) {
        precondition(capacity > 0, "a ring needs a positive capacity")
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0, count: capacity)
    }

    deinit {
        storage.deallocate()
    }

    /// Samples ready for the consumer.
    public var availableToRead: Int {
        // `head` first: for the producer a stale head can only overstate the fill (so `availableToWrite` errs
        // low, never high); the clamp covers the consumer reading and the producer refilling in between.
        let h = head.load(ordering: .acquiring)
        let t = tail.load(ordering: .acquiring)
        return min(t - h, capacity)
    }

    /// Free space for the producer.
    public var availableToWrite: Int { capacity - availableToRead }

    /// Producer: appends as many of `samples` as fit, in order, and returns how many that was (0 when full).
    /// Never blocks and never overwrites unread samples.
    /// - Complexity: O(returned count), no allocation, no locks.
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Int16>) -> Int {
        let t = tail.load(ordering: .relaxed)
        let h = head.load(ordering: .acquiring)
        let count = min(samples.count, capacity - (t - h))
        guard count > 0, let source = samples.baseAddress else { return 0 }
        let start = t % capacity
        let first = min(count, capacity - start)
        (storage + start).update(from: source, count: first)
        if count > first {
            storage.update(from: source + first, count: count - first)
        }
        tail.store(t + count, ordering: .releasing)
        return count
    }

    /// Consumer: moves up to `buffer.count` of the oldest samples into `buffer` and returns how many that was
    /// (0 when empty). Elements of `buffer` past the returned count are left untouched.
    /// - Complexity: O(returned count), no allocation, no locks.
    @discardableResult
    public func read(into buffer: UnsafeMutableBufferPointer<Int16>) -> Int {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        let count = min(buffer.count, t - h)
        guard count > 0, let destination = buffer.baseAddress else { return 0 }
        let start = h % capacity
        let first = min(count, capacity - start)
        destination.update(from: storage + start, count: first)
        if count > first {
            (destination + first).update(from: storage, count: count - first)
        }
        head.store(h + count, ordering: .releasing)
        return count
    }

    /// Consumer: drops up to `count` of the oldest samples without copying them; returns how many were dropped.
    /// Used to shed latency when the ring has filled beyond its target.
    @discardableResult
    public func discard(upTo count: Int) -> Int {
        precondition(count >= 0, "cannot discard a negative count")
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        let dropped = min(count, t - h)
        head.store(h + dropped, ordering: .releasing)
        return dropped
    }

    /// Consumer: drops everything written so far (the flush after an interruption, so stale audio is not
    /// played); returns how many samples were dropped. Samples the producer writes concurrently either land
    /// before the flush (and are dropped) or after it (and are kept) — never half of a write.
    @discardableResult
    public func discardAll() -> Int {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        head.store(t, ordering: .releasing)
        return t - h
    }
}

extension SampleRing {
    /// Producer: ``write(_:)`` from an array (no copy, no allocation).
    @discardableResult
    public func write(contentsOf samples: [Int16]) -> Int {
        samples.withUnsafeBufferPointer { write($0) }
    }
}
