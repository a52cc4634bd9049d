import Foundation
import Testing
import VoiceEngine
import VoiceTestSupport

/// `voice-engine rtp-dump` as a user runs it: the JSON shape the README documents, and one `error:` line with exit
/// 65 for a capture it cannot read, 64 for a bad option value.
@Suite(
    .tags(.cli), .scheduledByTags,
    .enabled(if: CommandTestSupport.voiceEngineBinary != nil, "voice-engine is not built"))
struct RTPDumpCommandTests {
    /// Runs the tool; (status, stdout, stderr).
    static func run(_ arguments: [String]) throws -> (Int32, String, String) {
        try BuiltExecutables.run("voice-engine", arguments)
    }

    /// Plain RTP, SSRC 0xdeadbeef, sequence 10…19 without 14, every 20 ms; one RTCP receiver report; one DNS reply.
    static func capture() -> [UInt8] {
        let a = PcapEndpoint(address: IPAddress("127.0.0.1")!, port: 40_000)
        let b = PcapEndpoint(address: IPAddress("127.0.0.1")!, port: 40_002)
        var writer = PcapWriter(format: .pcapng)
        writer.write(
            PcapUDPPacket(
                seconds: 100, nanoseconds: 0, source: PcapEndpoint(address: a.address, port: 53), destination: a,
                payload: [0x80, 0x81, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]))
        for i in 0..<10 where i != 4 {
            let header = RTPHeader(
                marker: i == 0, payloadType: 111, sequenceNumber: UInt16(10 + i), timestamp: UInt32(1000 + 960 * i),
                ssrc: 0xDEAD_BEEF)
            let nanos = 20_000_000 * (i + 1)
            writer.write(
                PcapUDPPacket(
                    seconds: 100, nanoseconds: UInt32(nanos), source: a, destination: b,
                    payload: header.serializedPacket(payload: [UInt8](repeating: 7, count: 30))))
        }
        // RR from 0x01020304, no report blocks.
        writer.write(
            PcapUDPPacket(
                seconds: 100, nanoseconds: 300_000_000, source: b, destination: a,
                payload: [0x80, 201, 0, 1, 1, 2, 3, 4]))
        return writer.bytes
    }

    static func temporaryFile(_ bytes: [UInt8], name: String) throws -> URL {
        try TestFiles.temporaryFile(bytes, name: name)
    }

    @Test func jsonHasTheDocumentedShape() throws {
        let file = try Self.temporaryFile(Self.capture(), name: "dump.pcapng")
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, stdout, stderr) = try Self.run(["rtp-dump", file.path, "--json"])
        #expect(status == 0, "\(stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["packets", "streams"])
        let packets = try #require(object["packets"] as? [[String: Any]])
        #expect(packets.count == 10, "9 RTP + 1 RTCP; the DNS reply is not RTP")
        let keys: Set = ["time", "kind", "ssrc", "pt", "seq", "timestamp", "marker", "payload_length", "srtp"]
        #expect(packets.allSatisfy { Set($0.keys) == keys })
        let first = packets[0]
        #expect(first["kind"] as? String == "rtp" && first["ssrc"] as? String == "0xdeadbeef")
        #expect(first["pt"] as? Int == 111 && first["seq"] as? Int == 10 && first["timestamp"] as? Int == 1000)
        #expect(first["marker"] as? Bool == true && first["payload_length"] as? Int == 30)
        #expect(first["srtp"] as? String == "none")
        #expect(abs((first["time"] as? Double ?? -1) - 0.02) < 1e-9, "seconds since the first UDP datagram")
        let rtcp = packets[9]
        #expect(
            rtcp["kind"] as? String == "rtcp" && rtcp["ssrc"] as? String == "0x1020304" && rtcp["pt"] as? Int == 201)
        #expect(rtcp["seq"] is NSNull && rtcp["marker"] is NSNull)
        let streams = try #require(object["streams"] as? [[String: Any]])
        #expect(streams.count == 1)
        let stream = streams[0]
        #expect(Set(stream.keys) == ["ssrc", "packets", "expected", "lost", "jitter_ms"])
        // Probation takes sequence 10; 11…19 expected, 14 lost.
        #expect(stream["ssrc"] as? String == "0xdeadbeef" && stream["expected"] as? Int == 9)
        #expect(stream["packets"] as? Int == 8 && stream["lost"] as? Int == 1)
        #expect(abs((stream["jitter_ms"] as? Double ?? -1)) < 1e-3, "packets exactly on their 20 ms schedule")

        let (filtered, filteredOut, _) = try Self.run(["rtp-dump", file.path, "--ssrc", "0x01020304", "--json"])
        #expect(filtered == 0 && filteredOut.contains("\"kind\":\"rtcp\"") && !filteredOut.contains("0xdeadbeef"))
    }

    @Test func badCapturesAndOptionsGiveOneErrorLineAndTheirExitStatus() throws {
        let whole = Self.capture()
        let truncated = try Self.temporaryFile(Array(whole.dropLast(5)), name: "truncated.pcapng")
        let text = try Self.temporaryFile(Array("hello".utf8), name: "text.pcap")
        let good = try Self.temporaryFile(whole, name: "good.pcapng")
        defer { for f in [truncated, text, good] { try? FileManager.default.removeItem(at: f) } }
        let cases: [([String], Int32, String)] = [
            (["rtp-dump", truncated.path], 65, "truncated"),
            (["rtp-dump", text.path], 65, "not a pcap or pcapng file"),
            (["rtp-dump", "/nonexistent/capture.pcapng"], 65, "cannot open"),
            (["rtp-dump", good.path, "--ssrc", "0x5"], 65, "RTP SSRCs present: 0xdeadbeef"),
            (["rtp-dump", good.path, "--ssrc", "banana"], 64, "--ssrc"),
            (["rtp-dump", good.path, "--srtp-key", "inline:!!!"], 64, "--srtp-key"),
            (["rtp-dump", good.path, "--suite", "ROT13"], 64, "--suite")
        ]
        for (arguments, expected, fragment) in cases {
            let (status, stdout, stderr) = try Self.run(arguments)
            #expect(status == expected, "\(arguments): \(stderr)")
            // One error line; a usage error (64) adds rtp-dump's own usage line.
            let lines = stderr.split(separator: "\n")
            #expect(lines.count == (expected == 64 ? 2 : 1), "\(arguments): \(stderr)")
            #expect(lines[0].hasPrefix("error: ") && lines[0].contains(fragment), "\(arguments): \(stderr)")
            if expected == 64 { #expect(lines[1].hasPrefix("Usage: voice-engine rtp-dump "), "\(stderr)") }
            #expect(stdout.isEmpty)
        }
        // A key that authenticates nothing is not an error: every packet says auth_fail.
        let key = SDESCryptoAttribute.generate().key
        let (status, stdout, stderr) = try Self.run([
            "rtp-dump", good.path, "--json", "--srtp-key", "inline:" + Data(key.bytes).base64EncodedString()
        ])
        #expect(status == 0 && stdout.contains("\"srtp\":\"auth_fail\"") && !stdout.contains("\"srtp\":\"ok\""))
        #expect(stderr.contains("authenticates no packet"))
    }
}
