import Testing
import VoiceCrypto

/// The published vectors for every digest and HMAC the signalling protocols use.
@Suite("Digests and HMACs over libcrypto")
struct HashTests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }

    @Test func digestsMatchFIPS180AndRFC1321() {
        let abc = Array("abc".utf8)
        #expect(HashAlgorithm.md5.hexDigest(abc) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(HashAlgorithm.sha1.hexDigest(abc) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            HashAlgorithm.sha256.hexDigest(abc) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(HashAlgorithm.md5.hexDigest([UInt8]()) == "d41d8cd98f00b204e9800998ecf8427e")
        for algorithm in HashAlgorithm.allCases {
            #expect(algorithm.digest(abc).count == algorithm.digestLength)
        }
    }

    @Test func hmacsMatchRFC2202AndRFC4231() {
        let jefe = Array("Jefe".utf8), question = Array("what do ya want for nothing?".utf8)
        #expect(hex(HashAlgorithm.md5.hmac(key: jefe, message: question)) == "750c783e6ab0b503eaa86e310a5db738")
        #expect(
            hex(HashAlgorithm.sha1.hmac(key: jefe, message: question)) == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        #expect(
            hex(HashAlgorithm.sha256.hmac(key: jefe, message: question))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // RFC 2202 case 6: a key longer than the block is hashed first.
        let longKey = [UInt8](repeating: 0xAA, count: 80)
        let longKeyMessage = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        #expect(
            hex(HashAlgorithm.sha1.hmac(key: longKey, message: longKeyMessage))
                == "aa4ae5e15272d00e95705637ce8a3b55ed402112")
    }

    @Test func nonContiguousInputsHashLikeTheirBytes() {
        let bytes = Array("abc".utf8)
        #expect(HashAlgorithm.sha1.digest(bytes.reversed().reversed()) == HashAlgorithm.sha1.digest(bytes))
    }
}
