// libFuzzer target: SIP message parsing (SIPMessageParser.parse(datagram:)) and stream framing (SIPStreamFramer).
// A message that parses must serialize to bytes that parse to the same message (Content-Length aside, which
// serialization always writes), and its typed views (Via, From, To, CSeq, Contact, routes, SDP, a Reason's SIP
// cause) must not trap.
// The same bytes fed to a stream framer in two pieces must never trap either.
import FuzzSupport
import VoiceSIP

@main enum SIPFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    if let message = try? SIPMessageParser.parse(datagram: bytes) {
        _ = (
            message.via, message.from, message.to, message.cseq, message.contacts, message.routes, message.recordRoutes
        )
        _ = (message.maxForwards, message.expires, message.sessionDescriptionText)
        _ = message.headers.first("Reason").map {
            SIPCallEnd(.cancelled, reasonPhrase: "", cancelReason: $0).cancelReasonSIPCause
        }
        let wire = message.serialized()
        guard var again = try? SIPMessageParser.parse(datagram: wire) else {
            preconditionFailure("serialized message does not parse:\n\(String(decoding: wire, as: UTF8.self))")
        }
        var original = message
        again.headers.remove("Content-Length")
        original.headers.remove("Content-Length")
        precondition(
            again == original, "serialized message parses differently:\n\(String(decoding: wire, as: UTF8.self))")
    }
    var framer = SIPStreamFramer(maximumMessageBytes: 4096)
    let cut = size / 2
    framer.append(bytes[..<cut])
    while let frame = try? framer.next() { _ = frame }
    framer.append(bytes[cut...])
    while let frame = try? framer.next() { _ = frame }
    return 0
}
