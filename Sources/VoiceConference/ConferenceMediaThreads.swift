import Foundation
import Synchronization
import VoiceCore
import VoiceEngine

/// A fixed pool of media threads that tick conference rooms every 20 ms on absolute monotonic deadlines:
/// one room per thread at a time, a thread for many rooms, never a thread per participant (or per room).
///
/// A room is placed on the thread with the fewest participants at ``add(_:)``. Everything that touches a room
/// from elsewhere (a SIP thread adding a participant, muting, playing a join tone, reading statistics) goes
/// through ``perform(on:_:)``: the request is queued under a mutex and run on the room's thread just before its
/// next tick, so the room itself needs no lock and the steady tick takes none (an atomic flag says whether
/// anything is queued).
public final class ConferenceMediaThreads: @unchecked Sendable {
    // @unchecked Sendable: each worker's `rooms` is used only by its thread; requests go through a Mutex.

    /// A queued control-plane request (runs on the room's thread; never crosses threads after that).
    struct Request: @unchecked Sendable {
        let room: ConferenceRoom?
        let body: (ConferenceRoom?) -> Void
    }

    final class Worker: @unchecked Sendable {
        let index: Int
        var rooms: [ConferenceRoom] = []
        let pending = Mutex<[Request]>([])
        let hasPending = Atomic<Bool>(false)
        let load = Atomic<Int>(0)
        let ticks = Atomic<Int>(0)
        let lateTicks = Atomic<Int>(0)
        let busyNanoseconds = Atomic<Int>(0)
        init(index: Int) { self.index = index }
    }

    private let workers: [Worker]
    private let running = Atomic<Bool>(true)
    private let placement = Mutex<[ObjectIdentifier: Int]>([:])
    private let clock: any MediaClock
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `threadCount` threads (default: one per core) named `voice-conference`.
    /// - Parameter clock: the clock each tick's `now` is read from; it must be the one the participants'
    ///   transports stamp arrivals with (the monotonic clock by default, as `UDPMediaTransport` uses).
    public init(
        threadCount: Int = ProcessInfo.processInfo.activeProcessorCount, clock: any MediaClock = MonotonicClock()
    ) {
        precondition(threadCount >= 1, "at least one media thread")
        self.clock = clock
        workers = (0..<threadCount).map { Worker(index: $0) }
        for w in workers {
            let t = Thread { [self] in run(w) }
            t.name = "voice-conference"
            t.start()
        }
    }

    /// Stops every thread (after its current tick) and waits for them.
    public func shutdown() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        for _ in workers { exited.wait() }
    }

    deinit { shutdown() }

    /// Starts ticking `room` on the least loaded thread, from its next tick.
    public func add(_ room: ConferenceRoom) {
        let w = workers.min { $0.load.load(ordering: .relaxed) < $1.load.load(ordering: .relaxed) }!
        placement.withLock { $0[ObjectIdentifier(room)] = w.index }
        w.load.wrappingAdd(max(1, room.participants.count), ordering: .relaxed)
        enqueue(on: w, room: nil) { [weak w] _ in w?.rooms.append(room) }
    }

    /// Stops ticking `room`; `completion` runs on its thread once it is no longer ticked.
    public func remove(_ room: ConferenceRoom, completion: (@Sendable () -> Void)? = nil) {
        guard let index = placement.withLock({ $0.removeValue(forKey: ObjectIdentifier(room)) }) else { return }
        let w = workers[index]
        w.load.wrappingAdd(-max(1, room.participants.count), ordering: .relaxed)
        enqueue(on: w, room: nil) { [weak w] _ in
            w?.rooms.removeAll { $0 === room }
            completion?()
        }
    }

    /// Runs `body` on `room`'s thread before its next tick (the only safe way to touch a ticked room from
    /// another thread). Not for the steady path: queuing takes a lock and may allocate.
    public func perform(on room: ConferenceRoom, _ body: @escaping (ConferenceRoom) -> Void) {
        guard let index = placement.withLock({ $0[ObjectIdentifier(room)] }) else {
            body(room)  // not ticked: the caller owns it
            return
        }
        enqueue(on: workers[index], room: room) { r in if let r { body(r) } }
    }

    /// Ticks run so far and ticks that started more than one tick late, over all threads.
    public var tickCounts: (ticks: Int, late: Int) {
        workers.reduce((0, 0)) {
            ($0.0 + $1.ticks.load(ordering: .relaxed), $0.1 + $1.lateTicks.load(ordering: .relaxed))
        }
    }

    private func enqueue(on w: Worker, room: ConferenceRoom?, _ body: @escaping (ConferenceRoom?) -> Void) {
        let request = Request(room: room, body: body)
        w.pending.withLock { $0.append(request) }
        w.hasPending.store(true, ordering: .releasing)
    }

    private func run(_ w: Worker) {
        let tick = Int64(ConferenceRoom.tickMilliseconds) * 1_000_000
        var deadline = MonotonicClock().now.nanoseconds
        while running.load(ordering: .acquiring) {
            deadline += tick
            sleep(untilMonotonic: deadline)
            let lag = MonotonicClock().now.nanoseconds - deadline
            if lag > tick {
                w.lateTicks.wrappingAdd(1, ordering: .relaxed)
                deadline += lag / tick * tick
            }
            if w.hasPending.exchange(false, ordering: .acquiringAndReleasing) {
                let requests = w.pending.withLock { p -> [Request] in
                    defer { p.removeAll(keepingCapacity: true) }
                    return p
                }
                for r in requests { r.body(r.room) }
            }
            let start = MonotonicClock().now.nanoseconds
            let now = clock.now
            for room in w.rooms { room.tick(now: now) }
            w.busyNanoseconds.wrappingAdd(Int(MonotonicClock().now.nanoseconds - start), ordering: .relaxed)
            w.ticks.wrappingAdd(1, ordering: .relaxed)
        }
        exited.signal()
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Sleeps until the monotonic clock reads `nanoseconds` (absolute, so ticks do not drift).
private func sleep(untilMonotonic nanoseconds: Int64) {
    var ts = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}
