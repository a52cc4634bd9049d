// libFuzzer target: SDP offer parsing (SessionDescription(parsing:)) and answering it
// (SessionDescription.makeAnswer(to:localCapabilities:)) under each SRTP policy and with DTLS-SRTP keying; the answer must serialize and parse
// back, and the offerer's side (negotiate(answer:)) must accept the parsed text as an answer without trapping.
import FuzzSupport
import VoiceEngine

@main enum SDPFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

private let capabilities: [AudioCapabilities] = [
    AudioCapabilities(address: "127.0.0.1", port: 4000),
    AudioCapabilities(
        payloadType: 96, address: "::1", port: 5004, receiveDTX: true, receiveStereo: true, maxReceiveBitrate: 32_000,
        maxPlaybackRate: 16_000, maxptime: 60, srtp: .optional(SRTPCryptoSuite.allCases), rtcpMux: false,
        direction: .recvonly),
    AudioCapabilities(address: "192.0.2.1", port: 6000, srtp: .disabled, direction: .sendonly),
    // DTLS-SRTP keying (a=fingerprint/a=setup offers, RFC 5763), as the conference server answers.
    AudioCapabilities(
        address: "127.0.0.1", port: 7000,
        dtlsFingerprint: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"))
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: size > 0 ? data : nil, count: size), as: UTF8.self)
    guard let offer = try? SessionDescription(parsing: text) else { return 0 }
    _ = offer.serialize()
    for local in capabilities {
        // Offerer's side: our own offer, with the fuzzed text as the peer's answer.
        let ours = SessionDescription.makeOffer(local, sessionID: 42)
        _ = try? ours.negotiate(answer: offer, localCapabilities: local)

        guard let (answer, _) = try? SessionDescription.makeAnswer(to: offer, localCapabilities: local, sessionID: 7)
        else { continue }
        let answerText = answer.serialize()
        guard let parsedAnswer = try? SessionDescription(parsing: answerText) else {
            preconditionFailure("our answer does not parse:\n\(answerText)")
        }
        _ = try? offer.negotiate(answer: parsedAnswer, localCapabilities: local)
    }
    return 0
}
