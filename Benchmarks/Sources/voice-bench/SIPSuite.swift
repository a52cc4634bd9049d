import ArgumentParser
import BenchmarkFixtures
import CBaseline
import VoiceSIP

/// `voice-bench sip`: parsing a ~1 kB INVITE with SDP (`SIPFixtures.invite`) with VoiceSIP against libre's
/// `sip_msg_decode` (the parser baresip uses, loaded from Debian's libre0 at run time).
///
/// Not the same work: VoiceSIP validates what RFC 3261 and RFC 4475 ask of a received message (every Via, From,
/// To, Contact, Route and Record-Route parsed, CSeq/Max-Forwards/Expires ranges, Content-Length), libre splits
/// the header fields and decodes the ones its stack needs (Via, From/To, CSeq, Call-ID, Content-Type/Length).
struct SIPSuite: SideBySideSuite {
    static let configuration = CommandConfiguration(
        commandName: "sip",
        abstract:
            "SIP INVITE parsing: VoiceSIP's parser + validation vs libre's sip_msg_decode (libre0); --load: call setups per second under SIPp."
    )
    static let suiteName = "sip"

    @OptionGroup var options: SideBySideOptions
    @Flag(
        help: "Instead of parsing: call setups per second through the engine's loopback UAS under SIPp load (SIPLoad).")
    var load = false
    @Option(help: "--load: the call rates tried, in order, until one fails.")
    var rates = "50,100,150,200,300,400,600,800"
    @Option(help: "--load: seconds of calls per rate.")
    var loadSeconds = 2.0
    @Option(help: "--load: SIPp's local UDP port.")
    var sippPort = 25200

    mutating func run() throws {
        guard load else { return try runSideBySide() }
        let parsed = rates.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter {
            $0 > 0
        }
        guard !parsed.isEmpty else { throw ValidationError("--rates: comma-separated calls per second") }
        try SIPLoad.run(rates: parsed, seconds: loadSeconds, sippPort: sippPort)
    }

    func makeCases() throws -> [SideBySideCase] {
        guard cb_sip_open() == 0 else {
            throw ValidationError("libre (libre.so.0, Debian's libre0, installed with baresip) is not available")
        }
        let message = SIPFixtures.invite
        guard (try? SIPMessageParser.parse(datagram: message)) != nil,
            message.withUnsafeBufferPointer({ cb_sip_parse_loop($0.baseAddress, $0.count, 1) }) == 1
        else { throw ValidationError("the fixture INVITE does not parse on both sides") }
        return [
            SideBySideCase(
                name: "SIP.parse.invite",
                swift: { n in
                    var parsed = 0
                    for _ in 0..<n where (try? SIPMessageParser.parse(datagram: message)) != nil { parsed += 1 }
                    return parsed
                },
                c: { n in message.withUnsafeBufferPointer { Int(cb_sip_parse_loop($0.baseAddress, $0.count, Int64(n))) }
                })
        ]
    }
}
