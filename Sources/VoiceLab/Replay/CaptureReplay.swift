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

    public var description: String {
        switch self {
        case .unreadableCapture(let reason): "cannot read the capture: \(reason)"
        case .noRTP(let n): "no RTP stream found among \(n) UDP datagrams"
        case .ssrcNotFound(let ssrc, let available):
            "SSRC \(ssrc) (0x\(String(ssrc, radix: 16))) is not in the capture; RTP SSRCs present: "
                + available.map { "\($0) (0x\(String($0, radix: 16)))" }.joined(separator: ", ")
        case .badKey(let reason): "bad SRTP key: \(reason)"
        case .stream(let error): "\(error)"
        }
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
        /// Keep ticking this long after the last datagram so the buffer drains.
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
        let chosen: UInt32
        if let wanted = options.ssrc {
            guard counts[wanted] != nil else {
                throw .ssrcNotFound(wanted, available: counts.keys.sorted())
            }
            chosen = wanted
        } else {
            chosen =
                counts.max { a, b in
                    a.value < b.value || (a.value == b.value && firstSeen[a.key]! > firstSeen[b.key]!)
                }!.key
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

        let t0 = flow.first!.timestamp
        let lastArrival = flow.last!.timestamp - t0
        let ticks = Int((lastArrival.nanoseconds / 10_000_000)) + 1 + options.drainMilliseconds / 10
        let block = options.sampleRate / 100
        var output = [Int16](repeating: 0, count: ticks * block)
        var frame = AudioFrame(format: configuration.deviceFormat)
        var next = 0
        for tick in 0..<ticks {
            let now = MediaTime.milliseconds(Int64(tick) * 10)
            while next < flow.count, flow[next].timestamp - t0 <= now {
                stream.receiveDatagram(flow[next].payload, arrival: flow[next].timestamp - t0)
                next += 1
            }
            stream.renderPlayout(into: &frame, now: now)
            frame.withUnsafeSamples { s in for i in 0..<block { output[tick * block + i] = s[i] } }
        }
        let statistics = stream.statistics
        return Result(
            output: output, sampleRate: options.sampleRate, ssrc: chosen, payloadType: payloadType,
            ssrcCounts: counts,
            datagramsReplayed: flow.count, skippedFrames: reader.skippedFrames, statistics: statistics,
            report: CallReport(stream: stream, durationSeconds: Double(ticks) / 100))
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
