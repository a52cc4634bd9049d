import VoiceSRTP

/// Bytes from a hex string; spaces are ignored. Test input only, so bad hex is a test bug (precondition).
func hex(_ string: String) -> [UInt8] {
    let digits = Array(string.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "odd hex length")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// A minimal RTP packet (version 2, PT 111) with a recognisable payload.
func rtpPacket(sequence: UInt16, ssrc: UInt32 = 0x1234_5678, timestamp: UInt32? = nil, payloadLength: Int = 40)
    -> [UInt8]
{
    let ts = timestamp ?? UInt32(sequence) &* 960
    var bytes: [UInt8] = [0x80, 111, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
    bytes += [UInt8(ts >> 24), UInt8((ts >> 16) & 0xFF), UInt8((ts >> 8) & 0xFF), UInt8(ts & 0xFF)]
    bytes += [UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)]
    for i in 0..<payloadLength { bytes.append(UInt8(truncatingIfNeeded: Int(sequence) &* 31 &+ i)) }
    return bytes
}

/// An RTCP receiver report with one report block (32 bytes).
func rtcpReceiverReport(ssrc: UInt32 = 0x1234_5678) -> [UInt8] {
    var bytes: [UInt8] = [0x81, 201, 0, 7]
    bytes += [UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)]
    for i in 0..<24 { bytes.append(UInt8(i * 7)) }
    return bytes
}

extension SRTPSession {
    /// Protects a copy of `packet`, using a buffer with room for the trailer.
    func protected(_ packet: [UInt8]) throws -> [UInt8] {
        var buffer = packet + [UInt8](repeating: 0, count: rtpOverhead)
        let n = try buffer.withUnsafeMutableBytes { b in
            try protect(b, length: packet.count)
        }
        return Array(buffer[0..<n])
    }

    func unprotected(_ packet: [UInt8]) throws -> [UInt8] {
        var buffer = packet
        let n = try buffer.withUnsafeMutableBytes { b in
            try unprotect(b, length: packet.count)
        }
        return Array(buffer[0..<n])
    }

    func protectedRTCP(_ packet: [UInt8]) throws -> [UInt8] {
        var buffer = packet + [UInt8](repeating: 0, count: rtcpOverhead)
        let n = try buffer.withUnsafeMutableBytes { b in
            try protectRTCP(b, length: packet.count)
        }
        return Array(buffer[0..<n])
    }

    func unprotectedRTCP(_ packet: [UInt8]) throws -> [UInt8] {
        var buffer = packet
        let n = try buffer.withUnsafeMutableBytes { b in
            try unprotectRTCP(b, length: packet.count)
        }
        return Array(buffer[0..<n])
    }
}

/// A sender and a receiver sharing fresh random key material.
func sessionPair(_ suite: SRTPCryptoSuite, replayWindow: Int = 1024) throws -> (SRTPSession, SRTPSession) {
    let key = SRTPMasterKey.random(for: suite)
    return (
        try SRTPSession(suite: suite, key: key, direction: .outbound, replayWindow: replayWindow),
        try SRTPSession(suite: suite, key: key, direction: .inbound, replayWindow: replayWindow)
    )
}

/// The SRTPError `body` threw, or nil if it succeeded. (Any other error type fails the test via a nil-mismatch.)
func srtpError(_ body: () throws -> Void) -> SRTPError? {
    do {
        try body()
        return nil
    } catch {
        return error as? SRTPError
    }
}
