import VoiceCore
import VoiceRTP
import VoiceSRTP

/// Every RTP and RTCP packet of a pcap/pcapng capture, with its SRTP authentication result under a given key, and
/// per-SSRC RFC 3550 receive statistics: what `voice-engine rtp-dump` prints, and how `replay` finds out which
/// stream a key authenticates.
///
/// Works on captures made by other software (Wireshark, tshark, dumpcap on `lo` or `any`, browsers): every link
/// type ``PcapReader`` decodes, RFC 8285 header extensions, RTP and RTCP on one port (RFC 5761) or on two.
///
/// **What counts as RTP/RTCP.** A UDP datagram whose first byte carries RTP version 2 (128…191, RFC 7983: STUN,
/// DTLS, TURN channels and QUIC fall outside it), that is not to or from a well-known non-media port (DNS, DHCP,
/// NTP, NetBIOS, SSDP, mDNS, LLMNR), and that parses: RTCP when its second byte is 192…223 (RFC 5761 §4) and the
/// first packet's length fits, RTP otherwise, parsed by ``RTPPacketView`` (after SRTP when the key authenticates it;
/// an SRTP packet whose P bit points into the encrypted part is read without padding). Anything else is counted in
/// ``otherDatagrams``.
///
/// **SRTP.** With a key, one inbound session for every SSRC unprotects a copy of each packet, in capture order:
/// `ok`, `authFail` (wrong key, another direction's key, tampering) or `replay` (replayed or older than the replay
/// window). Without a key every packet is `none`.
///
/// **Statistics** follow RFC 3550 A.1/A.3/A.8 through ``ReceiveStatistics`` over the packets a receiver holding the
/// key would accept (`ok` or `none`), in capture order, with capture times as arrival times: `packets` is the
/// count RFC 3550 calls received (duplicates included, the first packet of the probation not), so
/// `packets + lost == expected`, exactly as the engine's own receiver counts them. The RTP clock rate is the
/// static payload type's (RFC 3551), else inferred from the stream's timestamps against capture time and snapped to
/// a usual rate (48 kHz when the stream is too short to tell).
public struct RTPCaptureAnalysis: Sendable {
    /// One RTP or RTCP packet of the capture.
    public struct Packet: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable { case rtp, rtcp }

