import Foundation
import Testing

/// What a test needs beyond the CPU, so that a run can pick the tests it wants (`make test-fast`: the unit tests
/// only) and the plain parallel `swift test` keeps tests that share the machine's real time apart.
extension Tag {
    /// Talks to a real peer installed on the machine: Kamailio, SIPp, baresip, GStreamer, Chromium or coturn.
    @Tag public static var interop: Self
    /// Runs in real time: live calls, media or device threads, servers on sockets, with deadlines on the wall clock.
    @Tag public static var live: Self
    /// Spawns the `voice-engine` executable.
    @Tag public static var cli: Self
    /// Takes more than a few seconds of CPU (long signals, vector sets, benchmarks, soak runs).
    @Tag public static var slow: Self
    /// Needs root for network namespaces or real-time scheduling (skipped without it).
    @Tag public static var root: Self
}

/// How a suite or test tagged with ``Testing/Tag/interop``, ``Testing/Tag/live``, ``Testing/Tag/cli``,
/// ``Testing/Tag/slow`` or ``Testing/Tag/root`` runs, decided from its tags:
///
/// - It runs alone among such tests: a process-wide lock is held around a whole suite (or a single test outside
///   one), so servers, peers, processes, real-time calls and long computations do not compete with each other
///   for the two cores of a small machine, while the short unit tests still run in parallel. `slow` is in the
///   set because Swift Testing runs synchronous tests on the cooperative pool, as wide as the machine has cores:
///   two long computations beside a live call take every thread its async code needs, and it misses its
///   deadlines. A suite's own tests run in parallel with each other unless the suite is also `.serialized`.
/// - In a fast run (the environment variable `VOICE_TEST_FAST=1`, set by `make test-fast`), a test with any of the
///   five tags is cancelled before it starts, which Swift Testing reports as skipped with the reason.
///
/// Swift Testing's `swift test --filter`/`--skip` match test names, not tags, so the fast run is chosen by this
/// trait instead: a test without these tags always runs.
public struct TagScheduling: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    /// The tags that make a test run alone among its kind and keep it out of a fast run.
    public static let scheduled: Set<Tag> = [.interop, .live, .cli, .slow, .root]

    /// Whether this process is a fast run (`VOICE_TEST_FAST=1`).
    public static var isFastRun: Bool { ProcessInfo.processInfo.environment["VOICE_TEST_FAST"] == "1" }

    /// A suite gets one scope around all its tests; a test function outside a scheduled suite, one per test case.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase != nil ? self : nil
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        if Self.isFastRun, !test.tags.isDisjoint(with: Self.scheduled) {
            let tags = test.tags.intersection(Self.scheduled).map { "\($0)" }.sorted().joined(separator: ", ")
            try Test.cancel("not in a fast run (VOICE_TEST_FAST=1): tagged \(tags)")
        }
        guard !test.tags.isDisjoint(with: Self.scheduled), !Self.holdsLock else {
            try await function()
            return
        }
        await Self.lock.acquire()
        do {
            try await Self.$holdsLock.withValue(true) { try await function() }
        } catch {
            await Self.lock.release()
            throw error
        }
        await Self.lock.release()
    }

    /// Set inside the lock, so that the tests of a suite that holds it (and their child tasks) do not wait for it.
    @TaskLocal private static var holdsLock = false
    private static let lock = AsyncLock()
}

extension Trait where Self == TagScheduling {
    /// Runs tagged suites and tests one at a time and leaves them out of a fast run (``TagScheduling``).
    public static var scheduledByTags: Self { TagScheduling() }
}

/// A first-come, first-served lock for tasks: waiting suspends the task instead of blocking a thread of the
/// cooperative pool.
private actor AsyncLock {
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty {
            held = false
        } else {
            waiters.removeFirst().resume()  // the lock passes to the next waiter, still held
        }
    }
}
