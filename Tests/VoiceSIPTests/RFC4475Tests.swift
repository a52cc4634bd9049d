import Foundation
import Testing
import VoiceSIP

let rfc4475Directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures/rfc4475")

func rfc4475Message(_ name: String) throws -> [UInt8] {
    Array(try Data(contentsOf: rfc4475Directory.appendingPathComponent("\(name).dat")))
}

/// One torture message: its file, its section of RFC 4475, and whether a receiver accepts it. For a rejected one,
/// the kind of error that must be reported (the reason text is checked to be non-empty).
struct TortureCase: CustomTestStringConvertible, Sendable {
    let file: String
    let section: String
    let rejectedAs: SIPError.Kind?
    var testDescription: String { "\(section) \(file).dat" }
}

/// RFC 4475 §3.1.1 (valid syntax), §3.1.2 (invalid syntax), §3.2 (transaction layer), §3.3 (application layer),
/// §3.4 (RFC 2543 compatibility). §3.1.2.12 (a Date not in GMT) and §3.1.2.4's Max-Forwards leave the choice to
/// the receiver; VoiceSIP rejects them. §3.3 messages that are well formed but need a 4xx from the application
/// (unknown scheme, Require, Content-Type, …) parse; §3.3.1, §3.3.8 and §3.3.9 are malformed and rejected.
let tortureCases: [TortureCase] = [
    TortureCase(file: "wsinv", section: "3.1.1.1", rejectedAs: nil),
    TortureCase(file: "intmeth", section: "3.1.1.2", rejectedAs: nil),
    TortureCase(file: "esc01", section: "3.1.1.3", rejectedAs: nil),
    TortureCase(file: "escnull", section: "3.1.1.4", rejectedAs: nil),
    TortureCase(file: "esc02", section: "3.1.1.5", rejectedAs: nil),
    TortureCase(file: "lwsdisp", section: "3.1.1.6", rejectedAs: nil),
    TortureCase(file: "longreq", section: "3.1.1.7", rejectedAs: nil),
    TortureCase(file: "dblreq", section: "3.1.1.8", rejectedAs: nil),
    TortureCase(file: "semiuri", section: "3.1.1.9", rejectedAs: nil),
    TortureCase(file: "transports", section: "3.1.1.10", rejectedAs: nil),
    TortureCase(file: "mpart01", section: "3.1.1.11", rejectedAs: nil),
    TortureCase(file: "unreason", section: "3.1.1.12", rejectedAs: nil),
    TortureCase(file: "noreason", section: "3.1.1.13", rejectedAs: nil),
    TortureCase(file: "badinv01", section: "3.1.2.1", rejectedAs: .malformedHeader),
    TortureCase(file: "clerr", section: "3.1.2.2", rejectedAs: .bodyLength),
    TortureCase(file: "ncl", section: "3.1.2.3", rejectedAs: .malformedHeader),
    TortureCase(file: "scalar02", section: "3.1.2.4", rejectedAs: .valueOutOfRange),
    TortureCase(file: "scalarlg", section: "3.1.2.5", rejectedAs: .valueOutOfRange),
    TortureCase(file: "quotbal", section: "3.1.2.6", rejectedAs: .malformedHeader),
    TortureCase(file: "ltgtruri", section: "3.1.2.7", rejectedAs: .malformedURI),
    TortureCase(file: "lwsruri", section: "3.1.2.8", rejectedAs: .malformedStartLine),
    TortureCase(file: "lwsstart", section: "3.1.2.9", rejectedAs: .malformedStartLine),
    TortureCase(file: "trws", section: "3.1.2.10", rejectedAs: .malformedStartLine),
    TortureCase(file: "escruri", section: "3.1.2.11", rejectedAs: .malformedURI),
    TortureCase(file: "baddate", section: "3.1.2.12", rejectedAs: .malformedHeader),
    TortureCase(file: "regbadct", section: "3.1.2.13", rejectedAs: .malformedHeader),
    TortureCase(file: "badaspec", section: "3.1.2.14", rejectedAs: .malformedHeader),
    TortureCase(file: "baddn", section: "3.1.2.15", rejectedAs: .malformedHeader),
    TortureCase(file: "badvers", section: "3.1.2.16", rejectedAs: .unsupportedVersion),
    TortureCase(file: "mismatch01", section: "3.1.2.17", rejectedAs: .inconsistent),
    TortureCase(file: "mismatch02", section: "3.1.2.18", rejectedAs: .inconsistent),
    TortureCase(file: "bigcode", section: "3.1.2.19", rejectedAs: .valueOutOfRange),
    TortureCase(file: "badbranch", section: "3.2.1", rejectedAs: nil),
    TortureCase(file: "insuf", section: "3.3.1", rejectedAs: .missingOrRepeatedHeader),
    TortureCase(file: "unkscm", section: "3.3.2", rejectedAs: nil),
    TortureCase(file: "novelsc", section: "3.3.3", rejectedAs: nil),
    TortureCase(file: "unksm2", section: "3.3.4", rejectedAs: nil),
    TortureCase(file: "bext01", section: "3.3.5", rejectedAs: nil),
    TortureCase(file: "invut", section: "3.3.6", rejectedAs: nil),
    TortureCase(file: "regaut01", section: "3.3.7", rejectedAs: nil),
    TortureCase(file: "multi01", section: "3.3.8", rejectedAs: .missingOrRepeatedHeader),
    TortureCase(file: "mcl01", section: "3.3.9", rejectedAs: .missingOrRepeatedHeader),
    TortureCase(file: "bcast", section: "3.3.10", rejectedAs: nil),
    TortureCase(file: "zeromf", section: "3.3.11", rejectedAs: nil),
    TortureCase(file: "cparam01", section: "3.3.12", rejectedAs: nil),
    TortureCase(file: "cparam02", section: "3.3.13", rejectedAs: nil),
    TortureCase(file: "regescrt", section: "3.3.14", rejectedAs: nil),
    TortureCase(file: "sdp01", section: "3.3.15", rejectedAs: nil),
    TortureCase(file: "inv2543", section: "3.4.1", rejectedAs: nil)
]

