import Foundation
import Testing
import VoiceTestSupport

/// `voice-engine webrtc-demo` as a person would use it: the tool serves the page, Chromium (fake microphone)
/// calls, the engine echoes, and the tool says when the browser receives the echo. Port 27090 is this test's.
@Suite(
    "voice-engine webrtc-demo with Chromium", .tags(.interop, .live, .cli), .scheduledByTags, .timeLimit(.minutes(1)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: chromiumPath),
        "chromium is not installed (make test-deps installs it)"),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "the voice-engine tool is not built"))
struct WebRTCDemoCommandTests {
    @Test func aBrowserCallsTheDemoAndHearsTheEcho() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webrtc-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("demo.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let demo = Process()
        demo.executableURL = BuiltExecutables.url("voice-engine")
        demo.arguments = ["webrtc-demo", "--port", "27090", "--seconds", "40"]
        let handle = try FileHandle(forWritingTo: log)
        demo.standardOutput = handle
        demo.standardError = handle
        try demo.run()
        defer { stopPeer(demo, grace: 1) }
        func output() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        var deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !output().contains("Open http://127.0.0.1:27090/") {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(output().contains("Open http://127.0.0.1:27090/"), "the tool did not announce its page: \(output())")

        let chromium = try ChromiumPeer(url: "http://127.0.0.1:27090/?autocall&raw", audioFile: speechPath)
        defer { chromium.stop() }
        deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !output().contains("the browser receives the engine's echo") {
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(output().contains("call: answered an offer"), "\(output())")
        #expect(output().contains("the browser receives the engine's echo"), "\(output())")
    }
}
