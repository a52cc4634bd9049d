import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// Reads `CLOCK_MONOTONIC` in nanoseconds (the same time line as `MonotonicClock`).
@inline(__always)
func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Names the calling thread as `top -H`, `perf` and `/proc/PID/task/*/comm` show it (the first 15 bytes), so a
/// call's threads can be told apart when measuring them. Best effort: a failure leaves the old name.
public func setCurrentThreadName(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
}

/// A self-pipe that wakes an audio thread out of `poll` on a PCM when the control plane stops it, so stopping
/// never waits for a device; a timed thread looks at it after each deadline. Owns both descriptors.
final class Wakeup: Sendable {
    let readDescriptor: Int32
    let writeDescriptor: Int32

    init(device: String) throws(AudioDeviceError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw .wakeupUnavailable(device: device, errno: errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readDescriptor = fds[0]
        writeDescriptor = fds[1]
    }

    deinit {
        close(readDescriptor)
        close(writeDescriptor)
    }

    /// Control plane: makes the read end readable until ``drain()``.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeDescriptor, &byte, 1)  // EAGAIN (pipe full) means it is readable already
    }

    /// Control plane, before a start: forgets earlier signals.
    func drain() {
        var bytes = (UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &bytes, { read(readDescriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Audio thread: sleeps until the absolute monotonic `deadline` (nanoseconds) with one
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` — one wake-up per deadline, and no drift however long
    /// each period's work takes. Returns false when the wakeup was signalled meanwhile: a stop takes effect at
    /// the next deadline (at most one period later), which costs less than waking twice per period to watch
    /// the pipe.
    func sleep(untilMonotonic deadline: Int64) -> Bool {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
        return !isSignalled
    }

    /// Audio thread: true when the wakeup has been signalled (non-blocking).
    var isSignalled: Bool {
        var descriptor = pollfd(fd: readDescriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }
}

/// One dedicated audio thread (a pthread, not a Swift concurrency task): blocking or timed I/O must never
/// occupy the cooperative pool. It asks for SCHED_FIFO at `realtimePriority` when given one and carries on
/// with normal scheduling when refused, recording which in the device's counters.
final class AudioThread: @unchecked Sendable {
    // @unchecked Sendable: `thread` is written once in `init` and read only by `join()`, which the owning
    // device calls from its control plane under its own lock.
    private let thread: pthread_t
    private var joined = false

    private final class Start {
        let body: @Sendable () -> Void
        let realtimePriority: Int32?
        let counters: DeviceCounters
        let threadName: String
        init(
            body: @escaping @Sendable () -> Void, realtimePriority: Int32?, counters: DeviceCounters,
            threadName: String
        ) {
            self.body = body
            self.threadName = threadName
            self.realtimePriority = realtimePriority
            self.counters = counters
        }
    }

    /// - Parameter threadName: what `top -H` and `/proc/PID/task/*/comm` show (15 bytes at most).
    init(
        device: String, threadName: String, realtimePriority: Int32?, counters: DeviceCounters,
        body: @escaping @Sendable () -> Void
    ) throws(AudioDeviceError) {
        let start = Start(
            body: body, realtimePriority: realtimePriority, counters: counters, threadName: threadName)
        let context = Unmanaged.passRetained(start).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(
            &handle, nil,
            { raw in
                let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
                setCurrentThreadName(start.threadName)
                if let priority = start.realtimePriority {
                    start.counters.recordRealtime(RealtimeScheduling.requestForCurrentThread(priority: priority))
                } else {
                    start.counters.recordRealtime(.notRequested)
                }
                start.body()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw .threadCreationFailed(device: device, code: rc)
        }
        thread = handle
    }

    /// Waits for the thread's body to return (the caller has already told it to stop).
    func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }

    deinit {
        if !joined { pthread_detach(thread) }
    }
}
