import VoiceEngine
import Foundation
import VoiceCore
import VoiceRTP
import VoiceSRTP

/// Why a capture could not be replayed.
public enum CaptureReplayError: Error, Sendable, Equatable, CustomStringConvertible {
    case unreadableCapture(String)
    case noRTP(datagrams: Int)
    case ssrcNotFound(UInt32, available: [UInt32])
    case badKey(String)
    case stream(MediaStreamError)
    /// No key was given and the stream's payloads do not parse as Opus: most likely SRTP.
    case looksEncrypted(ssrc: UInt32, packets: Int, malformed: Int, distinctTOCs: Int)
    /// The key authenticates none of `ssrc`'s packets; `authenticated` lists the SSRCs (and packet counts) it does.
    case keyDoesNotAuthenticate(ssrc: UInt32, packets: Int, authenticated: [StreamCount])
    /// The key authenticates no RTP packet of the capture; `plainOpus` is set when the stream parses as plain RTP.
    case keyAuthenticatesNothing(ssrcs: [UInt32], plainOpus: Bool)
    /// The stream was replayed but not one packet reached the decoder (every one was dropped; the reasons say why).
    case nothingDecoded(ssrc: UInt32, datagrams: Int, drops: String)

    public var description: String {
        switch self {
        case .unreadableCapture(let reason): "cannot read the capture: \(reason)"
        case .noRTP(let n): "no RTP stream found among \(n) UDP datagrams"
        case .ssrcNotFound(let ssrc, let available):
            "SSRC \(ssrc) (0x\(String(ssrc, radix: 16))) is not in the capture; RTP SSRCs present: "
                + available.map { "\($0) (0x\(String($0, radix: 16)))" }.joined(separator: ", ")
        case .badKey(let reason): "bad SRTP key: \(reason)"
        case .stream(let error): "\(error)"
        case .looksEncrypted(let ssrc, let packets, let malformed, let distinct):
            "SSRC \(Self.hex(ssrc))'s payloads do not parse as Opus (\(malformed) of \(packets) malformed, "
                + "\(distinct) different TOC bytes): the stream looks SRTP-protected; give its sender's key with --srtp-key"
        case .keyDoesNotAuthenticate(let ssrc, let packets, let authenticated):
            "the key authenticates none of SSRC \(Self.hex(ssrc))'s \(packets) packets; "
                + (authenticated.isEmpty
                    ? "it authenticates no RTP stream of the capture"
                    : "it authenticates "
                        + authenticated.map { "SSRC \(Self.hex($0.ssrc)) (\($0.packets) packets)" }
                        .joined(separator: ", "))
        case .keyAuthenticatesNothing(let ssrcs, let plainOpus):
            "the key authenticates no RTP packet of the capture (SSRCs \(ssrcs.map(Self.hex).joined(separator: ", ")))"
                + (plainOpus ? "; the stream parses as plain Opus RTP: omit --srtp-key" : ": is it the sender's key?")
        case .nothingDecoded(let ssrc, let datagrams, let drops):
            "nothing decoded: all \(datagrams) datagrams of SSRC \(Self.hex(ssrc))'s flow were dropped (\(drops))"
        }
    }

    static func hex(_ ssrc: UInt32) -> String { "0x" + String(ssrc, radix: 16) }

    /// An SSRC and how many of its packets something applies to.
    public struct StreamCount: Sendable, Equatable {
        public var ssrc: UInt32
        public var packets: Int
    }
}

/// Decodes one RTP stream of a captured call (pcap/pcapng) through a ``MediaStream``'s receive chain, with capture
/// timestamps as arrival times and playout ticks every 10 ms on the capture's own time line, for
/// `voice-engine replay`.
///
/// Stream selection: among datagrams that look like RTP (version 2, not RTCP by RFC 5761 demux, 12 bytes or more),
/// the requested SSRC or else the most frequent one (ties: the first seen). Every datagram of that flow (same
/// source and destination addresses, the RTP ports or the next ones for non-muxed RTCP) is handed to the stream,
/// so RTCP, other SSRCs and garbage on the flow are processed or counted as drops like in a live call.
public enum CaptureReplay {
    public struct Options: Sendable {
        /// SRTP suite and the *sender's* key (what it offered in its `a=crypto` line), or nil for plain RTP.
        public var srtp: (suite: SRTPCryptoSuite, key: SRTPMasterKey)?
        public var ssrc: UInt32?
        /// Output (and decoding) rate: 8, 16 or 48 kHz.
        public var sampleRate: Int
        public var jitterBuffer: MediaStreamJitterBuffer
        /// The longest the replay keeps ticking after the last datagram while the buffer still holds audio.
        public var drainMilliseconds: Int

        public init(
            srtp: (suite: SRTPCryptoSuite, key: SRTPMasterKey)? = nil, ssrc: UInt32? = nil,
            sampleRate: Int = 48_000,
            jitterBuffer: MediaStreamJitterBuffer = .adaptive(), drainMilliseconds: Int = 500
        ) {
            self.srtp = srtp
            self.ssrc = ssrc
            self.sampleRate = sampleRate
            self.jitterBuffer = jitterBuffer
            self.drainMilliseconds = drainMilliseconds
        }
    }

