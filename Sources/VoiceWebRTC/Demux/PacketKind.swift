/// What arrived on the one port WebRTC media shares (RFC 7983 §7, as updated by RFC 9443), decided by the first
/// byte alone so the receive path classifies a packet without parsing or allocating.
public enum PacketKind: Sendable, Equatable {
    /// 0…3: STUN (ICE checks and responses, TURN control).
    case stun
    /// 16…19: ZRTP (not used by the engine; dropped).
    case zrtp
    /// 20…63: DTLS records (handshake, alerts).
    case dtls
    /// 64…79: TURN ChannelData.
    case turnChannel
    /// 128…191: RTP or RTCP (SRTP/SRTCP once DTLS has keyed them). Tell them apart with ``isRTCP(_:)``.
    case rtp
    /// Anything else: counted and dropped.
    case unknown

    public init(firstByte b: UInt8) {
        switch b {
        case 0...3: self = .stun
        case 16...19: self = .zrtp
        case 20...63: self = .dtls
        case 64...79: self = .turnChannel
        case 128...191: self = .rtp
        default: self = .unknown
        }
    }

    /// Classifies a datagram; an empty one is `.unknown`.
    public init(_ datagram: UnsafeRawBufferPointer) {
        self = datagram.isEmpty ? .unknown : PacketKind(firstByte: datagram[0])
    }

    /// With rtcp-mux, RTCP packet types 192…223 sit where RTP's marker bit and payload type would be
    /// (RFC 5761 §4): payload types 64…95 are therefore never used for RTP.
    public static func isRTCP(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= 2 && (192...223).contains(datagram[1])
    }
}
