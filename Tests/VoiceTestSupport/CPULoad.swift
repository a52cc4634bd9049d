import Foundation

/// Keeps every core of the machine busy for a while, the way a parallel `swift test` or a build beside a call
/// does: one spinning thread per core outside the Swift cooperative pool (competing with every thread for the
/// CPU), and as many spinning tasks as the cooperative pool has threads, so nothing that waits for that pool
/// runs until the load ends. (stress-ng started from a test process did not honour its own `--timeout`, so the
/// load is made by threads of the test, which end on their own deadline.)
public final class CPULoad: Sendable {
    /// What the load is (for the test's log).
    public let description: String
    private let spinners: [Task<Void, Never>]

    /// Starts the load now; it ends by itself after `seconds`.
    public init(seconds: Double) {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let end = Date(timeIntervalSinceNow: seconds)
        for index in 0..<cores {
            let thread = Thread { Self.spin(until: end) }
            thread.name = "cpu-load-\(index)"
            thread.start()
        }
        spinners = (0..<cores).map { _ in Task.detached { Self.spin(until: end) } }
        description = "\(cores) busy threads + \(cores) busy cooperative-pool tasks on \(cores) cores"
    }

    /// Waits until the load has ended (the cooperative pool is free again once this returns).
    public func finish() async {
        for spinner in spinners { await spinner.value }
    }

    /// Burns CPU without yielding until `end`.
    private static func spin(until end: Date) {
        var x: UInt64 = 1
        while Date() < end {
            for _ in 0..<100_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
        }
        if x == 42 { print("") }  // keeps the loop from being optimised away
    }
}
