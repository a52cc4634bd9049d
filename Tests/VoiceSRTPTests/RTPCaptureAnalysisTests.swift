import Foundation
import Testing
import VoiceLab
import VoiceRTP
import VoiceSRTP
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `RTPCaptureAnalysis` on real captures made by software nobody here wrote: dumpcap (Wireshark's capture engine)
/// records loopback traffic while GStreamer sends Opus over SRTP with RFC 8285 header extensions (transport-wide
/// congestion control and 64-bit NTP, one-byte form) and SRTCP sender reports from rtpbin. Captured on `lo`
/// (Ethernet link type) and on `any` as Linux cooked v1 and v2; tshark's own dissection is the oracle for sequence
/// numbers, timestamps and times.
@Suite(
    .tags(.interop), .scheduledByTags, .serialized,
    .enabled(if: GStreamer.isAvailable, "GStreamer not usable: \(GStreamer.missingRequirement ?? "")"),
    .enabled(if: Dumpcap.missingRequirement == nil, "\(Dumpcap.missingRequirement ?? "")"))
struct RTPCaptureAnalysisTests {
    static let frames = 60
    static let payloadType: UInt8 = 111
    static let firstSequence: UInt16 = 65_500  // wraps inside the capture

    struct Capture {
        var path: String
        var ssrc: UInt32
        var key: SRTPMasterKey
        var rtpPort: UInt16
        var directory: URL
        /// The RTP datagrams the receiving socket got, in order.
        var received: [[UInt8]]
    }

    /// dumpcap on `interface` (with `linkType` when given) while GStreamer sends SRTP to 127.0.0.1; the pcapng path.
    func captureGStreamerCall(interface: String, linkType: String?) async throws -> Capture? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rtp-dump-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("call.pcapng").path
        // Two ports next to each other: RTP, and SRTCP on the next one. Our sockets hold them so nothing is refused.
        let receiver = try LoopbackUDPSocket()
        let rtcpReceiver = try? LoopbackUDPSocket(port: receiver.port &+ 1)
        guard rtcpReceiver != nil else {
            return try await captureGStreamerCall(interface: interface, linkType: linkType)
        }
        let ssrc = UInt32.random(in: 1 ... .max)
        let key = SRTPMasterKey.random(for: .aesCM128HmacSHA1_80)

        var arguments = ["-q", "-i", interface]
        if let linkType { arguments += ["-y", linkType] }
        arguments += ["-f", "udp and (dst port \(receiver.port) or dst port \(receiver.port &+ 1))", "-w", path]
        let dumpcap = try BoundedProcess(executable: Dumpcap.path!, arguments: arguments)
        defer { dumpcap.kill() }
        guard try await dumpcap.waitForCaptureStart() else {
            Issue.record(Comment(rawValue: dumpcap.diagnostics("dumpcap did not start capturing")))
            return nil
        }

        let hexKey = GStreamer.hexString(key.bytes)
        let srtp = "rtp-cipher=aes-128-icm rtp-auth=hmac-sha1-80 rtcp-cipher=aes-128-icm rtcp-auth=hmac-sha1-80"
        let pipeline =
            "rtpbin name=rb audiotestsrc num-buffers=\(Self.frames) samplesperbuffer=960 freq=440 ! "
            + "audio/x-raw,format=S16LE,rate=48000,channels=1 ! opusenc frame-size=20 ! "
            + "rtpopuspay pt=\(Self.payloadType) ssrc=\(ssrc) seqnum-offset=\(Self.firstSequence) ! "
            + "application/x-rtp,extmap-3=http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01,"
            + "extmap-4=urn:ietf:params:rtp-hdrext:ntp-64 ! rb.send_rtp_sink_0 rb.send_rtp_src_0 ! "
            + "srtpenc name=enc key=\(hexKey) \(srtp) ! udpsink host=127.0.0.1 port=\(receiver.port) "
            + "rb.send_rtcp_src_0 ! enc.rtcp_sink_0 enc.rtcp_src_0 ! "
            + "udpsink host=127.0.0.1 port=\(receiver.port &+ 1) sync=false async=false"
        let gst = try BoundedProcess(
            executable: GStreamer.launchPath!, arguments: pipeline.split(separator: " ").map(String.init))
        defer { gst.kill() }
        // What the receiving sockets get is the reference. rtpbin's first sender report comes 1-2 s in, and its
        // RTCP task does not always let the pipeline end by itself: stop it once everything arrived.
        var received: [[UInt8]] = []
        var rtcpCount = 0
        let deadline = ContinuousClock.now + GStreamer.processTimeout
        while received.count < Self.frames + 1 || rtcpCount == 0 {
            // Drain what the sockets hold before judging: on a busy machine (parallel `swift test`) this task may
            // first run after the pipeline has sent everything and exited.
            if let datagram = try receiver.receiveIfAvailable() {
                received.append(datagram)
                continue
            }
            if try rtcpReceiver!.receiveIfAvailable() != nil {
                rtcpCount += 1
                continue
            }
            guard ContinuousClock.now < deadline, gst.isRunning || received.count >= Self.frames + 1 else {
                Issue.record(
                    Comment(rawValue: gst.diagnostics("got \(received.count) RTP and \(rtcpCount) RTCP datagrams")))
                return nil
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        gst.kill()
        try await Task.sleep(for: .milliseconds(300))  // the last datagrams reach the capture
        guard await dumpcap.terminate(timeout: .seconds(20)) == 0 else {
            Issue.record(Comment(rawValue: dumpcap.diagnostics("dumpcap did not stop cleanly")))
            return nil
        }
        return Capture(
            path: path, ssrc: ssrc, key: key, rtpPort: receiver.port, directory: directory, received: received)
    }

    @Test(
        "GStreamer SRTP with header extensions, captured by dumpcap: counts, sequence/timestamps, authentication, statistics",
        arguments: [("lo", nil), ("any", "LINUX_SLL"), ("any", "LINUX_SLL2")] as [(String, String?)])
    func gstreamerCapture(interface: String, linkType: String?) async throws {
        guard let capture = try await captureGStreamerCall(interface: interface, linkType: linkType) else { return }
        defer { try? FileManager.default.removeItem(at: capture.directory) }
        let bytes = try PcapReader.readFile(capture.path)
        #expect(Self.linkType(ofPcapng: bytes) == Self.expectedLinkType(linkType), "the capture's link type")

        let right = try RTPCaptureAnalysis(capture: bytes, srtp: (.aesCM128HmacSHA1_80, capture.key))
        let rtp = right.packets.filter { $0.kind == .rtp }
        let rtcp = right.packets.filter { $0.kind == .rtcp }
        // opusenc's lookahead makes one packet more than frames; the receiving socket is the reference.
        #expect(rtp.count == capture.received.count && rtp.count == Self.frames + 1, "every packet the receiver got")
        let receivedHeaders = capture.received.map { d in
            (
                UInt16(d[2]) << 8 | UInt16(d[3]),
                UInt32(d[4]) << 24 | UInt32(d[5]) << 16 | UInt32(d[6]) << 8 | UInt32(d[7])
            )
        }
        #expect(
            receivedHeaders.map(\.0) == rtp.map(\.sequenceNumber!) && receivedHeaders.map(\.1) == rtp.map(\.timestamp!))
        #expect(rtcp.count >= 1, "rtpbin's sender reports")
        #expect(rtp.allSatisfy { $0.ssrc == capture.ssrc && $0.payloadType == Self.payloadType })
        #expect(rtp.allSatisfy { $0.hasHeaderExtension }, "GStreamer's RFC 8285 extensions on every packet")
        #expect(right.packets.allSatisfy { $0.srtp == .ok }, "every RTP and RTCP packet authenticates with the key")
        for (i, packet) in rtp.enumerated() {
            #expect(packet.sequenceNumber == Self.firstSequence &+ UInt16(i), "packet \(i) in order across the wrap")
            if i > 1 { #expect(packet.timestamp! &- rtp[i - 1].timestamp! == 960, "20 ms at 48 kHz") }
            #expect((packet.payloadLength ?? 0) > 0)
        }
        #expect(rtcp.allSatisfy { $0.payloadType == 200 || $0.payloadType == 201 })
        #expect(right.streams.count == 1)
        let stream = try #require(right.streams.first)
        // RFC 3550 A.1: the first packet is on probation, every later one counts.
        #expect(stream.ssrc == capture.ssrc && stream.expected == rtp.count - 1 && stream.packets == rtp.count - 1)
        #expect(stream.lost == 0 && stream.clockRate == 48_000)
        #expect(stream.jitterMilliseconds >= 0 && stream.jitterMilliseconds < 20)

        let wrong = try RTPCaptureAnalysis(
            capture: bytes, srtp: (.aesCM128HmacSHA1_80, .random(for: .aesCM128HmacSHA1_80)))
        #expect(wrong.packets.count == right.packets.count)
        #expect(wrong.packets.allSatisfy { $0.srtp == .authFail }, "a wrong key authenticates nothing")
        #expect(wrong.streams.first?.packets == 0 && wrong.streams.first?.authenticationFailures == rtp.count)

        let keyless = try RTPCaptureAnalysis(capture: bytes)
        #expect(keyless.packets.allSatisfy { $0.srtp == .none })
        #expect(keyless.streams.first?.expected == rtp.count - 1)
        // Without the key the SRTP tag is part of the payload: 10 bytes more than the authenticated payload.
        #expect(
            zip(keyless.packets, right.packets).allSatisfy { k, r in
                k.kind == .rtcp || k.payloadLength == r.payloadLength.map { $0 + 10 }
            })

        // tshark's dissection of the same file: same sequence numbers, timestamps and times.
        if let tshark = Dumpcap.tsharkPath {
            let fields = try await Self.tsharkFields(
                tshark, capture.path, port: capture.rtpPort,
                fields: ["rtp.seq", "rtp.timestamp", "frame.time_epoch"])
            let rows = fields.filter { $0.count == 3 && !$0[0].isEmpty }
            #expect(rows.map { UInt16($0[0]) } == rtp.map(\.sequenceNumber))
            #expect(rows.map { UInt32($0[1]) } == rtp.map(\.timestamp))
            let epochs = rows.compactMap { Double($0[2]) }
            if let first = epochs.first, let firstDatagram = right.packets.first {
                let ours = rtp.map { $0.time - firstDatagram.time }
                let theirs = epochs.map { $0 - first }
                #expect(zip(ours, theirs).allSatisfy { abs($0 - $1) < 2e-6 }, "capture times agree with tshark")
            }
        }
    }

    @Test("a truncated or foreign file is an error naming the problem, never a crash")
    func malformedCaptures() throws {
        #expect(throws: RTPCaptureAnalysisError.self) {
            _ = try RTPCaptureAnalysis(capture: Array("not a capture".utf8))
        }
        var writer = PcapWriter(format: .pcapng)
        writer.write(
            PcapUDPPacket(
                seconds: 1, nanoseconds: 0, source: PcapEndpoint(address: IPAddress("127.0.0.1")!, port: 5000),
                destination: PcapEndpoint(address: IPAddress("127.0.0.1")!, port: 5002),
                payload: [0x80, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, 1, 2, 3]))
        let whole = writer.bytes
        #expect(try RTPCaptureAnalysis(capture: whole).packets.count == 1)
        do {
            _ = try RTPCaptureAnalysis(capture: Array(whole.dropLast(7)))
            Issue.record("a truncated capture was accepted")
        } catch {
            #expect("\(error)".contains("truncated"), "\(error)")
        }
    }

    // MARK: Helpers

    static func expectedLinkType(_ option: String?) -> UInt32 {
        switch option {
        case "LINUX_SLL": 113
        case "LINUX_SLL2": 276
        default: 1  // lo captures as Ethernet
        }
    }

    /// The link type of a pcapng file's first interface description block.
    static func linkType(ofPcapng bytes: [UInt8]) -> UInt32? {
        var offset = 0
        while offset + 12 <= bytes.count {
            let type =
                UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
                | UInt32(bytes[offset + 3]) << 24
            let length =
                Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16
                | Int(bytes[offset + 7]) << 24
            if type == 1 { return UInt32(bytes[offset + 8]) | UInt32(bytes[offset + 9]) << 8 }
            guard length >= 12 else { return nil }
            offset += length
        }
        return nil
    }

    /// `tshark -r FILE -d udp.port==PORT,rtp -T fields -e …`, one row per packet.
    static func tsharkFields(_ tshark: String, _ path: String, port: UInt16, fields: [String]) async throws
        -> [[String]]
    {
        let process = try BoundedProcess(
            executable: tshark,
            arguments: ["-r", path, "-d", "udp.port==\(port),rtp", "-Y", "rtp", "-T", "fields"]
                + fields.flatMap { ["-e", $0] })
        guard await process.wait(timeout: GStreamer.processTimeout) == 0 else {
            Issue.record(Comment(rawValue: process.diagnostics("tshark failed")))
            return []
        }
        return process.standardOutput.split(separator: "\n").map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
    }
}

