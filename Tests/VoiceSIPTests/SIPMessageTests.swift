import Testing
import VoiceSIP

let inviteWithSDP = """
    INVITE sip:bob@[2001:db8::10]:5070;transport=tcp SIP/2.0\r
    v: SIP/2.0/TCP [2001:db8::1]:5060;branch=z9hG4bK776asdhds;rport\r
    Max-Forwards: 70\r
    t: Bob <sip:bob@biloxi.example.com>\r
    f: "Alice \\"A\\" Smith" <sips:alice@atlanta.example.com:5061;transport=tls>;tag=1928301774\r
    i: a84b4c76e66710@pc33.atlanta.example.com\r
    CSeq: 314159 INVITE\r
    m: <sip:alice@pc33.atlanta.example.com>;expires=60, "Second" <tel:+1-201-555-0123;phone-context=example.com>\r
    X-Custom: one,\r
     two\r
    c: application/sdp\r
    l: 121\r
    \r
    v=0\r
    o=- 1 1 IN IP6 2001:db8::1\r
    s=-\r
    c=IN IP6 2001:db8::1\r
    t=0 0\r
    m=audio 49170 RTP/AVP 111\r
    a=rtpmap:111 opus/48000/2\r

    """

@Suite("SIP messages")
struct SIPMessageTests {
    @Test func compactFormsFoldingAndMultipleValues() throws {
        let message = try SIPMessageParser.parse(datagram: inviteWithSDP)
        #expect(
            message.headers.fields.map(\.name) == [
                "Via", "Max-Forwards", "To", "From", "Call-ID", "CSeq", "Contact", "X-Custom", "Content-Type",
                "Content-Length"
            ])
        #expect(message.headers.first("X-Custom") == "one, two")
        #expect(message.headers["x-custom"] == ["one, two"])
        #expect(message.contacts.count == 2)
        guard case .address(let second) = message.contacts[1] else { throw SIPError(.malformedHeader, "no contact") }
        #expect(second.displayName == "Second")
        #expect(second.uri.scheme == .tel)
        #expect(second.uri.host == "+1-201-555-0123")
        #expect(second.uri.parameters == [SIPParameter("phone-context", "example.com")])
        #expect(message.body.count == 121)
        #expect(message.sessionDescriptionText?.contains("opus/48000/2") == true)
    }

    @Test func urisWithParametersHeadersAndIPv6() throws {
        let message = try SIPMessageParser.parse(datagram: inviteWithSDP)
        let uri = try #require(message.requestURI)
        #expect(uri.host == "[2001:db8::10]")
        #expect(uri.port == 5070)
        #expect(uri.transportParameter == "tcp")
        let from = try #require(message.from)
        #expect(from.displayName == "Alice \"A\" Smith")
        #expect(from.uri.scheme == .sips)
        #expect(from.uri.port == 5061)
        #expect(from.tag == "1928301774")
        #expect(
            from.description
                == "\"Alice \\\"A\\\" Smith\" <sips:alice@atlanta.example.com:5061;transport=tls>;tag=1928301774")

        let withHeaders = try SIPURI(parsing: "sip:carol@chicago.com?Subject=next%20meeting&Priority=urgent")
        #expect(withHeaders.headers == [SIPParameter("Subject", "next%20meeting"), SIPParameter("Priority", "urgent")])
        #expect(withHeaders.description == "sip:carol@chicago.com?Subject=next%20meeting&Priority=urgent")
        let withPassword = try SIPURI(parsing: "sip:alice:secretword@atlanta.com;transport=tcp")
        #expect(withPassword.user == "alice")
        #expect(withPassword.password == "secretword")
        #expect(withPassword.description == "sip:alice:secretword@atlanta.com;transport=tcp")
    }

    @Test(
        "malformed URIs are rejected with a reason",
        arguments: [
            "sip:", "sip:user@", "sip:@host", "sip:host:99999", "sip:host:", "sip:[::1", "sip:user@host;=x",
            "sip:us%2@host",
            "sip:us%zzer@host", "tel:", "1sip:host", "sip:host?novalue", "sip:host;p=", "sip:ho st"
        ])
    func malformedURIs(_ text: String) {
        #expect(throws: SIPError.self) { try SIPURI(parsing: text) }
    }

    @Test func nameAddrAndAddrSpec() throws {
        let addrSpec = try SIPAddress(parsing: "sip:bob@example.com;tag=abc")
        #expect(addrSpec.displayName == nil)
        #expect(addrSpec.tag == "abc")
        #expect(addrSpec.uri.parameters.isEmpty)
        let tokens = try SIPAddress(parsing: "Bob  Smith <sip:bob@example.com;lr>;tag=x")
        #expect(tokens.displayName == "Bob Smith")
        #expect(tokens.uri.parameters == [SIPParameter("lr")])
        let quotedParameter = try SIPAddress(parsing: "<sip:a@b>;note=\"a;b,c\"")
        #expect(quotedParameter.parameters == [SIPParameter("note", "\"a;b,c\"")])
        for bad in [
            "<sip:a@b", "\"open <sip:a@b>", "A, B <sip:a@b>", "< sip:a@b>", "sip:a@b?x=y", "<sip:a@b>;",
            "<sip:a@b> junk"
        ] {
            #expect(throws: SIPError.self, "\(bad)") { try SIPAddress(parsing: bad) }
        }
    }

    @Test func viaWithReceivedAndRport() throws {
        var via = try SIPVia(parsing: "SIP / 2.0 / UDP  pc33.atlanta.com:5066 ;branch=z9hG4bKnashds8;rport")
        #expect(via.transport == "UDP")
        #expect(via.host == "pc33.atlanta.com")
        #expect(via.port == 5066)
        #expect(via.hasRFC3261Branch)
        #expect(via.requestsRport)
        #expect(via.rport == nil)
        via.received = "192.0.2.1"
        via.parameters.set("rport", "12345")
        #expect(
            via.description == "SIP/2.0/UDP pc33.atlanta.com:5066;branch=z9hG4bKnashds8;rport=12345;received=192.0.2.1")
        let parsed = try SIPVia(parsing: via.description)
        #expect(parsed.rport == 12345)
        #expect(parsed.received == "192.0.2.1")
        let v6 = try SIPVia(parsing: "SIP/2.0/TCP [2001:db8::9:1];branch=z9hG4bKas3;received=2001:db8::9:255")
        #expect(v6.host == "[2001:db8::9:1]")
        #expect(v6.received == "2001:db8::9:255")
        for bad in [
            "SIP/2.0/UDP", "SIP/2.0 host", "SIP/3.0/UDP host", "SIP/2.0/UDP host;branch", "SIP/2.0/UDP host:70000",
            "SIP/2.0/UDPhost"
        ] {
            #expect(throws: SIPError.self, "\(bad)") { try SIPVia(parsing: bad) }
        }
    }

    @Test func serializedRequestParsesBack() throws {
        var headers = SIPHeaders()
        headers.add("Via", SIPVia(transport: "UDP", host: "127.0.0.1", port: 5060, branch: "z9hG4bK1").description)
        headers.add("Max-Forwards", "70")
        headers.add(
            "From",
            SIPAddress(
                displayName: "Alice", uri: SIPURI(user: "alice", host: "example.com"),
                parameters: [SIPParameter("tag", "1")]
            ).description)
        headers.add("To", SIPAddress(uri: SIPURI(user: "bob", host: "example.com")).description)
        headers.add("Call-ID", "abc@127.0.0.1")
        headers.add("CSeq", SIPCSeq(1, .message).description)
        headers.add("Content-Type", "text/plain")
        let request = SIPMessage.request(
            .message, SIPURI(user: "bob", host: "example.com"), headers: headers, body: Array("hi".utf8))
        let text = request.wireText
        #expect(
            text.hasPrefix("MESSAGE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bK1\r\n")
        )
        #expect(text.hasSuffix("Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"))
        let parsed = try SIPMessageParser.parse(datagram: request.serialized())
        #expect(parsed.body == Array("hi".utf8))
        #expect(parsed.cseq == SIPCSeq(1, .message))
        #expect(parsed.from?.displayName == "Alice")
        let response = SIPMessage.response(486, headers: parsed.headers)
        #expect(response.wireText.hasPrefix("SIP/2.0 486 Busy Here\r\n"))
    }

    @Test func multipartWithSDPBuildsAndParses() throws {
        let sdp = Array("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n".utf8)
        var sdpHeaders = SIPHeaders()
        sdpHeaders.add("Content-Type", "application/sdp")
        var isupHeaders = SIPHeaders()
        isupHeaders.add("Content-Type", "application/isup;version=itu-t92+")
        let multipart = SIPMultipartBody(
            boundary: "unique-boundary-1",
            parts: [
                SIPBodyPart(headers: isupHeaders, body: [0x01, 0x00, 0x0D, 0x0A, 0xFF]),
                SIPBodyPart(headers: sdpHeaders, body: sdp)
            ])
        var headers = try SIPMessageParser.parse(datagram: inviteWithSDP).headers
        headers.replace("Content-Type", with: "multipart/mixed;boundary=\"unique-boundary-1\"")
        let message = SIPMessage.request(
            .invite, SIPURI(user: "bob", host: "example.com"), headers: headers, body: multipart.serialized())
        let parsed = try SIPMessageParser.parse(datagram: message.serialized())
        #expect(parsed.sessionDescriptionText == String(decoding: sdp, as: UTF8.self))
        let parts = try SIPMultipartBody(parsing: parsed.body, boundary: "unique-boundary-1")
        #expect(parts == multipart)
        #expect(throws: SIPError.self) { try SIPMultipartBody(parsing: Array("--b\r\n\r\nx\r\n".utf8), boundary: "b") }
    }

    @Test(
        "malformed messages are rejected with a reason",
        arguments: [
            ("", SIPError.Kind.malformedStartLine),
            ("INVITE sip:a@b SIP/2.0", .malformedStartLine),
            ("INVITE sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\n", .malformedHeader),
            ("SIP/2.0 99 Low\r\n\r\n", .valueOutOfRange),
            ("SIP/2.0 2000 OK\r\n\r\n", .valueOutOfRange),
            ("SIP/3.0 200 OK\r\n\r\n", .unsupportedVersion),
            ("INVITE sip:a@b SIP/2.0\r\nNo colon here\r\n\r\n", .malformedHeader),
            ("INVITE sip:a@b SIP/2.0\r\n folded first\r\n\r\n", .malformedHeader),
            (
                "OPTIONS sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:a@b>\r\nCall-ID: x\r\nCSeq: 1 OPTIONS\r\nX: \u{FF}\r\n\r\n",
                .malformedHeader
            )
        ])
    func malformedMessages(_ text: String, _ kind: SIPError.Kind) {
        var bytes = Array(text.utf8)
        if text.contains("X: ") { bytes = bytes.map { $0 == 0xC3 ? 0xFF : $0 }.filter { $0 != 0xBF } }
        do {
            _ = try SIPMessageParser.parse(datagram: bytes)
            Issue.record("accepted \(text.debugDescription)")
        } catch let error as SIPError {
            #expect(error.kind == kind, "\(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite("SIP stream framing")
struct SIPStreamFramerTests {
    @Test func messagesSplitAnywhereAreReassembledByContentLength() throws {
        let one = try SIPMessageParser.parse(datagram: inviteWithSDP).serialized()
        let stream = one + Array("\r\n\r\n".utf8) + one + Array("\r\n".utf8)
        for chunk in [1, 7, 100, stream.count] {
            var framer = SIPStreamFramer()
            var frames: [SIPStreamFramer.Frame] = []
            var offset = 0
            while offset < stream.count {
                framer.append(stream[offset..<min(offset + chunk, stream.count)])
                offset += chunk
                while let frame = try framer.next() { frames.append(frame) }
            }
            let kinds = frames.map { frame -> String in
                switch frame {
                case .message(let m): "message \(m.body.count)"
                case .keepalivePing: "ping"
                case .keepalivePong: "pong"
                }
            }
            // A ping split across reads (1-byte chunks) is seen as two pongs; anything coarser sees the ping.
            if chunk == 1 {
                #expect(kinds == ["message 121", "pong", "pong", "message 121", "pong"])
            } else {
                #expect(kinds == ["message 121", "ping", "message 121", "pong"], "chunk \(chunk)")
            }
            #expect(framer.bufferedByteCount == 0)
        }
    }

    @Test func streamMessageWithoutContentLengthIsAnError() {
        var framer = SIPStreamFramer()
        framer.append(Array("OPTIONS sip:a@b SIP/2.0\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK1\r\n\r\n".utf8))
        #expect(throws: SIPError(.bodyLength, "a message on a stream must carry Content-Length (RFC 3261 §18.3)")) {
            try framer.next()
        }
    }

    @Test func oversizedStreamIsAnError() {
        var framer = SIPStreamFramer(maximumMessageBytes: 100)
        framer.append(Array(repeating: UInt8(ascii: "A"), count: 101))
        #expect(throws: SIPError.self) { try framer.next() }
    }
}
