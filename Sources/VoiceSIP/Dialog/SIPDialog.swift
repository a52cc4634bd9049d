/// A dialog's identity (RFC 3261 §12): Call-ID and both tags, from this side's point of view.
public struct SIPDialogID: Hashable, Sendable, CustomStringConvertible {
    public var callID: String
    public var localTag: String
    public var remoteTag: String

    public init(callID: String, localTag: String, remoteTag: String) {
        self.callID = callID
        self.localTag = localTag
        self.remoteTag = remoteTag
    }

    /// The dialog a received request belongs to: its To tag is ours, its From tag the peer's.
    public init?(receivedRequest request: SIPMessage) {
        guard let callID = request.callID, let local = request.to?.tag, let remote = request.from?.tag else {
            return nil
        }
        self.init(callID: callID, localTag: local, remoteTag: remote)
    }

    /// The dialog a received response belongs to (we sent the request): From tag ours, To tag the peer's.
    public init?(receivedResponse response: SIPMessage) {
        guard let callID = response.callID, let local = response.from?.tag, let remote = response.to?.tag else {
            return nil
        }
        self.init(callID: callID, localTag: local, remoteTag: remote)
    }

    public var description: String { "\(callID);local=\(localTag);remote=\(remoteTag)" }
}

/// The state one INVITE dialog keeps (RFC 3261 §12): its identity, both sequence numbers, the peer's target and the
/// route set, and what it takes to build requests inside it and check the ones the peer sends.
///
/// Pure, like the transactions: it builds and checks messages and reads no clock or socket.
public struct SIPDialog: Sendable {
    public private(set) var id: SIPDialogID
    /// Our address (From of our requests) and the peer's (To of our requests), tags left out.
    public let localAddress: SIPAddress
    public let remoteAddress: SIPAddress
    /// Where in-dialog requests go: the peer's Contact, updated by target-refresh requests and responses (§12.2).
    public private(set) var remoteTarget: SIPURI
    /// The Record-Route set as this side uses it for Route (§12.1.1: reversed at the UAC, in order at the UAS).
    public let routeSet: [SIPAddress]
    /// The CSeq of the last request we sent in the dialog (the INVITE's at first).
    public private(set) var localSequence: UInt32
    /// The CSeq of the last request the peer sent, nil until it sent one (a UAC's dialog starts without).
    public private(set) var remoteSequence: UInt32?
    /// Whether we created the dialog by sending the INVITE (we "own" the Call-ID for RFC 3261 §14.1's 491 back-off).
    public let isCaller: Bool

    /// The dialog a UAC creates from a 1xx-with-tag or 2xx to its `invite` (§12.1.2).
    public static func uac(invite: SIPMessage, response: SIPMessage) throws -> SIPDialog {
        guard let id = SIPDialogID(receivedResponse: response) else {
            throw SIPError(.inconsistent, "the response to INVITE has no To tag: it creates no dialog")
        }
        guard let from = invite.from, let to = response.to, let cseq = invite.cseq, let requestURI = invite.requestURI
        else {
            throw SIPError(.missingOrRepeatedHeader, "the INVITE lacks From, CSeq or a Request-URI")
        }
        let target =
            response.contacts.compactMap { if case .address(let a) = $0 { a.uri } else { nil } }.first ?? requestURI
        return SIPDialog(
            id: id, localAddress: from.withoutTag, remoteAddress: to.withoutTag, remoteTarget: target,
            routeSet: response.recordRoutes.reversed(), localSequence: cseq.sequence, remoteSequence: nil,
            isCaller: true)
    }

    /// The dialog a UAS creates when it answers `invite` with a tag of its own (§12.1.1), numbering its own requests
    /// from `localSequence` on (§8.1.1.5: any value below 2³¹).
    public static func uas(
        invite: SIPMessage, localTag: String, localSequence: UInt32 = .random(in: 1...0x7FFF_FFFF)
    ) throws -> SIPDialog {
        guard let callID = invite.callID, let from = invite.from, let remoteTag = from.tag, let to = invite.to,
            let cseq = invite.cseq
        else { throw SIPError(.missingOrRepeatedHeader, "the INVITE lacks Call-ID, From with a tag, To or CSeq") }
        guard let target = invite.contacts.compactMap({ if case .address(let a) = $0 { a.uri } else { nil } }).first
        else {
            throw SIPError(.missingOrRepeatedHeader, "the INVITE has no Contact: no target for requests in the dialog")
        }
        return SIPDialog(
            id: SIPDialogID(callID: callID, localTag: localTag, remoteTag: remoteTag), localAddress: to.withoutTag,
            remoteAddress: from.withoutTag, remoteTarget: target, routeSet: invite.recordRoutes,
            localSequence: localSequence, remoteSequence: cseq.sequence, isCaller: false)
    }

