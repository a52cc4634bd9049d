import Foundation
import Testing
import VoiceSRTP

/// The engine's own per-packet AES-ICM and HMAC-SHA1 (Sources/CSRTP/README.md, "Per-packet crypto") are what libsrtp
/// runs, and they give libsrtp's own implementations' output byte for byte. The known answers in
/// `SRTPKnownAnswerTests` and the GStreamer interop run through them too.
struct SRTPEngineCryptoTests {
    @Test func engineCryptoIsInstalled() throws {
        let installed = SRTPSession.engineCrypto
        #expect(installed.hmacSHA1, "libsrtp's self-test refused the engine's HMAC-SHA1")
        #if arch(x86_64)
        let cpu = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let flags = cpu.split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ") ?? []
        if flags.contains("aes") {
            #expect(installed.aesNI, "this CPU has AES-NI but the AES-NI AES-ICM is not installed")
        }
        #endif
    }

    @Test func engineCryptoMatchesLibsrtpsOwnByteForByte() {
        // Random keys (both AES key sizes), IVs with carries across the counter's octets, packets of 0–1599
        // octets encrypted in up to four pieces (keystream continued mid-block), HMAC keys of 0–20 octets and
        // messages hashed in two parts.
        #expect(SRTPSession.engineCryptoMismatches(rounds: 4000, seed: 21) == 0)
        #expect(SRTPSession.engineCryptoMismatches(rounds: 4000, seed: 0x5EED) == 0)
    }
}
