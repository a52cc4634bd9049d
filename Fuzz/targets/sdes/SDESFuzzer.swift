// libFuzzer target: SDES crypto attribute parsing (RFC 4568 a=crypto lines) on arbitrary bytes, read both as UTF-8
// (invalid sequences repaired) and as Latin-1 scalars, and the parsed attribute's print/parse round trip.
import FuzzSupport
import VoiceEngine

@main enum SDESFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: size > 0 ? data : nil, count: size)
    let utf8 = String(decoding: bytes, as: UTF8.self)
    var latin1 = ""
    latin1.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
    for text in [utf8, latin1, "a=crypto:" + utf8] {
        guard let attribute = try? SDESCryptoAttribute(parsing: text) else { continue }
        _ = try? attribute.validate()
        _ = attribute.description
        let line = attribute.attributeLine
        guard let again = try? SDESCryptoAttribute(parsing: line) else {
            preconditionFailure("printed SDES attribute does not parse")
        }
        precondition(again == attribute, "SDES attribute changed in a print/parse round trip")
        // Parsing a substring must behave as parsing the same text.
        let sub = text[...]
        precondition((try? SDESCryptoAttribute(parsing: sub)) == attribute)
    }
    return 0
}
