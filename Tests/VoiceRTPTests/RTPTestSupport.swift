import VoiceRTP

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
