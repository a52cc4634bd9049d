import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-engine replay`: decodes a captured call through the receive chain.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract:
            "Decode an RTP/SRTP stream from a pcap or pcapng capture through the receive chain and report its statistics.",
        discussion: """
            Capture timestamps are the arrival times; playout ticks every 10 ms on the capture's time line from the \
            first packet until the buffer has played the last one (the receiver hung up there), so the jitter \
            buffer sees the call as the receiver did. For SRTP pass the sender's key: --srtp-key inline:BASE64 (or a bare base64 key, or a whole \
            a=crypto line, whose suite then wins over --suite); the stream that key authenticates is decoded. \
            Without a key the most frequent SSRC is decoded, and a stream whose payloads do not parse as Opus is \
            refused as SRTP. --ssrc picks the stream.

            Exit status: 0 when the stream decoded, 64 for a bad option value, 65 when the capture cannot be read, \
            holds no RTP, the key authenticates nothing, the stream looks encrypted or nothing decoded, 1 when an \
            output file cannot be written.
            """)

    @Argument(help: "The capture (pcap or pcapng).")
    var capture: String
    @Option(
        help: "The sender's SRTP key: inline:BASE64, BASE64, or an a=crypto line. Omit for plain RTP.")
    var srtpKey: String?
    @Option(help: "SRTP suite: \(SRTPCryptoSuite.allCases.map(\.rawValue).joined(separator: ", ")).")
    var suite: String = SRTPCryptoSuite.aesCM128HmacSHA1_80.rawValue
    @Option(help: "Decode this SSRC (decimal or 0x hex) instead of the most frequent one.")
    var ssrc: String?
    @Option(help: "Where to write the decoded audio (16-bit WAV).")
    var out: String
    @Option(help: "Output sample rate: 8000, 16000 or 48000.")
    var rate: Int = 48_000
    @Option(help: "Write the end-of-call report (JSON) here.")
    var report: String?

    func run() throws {
        guard [8_000, 16_000, 48_000].contains(rate) else {
            throw CommandFailure.usage("--rate \(rate): use 8000, 16000 or 48000")
        }
        try OutputPaths.checkFile(out, option: "--out")
        try OutputPaths.checkFile(report, option: "--report")
        guard let suiteValue = SRTPCryptoSuite(rawValue: suite) else {
            throw CommandFailure.usage(
                "--suite \(suite) is not one of \(SRTPCryptoSuite.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        var ssrcValue: UInt32?
        if let ssrc {
            guard let parsed = parseSSRC(ssrc) else {
                throw CommandFailure.usage("--ssrc \(ssrc) is not a 32-bit number (decimal or 0x hex)")
            }
            ssrcValue = parsed
        }
        var options = CaptureReplay.Options(ssrc: ssrcValue, sampleRate: rate)
        do {
            if let srtpKey { options.srtp = try CaptureReplay.parseKey(srtpKey, suite: suiteValue) }
        } catch { throw CommandFailure.usage("--srtp-key: \(error)") }
        let bytes: [UInt8]
        do { bytes = try PcapReader.readFile(capture) } catch { throw CommandFailure.dataError("\(error)") }
        let result: CaptureReplay.Result
        do { result = try CaptureReplay.run(capture: bytes, options: options) } catch {
            throw CommandFailure.dataError("\(capture): \(error)")
        }
        do {
            try WAVFile.write(pcm16: result.output, format: AudioFormat(sampleRate: rate), to: out)
        } catch {
            throw CommandFailure.runtime("\(out): \(error)")
        }
        if let report {
            do { try result.report.jsonData().write(to: URL(fileURLWithPath: report)) } catch {
                throw CommandFailure.runtime("--report \(report): \(error.localizedDescription)")
            }
        }
        print(
            "stream: SSRC \(result.ssrc) (\(hexSSRC(result.ssrc))), payload type \(result.payloadType), \(result.datagramsReplayed) datagrams of \(result.ssrcCounts.count) RTP stream(s)"
                + (options.srtp != nil ? ", the one the key authenticates" : "")
        )
        print(SimulateCommand.summary(result.report))
        let d = result.report.drops.counts
        if d.total > 0 {
            print(
                "drops: auth \(d.authenticationFailed), replayed \(d.replayed), malformed RTP \(d.malformedRTP), RTCP \(d.malformedRTCP + d.rtcpAuthenticationFailed), other SSRC \(d.unknownSSRC), other \(d.total - d.authenticationFailed - d.replayed - d.malformedRTP - d.malformedRTCP - d.rtcpAuthenticationFailed - d.unknownSSRC)"
            )
        }
        print("wrote \(out)" + (report.map { ", \($0)" } ?? ""))
    }
}
