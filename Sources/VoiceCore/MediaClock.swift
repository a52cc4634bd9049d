import Atomics

#if canImport(Glibc)
import Glibc
#endif

/// A point in media time: nanoseconds on a monotonic time line whose origin is the clock's own.
public struct MediaTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public static func milliseconds(_ ms: Int64) -> MediaTime { MediaTime(nanoseconds: ms * 1_000_000) }
    public static func microseconds(_ us: Int64) -> MediaTime { MediaTime(nanoseconds: us * 1_000) }
    public static func seconds(_ s: Double) -> MediaTime { MediaTime(nanoseconds: Int64((s * 1e9).rounded())) }
    public static let zero = MediaTime(nanoseconds: 0)

    public var milliseconds: Double { Double(nanoseconds) / 1e6 }
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    public static func < (a: MediaTime, b: MediaTime) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: MediaTime, b: MediaTime) -> MediaTime {
        MediaTime(nanoseconds: a.nanoseconds + b.nanoseconds)
    }
    public static func - (a: MediaTime, b: MediaTime) -> MediaTime {
        MediaTime(nanoseconds: a.nanoseconds - b.nanoseconds)
    }
    public static func += (a: inout MediaTime, b: MediaTime) { a = a + b }
    public var description: String { "\(milliseconds) ms" }
}

/// The source of time for every pipeline component. Nothing in the pipeline reads the wall clock itself,
/// so the same code runs in real time (``MonotonicClock``) and in fast, deterministic time (``ManualClock``).
public protocol MediaClock: Sendable {
    /// The current time. Never decreases.
    var now: MediaTime { get }
}

/// Real time: the system's monotonic clock (`CLOCK_MONOTONIC`), unaffected by wall-clock changes.
public struct MonotonicClock: MediaClock {
    public init() {}
    public var now: MediaTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MediaTime(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}

/// Fast, deterministic time for simulations and tests: time moves only when `advance(by:)` or `set(_:)` is called.
///
/// Safe to read from any thread while one thread advances it (the value is a single atomic).
public final class ManualClock: MediaClock {
    private let nanoseconds: ManagedAtomic<Int64>

    public init(start: MediaTime = .zero) { nanoseconds = ManagedAtomic(start.nanoseconds) }

    public var now: MediaTime { MediaTime(nanoseconds: nanoseconds.load(ordering: .acquiring)) }

    /// Moves time forward by `delta`, which must not be negative.
    public func advance(by delta: MediaTime) {
        precondition(delta.nanoseconds >= 0, "a media clock never goes back")
        nanoseconds.wrappingIncrement(by: delta.nanoseconds, ordering: .releasing)
    }

    /// Sets the time; it must not be earlier than `now`.
    public func set(_ time: MediaTime) {
        precondition(time >= now, "a media clock never goes back")
        nanoseconds.store(time.nanoseconds, ordering: .releasing)
    }
}