/// Wireshark's capture tools (Debian `tshark`, which brings `dumpcap`).
enum Dumpcap {
    static let path = GStreamer.executable(named: "dumpcap")
    static let tsharkPath = GStreamer.executable(named: "tshark")

    /// Why captures cannot be made here (not installed, or no permission to capture on `lo`), or nil.
    static let missingRequirement: String? = {
        guard let path else { return "dumpcap not on PATH (apt: tshark)" }
        // A one-second capture on lo: refused without root or CAP_NET_RAW/CAP_NET_ADMIN.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "dumpcap-probe-\(UUID().uuidString).pcapng")
        defer { try? FileManager.default.removeItem(at: file) }
        guard
            let probe = try? BoundedProcess(
                executable: path, arguments: ["-q", "-i", "lo", "-a", "duration:1", "-w", file.path])
        else { return "dumpcap cannot be started" }
        guard probe.waitBlocking(timeout: .seconds(30)) == 0 else {
            return "dumpcap cannot capture on lo here (needs root or CAP_NET_RAW): "
                + (probe.standardError.split(separator: "\n").first { $0.hasPrefix("dumpcap:") }.map(String.init) ?? "")
        }
        return nil
    }()
}

extension BoundedProcess {
    /// Waits until dumpcap reports that it captures ("Capturing on …" on stderr); false if it exited or timed out.
    func waitForCaptureStart(timeout: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if standardError.contains("Capturing on") { return true }
            guard isRunning else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// SIGTERM to the process group (dumpcap then finishes its file), then waits; the exit status, or nil.
    func terminate(timeout: Duration) async -> Int32? {
        guard isRunning else { return terminationStatus }
        _ = Glibc.kill(-pid, SIGTERM)
        return await wait(timeout: timeout)
    }
}
