import Foundation
import Testing
import VoiceEngine
import VoiceTestSupport

/// `voice-engine call --webrtc offer|answer` between two processes on loopback: the test pastes the offer printed
/// by one into the other and the answer back, both play the speech file for 6 s; full ICE, DTLS-SRTP and Opus
/// must carry it both ways (what each side recorded follows the speech; a reversed-speech control does not).
@Suite(
    "voice-engine call --webrtc between two processes", .timeLimit(.minutes(1)),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "the voice-engine tool is not built"),
    .enabled(if: FileManager.default.fileExists(atPath: speechPath), "no speech file"))
struct WebRTCCallCommandTests {
    /// Reads one SDP block (up to its empty line) from a process's stdout.
    static func readBlock(_ handle: FileHandle, timeout: TimeInterval) -> String {
        var text = ""
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, !text.contains("\n\n") {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }

    @Test func twoEnginesCallEachOtherOverICEAndDTLS() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webrtc-call-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func start(_ role: String) throws -> (Process, Pipe, Pipe, URL, URL) {
            let p = Process()
            p.executableURL = BuiltExecutables.url("voice-engine")
            let heard = directory.appendingPathComponent("\(role).wav"), log = directory.appendingPathComponent("\(role).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            p.arguments = ["call", "--webrtc", role, "--mic", "file:\(speechPath)", "--loop-mic",
                           "--speaker", "file:\(heard.path)", "--duration", "6"]
            let input = Pipe(), output = Pipe()
            p.standardInput = input
            p.standardOutput = output
            p.standardError = try FileHandle(forWritingTo: log)
            try p.run()
            return (p, input, output, heard, log)
        }
        let (offerer, offerIn, offerOut, offerHeard, offerLog) = try start("offer")
        let (answerer, answerIn, answerOut, answerHeard, answerLog) = try start("answer")
        defer { stopPeer(offerer, grace: 1); stopPeer(answerer, grace: 1) }

        let offer = Self.readBlock(offerOut.fileHandleForReading, timeout: 10)
        #expect(offer.contains("a=candidate:") && offer.contains("a=fingerprint:sha-256") && !offer.contains("ice-lite"))
        answerIn.fileHandleForWriting.write(Data(offer.utf8))
        let answer = Self.readBlock(answerOut.fileHandleForReading, timeout: 10)
        #expect(answer.contains("a=setup:active") || answer.contains("a=setup:passive"))
        offerIn.fileHandleForWriting.write(Data(answer.utf8))

        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, offerer.isRunning || answerer.isRunning { Thread.sleep(forTimeInterval: 0.05) }
        let logs = ((try? String(contentsOf: offerLog, encoding: .utf8)) ?? "") + ((try? String(contentsOf: answerLog, encoding: .utf8)) ?? "")
        print(logs)
        #expect(offerer.terminationStatus == 0 && answerer.terminationStatus == 0, "\(logs)")
        #expect(logs.contains("ICE connected"), "\(logs)")

        let speech = try WAVFile(contentsOfFile: speechPath).int16Samples
        for heard in [offerHeard, answerHeard] {
            let samples = try WAVFile(contentsOfFile: heard.path).int16Samples
            // From 1 s on (the first second holds the handshake and the jitter buffer filling): about 5 s.
            let tail = samples.dropFirst(48_000)
            let similar = bestEnvelopeCorrelation(tail, speech)
            let control = bestEnvelopeCorrelation(tail, speech.reversed())
            print("\(heard.lastPathComponent): envelope correlation \(similar), reversed-speech control \(control)")
            #expect(similar > 0.8 && similar > control + 0.15, "envelope correlation \(similar) vs reversed control \(control)")
        }
    }
}