        /// Seconds since the capture's first UDP datagram.
        public var time: Double
        public var kind: Kind
        /// RTP: the packet's SSRC; RTCP: the sender SSRC of the first packet of the compound.
        public var ssrc: UInt32
        /// RTP: the payload type; RTCP: the first packet's type (200 SR, 201 RR, …).
        public var payloadType: UInt8
        /// RTP only.
        public var sequenceNumber: UInt16?
        public var timestamp: UInt32?
        public var marker: Bool?
        /// RTP: payload bytes (after header, CSRCs and extension, before padding; after SRTP removed its tag when it
        /// authenticated). RTCP: bytes of the compound (without the SRTCP trailer when it authenticated). Nil when
        /// the packet could not be parsed.
        public var payloadLength: Int?
        public var srtp: SRTPCheck
        public var source: PcapEndpoint
        public var destination: PcapEndpoint
        /// RTP: whether the header carries an extension (RFC 8285 one- or two-byte form, or another profile).
        public var hasHeaderExtension: Bool
    }

    /// The SRTP result of one packet.
    public enum SRTPCheck: String, Sendable, Hashable {
        case ok
        case authFail = "auth_fail"
        case replay
        /// No key was given.
        case none
    }

    /// RFC 3550 statistics of one SSRC.
    public struct Stream: Sendable, Hashable {
        public var ssrc: UInt32
        /// The most frequent payload type.
        public var payloadType: UInt8
        /// RTP packets of this SSRC in the capture, whatever their SRTP result.
        public var packetsInCapture: Int
        /// Of those, how many authenticated (`ok`), failed or were replays.
        public var authenticated: Int
        public var authenticationFailures: Int
        public var replays: Int
        /// RFC 3550 A.3 received (see the type's documentation), expected and cumulative lost.
        public var packets: Int
        public var expected: Int
        public var lost: Int
        /// RFC 3550 A.8 interarrival jitter, milliseconds.
        public var jitterMilliseconds: Double
        /// The RTP clock rate the jitter was computed with.
        public var clockRate: Int
    }

    public private(set) var packets: [Packet] = []
    public private(set) var streams: [Stream] = []
    /// UDP datagrams in the capture.
    public private(set) var datagrams = 0
    /// UDP datagrams that are not RTP or RTCP (STUN, DTLS, DNS, garbage) or were cut short.
    public private(set) var otherDatagrams = 0
    /// Frames that are not complete UDP datagrams over IP (ARP, TCP, fragments), as the reader counted them.
    public private(set) var skippedFrames = 0

    /// Ports whose traffic is never media, however its first byte looks.
    public static let nonMediaPorts: Set<UInt16> = [53, 67, 68, 123, 137, 138, 1900, 5353, 5355]

    /// Analyses a capture held in memory.
    ///
    /// - Parameters:
    ///   - srtp: the suite and master key to authenticate with, or nil (every packet `none`).
    ///   - ssrc: keep only this SSRC's packets and statistics.
    /// - Throws: ``RTPCaptureAnalysisError``: an unreadable capture, or a key that cannot make a session.
    public init(capture bytes: [UInt8], srtp: (suite: SRTPCryptoSuite, key: SRTPMasterKey)? = nil, ssrc: UInt32? = nil)
        throws(RTPCaptureAnalysisError)
    {
        var reader: PcapReader
        var udp: [PcapUDPPacket] = []
        do {
            reader = try PcapReader(bytes: bytes)
            while let datagram = try reader.next() { udp.append(datagram) }
        } catch {
            throw .unreadableCapture(error)
        }
        skippedFrames = reader.skippedFrames
        datagrams = udp.count
        var session: SRTPSession?
        if let srtp {
            do { session = try SRTPSession(suite: srtp.suite, key: srtp.key, direction: .inbound) } catch {
                throw .badKey(error)
            }
        }
        let start = udp.first?.timestamp ?? MediaTime(nanoseconds: 0)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var accepted: [UInt32: [(sequence: UInt16, timestamp: UInt32, arrival: MediaTime)]] = [:]
        for datagram in udp {
            guard let packet = Self.packet(datagram, start: start, session: session, buffer: &buffer) else {
                otherDatagrams += 1
                continue
            }
            if let ssrc, packet.ssrc != ssrc { continue }
            packets.append(packet)
            if packet.kind == .rtp, packet.srtp == .ok || packet.srtp == .none, let sequence = packet.sequenceNumber,
                let timestamp = packet.timestamp
            {
                accepted[packet.ssrc, default: []].append((sequence, timestamp, datagram.timestamp))
            }
        }
        streams = Self.streams(of: packets, accepted: accepted)
    }

    /// Reads and analyses a capture file.
    public init(
        contentsOfFile path: String, srtp: (suite: SRTPCryptoSuite, key: SRTPMasterKey)? = nil, ssrc: UInt32? = nil
    ) throws(RTPCaptureAnalysisError) {
        let bytes: [UInt8]
        do { bytes = try PcapReader.readFile(path) } catch { throw .unreadableCapture(error) }
        try self.init(capture: bytes, srtp: srtp, ssrc: ssrc)
    }

    /// SSRCs with RTP packets, in order of first appearance.
    public var rtpSSRCs: [UInt32] { streams.map(\.ssrc) }

    // MARK: One datagram

    static func packet(_ datagram: PcapUDPPacket, start: MediaTime, session: SRTPSession?, buffer: inout [UInt8])
        -> Packet?
    {
        let bytes = datagram.payload
        guard bytes.count >= 8, (128...191).contains(bytes[0]),
            !nonMediaPorts.contains(datagram.source.port), !nonMediaPorts.contains(datagram.destination.port)
        else { return nil }
        let time = Double((datagram.timestamp - start).nanoseconds) / 1e9
        if (192...223).contains(bytes[1]) {
            let firstLength = 4 * (Int(bytes[2]) << 8 | Int(bytes[3])) + 4
            guard firstLength <= bytes.count else { return nil }
            let ssrc = UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7])
            var check = SRTPCheck.none
            var length: Int? = bytes.count
            if let session {
                (check, length) = unprotect(bytes, into: &buffer) { (buffer, length) throws(SRTPError) in
                    try session.unprotectRTCP(buffer, length: length)
                }
                if check != .ok { length = nil }
            }
            return Packet(
                time: time, kind: .rtcp, ssrc: ssrc, payloadType: bytes[1], sequenceNumber: nil, timestamp: nil,
                marker: nil, payloadLength: length, srtp: check, source: datagram.source,
                destination: datagram.destination, hasHeaderExtension: false)
        }
        guard bytes.count >= 12 else { return nil }
        var check = SRTPCheck.none
        var length = bytes.count
        if let session {
            let result = unprotect(bytes, into: &buffer) { (buffer, length) throws(SRTPError) in
                try session.unprotect(buffer, length: length)
            }
            check = result.check
            if let unprotected = result.length { length = unprotected }
        }
        // The authenticated plain packet, or the packet as captured.
        if check != .ok { buffer.withUnsafeMutableBytes { $0.copyBytes(from: bytes) } }
        let parsed: (payload: Int, extension: Bool)? = buffer.withUnsafeMutableBytes { raw in
            let view = UnsafeRawBufferPointer(rebasing: raw[0..<length])
            if let packet = try? RTPPacketView(view) { return (packet.payloadRange.count, packet.hasExtension) }
            // SRTP without the key: a P bit refers to a padding count inside the encrypted part and the tag.
            guard check != .ok, raw[0] & 0x20 != 0 else { return nil }
            raw[0] &= ~0x20
            defer { raw[0] |= 0x20 }
            return (try? RTPPacketView(view)).map { ($0.payloadRange.count, $0.hasExtension) }
        }
        guard let parsed else { return nil }
        return Packet(
            time: time, kind: .rtp,
            ssrc: UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8
                | UInt32(bytes[11]),
            payloadType: bytes[1] & 0x7F, sequenceNumber: UInt16(bytes[2]) << 8 | UInt16(bytes[3]),
            timestamp: UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7]),
            marker: bytes[1] & 0x80 != 0, payloadLength: parsed.payload, srtp: check, source: datagram.source,
            destination: datagram.destination, hasHeaderExtension: parsed.extension)
    }

    /// Unprotects a copy of `bytes` in `buffer`; the plain length when it authenticated.
    static func unprotect(
        _ bytes: [UInt8], into buffer: inout [UInt8],
        _ body: (UnsafeMutableRawBufferPointer, Int) throws(SRTPError) -> Int
    ) -> (check: SRTPCheck, length: Int?) {
        buffer.withUnsafeMutableBytes { raw in
            raw.copyBytes(from: bytes)
            do throws(SRTPError) {
                return (.ok, try body(raw, bytes.count))
            } catch {
                switch error {
                case .replayFail, .replayOld: return (.replay, nil)
                default: return (.authFail, nil)
                }
            }
        }
    }

    // MARK: Statistics

    static func streams(
        of packets: [Packet], accepted: [UInt32: [(sequence: UInt16, timestamp: UInt32, arrival: MediaTime)]]
    ) -> [Stream] {
        var order: [UInt32] = []
        var bySSRC: [UInt32: Stream] = [:]
        var payloadTypes: [UInt32: [UInt8: Int]] = [:]
        for packet in packets where packet.kind == .rtp {
            if bySSRC[packet.ssrc] == nil {
                order.append(packet.ssrc)
                bySSRC[packet.ssrc] = Stream(
                    ssrc: packet.ssrc, payloadType: packet.payloadType, packetsInCapture: 0, authenticated: 0,
                    authenticationFailures: 0, replays: 0, packets: 0, expected: 0, lost: 0, jitterMilliseconds: 0,
                    clockRate: 0)
            }
            bySSRC[packet.ssrc]!.packetsInCapture += 1
            switch packet.srtp {
            case .ok: bySSRC[packet.ssrc]!.authenticated += 1
            case .authFail: bySSRC[packet.ssrc]!.authenticationFailures += 1
            case .replay: bySSRC[packet.ssrc]!.replays += 1
            case .none: break
            }
            payloadTypes[packet.ssrc, default: [:]][packet.payloadType, default: 0] += 1
        }
        return order.map { ssrc in
            var stream = bySSRC[ssrc]!
            stream.payloadType =
                payloadTypes[ssrc]!.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }!.key
            let counted = accepted[ssrc] ?? []
            stream.clockRate = clockRate(payloadType: stream.payloadType, packets: counted)
            var statistics = ReceiveStatistics(clockRate: stream.clockRate)
            for p in counted {
                statistics.update(sequenceNumber: p.sequence, rtpTimestamp: p.timestamp, arrival: p.arrival)
            }
            stream.expected = Int(statistics.expected)
            stream.packets = statistics.isValid ? Int(statistics.received) : 0
            stream.lost = stream.expected - stream.packets
            stream.jitterMilliseconds = statistics.jitter * 1000 / Double(stream.clockRate)
            return stream
        }
    }

    /// Static payload types' clock rates (RFC 3551 table 4 and 5).
    static let staticClockRates: [UInt8: Int] = [
        0: 8000, 3: 8000, 4: 8000, 5: 8000, 6: 16000, 7: 8000, 8: 8000, 9: 8000, 10: 44100, 11: 44100, 12: 8000,
        13: 8000, 14: 90000, 15: 8000, 16: 11025, 17: 22050, 18: 8000, 25: 90000, 26: 90000, 28: 90000, 31: 90000,
        32: 90000, 33: 90000, 34: 90000
    ]
    /// Rates a dynamic payload type's inferred rate snaps to.
    static let usualClockRates = [8000, 12000, 16000, 24000, 32000, 44100, 48000, 90000]

    /// The clock rate of a payload type: static table, else timestamps advanced per second of capture time,
    /// snapped to the nearest usual rate within 10 %, else 48 kHz (Opus, RFC 7587).
    static func clockRate(payloadType: UInt8, packets: [(sequence: UInt16, timestamp: UInt32, arrival: MediaTime)])
        -> Int
    {
        if let rate = staticClockRates[payloadType] { return rate }
        guard packets.count >= 10, let first = packets.first, let last = packets.last else { return 48_000 }
        let seconds = Double((last.arrival - first.arrival).nanoseconds) / 1e9
        let ticks = Double(Int32(bitPattern: last.timestamp &- first.timestamp))
        guard seconds >= 0.5, ticks > 0 else { return 48_000 }
        let estimate = ticks / seconds
        let nearest = usualClockRates.min { abs(Double($0) - estimate) < abs(Double($1) - estimate) }!
        return abs(Double(nearest) - estimate) <= 0.1 * Double(nearest) ? nearest : 48_000
    }
}