    public struct Result: Sendable {
        public var output: [Int16]
        public var sampleRate: Int
        public var ssrc: UInt32
        public var payloadType: UInt8
        /// RTP packets per SSRC in the whole capture.
        public var ssrcCounts: [UInt32: Int]
        /// Datagrams of the chosen flow handed to the stream.
        public var datagramsReplayed: Int
        /// Frames the pcap reader skipped (not UDP over IP).
        public var skippedFrames: Int
        public var statistics: MediaStreamStatistics
        public var report: CallReport
    }

    /// Replays a capture held in memory.
    /// - Throws: ``CaptureReplayError``.
    public static func run(capture bytes: [UInt8], options: Options) throws(CaptureReplayError)
        -> Result
    {
        var reader: PcapReader
        var datagrams: [PcapUDPPacket] = []
        do {
            reader = try PcapReader(bytes: bytes)
            while let p = try reader.next() { datagrams.append(p) }
        } catch {
            throw .unreadableCapture("\(error)")
        }
        // Count RTP SSRCs.
        var counts: [UInt32: Int] = [:]
        var firstSeen: [UInt32: Int] = [:]
        for (i, d) in datagrams.enumerated() {
            guard let ssrc = rtpSSRC(d.payload) else { continue }
            counts[ssrc, default: 0] += 1
            if firstSeen[ssrc] == nil { firstSeen[ssrc] = i }
        }
        guard !counts.isEmpty else { throw .noRTP(datagrams: datagrams.count) }
        if let wanted = options.ssrc, counts[wanted] == nil {
            throw .ssrcNotFound(wanted, available: counts.keys.sorted())
        }
        // With a key: the stream it authenticates (a capture of a call holds both directions, each with its own
        // key). Without one: the most frequent stream, which must look like Opus rather than SRTP ciphertext.
        var authenticated: [UInt32: Int]?
        if let s = options.srtp {
            let analysis: RTPCaptureAnalysis
            do { analysis = try RTPCaptureAnalysis(capture: bytes, srtp: s) } catch {
                throw .badKey("\(error)")
            }
            authenticated = Dictionary(
                uniqueKeysWithValues: analysis.streams.filter { $0.authenticated > 0 }.map {
                    ($0.ssrc, $0.authenticated)
                })
        }
        let ranking = authenticated.map { a in counts.mapValues { _ in 0 }.merging(a) { $1 } } ?? counts
        let chosen =
            options.ssrc
            ?? ranking.max { a, b in
                a.value < b.value || (a.value == b.value && firstSeen[a.key]! > firstSeen[b.key]!)
            }!.key
        if let authenticated, authenticated[chosen] == nil {
            if options.ssrc != nil {
                throw .keyDoesNotAuthenticate(
                    ssrc: chosen, packets: counts[chosen]!,
                    authenticated: authenticated.sorted { $0.value > $1.value }.map {
                        .init(ssrc: $0.key, packets: $0.value)
                    })
            }
            let looks = opusLikeness(datagrams.filter { rtpSSRC($0.payload) == chosen }.map(\.payload))
            throw .keyAuthenticatesNothing(ssrcs: counts.keys.sorted(), plainOpus: looks.isOpus)
        }
        if options.srtp == nil {
            let looks = opusLikeness(datagrams.filter { rtpSSRC($0.payload) == chosen }.map(\.payload))
            if !looks.isOpus {
                throw .looksEncrypted(
                    ssrc: chosen, packets: looks.checked, malformed: looks.malformed, distinctTOCs: looks.distinctTOCs)
            }
        }
        let first = datagrams[firstSeen[chosen]!]
        var payloadTypes: [UInt8: Int] = [:]
        for d in datagrams where rtpSSRC(d.payload) == chosen {
            payloadTypes[d.payload[1] & 0x7F, default: 0] += 1
        }
        let payloadType = payloadTypes.max { $0.value < $1.value }!.key
        let flow = datagrams.filter {
            $0.source.address == first.source.address
                && $0.destination.address == first.destination.address
                && ($0.source.port == first.source.port || $0.source.port == first.source.port &+ 1)
                && ($0.destination.port == first.destination.port
                    || $0.destination.port == first.destination.port &+ 1)
        }

        var srtp: MediaStreamSRTP?
        if let s = options.srtp {
            guard s.key.count == s.suite.keyMaterialLength else {
                throw .badKey("\(s.key.count) bytes, \(s.suite) needs \(s.suite.keyMaterialLength)")
            }
            // Receive only: the local key is never used to send; any key of the right length will do.
            srtp = MediaStreamSRTP(suite: s.suite, localKey: s.key, remoteKey: s.key)
        }
        let configuration = MediaStreamConfiguration(
            processingRate: options.sampleRate, deviceFormat: AudioFormat(sampleRate: options.sampleRate),
            jitterBuffer: options.jitterBuffer, srtp: srtp, voiceProcessing: false,
            payloadType: payloadType < 128 && !(64...95).contains(payloadType) ? payloadType : 111,
            remoteSSRC: chosen,
            acceptAnyPayloadType: true, seed: 1)
        let stream: MediaStream
        do { stream = try MediaStream(configuration: configuration) } catch { throw .stream(error) }

        // Arrival times and ticks count from the first datagram of the flow.
        let t0 = flow.first!.timestamp
        let lastArrival = flow.last!.timestamp - t0
        let ticks = Int((lastArrival.nanoseconds / 10_000_000)) + 1 + options.drainMilliseconds / 10
        let block = options.sampleRate / 100
        var output = [Int16](repeating: 0, count: ticks * block)
        var frame = AudioFrame(format: configuration.deviceFormat)
        var next = 0
        var ticksRun = ticks
        for tick in 0..<ticks {
            let now = MediaTime.milliseconds(Int64(tick) * 10)
            while next < flow.count, flow[next].timestamp - t0 <= now {
                stream.receiveDatagram(flow[next].payload, arrival: flow[next].timestamp - t0)
                next += 1
            }
            // After the last datagram, play what the buffer holds and stop: the live call hung up there, and every
            // tick beyond it would be concealment the receiver never played (a fixed 500 ms drain made a clean
            // 10 s call look 4.7 % concealed).
            if next == flow.count && stream.statistics.jitterBuffer.currentDelayMilliseconds <= 0 {
                ticksRun = tick
                break
            }
            stream.renderPlayout(into: &frame, now: now)
            frame.withUnsafeSamples { s in for i in 0..<block { output[tick * block + i] = s[i] } }
        }
        output.removeLast((ticks - ticksRun) * block)
        let statistics = stream.statistics
        if statistics.packetsReceived == 0 {
            let d = statistics.drops
            throw .nothingDecoded(
                ssrc: chosen, datagrams: flow.count,
                drops: "authentication \(d.authenticationFailed), replayed \(d.replayed), malformed RTP "
                    + "\(d.malformedRTP), other SSRC \(d.unknownSSRC), RTCP \(d.malformedRTCP + d.rtcpAuthenticationFailed), "
                    + "total \(d.total)")
        }
        return Result(
            output: output, sampleRate: options.sampleRate, ssrc: chosen, payloadType: payloadType,
            ssrcCounts: counts,
            datagramsReplayed: flow.count, skippedFrames: reader.skippedFrames, statistics: statistics,
            report: CallReport(stream: stream, durationSeconds: Double(ticksRun) / 100))
    }

