/// Messages derived from other messages by RFC 3261's rules: a response from its request (§8.2.6), the ACK of a
/// non-2xx final response (§17.1.1.3) and a CANCEL (§9.1).
extension SIPMessage {
    /// A response to `request`: its Via fields, From, To, Call-ID, CSeq and Timestamp copied (§8.2.6.2), To given
    /// `toTag` when the request's To has none.
    public static func response(to request: SIPMessage, status: Int, reasonPhrase: String? = nil, toTag: String? = nil)
        -> SIPMessage
    {
        var headers = SIPHeaders()
        for field in request.headers where field.name == "Via" { headers.add("Via", field.value) }
        if let from = request.headers.first("From") { headers.add("From", from) }
        if let to = request.headers.first("To") {
            if let toTag, var address = try? SIPAddress(parsing: to, header: "To"), address.tag == nil {
                address.tag = toTag
                headers.add("To", address.description)
            } else {
                headers.add("To", to)
            }
        }
        for name in ["Call-ID", "CSeq", "Timestamp"] {
            if let value = request.headers.first(name) { headers.add(name, value) }
        }
        return .response(status, reasonPhrase, headers: headers)
    }

    /// The ACK a client transaction sends for a 300–699 response to `invite` (§17.1.1.3): the INVITE's
    /// Request-URI, top Via, From, Call-ID, Route and CSeq number, and the response's To (with its tag).
    public static func ack(for invite: SIPMessage, response: SIPMessage) -> SIPMessage {
        derivedRequest(.ack, from: invite, to: response.headers.first("To"))
    }

    /// A CANCEL of `request` (§9.1): the same Request-URI, top Via, From, To, Call-ID, Route and CSeq number.
    public static func cancel(of request: SIPMessage) -> SIPMessage {
        derivedRequest(.cancel, from: request, to: request.headers.first("To"))
    }

    private static func derivedRequest(_ method: SIPMethod, from request: SIPMessage, to: String?) -> SIPMessage {
        var headers = SIPHeaders()
        if let via = request.topVia { headers.add("Via", via.description) }
        headers.add("Max-Forwards", "70")
        if let from = request.headers.first("From") { headers.add("From", from) }
        if let to { headers.add("To", to) }
        if let callID = request.callID { headers.add("Call-ID", callID) }
        headers.add("CSeq", SIPCSeq(request.cseq?.sequence ?? 0, method).description)
        for route in request.headers["Route"] { headers.add("Route", route) }
        return .request(method, request.requestURI ?? SIPURI(host: "invalid"), headers: headers)
    }
}
