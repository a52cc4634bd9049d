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
            Capture timestamps are the arrival times; playout ticks every 10 ms on the capture's time line, so the \
            jitter buffer sees the call as the receiver did. Picks the most frequent SSRC unless --ssrc is given. \
            For SRTP pass the sender's key: --srtp-key inline:BASE64 (or a bare base64 key, or a whole a=crypto \
            line, whose suite then wins over --suite).
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
            throw ValidationError("--rate \(rate): use 8000, 16000 or 48000")
        }
        guard let suiteValue = SRTPCryptoSuite(rawValue: suite) else {
            throw ValidationError(
                "--suite \(suite) is not one of \(SRTPCryptoSuite.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        var ssrcValue: UInt32?
        if let ssrc {
            let parsed =
                ssrc.lowercased().hasPrefix("0x") ? UInt32(ssrc.dropFirst(2), radix: 16) : UInt32(ssrc)
            guard let parsed else { throw ValidationError("--ssrc \(ssrc) is not a 32-bit number") }
            ssrcValue = parsed
        }
        var options = CaptureReplay.Options(ssrc: ssrcValue, sampleRate: rate)
        do {
            if let srtpKey { options.srtp = try CaptureReplay.parseKey(srtpKey, suite: suiteValue) }
        } catch { throw ValidationError("--srtp-key: \(error)") }
        guard let bytes = FileManager.default.contents(atPath: capture) else {
            throw ValidationError("\(capture): cannot read the file")
        }
        let result: CaptureReplay.Result
        do { result = try CaptureReplay.run(capture: Array(bytes), options: options) } catch {
            throw ValidationError("\(capture): \(error)")
        }
        do {
            try WAVFile.write(pcm16: result.output, format: AudioFormat(sampleRate: rate), to: out)
        } catch {
            throw ValidationError("\(out): \(error)")
        }
        if let report { try result.report.jsonData().write(to: URL(fileURLWithPath: report)) }
        print(
            "stream: SSRC \(result.ssrc) (0x\(String(result.ssrc, radix: 16))), payload type \(result.payloadType), \(result.datagramsReplayed) datagrams of \(result.ssrcCounts.count) RTP stream(s)"
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
