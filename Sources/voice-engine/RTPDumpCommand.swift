import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-engine rtp-dump`: every RTP/RTCP packet of a capture and per-SSRC RFC 3550 statistics. The analysis is
/// ``RTPCaptureAnalysis``; this command only formats it.
struct RTPDumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rtp-dump",
        abstract:
            "List the RTP/RTCP packets of a pcap or pcapng capture, with SRTP authentication and RFC 3550 statistics.",
        discussion: """
            Reads captures from Wireshark, tshark, dumpcap (Ethernet, Linux cooked SLL/SLL2, raw IP) or \
            voice-engine --capture. Each packet: time since the first UDP datagram (s), kind, SSRC, payload type \
            (RTCP: packet type), sequence number, timestamp, marker, payload length and the SRTP result with \
            --srtp-key (ok, auth_fail, replay; none without a key). Each SSRC: packets received, expected and lost \
            (RFC 3550 A.3) and interarrival jitter (A.8) over the packets a receiver with that key accepts.

            --json prints one object: {"packets":[{"time","kind","ssrc","pt","seq","timestamp","marker",\
            "payload_length","srtp"}],"streams":[{"ssrc","packets","expected","lost","jitter_ms"}]} (SSRC as \
            "0x…" lowercase hex; seq, timestamp and marker are null for RTCP).

            Exit status: 0 on success, 64 for a bad option value, 65 when the capture cannot be read, is malformed, \
            holds no RTP/RTCP or not the --ssrc asked for.
            """)

    @Argument(help: "The capture (pcap or pcapng).")
    var capture: String
    @Option(help: "SRTP key to authenticate with: inline:BASE64, BASE64, or an a=crypto line.")
    var srtpKey: String?
    @Option(help: "SRTP suite of --srtp-key: \(SRTPCryptoSuite.allCases.map(\.rawValue).joined(separator: ", ")).")
    var suite: String = SRTPCryptoSuite.aesCM128HmacSHA1_80.rawValue
    @Option(help: "Only this SSRC (decimal or 0x hex).")
    var ssrc: String?
    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func run() throws {
        guard let suiteValue = SRTPCryptoSuite(rawValue: suite) else {
            throw CommandFailure.usage(
                "--suite \(suite) is not one of \(SRTPCryptoSuite.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var key: (suite: SRTPCryptoSuite, key: SRTPMasterKey)?
        if let srtpKey {
            do {
                let attribute = try SDESCryptoAttribute(keyOption: srtpKey, suite: suiteValue)
                key = (attribute.suite, attribute.key)
            } catch { throw CommandFailure.usage("--srtp-key: \(error)") }
        }
        let wanted = try ssrc.map { text throws(CommandFailure) in
            guard let value = parseSSRC(text) else {
                throw CommandFailure.usage("--ssrc \(text) is not a 32-bit number (decimal or 0x hex)")
            }
            return value
        }
        let analysis: RTPCaptureAnalysis
        do { analysis = try RTPCaptureAnalysis(contentsOfFile: capture, srtp: key, ssrc: wanted) } catch {
            throw CommandFailure.dataError("\(capture): \(error)")
        }
        if analysis.packets.isEmpty {
            if let wanted {
                let all = (try? RTPCaptureAnalysis(contentsOfFile: capture))?.rtpSSRCs ?? []
                throw CommandFailure.dataError(
                    "\(capture): SSRC \(hexSSRC(wanted)) is not in the capture; RTP SSRCs present: "
                        + (all.isEmpty ? "none" : all.map(hexSSRC).joined(separator: ", ")))
            }
            throw CommandFailure.dataError(
                "\(capture): no RTP or RTCP packet among \(analysis.datagrams) UDP datagrams")
        }
        print(json ? Self.json(analysis) : Self.table(analysis, capture: capture))
        if key != nil, !analysis.packets.contains(where: { $0.srtp == .ok }) {
            FileHandle.standardError.write(Data("note: the key authenticates no packet of the capture\n".utf8))
        }
    }

    /// One JSON object: `packets` (each with time, kind, ssrc, pt, seq, timestamp, marker, payload_length, srtp) and
    /// `streams` (ssrc, packets, expected, lost, jitter_ms), keys in this order.
    static func json(_ analysis: RTPCaptureAnalysis) -> String {
        func optional<T>(_ value: T?) -> String { value.map { "\($0)" } ?? "null" }
        let packets = analysis.packets.map { p in
            "{\"time\":\(String(format: "%.9f", p.time)),\"kind\":\"\(p.kind.rawValue)\",\"ssrc\":\"\(hexSSRC(p.ssrc))\","
                + "\"pt\":\(p.payloadType),\"seq\":\(optional(p.sequenceNumber)),\"timestamp\":\(optional(p.timestamp)),"
                + "\"marker\":\(optional(p.marker)),\"payload_length\":\(optional(p.payloadLength)),"
                + "\"srtp\":\"\(p.srtp.rawValue)\"}"
        }
        let streams = analysis.streams.map { s in
            "{\"ssrc\":\"\(hexSSRC(s.ssrc))\",\"packets\":\(s.packets),\"expected\":\(s.expected),\"lost\":\(s.lost),"
                + "\"jitter_ms\":\(String(format: "%.4f", s.jitterMilliseconds))}"
        }
        return "{\"packets\":[" + packets.joined(separator: ",") + "],\"streams\":[" + streams.joined(separator: ",")
            + "]}"
    }

    static func table(_ analysis: RTPCaptureAnalysis, capture: String) -> String {
        func pad(_ text: String, _ width: Int) -> String {
            text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
        }
        var lines = [
            "\(capture): \(analysis.datagrams) UDP datagrams, \(analysis.packets.count) RTP/RTCP packets listed"
                + (analysis.otherDatagrams > 0 ? ", \(analysis.otherDatagrams) other datagrams" : "")
                + (analysis.skippedFrames > 0 ? ", \(analysis.skippedFrames) non-UDP frames" : ""),
            pad("time s", 12) + pad("kind", 5) + pad("ssrc", 11) + pad("pt", 4) + pad("seq", 6) + pad("timestamp", 11)
                + pad("M", 2) + pad("len", 5) + pad("srtp", 10) + "source > destination"
        ]
        for p in analysis.packets {
            lines.append(
                pad(String(format: "%.6f", p.time), 12) + pad(p.kind.rawValue, 5) + pad(hexSSRC(p.ssrc), 11)
                    + pad("\(p.payloadType)", 4) + pad(p.sequenceNumber.map { "\($0)" } ?? "-", 6)
                    + pad(p.timestamp.map { "\($0)" } ?? "-", 11) + pad(p.marker.map { $0 ? "1" : "0" } ?? "-", 2)
                    + pad(p.payloadLength.map { "\($0)" } ?? "-", 5) + pad(p.srtp.rawValue, 10)
                    + "\(p.source) > \(p.destination)" + (p.hasHeaderExtension ? "  [ext]" : ""))
        }
        lines.append("streams (RFC 3550, over the packets a receiver with this key accepts):")
        for s in analysis.streams {
            lines.append(
                "  \(hexSSRC(s.ssrc))  pt \(s.payloadType)  packets \(s.packets)  expected \(s.expected)  lost \(s.lost)"
                    + "  jitter \(String(format: "%.2f", s.jitterMilliseconds)) ms  (clock \(s.clockRate) Hz; "
                    + "\(s.packetsInCapture) in the capture"
                    + (s.authenticated + s.authenticationFailures + s.replays > 0
                        ? ", SRTP ok \(s.authenticated), auth_fail \(s.authenticationFailures), replay \(s.replays)"
                        : "") + ")")
        }
        return lines.joined(separator: "\n")
    }
}