    /// Whether RTP payloads look like Opus: at most 10 % malformed (RFC 6716 frame count and duration) and four TOC
    /// bytes covering at least half the packets (an encoder keeps its mode, bandwidth and frame size; SRTP
    /// ciphertext spreads over all 256 values).
    static func opusLikeness(_ datagrams: [[UInt8]]) -> (isOpus: Bool, checked: Int, malformed: Int, distinctTOCs: Int)
    {
        var tocs: [UInt8: Int] = [:]
        var malformed = 0
        var checked = 0
        for datagram in datagrams {
            datagram.withUnsafeBytes { raw in
                guard let packet = try? RTPPacketView(raw), !packet.payload.isEmpty else { return }
                checked += 1
                let payload = packet.payload.assumingMemoryBound(to: UInt8.self)
                tocs[payload[0], default: 0] += 1
                if (try? OpusPacket.samplesPerChannel(in: payload, sampleRate: 48_000)) == nil { malformed += 1 }
            }
        }
        guard checked >= 5 else { return (true, checked, malformed, tocs.count) }
        let topFour = tocs.values.sorted(by: >).prefix(4).reduce(0, +)
        return (malformed * 10 <= checked && topFour * 2 >= checked, checked, malformed, tocs.count)
    }

    /// The SSRC of a datagram that looks like RTP (version 2, not RTCP, at least a fixed header), else nil.
    static func rtpSSRC(_ payload: [UInt8]) -> UInt32? {
        guard payload.count >= 12, payload[0] >> 6 == 2, !(192...223).contains(payload[1]) else {
            return nil
        }
        return UInt32(payload[8]) << 24 | UInt32(payload[9]) << 16 | UInt32(payload[10]) << 8
            | UInt32(payload[11])
    }

    /// Parses `--srtp-key` (see ``SDESCryptoAttribute/init(keyOption:suite:)``).
    public static func parseKey(_ text: String, suite: SRTPCryptoSuite) throws(CaptureReplayError)
        -> (suite: SRTPCryptoSuite, key: SRTPMasterKey)
    {
        do {
            let attribute = try SDESCryptoAttribute(keyOption: text, suite: suite)
            return (attribute.suite, attribute.key)
        } catch {
            throw .badKey("\(error)")
        }
    }
}
