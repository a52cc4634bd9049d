import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `voice-engine call` end to end: two processes on loopback with file devices, keys given on the command line.
@Suite(.tags(.live, .cli), .scheduledByTags, .serialized) struct CallCommandTests {
    static let speech = "TestVectors/speech_like_16k.wav"
    static var binary: URL? { CommandTestSupport.voiceEngineBinary }

    /// A child process whose output is collected, killed if it outlives its deadline.
    final class Child: @unchecked Sendable {
        // @unchecked Sendable: `output` is appended on the pipe's reader thread and read after the process and
        // that reader have finished (waitUntilExit, then the reader's EOF semaphore).
        let process = Process()
        private let pipe = Pipe()
        private let lock = NSLock()
        private var data = Data()
        private let eof = DispatchSemaphore(value: 0)

        init(_ arguments: [String], stdin: String? = nil) throws {
            process.executableURL = CallCommandTests.binary
            process.arguments = arguments
            process.standardOutput = pipe
            process.standardError = pipe
            let input = Pipe()
            process.standardInput = input
            let handle = pipe.fileHandleForReading
            let eof = eof
            Thread.detachNewThread { [self] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    lock.lock()
                    data.append(chunk)
                    lock.unlock()
                }
                eof.signal()
            }
            try process.run()
            if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
            try? input.fileHandleForWriting.close()
        }

        /// Waits for exit until `deadline`, then kills the process (SIGKILL) and reports it as killed.
        func wait(until deadline: Date) -> (status: Int32, output: String, killed: Bool) {
            var killed = false
            while process.isRunning {
                if Date() > deadline {
                    kill(process.processIdentifier, SIGKILL)
                    killed = true
                    break
                }
                usleep(20_000)
            }
            process.waitUntilExit()
            _ = eof.wait(timeout: .now() + 5)
            lock.lock()
            defer { lock.unlock() }
            return (process.terminationStatus, String(decoding: data, as: UTF8.self), killed)
        }
    }

    /// A UDP port that was free a moment ago.
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test(
        .enabled(
            if: binary != nil && FileManager.default.fileExists(atPath: speech),
            "voice-engine binary (next to the test bundle) or TestVectors/speech_like_16k.wav missing"),
        .timeLimit(.minutes(1)))
    func twoProcessesCallEachOtherWithFileDevicesAndWriteReports() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyListener = Data(SRTPMasterKey.random(for: .aesCM128HmacSHA1_80).bytes).base64EncodedString()
        let keyCaller = Data(SRTPMasterKey.random(for: .aesCM128HmacSHA1_80).bytes).base64EncodedString()
        let port = Self.freePort()
        let path = { (name: String) in dir.appendingPathComponent(name).path }

        // The listener takes the caller's key as base64, the caller takes the listener's as an a=crypto line.
        let listener = try Child([
            "call", "--listen", "\(port)", "--bind", "127.0.0.1", "--mic", "file:\(Self.speech)",
            "--speaker", "file:\(path("listener.wav"))", "--duration", "2", "--report", path("listener.json"),
            "--local-key", keyListener, "--remote-key", keyCaller, "--no-voice-processing"
        ])
        usleep(200_000)
        let caller = try Child([
            "call", "--connect", "127.0.0.1:\(port)", "--bind", "127.0.0.1", "--mic", "file:\(Self.speech)",
            "--speaker", "file:\(path("caller.wav"))", "--duration", "2", "--report", path("caller.json"),
            "--local-key", keyCaller, "--remote-crypto", "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(keyListener)"
        ])
        let deadline = Date().addingTimeInterval(12)
        let callerEnd = caller.wait(until: deadline)
        let listenerEnd = listener.wait(until: deadline)

        for (name, end) in [("listener", listenerEnd), ("caller", callerEnd)] {
            print("--- \(name) (status \(end.status))\n\(end.output)")
            #expect(!end.killed, "\(name) did not finish in time")
            #expect(end.status == 0, "\(name): \(end.output)")
            #expect(end.output.contains("established"))
            // Keys given on the command line are never printed.
            #expect(!end.output.contains(keyListener) && !end.output.contains(keyCaller))
            let report = try JSONDecoder().decode(
                CallReport.self, from: Data(contentsOf: URL(fileURLWithPath: path("\(name).json"))))
            #expect(report.rtp.received > 50, "\(name) received \(report.rtp.received)")
            #expect(report.rtp.received + report.rtp.lost == report.rtp.expected)
            #expect(report.drops.counts.authenticationFailed == 0)
            #expect(report.stream.srtpSuite == "AES_CM_128_HMAC_SHA1_80")
            #expect(report.session?.establishedAt != nil)
            let heard = try WAVFile.read(path: path("\(name).wav")).int16Samples
            #expect(heard.count > 16_000)
            let input = try WAVFile.read(path: Self.speech).int16Samples.prefix(heard.count)
            let level = SignalMetrics.rmsDBFS(SignalGenerator.toFloat(heard))
            #expect(
                level > SignalMetrics.rmsDBFS(SignalGenerator.toFloat(Array(input))) - 10,
                "\(name) heard \(level) dBFS: (near) silence")
        }
    }

    @Test(
        .enabled(if: binary != nil, "voice-engine binary missing (it is built next to the test bundle)"),
        .timeLimit(.minutes(1)))
    func interactiveSidePrintsItsLineAndRejectsAPastedLineThatIsNotACryptoLine() throws {
        let child = try Child(
            ["call", "--listen", "0", "--bind", "127.0.0.1", "--mic", "null", "--speaker", "null", "--duration", "1"],
            stdin: "a=rtpmap:111 opus/48000/2\n")
        let end = child.wait(until: Date().addingTimeInterval(10))
        #expect(!end.killed)
        #expect(end.status == 65, "\(end.output)")
        let printed = end.output.split(separator: "\n").first { $0.hasPrefix("a=crypto:") }
        let line = try #require(printed, "no a=crypto line printed: \(end.output)")
        let attribute = try SDESCryptoAttribute(parsing: line)
        #expect(attribute.suite == .aesCM128HmacSHA1_80)
        #expect(end.output.contains("give this line to the other side"))
        #expect(end.output.contains("the peer's key"))
    }

    @Test(
        "--connect takes a host name, and the caller gives up after --connect-timeout when nobody answers",
        .enabled(if: binary != nil, "voice-engine binary missing"), .timeLimit(.minutes(1)))
    func callerGivesUpWhenNobodyAnswers() throws {
        let port = Self.freePort()
        let started = Date()
        let end = try Child([
            "call", "--connect", "localhost:\(port)", "--bind", "127.0.0.1", "--mic", "null", "--speaker", "null",
            "--no-srtp", "--connect-timeout", "1.5"
        ]).wait(until: Date().addingTimeInterval(20))
        let elapsed = Date().timeIntervalSince(started)
        #expect(!end.killed && end.status == 1, "\(end.output)")
        #expect(end.output.contains("calling 127.0.0.1:\(port)"), "localhost not resolved: \(end.output)")
        #expect(end.output.contains("error: nobody answered at 127.0.0.1:\(port) within 1.5 s"), "\(end.output)")
        #expect(elapsed >= 1.5 && elapsed < 10, "gave up after \(elapsed) s")
    }

    @Test(
        "with keys that do not match, the listener says every packet failed authentication",
        .enabled(if: binary != nil, "voice-engine binary missing"), .timeLimit(.minutes(1)))
    func wrongKeysAreNamedAsSuch() throws {
        let port = Self.freePort()
        let key = { SRTPMasterKey.random(for: .aesCM128HmacSHA1_80).bytes }
        let (a, b, c) = (
            Data(key()).base64EncodedString(), Data(key()).base64EncodedString(), Data(key()).base64EncodedString()
        )
        let listener = try Child([
            "call", "--listen", "\(port)", "--bind", "127.0.0.1", "--mic", "null", "--speaker", "null",
            "--duration", "3", "--local-key", a, "--remote-key", c  // the caller protects with b
        ])
        usleep(200_000)
        let caller = try Child([
            "call", "--connect", "127.0.0.1:\(port)", "--bind", "127.0.0.1", "--mic", "null", "--speaker", "null",
            "--connect-timeout", "2.5", "--local-key", b, "--remote-key", a
        ])
        let deadline = Date().addingTimeInterval(20)
        let callerEnd = caller.wait(until: deadline)
        let listenerEnd = listener.wait(until: deadline)
        #expect(!listenerEnd.killed && listenerEnd.status == 1, "\(listenerEnd.output)")
        #expect(
            listenerEnd.output.contains("failed SRTP authentication: the keys do not match"), "\(listenerEnd.output)")
        #expect(!callerEnd.killed && callerEnd.status == 1, "\(callerEnd.output)")
    }

    @Test(
        "an IPv6 literal in --connect reaches a listener on ::1, with SRTP, both ways",
        .enabled(if: binary != nil && IPv6Loopback.available, "voice-engine binary or ::1 missing"),
        .timeLimit(.minutes(1)))
    func callsOverIPv6() throws {
        let port = Self.freePort()
        let key = { Data(SRTPMasterKey.random(for: .aesCM128HmacSHA1_80).bytes).base64EncodedString() }
        let (a, b) = (key(), key())
        let device = ["--mic", "file:\(Self.speech)", "--speaker", "null", "--duration", "2"]
        let listener = try Child(
            ["call", "--listen", "\(port)", "--bind", "::1", "--local-key", a, "--remote-key", b] + device)
        usleep(200_000)
        let caller = try Child(["call", "--connect", "[::1]:\(port)", "--local-key", b, "--remote-key", a] + device)
        let deadline = Date().addingTimeInterval(15)
        let (callerEnd, listenerEnd) = (caller.wait(until: deadline), listener.wait(until: deadline))
        #expect(listenerEnd.output.contains("listening on [::1]:\(port)"), "\(listenerEnd.output)")
        #expect(callerEnd.output.contains("calling [::1]:\(port)"), "\(callerEnd.output)")
        for end in [callerEnd, listenerEnd] {
            #expect(!end.killed && end.status == 0 && end.output.contains("established"), "\(end.output)")
            #expect(end.output.contains("(lost 0)") && !end.output.contains("received 0 of"), "\(end.output)")
        }
    }

    @Test(.enabled(if: binary != nil, "voice-engine binary missing"), .timeLimit(.minutes(1)))
    func badIPv6AddressesAreRejectedWithTheReason() throws {
        for (arguments, reason) in [
            (["call", "--connect", "::1:5004"], "an IPv6 address goes in brackets"),
            (["call", "--connect", "[127.0.0.1]:5004"], "is not an IPv6 address"),
            (["call", "--connect", "[::1]:5004", "--bind", "127.0.0.1"], "cannot reach the IPv6 peer"),
            (["call", "--connect", "[::1:5004"], "expected HOST:PORT")
        ] {
            let end = try Child(arguments).wait(until: Date().addingTimeInterval(10))
            #expect(!end.killed && end.status == 64, "\(arguments): \(end.output)")
            #expect(end.output.contains("error: --") && end.output.contains(reason), "\(arguments): \(end.output)")
        }
    }

    @Test(.enabled(if: binary != nil, "voice-engine binary missing"), .timeLimit(.minutes(1)))
    func badArgumentsAreRejected() throws {
        for arguments in [
            ["call", "--mic", "null"],
            ["call", "--listen", "5000", "--connect", "127.0.0.1:5000"],
            ["call", "--connect", "localhost"],
            ["call", "--listen", "0", "--no-srtp", "--remote-key", "abc"]
        ] {
            let end = try Child(arguments).wait(until: Date().addingTimeInterval(10))
            #expect(!end.killed && end.status != 0, "\(arguments): \(end.output)")
        }
    }
}
