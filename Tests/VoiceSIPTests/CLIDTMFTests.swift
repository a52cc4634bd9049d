import Foundation
import Testing
import VoiceTestSupport

/// The softphone commands' DTMF: `sip listen --dtmf` and `sip call --dtmf` between two processes on loopback, each
/// printing the other's keys (RFC 4733, which both offer). Port 25170 is this suite's.
@Suite(
    .tags(.cli, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"))
struct CLIDTMFTests {
    @Test func keysCrossBetweenSipCallAndSipListen() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        let directory = try makeTemporaryDirectory("cli-dtmf")
        defer { try? FileManager.default.removeItem(at: directory) }
        let listenerLog = directory.appendingPathComponent("listen.log")
        let listener = try ChildProcessGroup(
            binary.path,
            [
                "sip", "listen", "--listen", "127.0.0.1:25170", "--mic", "null", "--speaker", "null",
                "--no-voice-processing", "--optional-srtp", "--dtmf", "9#"
            ], log: listenerLog)
        defer { listener.stop() }
        guard await waitUntilUDPPortBound(25170) else {
            try Test.cancel(
                "sip listen did not bind:\n\((try? String(contentsOf: listenerLog, encoding: .utf8)) ?? "")")
        }
        let callerLog = directory.appendingPathComponent("call.log")
        let status = try ChildProcessGroup(
            binary.path,
            [
                "sip", "call", "sip:bob@127.0.0.1:25170", "--from", "sip:alice@127.0.0.1", "--bind", "127.0.0.1:0",
                "--mic", "null", "--speaker", "null", "--no-voice-processing", "--optional-srtp", "--duration", "3",
                "--dtmf", "123"
            ], log: callerLog
        ).waitForExit()
        let caller = (try? String(contentsOf: callerLog, encoding: .utf8)) ?? ""
        _ = await listener.wait(timeout: .seconds(10))
        let listened = (try? String(contentsOf: listenerLog, encoding: .utf8)) ?? ""
        #expect(status == 0, "\(caller)")
        func received(_ output: String) -> [String] {
            output.split(separator: "\n").filter { $0.hasPrefix("dtmf: received ") }.map { String($0.dropFirst(15)) }
        }
        #expect(caller.contains("dtmf: sending 123 (RFC 4733)"), "\(caller)")
        #expect(received(listened) == ["1", "2", "3"], "\(listened)")
        #expect(received(caller) == ["9", "#"], "\(caller)")
    }
}
