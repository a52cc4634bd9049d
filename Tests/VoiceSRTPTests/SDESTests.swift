import Testing
import VoiceSRTP
import VoiceTestSupport

@Suite struct SDESTests {
    /// RFC 4568 §5.1 example key (30 bytes for AES_CM_128_HMAC_SHA1_80).
    static let rfcKey = "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR"

    @Test func parsesTheRFC4568ExampleLine() throws {
        let line = "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.rfcKey)|2^20|1:4 FEC_ORDER=FEC_SRTP\r\n"
        let attribute = try SDESCryptoAttribute(parsing: line)
        #expect(attribute.tag == 1)
        #expect(attribute.suite == .aesCM128HmacSHA1_80)
        #expect(attribute.keys.count == 1)
        #expect(attribute.key.count == 30)
        #expect(attribute.key.bytes.prefix(4) == [0x3D, 0x2D, 0x6E, 0x40])  // "PS1u" "QCVe" → 3d 2d 6e 40 25 5e
        #expect(attribute.keys[0].lifetime == 1 << 20)
        #expect(attribute.keys[0].mki == SDESMasterKeyIdentifier(value: 1, length: 4))
        #expect(attribute.sessionParameters == ["FEC_ORDER=FEC_SRTP"])
        #expect(attribute.attributeLine == line.trimmingSuffixWhitespace)
    }

    @Test func acceptsTheLineWithoutThePrefixAndWithADecimalLifetime() throws {
        let attribute = try SDESCryptoAttribute(parsing: "crypto:7 AES_CM_128_HMAC_SHA1_32 inline:\(Self.rfcKey)|1000")
        #expect(attribute.tag == 7)
        #expect(attribute.suite == .aesCM128HmacSHA1_32)
        #expect(attribute.keys[0].lifetime == 1000)
        #expect(attribute.keys[0].mki == nil)
        #expect(attribute.attributeValue == "crypto:7 AES_CM_128_HMAC_SHA1_32 inline:\(Self.rfcKey)|1000")
    }

    @Test func parsesSeveralKeysWithDistinctMKIs() throws {
        let other = SDESCryptoAttribute.generate(suite: .aesCM128HmacSHA1_80).attributeValue
        let otherKey = other.split(separator: ":").last!.description
        let line = "a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:\(Self.rfcKey)|2^20|1:4;inline:\(otherKey)|2^20|2:4"
        let attribute = try SDESCryptoAttribute(parsing: line)
        #expect(attribute.keys.count == 2)
        #expect(attribute.keys.map { $0.mki?.value } == [1, 2])
        #expect(attribute.attributeLine == line)
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func generatedLineRoundTripsAndKeysAWorkingSession(suite: SRTPCryptoSuite) throws {
        let offer = SDESCryptoAttribute.generate(tag: 3, suite: suite)
        try offer.validate()
        let parsed = try SDESCryptoAttribute(parsing: offer.attributeLine)
        #expect(parsed == offer)
        let sender = try SRTPSession(suite: offer.suite, key: offer.key, direction: .outbound)
        let receiver = try SRTPSession(suite: parsed.suite, key: parsed.key, direction: .inbound)
        #expect(try receiver.unprotected(try sender.protected(rtpPacket(sequence: 1))) == rtpPacket(sequence: 1))
    }

    @Test func producedLinesUseTwoToTheNForPowersOfTwoAndDecimalOtherwise() throws {
        let key = SRTPMasterKey(bytes: Array(0..<30))
        let a = SDESCryptoAttribute(
            tag: 1, suite: .aesCM128HmacSHA1_80, key: key, lifetime: 1 << 31,
            mki: SDESMasterKeyIdentifier(value: 255, length: 1), sessionParameters: ["KDR=0"])
        #expect(
            a.attributeLine
                == "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd|2^31|255:1 KDR=0"
        )
        let b = SDESCryptoAttribute(tag: 1, suite: .aesCM128HmacSHA1_80, key: key, lifetime: 3_000_000)
        #expect(b.attributeLine.hasSuffix("|3000000"))
        #expect(try SDESCryptoAttribute(parsing: a.attributeLine) == a)
        #expect(try SDESCryptoAttribute(parsing: b.attributeLine) == b)
    }

    @Test func descriptionsNeverShowTheKey() throws {
        let attribute = try SDESCryptoAttribute(
            parsing: "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.rfcKey)|2^20|1:4")
        for text in ["\(attribute)", "\(attribute.keys[0])", String(reflecting: attribute.key)] {
            #expect(!text.contains(Self.rfcKey))
            #expect(!text.contains("PS1u"))
        }
        #expect("\(attribute)".contains("redacted"))
    }