/// Why a capture could not be analysed.
public enum RTPCaptureAnalysisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file is not a readable pcap/pcapng capture (the reader says why).
    case unreadableCapture(PcapError)
    /// The key cannot make an SRTP session.
    case badKey(SRTPError)

    public var description: String {
        switch self {
        case .unreadableCapture(let error): "\(error)"
        case .badKey(let error): "bad SRTP key: \(error)"
        }
    }
}

extension SDESCryptoAttribute {
    /// Parses a key as a command line gives it: an SDES key parameter `inline:BASE64[|lifetime][|mki:len]`, a bare
    /// base64 key, or a whole `a=crypto:` line (whose suite then wins over `suite`).
    ///
    /// - Throws: ``SDESError`` naming what is wrong.
    public init(keyOption text: String, suite: SRTPCryptoSuite) throws(SDESError) {
        var trimmed = Substring(text)
        while let first = trimmed.first, first.isWhitespace { trimmed = trimmed.dropFirst() }
        while let last = trimmed.last, last.isWhitespace { trimmed = trimmed.dropLast() }
        if trimmed.hasPrefix("a=crypto:") || trimmed.hasPrefix("crypto:") {
            try self.init(parsing: trimmed)
        } else if trimmed.hasPrefix("inline:") {
            try self.init(parsing: "crypto:1 \(suite.rawValue) \(trimmed)")
        } else {
            try self.init(parsing: "crypto:1 \(suite.rawValue) inline:\(trimmed)")
        }
    }
}