    /// A request inside the dialog (§12.2.1.1): Request-URI and Route from the remote target and the route set, the
    /// dialog's tags and Call-ID, the next CSeq (an ACK or CANCEL reuses `sequence` instead).
    public mutating func makeRequest(
        _ method: SIPMethod, contact: SIPURI, sequence: UInt32? = nil, headers extra: [(String, String)] = [],
        body: [UInt8] = [], contentType: String? = nil
    ) -> SIPMessage {
        let number: UInt32
        if let sequence {
            number = sequence
        } else {
            localSequence &+= 1
            number = localSequence
        }
        var headers = SIPHeaders()
        var from = localAddress
        from.tag = id.localTag
        var to = remoteAddress
        to.tag = id.remoteTag
        // Loose routing (RFC 3261 §12.2.1.1 with `lr`): the target stays the Request-URI, the set goes in Route.
        // A strict router (no `lr`) would take the Request-URI's place; no peer of ours is one.
        for route in routeSet { headers.add("Route", route.description) }
        headers.add("From", from.description)
        headers.add("To", to.description)
        headers.add("Call-ID", id.callID)
        headers.add("CSeq", SIPCSeq(number, method).description)
        // Target-refresh requests carry our Contact (§12.2.1.1); ACK, BYE and the rest need none.
        if method == .invite || method == .update {
            headers.add("Contact", SIPAddress(uri: contact).description)
        }
        for (name, value) in extra { headers.add(name, value) }
        if let contentType, !body.isEmpty { headers.add("Content-Type", contentType) }
        return .request(method, remoteTarget, headers: headers, body: body)
    }

    /// The ACK of a 2xx to the INVITE with CSeq `inviteSequence` (§13.2.2.4): a request of the dialog of its own,
    /// with the INVITE's sequence number.
    public mutating func makeAck(
        inviteSequence: UInt32, contact: SIPURI, body: [UInt8] = [], contentType: String? = nil
    ) -> SIPMessage {
        makeRequest(.ack, contact: contact, sequence: inviteSequence, body: body, contentType: contentType)
    }

    /// What to do with a request the peer sent in this dialog.
    public enum Admission: Equatable, Sendable {
        /// In order: handle it.
        case accept
        /// Its CSeq is not above the last one (§12.2.2): answer 500.
        case outOfOrder(received: UInt32, last: UInt32)
    }

    /// Checks a request of the peer's against the remote sequence and, when in order, advances it and takes a new
    /// target from a target-refresh request (re-INVITE, UPDATE) (§12.2.2). An ACK or CANCEL is not numbered
    /// separately and is always accepted.
    public mutating func admit(_ request: SIPMessage) -> Admission {
        guard let method = request.requestMethod, method != .ack, method != .cancel, let cseq = request.cseq else {
            return .accept
        }
        if let last = remoteSequence, cseq.sequence <= last { return .outOfOrder(received: cseq.sequence, last: last) }
        remoteSequence = cseq.sequence
        if method == .invite || method == .update { refreshTarget(from: request) }
        return .accept
    }

    /// Records that a request of ours went out with `sequence` (a digest retry raises the CSeq the dialog chose).
    public mutating func noteSent(sequence: UInt32) {
        if sequence > localSequence { localSequence = sequence }
    }

    /// Takes the Contact of a target-refresh request or of its 2xx as the new remote target (§12.2.1.2, §12.2.2).
    public mutating func refreshTarget(from message: SIPMessage) {
        if let uri = message.contacts.compactMap({ if case .address(let a) = $0 { a.uri } else { nil } }).first {
            remoteTarget = uri
        }
    }

    /// Where in-dialog requests are sent first: the first route (a loose router), else the remote target.
    public var nextHop: SIPURI { routeSet.first?.uri ?? remoteTarget }
}

extension SIPAddress {
    /// The address with its `tag` parameter removed: a dialog stores the addresses and the tags apart.
    var withoutTag: SIPAddress {
        var copy = self
        copy.tag = nil
        return copy
    }
}
