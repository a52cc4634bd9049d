import Foundation
import Synchronization
import Testing
import VoiceCore

@Suite struct SPSCQueueTests {
    @Test func popsInPushOrderAcrossWrapAround() {
        let queue = SPSCQueue<Int>(capacity: 3)
        var expected = 0
        for value in 0..<20 {
            #expect(queue.push(value))
            if value % 2 == 1 {  // drain two at a time so positions wrap at varying offsets
                #expect(queue.pop() == expected)
                #expect(queue.pop() == expected + 1)
                expected += 2
            }
        }
        #expect(queue.isEmpty)
        #expect(queue.pop() == nil)
    }

    @Test func pushIntoFullQueueFailsAndKeepsQueuedElements() {
        let queue = SPSCQueue<String>(capacity: 2)
        #expect(queue.push("a"))
        #expect(queue.push("b"))
        #expect(queue.isFull)
        #expect(!queue.push("c"))
        #expect(queue.count == 2)
        #expect(queue.pop() == "a")
        #expect(queue.push("d"))
        #expect(queue.pop() == "b")
        #expect(queue.pop() == "d")
        #expect(queue.pop() == nil)
    }

    @Test func removeAllEmptiesTheQueue() {
        let queue = SPSCQueue<[UInt8]>(capacity: 4)
        queue.push([1])
        queue.push([2, 3])
        #expect(queue.removeAll() == 2)
        #expect(queue.isEmpty)
        #expect(queue.push([4]))
        #expect(queue.pop() == [4])
    }

    @Test func releasesElementsStillQueuedWhenDeallocated() {
        let counter = Mutex(0)
        final class Tracked: Sendable {
            let onDeinit: @Sendable () -> Void
            init(_ onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
            deinit { onDeinit() }
        }
        let increment: @Sendable () -> Void = { counter.withLock { $0 += 1 } }
        do {
            let queue = SPSCQueue<Tracked>(capacity: 4)
            for _ in 0..<3 { queue.push(Tracked(increment)) }
            _ = queue.pop()  // released here: one
            #expect(counter.withLock { $0 } == 1)
            #expect(queue.push(Tracked(increment)))
        }
        #expect(counter.withLock { $0 } == 4)
    }

    /// Heap-backed packets cross from a producer thread to a consumer thread intact and in order.
    @Test func handsOverHundredThousandPacketsInOrderBetweenTwoThreads() {
        struct Packet: Sendable {
            var sequence: Int
            var payload: [UInt8]
        }
        let total = 100_000
        let queue = SPSCQueue<Packet>(capacity: 63)
        runOnTwoThreads(
            total: total,
            producer: { state in
                var sequence = 0
                while sequence < total, !state.stop.load(ordering: .relaxed) {
                    let packet = Packet(
                        sequence: sequence, payload: [UInt8](repeating: UInt8(sequence & 0xFF), count: sequence % 17))
                    if queue.push(packet) { sequence += 1 } else { sched_yield() }
                }
            },
            consumer: { state in
                var expected = 0
                while expected < total, !state.stop.load(ordering: .relaxed) {
                    guard let packet = queue.pop() else {
                        sched_yield()
                        continue
                    }
                    let intact =
                        packet.payload.count == expected % 17
                        && packet.payload.allSatisfy { $0 == UInt8(expected & 0xFF) }
                    if packet.sequence != expected || !intact {
                        state.mismatch.withLock { $0 = $0 ?? "expected packet \(expected), got \(packet.sequence)" }
                        state.stop.store(true, ordering: .relaxed)
                    }
                    expected += 1
                }
                state.received.store(expected, ordering: .relaxed)
            })
        #expect(queue.isEmpty)
    }
}
