import Foundation
import Synchronization
import Testing

/// Shared between the two threads of a producer/consumer stress test.
final class StressState: Sendable {
    let stop = Atomic<Bool>(false)
    let received = Atomic<Int>(0)
    let mismatch = Mutex<String?>(nil)
}

/// Runs `producer` and `consumer` on two threads of their own and waits for both (at most 120 s each; after that
/// the threads are asked to stop). Expects that they finished, that the consumer recorded no mismatch and that it
/// stored `total` in `state.received`. Both closures should return early once `state.stop` is set.
func runOnTwoThreads(
    total: Int, producer: @escaping @Sendable (StressState) -> Void,
    consumer: @escaping @Sendable (StressState) -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let state = StressState()
    let finished = DispatchSemaphore(value: 0)
    Thread {
        producer(state)
        finished.signal()
    }.start()
    Thread {
        consumer(state)
        finished.signal()
    }.start()

    var timedOut = false
    for _ in 0..<2 where finished.wait(timeout: .now() + 120) == .timedOut {
        timedOut = true
        state.stop.store(true, ordering: .relaxed)
    }
    if timedOut { _ = finished.wait(timeout: .now() + 10) }
    #expect(!timedOut, "the two threads did not finish within 120 s", sourceLocation: sourceLocation)
    #expect(state.mismatch.withLock { $0 } == nil, sourceLocation: sourceLocation)
    #expect(state.received.load(ordering: .relaxed) == total, sourceLocation: sourceLocation)
}
