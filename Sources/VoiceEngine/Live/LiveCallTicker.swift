import Foundation
import Synchronization
import VoiceCore
import VoiceDevices

/// The process's shared media threads, one per core: every call started with ``LiveCallOptions/sharedMediaThread``
/// is ticked by one of them (given in turn), all on a 10 ms absolute deadline, so N calls cost 100 wake-ups a
/// second per core instead of 100 × N, and more calls than one core can tick still fit.
///
/// Calls join through a mutex-guarded list the thread takes over at its next tick (only when something is
/// pending, so a steady tick takes no lock); a call leaves when its `running` flag is cleared — the thread drops it
/// and calls its exit handler, after which nothing touches its stream. With no call, the thread blocks on a
/// semaphore instead of ticking.
final class LiveCallTicker: @unchecked Sendable {
    // @unchecked Sendable: `calls` is used only by the ticker thread; `joining` is behind a Mutex.

    /// One ticker per core; ``add(_:exited:)`` hands calls to them in turn.
    static let pool = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map { _ in LiveCallTicker() }
    private static let nextInPool = Atomic<Int>(0)

    /// The ticker the next call goes to.
    static var next: LiveCallTicker {
        pool[nextInPool.wrappingAdd(1, ordering: .relaxed).oldValue % pool.count]
    }

    private struct Member {
        let loop: LiveCallMediaLoop
        let exited: @Sendable () -> Void
    }

    private let joining = Mutex<(members: [Member], threadStarted: Bool)>(([], false))
    private let hasJoining = Atomic<Bool>(false)
    private let wakeup = DispatchSemaphore(value: 0)
    private var calls: [Member] = []

    private init() {}

    /// Starts ticking `loop` at the next tick; `exited` runs on the ticker thread once the loop is no longer
    /// ticked (after its `running` flag was cleared).
    func add(_ loop: LiveCallMediaLoop, exited: @escaping @Sendable () -> Void) {
        let startThread = joining.withLock { (j: inout (members: [Member], threadStarted: Bool)) -> Bool in
            j.members.append(Member(loop: loop, exited: exited))
            defer { j.threadStarted = true }
            return !j.threadStarted
        }
        hasJoining.store(true, ordering: .releasing)
        wakeup.signal()
        if startThread {
            let thread = Thread { self.run(options: loop.options) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    private func run(options: LiveCallOptions) {
        let realtime = LiveCallMediaLoop.becomeMediaThread(options: options)
        calls.reserveCapacity(1024)
        var deadline = MonotonicClock().now.nanoseconds
        while true {
            if calls.isEmpty && !hasJoining.load(ordering: .acquiring) {
                wakeup.wait()
                deadline = MonotonicClock().now.nanoseconds
            }
            let missed = LiveCallMediaLoop.sleepToNextTick(&deadline, maximumLagTicks: options.maximumLagTicks)
            if hasJoining.load(ordering: .acquiring) {
                hasJoining.store(false, ordering: .relaxed)
                let joined = joining.withLock { j in
                    defer { j.members.removeAll(keepingCapacity: true) }
                    return j.members
                }
                for member in joined { member.loop.shared.realtime.store(realtime, ordering: .relaxed) }
                calls += joined
            }
            var index = 0
            while index < calls.count {
                let member = calls[index]
                guard member.loop.shared.running.load(ordering: .acquiring) else {
                    calls.swapAt(index, calls.count - 1)
                    calls.removeLast()
                    member.exited()
                    continue
                }
                if missed > 0 { member.loop.shared.lateTicks.wrappingAdd(missed, ordering: .relaxed) }
                member.loop.tick(now: MonotonicClock().now)
                index += 1
            }
        }
    }
}
