// libFuzzer target: what the calling client parses from outside — a push payload handed to the push helper
// (PushPayload.parse, from any app or push service), the registration service's JSON answers and requests, and
// call targets an app passes on from its users (SIP addresses, phone numbers, room IDs).
// Nothing may trap; a payload that parses must encode to bytes that parse to the same payload.
import Foundation
import FuzzSupport
import VoiceClient
import VoiceSIP

@main enum ClientFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Data(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    if let payload = try? PushPayload.parse(bytes) {
        guard let encoded = try? payload.encoded(), let again = try? PushPayload.parse(encoded) else {
            preconditionFailure("a parsed push payload does not encode to one that parses")
        }
        precondition(again == payload, "a push payload parses differently after encoding")
        _ = payload.isTimedOut(at: UInt64.max)
        _ = payload.isTimedOut(at: 0)
    }
    let decoder = JSONDecoder()
    _ = try? decoder.decode(RegistrationGrant.self, from: bytes).isValid(at: UInt64.max)
    _ = try? decoder.decode(RegistrationRefusal.self, from: bytes).description
    _ = try? decoder.decode(RegistrationRequest.self, from: bytes)
    _ = try? decoder.decode(PushDataAnswer.self, from: bytes)
    let text = String(decoding: bytes, as: UTF8.self)
    // A target that passes its check makes a request URI that parses back. (Written out: an array of the typed-
    // throwing check functions crashes Swift 6.3's SIL generation.)
    let targets: [CallTarget?] = [
        try? CallTarget.sip(checking: text), try? CallTarget.phoneNumber(checking: text),
        try? CallTarget.conference(checking: text), try? CallTarget.user(checking: text)
    ]
    for case let target? in targets {
        let uri = target.requestURIText(domain: "voiceengine.test")
        precondition((try? SIPURI(parsing: uri)) != nil, "\(target) makes a request URI that does not parse: \(uri)")
    }
    return 0
}