@Suite("RFC 4475 torture messages")
struct RFC4475Tests {
    @Test func everyFixtureIsListedOnce() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: rfc4475Directory.path)
            .filter { $0.hasSuffix(".dat") }.map { String($0.dropLast(4)) }
        #expect(Set(files) == Set(tortureCases.map(\.file)))
        #expect(tortureCases.count == 49)
    }

    @Test("a torture message is accepted or rejected as RFC 4475 says", arguments: tortureCases)
    func behavesAsTheRFCSays(_ testCase: TortureCase) throws {
        let bytes = try rfc4475Message(testCase.file)
        if let kind = testCase.rejectedAs {
            do {
                let message = try SIPMessageParser.parse(datagram: bytes)
                Issue.record("accepted a message RFC 4475 \(testCase.section) calls invalid: \(message.startLine)")
            } catch let error as SIPError {
                #expect(error.kind == kind, "\(error)")
                #expect(!error.reason.isEmpty)
            }
        } else {
            let message = try SIPMessageParser.parse(datagram: bytes)
            // What parsed serializes to a message that parses to the same thing (Content-Length added if absent).
            var again = try SIPMessageParser.parse(datagram: message.serialized())
            var original = message
            again.headers.remove("Content-Length")
            original.headers.remove("Content-Length")
            #expect(again == original)
        }
    }

    @Test func shortTortuousInviteHasItsValues() throws {
        let message = try SIPMessageParser.parse(datagram: try rfc4475Message("wsinv"))
        #expect(message.requestMethod == .invite)
        #expect(message.requestURI?.user == "vivekg")
        #expect(message.requestURI?.parameters == [SIPParameter("unknownparam")])
        #expect(message.to?.tag == "1918181833n")
        #expect(message.from?.displayName == "J Rosenberg \\\"")
        #expect(message.from?.tag == "98asjd8")
        #expect(message.maxForwards == 68)
        #expect(message.cseq == SIPCSeq(9, .invite))
        #expect(message.via.map(\.transport) == ["UDP", "TCP", "UDP"])
        #expect(message.via.map(\.host) == ["192.0.2.2", "spindle.example.com", "192.168.255.111"])
        #expect(message.via.map(\.branch) == ["390skdjuw", "z9hG4bK9ikj8", "z9hG4bK30239"])
        #expect(message.headers.first("Subject") == "")
        #expect(message.headers.first("NewFangledHeader") == "newfangled value continued newfangled value")
        #expect(message.routes.first?.uri.parameters.map(\.name) == ["lr", "unknownwith", "unknown-no-value"])
        guard case .address(let contact) = message.contacts.first else {
            Issue.record("no Contact")
            return
        }
        #expect(contact.displayName == "Quoted string \"\"")
        #expect(
            contact.parameters == [
                SIPParameter("newparam", "newvalue"), SIPParameter("secondparam"), SIPParameter("q", "0.33")
            ])
        #expect(message.body.count == 150)
        #expect(message.sessionDescriptionText?.hasPrefix("v=0\r\n") == true)
    }

    @Test func wideRangeOfCharacters() throws {
        let message = try SIPMessageParser.parse(datagram: try rfc4475Message("intmeth"))
        #expect(message.requestMethod?.rawValue == "!interesting-Method0123456789_*+`.%indeed'~")
        #expect(message.requestURI?.user == "1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*")
        #expect(message.requestURI?.password == "&it+has=1,weird!*pas$wo~d_too.(doesn't-it)")
        #expect(message.to?.displayName == "BEL:\u{07} NUL:\u{00} DEL:\u{7F}")
        #expect(message.from?.displayName == "token1~` token2'+_ token3*%!.-")
        #expect(message.from?.tag == "_token~1'+`*%!-.")
        #expect(message.callID == "intmeth.word%ZK-!.*_+'@word`~)(><:\\/\"][?}{")
        #expect(message.headers.first("extensionHeader-!.%*+_`'~") == "\u{FEFF}大停電")
    }

    @Test func escapesStayAsReceived() throws {
        let message = try SIPMessageParser.parse(datagram: try rfc4475Message("esc01"))
        #expect(message.requestURI?.user == "sips%3Auser%40example.com")
        #expect(message.requestURI?.host == "example.net")
        #expect(message.contentType?.matches(.sdp) == true)  // "C:" compact form of Content-Type
        guard case .address(let contact) = message.contacts.first else {
            Issue.record("no Contact")
            return
        }
        #expect(contact.uri.parameters == [SIPParameter("%6C%72"), SIPParameter("n%61me", "v%61lue%25%34%31")])
        // "C%6Fntact" is not Contact: an escape in a header name is just part of an unknown name.
        let esc02 = try SIPMessageParser.parse(datagram: try rfc4475Message("esc02"))
        #expect(esc02.contacts.count == 2)
        #expect(esc02.headers.first("C%6Fntact") == "<sip:alias2@host2.example.com>")
    }

    @Test func extraOctetsInADatagramAreIgnored() throws {
        let message = try SIPMessageParser.parse(datagram: try rfc4475Message("dblreq"))
        #expect(message.requestMethod == .register)
        #expect(message.body.isEmpty)
    }

    @Test func multipartBodyCarriesItsParts() throws {
        let message = try SIPMessageParser.parse(datagram: try rfc4475Message("mpart01"))
        let type = try #require(message.contentType)
        #expect(type.isMultipart)
        let multipart = try SIPMultipartBody(
            parsing: message.body, boundary: try #require(type.parameterValue("boundary")))
        #expect(multipart.parts.count == 2)
        #expect(multipart.parts[0].contentType == SIPMediaType(type: "text", subtype: "plain"))
        #expect(multipart.parts[0].body == Array("Hello".utf8))
        #expect(multipart.parts[1].contentType?.subtype == "octet-stream")
        #expect(multipart.parts[1].body.count > 300)
        #expect(message.via.first?.requestsRport == true)
        #expect(message.via.first?.rport == nil)
    }

    @Test func responsesWithUnusualReasonPhrases() throws {
        let unusual = try SIPMessageParser.parse(datagram: try rfc4475Message("unreason"))
        #expect(unusual.statusCode == 200)
        #expect(unusual.reasonPhrase?.hasPrefix("= 2**3 * 5**2 но сто девяносто") == true)
        let empty = try SIPMessageParser.parse(datagram: try rfc4475Message("noreason"))
        #expect(empty.statusCode == 100)
        #expect(empty.reasonPhrase == "")
    }

    @Test func otherSchemesAreKeptOpaque() throws {
        let unknown = try SIPMessageParser.parse(datagram: try rfc4475Message("unkscm"))
        #expect(unknown.requestURI?.scheme == .other("nobodyKnowsThisScheme"))
        #expect(unknown.requestURI?.host == "totallyopaquecontent")
        let novel = try SIPMessageParser.parse(datagram: try rfc4475Message("novelsc"))
        #expect(novel.requestURI?.description == "soap.beep://192.0.2.103:3002")
        let headers = try SIPMessageParser.parse(datagram: try rfc4475Message("unksm2"))
        #expect(headers.to?.uri.scheme == .other("isbn"))
        #expect(headers.from?.uri.description == "http://www.example.com")
    }

    @Test func rfc2543StyleRequestParses() throws {
        let message = try SIPMessageParser.parse(datagram: try rfc4475Message("inv2543"))
        #expect(message.topVia?.branch == nil)
        #expect(message.topVia?.hasRFC3261Branch == false)
        #expect(message.from?.tag == nil)
        #expect(message.to?.uri.parameters == [])  // addr-spec: ';user=phone' belongs to the header, not the URI
        #expect(message.to?.parameters == [SIPParameter("user", "phone")])
    }

    @Test func registerContactsWithParametersAndEscapedHeaders() throws {
        let cparam01 = try SIPMessageParser.parse(datagram: try rfc4475Message("cparam01"))
        guard case .address(let bare) = cparam01.contacts.first else { throw SIPError(.malformedHeader, "no contact") }
        #expect(bare.parameters == [SIPParameter("unknownparam")])
        #expect(bare.uri.parameters.isEmpty)
        let cparam02 = try SIPMessageParser.parse(datagram: try rfc4475Message("cparam02"))
        guard case .address(let enclosed) = cparam02.contacts.first else {
            throw SIPError(.malformedHeader, "no contact")
        }
        #expect(enclosed.uri.parameters == [SIPParameter("unknownparam")])
        #expect(enclosed.parameters.isEmpty)
        let regescrt = try SIPMessageParser.parse(datagram: try rfc4475Message("regescrt"))
        guard case .address(let escaped) = regescrt.contacts.first else {
            throw SIPError(.malformedHeader, "no contact")
        }
        #expect(escaped.uri.headers == [SIPParameter("Route", "%3Csip:sip.example.com%3E")])
    }
}
