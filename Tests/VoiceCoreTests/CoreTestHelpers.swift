import Foundation
import VoiceCore

/// Builds WAV byte streams chunk by chunk, including malformed ones, independently of the code under test.
enum WAVBytes {
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    static func id(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A chunk; odd-sized bodies get their pad byte unless `pad` is false. `declaredSize` overrides the size field.
    static func chunk(_ name: String, _ body: [UInt8], declaredSize: Int? = nil, pad: Bool = true) -> [UInt8] {
        id(name) + le32(declaredSize ?? body.count) + body + (pad && body.count % 2 == 1 ? [0] : [])
    }

    /// A `fmt ` body; blockAlign and byteRate default to the consistent values.
    static func fmtBody(tag: Int, channels: Int, rate: Int, bits: Int, blockAlign: Int? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * bits / 8
        return le16(tag) + le16(channels) + le32(rate) + le32(rate * align) + le16(align) + le16(bits)
    }

    static func fmt(tag: Int = 1, channels: Int = 1, rate: Int = 16_000, bits: Int = 16, blockAlign: Int? = nil)
        -> [UInt8]
    {
        chunk("fmt ", fmtBody(tag: tag, channels: channels, rate: rate, bits: bits, blockAlign: blockAlign))
    }

    /// The standard KSDATAFORMAT_SUBTYPE GUID for a format tag (PCM = 1, float = 3).
    static func subformatGUID(tag: Int) -> [UInt8] {
        le16(tag) + [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    }

    /// A WAVE_FORMAT_EXTENSIBLE `fmt ` chunk (40 bytes) with the given sub-format GUID.
    static func extensibleFmt(channels: Int, rate: Int, bits: Int, guid: [UInt8]) -> [UInt8] {
        let body =
            fmtBody(tag: 0xFFFE, channels: channels, rate: rate, bits: bits)
            + le16(22) + le16(bits) + le32(channels == 2 ? 0x3 : 0x4) + guid
        return chunk("fmt ", body)
    }

    static func pcm16Data(_ samples: [Int16]) -> [UInt8] {
        samples.flatMap { le16(Int(UInt16(bitPattern: $0))) }
    }

    static func float32Data(_ samples: [Float]) -> [UInt8] {
        samples.flatMap { le32(Int($0.bitPattern)) }
    }

    /// `RIFF <size> WAVE` followed by `chunks`; `riffSize` overrides the size field.
    static func riff(_ chunks: [UInt8]..., riffSize: Int? = nil) -> [UInt8] {
        let body = chunks.flatMap { $0 }
        return id("RIFF") + le32(riffSize ?? (4 + body.count)) + id("WAVE") + body
    }
}

/// A fresh path in the temporary directory, removed by the caller.
func temporaryPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("voicecore-\(UUID().uuidString)-\(name)").path
}
