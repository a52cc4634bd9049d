import VoiceRTP

/// A seedable generator (SplitMix64) so randomized behaviour is reproducible in tests.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An owned copy of what a parsed RTP packet exposes.
struct ParsedRTP: Equatable {
    var header: RTPHeader
    var payload: [UInt8]
    var paddingLength: Int
    var extensionProfile: UInt16?
    var elements: [RTPHeaderExtensionElement]
}

func parseRTP(_ bytes: [UInt8], options: RTPParseOptions = RTPParseOptions()) throws -> ParsedRTP {
    try bytes.withUnsafeBytes { raw in
        let view = try RTPPacketView(raw, options: options)
        let ext = view.headerExtension
        return ParsedRTP(
            header: RTPHeader(view), payload: Array(view.payload), paddingLength: view.paddingLength,
            extensionProfile: ext?.profile,
            elements: ext.map { $0.elements.map { RTPHeaderExtensionElement(id: $0.id, data: Array($0.data)) } } ?? [])
    }
}

/// Parses an RTP packet and throws the typed error (for `#expect(throws:)`).
func rtpError(_ bytes: [UInt8], options: RTPParseOptions = RTPParseOptions()) -> RTPParseError? {
    bytes.withUnsafeBytes { raw in
        do throws(RTPParseError) {
            _ = try RTPPacketView(raw, options: options)
            return nil
        } catch {
            return error
        }
    }
}

func rtcpError(_ bytes: [UInt8], validation: RTCPValidation = .rfc3550) -> RTCPParseError? {
    do throws(RTCPParseError) {
        _ = try RTCPPacket.parseCompound(bytes, validation: validation)
        return nil
    } catch {
        return error
    }
}