    static let k30 = rfcKey
    static let malformed: [(String, SDESError)] = [
        ("a=fingerprint:sha-256 AB:CD", .notACryptoAttribute),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80", .notACryptoAttribute),
        ("a=crypto:x1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)", .badTag("x1")),
        ("a=crypto:1234567890 AES_CM_128_HMAC_SHA1_80 inline:\(k30)", .badTag("1234567890")),
        ("a=crypto:-1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)", .badTag("-1")),
        ("a=crypto:1 F8_128_HMAC_SHA1_80 inline:\(k30)", .unknownSuite("F8_128_HMAC_SHA1_80")),
        ("a=crypto:1 aes_cm_128_hmac_sha1_80 inline:\(k30)", .unknownSuite("aes_cm_128_hmac_sha1_80")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 \(k30)", .missingInline),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 uri:https://example.com/key", .missingInline),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVB!", .badBase64),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR===", .badBase64),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBRX", .badBase64),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:|2^20", .badBase64),
        (
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0m",
            .wrongKeyLength(suite: .aesCM128HmacSHA1_80, expected: 30, actual: 24)
        ),
        ("a=crypto:1 AEAD_AES_256_GCM inline:\(k30)", .wrongKeyLength(suite: .aeadAES256GCM, expected: 44, actual: 30)),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|2^49", .badLifetime("'2^49' exceeds 2^48")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|2^", .badLifetime("'2^' is not 2^n")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|0", .badLifetime("lifetime 0")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|12x", .badLifetime("'12x' is not a decimal number or 2^n")),
        (
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|281474976710657",
            .badLifetime("'281474976710657' exceeds 2^48")
        ),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|1:4|2^20", .badLifetime("lifetime after MKI")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|2^20|2^10", .badLifetime("more than one lifetime")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|1:0", .badMKI("length 0 is outside 1…128")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|1:129", .badMKI("length 129 is outside 1…128")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|256:1", .badMKI("value 256 does not fit in 1 bytes")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|1:", .badMKI("'1:' is not value:length")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|a:4", .badMKI("'a:4' is not value:length")),
        (
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|99999999999999999999:128",
            .badMKI("value 99999999999999999999 is too large")
        ),
        (
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|1:4;inline:\(k30)",
            .badMKI("several keys need an MKI each")
        ),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|1:4;inline:\(k30)|1:4", .badMKI("MKI values repeat")),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|1:4;inline:\(k30)|2:2", .badMKI("MKI lengths differ")),
        (
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30)|2^20|1:4|x",
            .malformed("too many '|' fields in a key parameter")
        ),
        ("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(k30);", .missingInline)
    ]

    @Test func everyMalformedLineIsRejectedWithItsReason() {
        for (line, expected) in Self.malformed {
            do {
                let parsed = try SDESCryptoAttribute(parsing: line)
                Issue.record("accepted \(line) as \(parsed)")
            } catch {
                #expect(error == expected, "\(line)")
            }
        }
    }

    @Test func validateCatchesWhatTheInitialiserCannot() {
        let short = SDESCryptoAttribute(tag: 1, suite: .aeadAES128GCM, key: SRTPMasterKey(bytes: [1, 2]))
        #expect(throws: SDESError.wrongKeyLength(suite: .aeadAES128GCM, expected: 28, actual: 2)) {
            try short.validate()
        }
        let badLife = SDESCryptoAttribute(tag: 1, suite: .aeadAES128GCM, key: .random(for: .aeadAES128GCM), lifetime: 0)
        #expect(throws: SDESError.self) { try badLife.validate() }
    }

    /// Bounded random mutation: whatever the bytes, parsing returns a value or a typed error, never crashes.
    @Test func randomMutationsNeverCrashTheParser() {
        var rng = SplitMix64(seed: 0x5DE5)
        let seeds = [
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.rfcKey)|2^20|1:4 FEC_ORDER=FEC_SRTP",
            SDESCryptoAttribute.generate(suite: .aeadAES256GCM).attributeLine
        ]
        let alphabet = Array("0123456789:|;^= aA+/inlecrypto_AESGCM\u{0}\u{FF}é".unicodeScalars)
        var accepted = 0
        for i in 0..<5000 {
            var scalars = Array(seeds[i % seeds.count].unicodeScalars)
            for _ in 0..<Int(rng.next() % 4) + 1 {
                let pos = Int(rng.next() % UInt64(scalars.count + 1))
                switch rng.next() % 3 {
                case 0 where pos < scalars.count: scalars.remove(at: pos)
                case 1: scalars.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: pos)
                default: if pos < scalars.count { scalars[pos] = alphabet[Int(rng.next() % UInt64(alphabet.count))] }
                }
            }
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars)
            if let parsed = try? SDESCryptoAttribute(parsing: String(text)) {
                accepted += 1
                #expect((try? parsed.validate()) != nil, "an accepted line is valid")
            }
        }
        #expect(accepted < 5000, "mutations must be able to break the line")
    }
}

extension String {
    var trimmingSuffixWhitespace: String {
        var s = Substring(self)
        while let last = s.last, last.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
