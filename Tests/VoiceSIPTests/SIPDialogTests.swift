import Testing
import VoiceSIP

/// The dialog state machine alone (RFC 3261 §12), on messages built by hand: no sockets, no clock.
struct SIPDialogTests {
    let invite = try! SIPMessageParser.parse(
        datagram: """
            INVITE sip:bob@example.com SIP/2.0\r
            Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKinv1\r
            Max-Forwards: 70\r
            From: "Alice" <sip:alice@example.com>;tag=a1\r
            To: <sip:bob@example.com>\r
            Call-ID: dialog-1@10.0.0.1\r
            CSeq: 7 INVITE\r
            Contact: <sip:alice@10.0.0.1:5060>\r
            Record-Route: <sip:p2.example.com;lr>, <sip:p1.example.com;lr>\r
            Content-Length: 0\r
            \r

            """)

    func ok() -> SIPMessage {
        var response = SIPMessage.response(to: invite, status: 200, toTag: "b1")
        response.headers.add("Contact", "<sip:bob@10.0.0.2:5070>")
        for route in invite.headers["Record-Route"] { response.headers.add("Record-Route", route) }
        return response
    }

    @Test func uacDialogReversesTheRouteSetAndTargetsTheContact() throws {
        var dialog = try SIPDialog.uac(invite: invite, response: ok())
        #expect(dialog.id == SIPDialogID(callID: "dialog-1@10.0.0.1", localTag: "a1", remoteTag: "b1"))
        #expect(dialog.routeSet.map(\.uri.host) == ["p1.example.com", "p2.example.com"])
        #expect(dialog.remoteTarget.description == "sip:bob@10.0.0.2:5070")
        #expect(dialog.nextHop.host == "p1.example.com")
        #expect(dialog.isCaller)
        let bye = dialog.makeRequest(.bye, contact: SIPURI(user: "alice", host: "10.0.0.1"))
        #expect(bye.requestURI?.description == "sip:bob@10.0.0.2:5070")
        #expect(bye.headers["Route"] == ["<sip:p1.example.com;lr>", "<sip:p2.example.com;lr>"])
        #expect(bye.cseq == SIPCSeq(8, .bye))
        #expect(bye.from?.tag == "a1" && bye.to?.tag == "b1" && bye.from?.displayName == "Alice")
        #expect(bye.headers.first("Contact") == nil)
        let ack = dialog.makeAck(inviteSequence: 7, contact: SIPURI(user: "alice", host: "10.0.0.1"))
        #expect(ack.cseq == SIPCSeq(7, .ack))
        #expect(dialog.localSequence == 8)  // the ACK takes no number of its own
    }

    @Test func uasDialogKeepsTheRouteSetInOrderAndRejectsOldCSeq() throws {
        var dialog = try SIPDialog.uas(invite: invite, localTag: "b1")
        #expect(dialog.id == SIPDialogID(callID: "dialog-1@10.0.0.1", localTag: "b1", remoteTag: "a1"))
        #expect(dialog.routeSet.map(\.uri.host) == ["p2.example.com", "p1.example.com"])
        #expect(dialog.remoteTarget.description == "sip:alice@10.0.0.1:5060")
        #expect(!dialog.isCaller)
        #expect(dialog.remoteSequence == 7)

        func request(_ method: SIPMethod, _ sequence: UInt32, contact: String? = nil) -> SIPMessage {
            var headers = SIPHeaders()
            headers.add("Via", "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK\(method)\(sequence)")
            headers.add("From", "<sip:alice@example.com>;tag=a1")
            headers.add("To", "<sip:bob@example.com>;tag=b1")
            headers.add("Call-ID", "dialog-1@10.0.0.1")
            headers.add("CSeq", "\(sequence) \(method)")
            if let contact { headers.add("Contact", contact) }
            return .request(method, SIPURI(user: "bob", host: "10.0.0.2"), headers: headers)
        }
        #expect(dialog.admit(request(.invite, 7)) == .outOfOrder(received: 7, last: 7))
        #expect(dialog.admit(request(.bye, 3)) == .outOfOrder(received: 3, last: 7))
        #expect(dialog.admit(request(.ack, 7)) == .accept)  // ACK reuses its INVITE's number
        #expect(dialog.admit(request(.invite, 8, contact: "<sip:alice@10.0.0.9:5999>")) == .accept)
        #expect(dialog.remoteSequence == 8)
        #expect(dialog.remoteTarget.description == "sip:alice@10.0.0.9:5999")  // a re-INVITE refreshes the target
        #expect(SIPDialogID(receivedRequest: request(.bye, 9)) == dialog.id)
    }

    @Test func responsesWithoutTagsOrInvitesWithoutContactMakeNoDialog() {
        #expect(throws: SIPError.self) {
            try SIPDialog.uac(invite: invite, response: .response(to: invite, status: 200))
        }
        var noContact = invite
        noContact.headers.remove("Contact")
        #expect(throws: SIPError.self) { try SIPDialog.uas(invite: noContact, localTag: "b1") }
    }

    /// Every INVITE of RFC 4475 that parses (escaped URIs, odd display names, unusual schemes) makes a dialog whose
    /// BYE, re-INVITE and ACK serialize into messages that parse again: a peer's odd headers never make us send
    /// something malformed.
    @Test func dialogsFromTortureInvitesBuildRequestsThatParse() throws {
        var dialogs = 0
        for testCase in tortureCases where testCase.rejectedAs == nil {
            guard let message = try? SIPMessageParser.parse(datagram: try rfc4475Message(testCase.file)),
                message.requestMethod == .invite, var dialog = try? SIPDialog.uas(invite: message, localTag: "uas1")
            else { continue }
            dialogs += 1
            let contact = SIPURI(user: "bob", host: "192.0.2.2", port: 5070)
            for request in [
                dialog.makeRequest(.bye, contact: contact),
                dialog.makeRequest(
                    .invite, contact: contact, body: Array("v=0\r\n".utf8), contentType: "application/sdp"),
                dialog.makeAck(inviteSequence: dialog.localSequence, contact: contact)
            ] {
                var sent = request
                sent.headers.prepend("Via", "SIP/2.0/UDP 192.0.2.2:5070;branch=z9hG4bKtest")
                sent.headers.add("Max-Forwards", "70")
                #expect(throws: Never.self, "\(testCase.file): \(sent.wireText)") {
                    try SIPMessageParser.parse(datagram: sent.serialized())
                }
            }
        }
        #expect(dialogs >= 5, "only \(dialogs) torture INVITEs made a dialog")
    }
}
