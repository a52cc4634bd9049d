import Foundation
import Testing
import VoiceTestSupport

/// G.711 and G.722 under loss through the whole engine (`voice-engine simulate --codec …`: RTP, the adaptive jitter
/// buffer, spandsp's codec and PLC) against the same spandsp calls in a plain C loop that loses the same packets
/// (`Benchmarks/scripts/codec-pesq.sh`, its `g7xx-plc-loop.c`): narrowband PESQ for PCMU and PCMA, wideband for
/// G.722, on real speech at 0, 5 and 10 % loss, the engine within 0.1 of the C loop.
@Suite(.tags(.cli, .slow), .scheduledByTags) struct CodecPESQTests {
    static let speech = SharedTestData.path("speech/jfk_16k_mono.wav")

    /// Why the script cannot run here, or nil: it needs python3 with numpy, scipy and `pesq`, and a C compiler
    /// with spandsp's headers.
    static let missingTools: String? = {
        if let reason = PythonModules.unavailableReason(["numpy", "scipy", "pesq"]) { return reason }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/cc") { return "no C compiler at /usr/bin/cc" }
        if !FileManager.default.fileExists(atPath: "/usr/include/spandsp/plc.h") {
            return "spandsp's headers are missing (make deps installs libspandsp-dev)"
        }
        return nil
    }()

    @Test(
        .enabled(if: CommandTestSupport.voiceEngineBinary != nil, "voice-engine not built"),
        .enabled(if: FileManager.default.fileExists(atPath: speech), "\(speech) is absent"),
        .enabled(if: missingTools == nil, "\(missingTools ?? "")"))
    func engineIsWithinATenthOfTheCLoopAtEveryLoss() throws {
        let binary = try #require(CommandTestSupport.voiceEngineBinary)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["Benchmarks/scripts/codec-pesq.sh", binary.path, Self.speech]
        process.currentDirectoryURL = SharedTestData.repository
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(output)")
        // One line per codec and loss: codec, input, loss, engine MOS, C-loop MOS, difference.
        var seen: [String] = []
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard fields.count == 6, ["pcmu", "pcma", "g722"].contains(fields[0]),
                let engine = Double(fields[3]), let cLoop = Double(fields[4])
            else { continue }
            seen.append("\(fields[0]) \(fields[2])")
            #expect(engine > 1, "\(line): the engine's PESQ is implausible")
            #expect(abs(engine - cLoop) <= 0.1, "\(line): the engine is more than 0.1 from the C loop")
        }
        let expected = ["pcmu", "pcma", "g722"].flatMap { codec in ["0%", "5%", "10%"].map { "\(codec) \($0)" } }
        #expect(seen == expected, "\(output)")
    }
}
