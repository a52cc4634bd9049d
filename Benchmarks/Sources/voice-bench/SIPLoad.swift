import Foundation
import NIOCore
import NIOPosix
import VoiceEngine
import VoiceSIP

#if canImport(Glibc)
import Glibc
#endif

/// `voice-bench sip --load`: call setups per second through a loopback UAS of the engine under SIPp load.
///
/// A `SIPUserAgent` on 127.0.0.1 answers every INVITE with an SDP answer (Opus, SDES-SRTP keys of its own) and
/// takes the BYE; SIPp (Debian's sip-tester) runs Benchmarks/sipp/uac-call-load.xml against it at rising call
/// rates, each for a few seconds. A step passes when SIPp reports no failed call and no unexpected message and
/// reached its rate; the engine's CPU (getrusage of this process, user + system, SIPp not included) is divided by
/// the calls set up. Prints a row per step and the highest passing rate.
enum SIPLoad {
    static let sipp = "/usr/bin/sipp"
    static let scenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../sipp/uac-call-load.xml").standardized.path

    struct Step {
        var rate: Int
        var calls: Int
        var successful: Int
        var failed: Int
        var retransmissions: Int
        var seconds: Double
        var cpuSeconds: Double
        /// Every call set up, none failed, and SIPp kept its rate (within 10 %): the UAS kept up.
        var passed: Bool { failed == 0 && successful == calls && achievedRate >= 0.9 * Double(rate) }
        var achievedRate: Double { Double(successful) / seconds }
        var cpuMicrosecondsPerCall: Double { successful > 0 ? cpuSeconds * 1e6 / Double(successful) : .nan }
    }

    static func run(rates: [Int], seconds: Double, sippPort: Int) throws {
        guard FileManager.default.isExecutableFile(atPath: sipp) else {
            print("sip --load: skipped: sipp is not installed (Debian's sip-tester; make test-deps installs it)")
            return
        }
        final class Outcome: @unchecked Sendable { var result: Result<[Step], Error>? }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                outcome.result = .success(try await measure(rates: rates, seconds: seconds, sippPort: sippPort))
            } catch {
                outcome.result = .failure(error)
            }
            done.signal()
        }
        done.wait()
        let steps = try outcome.result!.get()
        let best = steps.filter(\.passed).max { $0.rate < $1.rate }
        if let best {
            print(
                String(
                    format: "highest rate without failed calls: %d calls/s (%.0f µs engine CPU per call setup)",
                    best.rate, best.cpuMicrosecondsPerCall))
        } else {
            print("no rate passed")
        }
    }

    private static func measure(rates: [Int], seconds: Double, sippPort: Int) async throws -> [Step] {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let endpoint = try await SIPEndpoint.start(
            on: group.next(), udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
            configuration: SIPEndpointConfiguration(userAgent: nil))
        let agent = SIPUserAgent(
            endpoint: endpoint, credentials: nil,
            configuration: SIPUserAgentConfiguration(addressOfRecord: SIPURI(user: "uas", host: "127.0.0.1")))
        let answering = Task {
            for await call in agent.incomingCalls {
                Task {
                    _ = try? await call.answer(with: AudioCapabilities(address: "127.0.0.1", port: 41000))
                    for await _ in call.events {}  // until the BYE ends it
                }
            }
        }
        defer { answering.cancel() }
        guard let local = await endpoint.localAddress(.udp), let port = local.port else {
            throw SIPError(.transport, "the UAS has no address")
        }
        print("engine UAS on 127.0.0.1:\(port); SIPp \(scenario) from port \(sippPort); \(seconds) s per step")
        // What the idle process costs (event loop, runtime threads) over a second, for scale.
        let idleStart = cpuSeconds()
        try await Task.sleep(for: .seconds(1))
        print(String(format: "idle: %.0f µs CPU in 1 s", (cpuSeconds() - idleStart) * 1e6))
        print("rate/s  calls  ok     failed  retrans  achieved/s  CPU µs/call")
        var steps: [Step] = []
        for rate in rates {
            let step = try await runStep(rate: rate, seconds: seconds, target: port, sippPort: sippPort)
            steps.append(step)
            print(
                String(
                    format: "%-7d %-6d %-6d %-7d %-8d %-11.0f %.0f%@", step.rate, step.calls, step.successful,
                    step.failed,
                    step.retransmissions, step.achievedRate, step.cpuMicrosecondsPerCall,
                    step.passed ? "" : "  <- failed, incomplete or late"))
            if !step.passed { break }
        }
        try await endpoint.close()
        // The group is left to the process's exit: calls of a failed step may still have timers on it.
        return steps
    }

    private static func runStep(rate: Int, seconds: Double, target: Int, sippPort: Int) async throws -> Step {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sip-load-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let calls = max(1, Int(Double(rate) * seconds))
        let stats = directory.appendingPathComponent("stats.csv")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: sipp)
        process.arguments = [
            "-sf", scenario, "-i", "127.0.0.1", "-p", "\(sippPort)", "-s", "uas", "-r", "\(rate)", "-m", "\(calls)",
            "-timeout", "\(Int(seconds) + 15)s", "-timeout_error", "-nostdin", "-trace_stat", "-stf", stats.path,
            "-fd", "1", "127.0.0.1:\(target)"
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.currentDirectoryURL = directory
        // CPU from the start of the step to SIPp's exit: the engine's work for these calls only (it is idle between).
        let before = cpuSeconds()
        let start = ContinuousClock.now
        try process.run()
        let deadline = ContinuousClock.now + .seconds(seconds + 20)
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning { process.terminate() }
        let row = lastRow(of: stats)
        let elapsed = ContinuousClock.now - start
        let cpu = cpuSeconds() - before
        return Step(
            rate: rate, calls: calls, successful: Int(row["SuccessfulCall(C)"] ?? "") ?? 0,
            failed: Int(row["FailedCall(C)"] ?? "") ?? calls,
            retransmissions: Int(row["Retransmissions(C)"] ?? "") ?? 0,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, cpuSeconds: cpu
        )
    }

    /// The last line of SIPp's `-trace_stat` CSV (semicolon separated) by column name.
    private static func lastRow(of file: URL) -> [String: String] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [:] }
        let lines = text.split(separator: "\n")
        guard lines.count >= 2 else { return [:] }
        let names = lines[0].split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        let values = lines[lines.count - 1].split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        return Dictionary(zip(names, values), uniquingKeysWith: { first, _ in first })
    }

    /// This process's CPU time, user + system (every thread).
    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
