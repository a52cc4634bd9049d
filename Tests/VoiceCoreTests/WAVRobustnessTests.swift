import Testing
import VoiceCore
import VoiceTestSupport

/// Malformed files must come back as a value or a `WAVError`, never a trap: a crash here kills the test run.
@Suite struct WAVRobustnessTests {
    typealias B = WAVBytes

    static let seeds: [[UInt8]] = [
        B.riff(
            B.fmt(channels: 2, rate: 44_100), B.chunk("LIST", Array("INFOodd".utf8)),
            B.chunk("data", B.pcm16Data((0..<64).map { Int16($0 * 511 - 16_000) }))),
        B.riff(
            B.chunk("fmt ", B.fmtBody(tag: 3, channels: 1, rate: 16_000, bits: 32) + B.le16(0)),
            B.chunk("fact", B.le32(16)), B.chunk("data", B.float32Data((0..<16).map { Float($0) / 8 - 1 }))),
        B.riff(
            B.extensibleFmt(channels: 2, rate: 48_000, bits: 16, guid: B.subformatGUID(tag: 1)),
            B.chunk("data", B.pcm16Data(Array(repeating: 1_000, count: 32))))
    ]

    @Test func everyTruncationReturnsOrThrows() {
        var decoded = 0
        var rejected = 0
        for seed in Self.seeds {
            for length in 0...seed.count {
                if (try? WAVFile(bytes: Array(seed[0..<length]))) != nil { decoded += 1 } else { rejected += 1 }
            }
        }
        #expect(decoded > 0)  // a cut inside the data chunk is clamped, not rejected
        #expect(rejected > 0)
    }

    @Test func thousandsOfRandomMutationsReturnOrThrow() {
        var rng = SplitMix64(seed: 0x5EED)
        var decoded = 0
        var rejected = 0
        for _ in 0..<6_000 {
            var bytes = Self.seeds.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0:  // flip random bytes
                    for _ in 0..<Int.random(in: 1...8, using: &rng) where !bytes.isEmpty {
                        bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                    }
                case 1:  // truncate
                    bytes.removeLast(Int.random(in: 0...bytes.count, using: &rng))
                case 2:  // overwrite a 32-bit field near a chunk header with an extreme size
                    if bytes.count >= 4 {
                        let at = Int.random(in: 0...(bytes.count - 4), using: &rng)
                        let value = [
                            0, 1, 0x7FFF_F000, 0xFFFF_FFFF, 0x8000_0000, Int.random(in: 0...0xFFFF_FFFF, using: &rng)
                        ]
                        .randomElement(using: &rng)!
                        bytes.replaceSubrange(at..<at + 4, with: B.le32(value))
                    }
                case 3:  // insert garbage
                    let at = Int.random(in: 0...bytes.count, using: &rng)
                    bytes.insert(
                        contentsOf: (0..<Int.random(in: 1...9, using: &rng)).map { _ in
                            UInt8.random(in: 0...255, using: &rng)
                        }, at: at)
                case 4:  // delete a span
                    if !bytes.isEmpty {
                        let start = Int.random(in: 0..<bytes.count, using: &rng)
                        bytes.removeSubrange(start..<min(bytes.count, start + Int.random(in: 1...8, using: &rng)))
                    }
                default:  // mangle a fmt field (tag, channels, rate, block align, bits)
                    if bytes.count >= 36 {
                        let field = [20, 22, 24, 32, 34].randomElement(using: &rng)!
                        bytes.replaceSubrange(field..<field + 2, with: B.le16(Int.random(in: 0...0xFFFF, using: &rng)))
                    }
                }
            }
            do {
                let wav = try WAVFile(bytes: bytes)
                // Whatever decodes must be self-consistent.
                #expect(wav.int16Samples.count == wav.frameCount * wav.format.channels)
                #expect(wav.floatSamples.count == wav.int16Samples.count)
                decoded += 1
            } catch {
                #expect(!error.description.isEmpty)
                rejected += 1
            }
        }
        #expect(decoded > 100)
        #expect(rejected > 100)
    }
}
