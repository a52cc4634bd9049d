import Atomics

/// A fixed-capacity FIFO of values between exactly one producer thread and one consumer thread.
///
/// It hands packets between the network event loop and an audio thread without locks or blocking. The
/// queue itself never allocates after `init`; whether moving an `Element` allocates is up to the element
/// (hand over preallocated buffers to keep the audio path allocation-free).
///
/// Which side may call what:
/// - producer only: ``push(_:)``
/// - consumer only: ``pop()``, ``removeAll()``
/// - either side: ``capacity``, ``count``, ``isEmpty``, ``isFull`` (snapshots, as in ``SampleRing``)
///
/// Same scheme as ``SampleRing``: monotonically increasing counters, `tail` advanced only by the producer,
/// `head` only by the consumer, each published with a releasing store and read with an acquiring load.
public final class SPSCQueue<Element> {
    /// Maximum number of elements the queue holds.
    public let capacity: Int
    private let storage: UnsafeMutablePointer<Element>
    private let head = ManagedAtomic<Int>(0)
    private let tail = ManagedAtomic<Int>(0)

    /// Allocates the storage once.
    /// - Parameter capacity: elements the queue can hold; > 0.
    public init(capacity: Int) {
        precondition(capacity > 0, "a queue needs a positive capacity")
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit {
        // No other thread can hold a reference any more, so both counters are final.
        var h = head.load(ordering: .acquiring)
        let t = tail.load(ordering: .acquiring)
        while h < t {
            (storage + h % capacity).deinitialize(count: 1)
            h += 1
        }
        storage.deallocate()
    }

    /// Elements waiting for the consumer.
    public var count: Int {
        let h = head.load(ordering: .acquiring)
        let t = tail.load(ordering: .acquiring)
        return min(t - h, capacity)
    }

    public var isEmpty: Bool { count == 0 }
    public var isFull: Bool { count == capacity }

    /// Producer: appends `element` if there is room. Returns false (and drops `element`) when full, so the
    /// caller can count the overflow.
    @discardableResult
    public func push(_ element: consuming Element) -> Bool {
        let t = tail.load(ordering: .relaxed)
        let h = head.load(ordering: .acquiring)
        guard t - h < capacity else { return false }
        (storage + t % capacity).initialize(to: element)
        tail.store(t + 1, ordering: .releasing)
        return true
    }

    /// Consumer: removes and returns the oldest element, or nil when empty.
    public func pop() -> Element? {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        guard h < t else { return nil }
        let element = (storage + h % capacity).move()
        head.store(h + 1, ordering: .releasing)
        return element
    }

    /// Consumer: removes every element pushed so far; returns how many.
    @discardableResult
    public func removeAll() -> Int {
        var removed = 0
        while pop() != nil { removed += 1 }
        return removed
    }
}

// @unchecked Sendable: slot [i % capacity] is initialised by the producer before its releasing store of `tail`
// passes i, and moved out by the consumer before its releasing store of `head` passes i, so no slot is touched by
// both threads at once — given one producer thread and one consumer thread, the documented contract. Elements
// cross threads, hence the `Element: Sendable` requirement.
extension SPSCQueue: @unchecked Sendable where Element: Sendable {}
