import Foundation
import Synchronization
import VoiceCore
import VoiceDevices

/// The process's shared media threads, at most one per core: every call started with
/// ``LiveCallOptions/sharedMediaThread`` (the default) is ticked by one of them, all on a 10 ms absolute deadline,
/// so N calls cost 100 wake-ups a second per thread instead of 100 × N.
///
/// **Placement.** A call goes to the first thread whose tick would stay within ``busyBudgetNanoseconds`` (half the
/// tick) with it added, estimated from the calls it has and what a call's tick measurably costs (``perCallCost``,
/// learnt from the running threads); only when none has room does a new thread start, up to one per core, and past
/// that the least loaded one takes it. So the two ends of a call in one process, or a handful of calls, share one
/// wake-up, and a hundred are spread over the cores instead of overrunning one thread's tick.
///
/// Calls join through a mutex-guarded list the thread takes over at its next tick (only when something is
/// pending, so a steady tick takes no lock); a call leaves when its `running` flag is cleared — the thread drops it
/// and calls its exit handler, after which nothing touches its stream. With no call, the thread blocks on a
/// semaphore instead of ticking.
final class LiveCallTicker: @unchecked Sendable {
    // @unchecked Sendable: `calls` is used only by the ticker thread; `joining` is behind a Mutex; the rest atomics.

    /// Half of the 10 ms tick: the rest is headroom for stalls, other threads and the devices.
    static let busyBudgetNanoseconds = 5_000_000
    /// What one call's tick is assumed to cost before any was measured (a call with voice processing, cold).
    static let initialPerCallNanoseconds = 250_000

    private static let pool = Mutex<[LiveCallTicker]>([])
    private static let maximumThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Nanoseconds one call's tick costs, a running average over the ticker threads' measured ticks.
    private static let perCallCost = Atomic<Int>(initialPerCallNanoseconds)

    /// The ticker a new call goes to (see Placement above), with the call already counted as its member (under
    /// the pool's lock, so calls started at once from several threads are spread too); starts a thread when none
    /// has room. Hand the call over with ``add(_:exited:)``.
    static func place() -> LiveCallTicker {
        let perCall = perCallCost.load(ordering: .relaxed)
        return pool.withLock { tickers in
            let chosen: LiveCallTicker
            if let roomy = tickers.first(where: {
                ($0.members.load(ordering: .relaxed) + 1) * perCall <= busyBudgetNanoseconds
            }) {
                chosen = roomy
            } else if tickers.count < maximumThreads {
                chosen = LiveCallTicker()
                tickers.append(chosen)
            } else {
                chosen = tickers.min { $0.members.load(ordering: .relaxed) < $1.members.load(ordering: .relaxed) }!
            }
            chosen.members.wrappingAdd(1, ordering: .relaxed)
            return chosen
        }
    }

    private struct Member {
        let loop: LiveCallMediaLoop
        let exited: @Sendable () -> Void
        /// Parity of the ticks on which this call's 20 ms frames are encoded (set when it joins).
        var encodeParity = 0
    }

    private let joining = Mutex<(members: [Member], threadStarted: Bool)>(([], false))
    private let hasJoining = Atomic<Bool>(false)
    /// Calls given to this ticker and not yet dropped (joining ones included): what placement counts.
    private let members = Atomic<Int>(0)
    private let wakeup = DispatchSemaphore(value: 0)
    private var calls: [Member] = []
    /// Ticks run (for the parity of the current one) and the calls that encode on even and on odd ticks.
    private var tickIndex = 0
    private var encodesOnParity = [0, 0]

    private init() {}

    /// Starts ticking `loop` (placed here by ``place()``) at the next tick; `exited` runs on the ticker thread
    /// once the loop is no longer ticked (after its `running` flag was cleared).
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
            tickIndex &+= 1
            if hasJoining.load(ordering: .acquiring) {
                hasJoining.store(false, ordering: .relaxed)
                let joined = joining.withLock { j in
                    defer { j.members.removeAll(keepingCapacity: true) }
                    return j.members
                }
                let now = MonotonicClock().now
                for var member in joined {
                    member.loop.shared.realtime.store(realtime, ordering: .relaxed)
                    balanceEncodes(&member, now: now)
                    calls.append(member)
                }
            }
            var now = MonotonicClock().now
            let start = now.nanoseconds
            var index = 0
            while index < calls.count {
                let member = calls[index]
                guard member.loop.shared.running.load(ordering: .acquiring) else {
                    encodesOnParity[member.encodeParity] -= 1
                    calls.swapAt(index, calls.count - 1)
                    calls.removeLast()
                    members.wrappingSubtract(1, ordering: .relaxed)
                    member.exited()
                    continue
                }
                if missed > 0 { member.loop.shared.lateTicks.wrappingAdd(missed, ordering: .relaxed) }
                // Late when the calls before it (or a stall) used up its deadline.
                member.loop.shared.countIfDelayed(tickStart: now, deadline: deadline)
                member.loop.tick(now: now, scheduled: MediaTime(nanoseconds: deadline), skipped: missed)
                now = MonotonicClock().now
                index += 1
            }
            if !calls.isEmpty { learn(perCall: Int(now.nanoseconds - start) / calls.count) }
        }
    }

    /// Puts a joining call's encodes on the tick parity fewer of this thread's calls encode on. A stream encodes
    /// a 20 ms frame every second capture block, and each tick gives every call one block, so the calls that joined
    /// on the same tick all encoded on the same ticks: with 100 calls started at once, every other tick carried all
    /// the Opus encodes (over half a call's work) and overran its 10 ms while the ticks between were light. One
    /// extra block of silence before the call's first tick moves its frames by 10 ms — no added delay: each
    /// frame is still sent on the tick its last block arrives.
    private func balanceEncodes(_ member: inout Member, now: MediaTime) {
        // Its first block comes on this tick (`tickIndex`), the second, which completes a frame, on the next.
        var parity = (tickIndex &+ 1) & 1
        if encodesOnParity[parity] > encodesOnParity[parity ^ 1] {
            member.loop.sendSilence(now: now)
            parity ^= 1
        }
        member.encodeParity = parity
        encodesOnParity[parity] += 1
    }

    /// Folds one tick's cost per call into the shared estimate (1/64 weight: a few seconds of ticks).
    private func learn(perCall: Int) {
        let old = Self.perCallCost.load(ordering: .relaxed)
        Self.perCallCost.store(old + (perCall - old) / 64, ordering: .relaxed)
    }
}
