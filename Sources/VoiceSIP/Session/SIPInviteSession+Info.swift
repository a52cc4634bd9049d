import VoiceRTP

/// DTMF by SIP INFO (`Content-Type: application/dtmf-relay`, the de-facto format of Cisco, Asterisk and most
/// PBXs: `Signal=5` and `Duration=160` lines): the fallback when the peer did not negotiate RFC 4733
/// telephone-events. One INFO per digit; the next digit waits for the previous one's final response.
public enum SIPDTMFRelay {
    /// `application/dtmf-relay`.
    public static let contentType = SIPMediaType(type: "application", subtype: "dtmf-relay")
    /// `application/dtmf` (RFC draft form: the body is the key alone), accepted when received.
    public static let bareContentType = SIPMediaType(type: "application", subtype: "dtmf")

    /// The body for `digit` lasting `durationMilliseconds`.
    public static func body(_ digit: DTMFDigit, durationMilliseconds: Int) -> [UInt8] {
        Array("Signal=\(digit.character)\r\nDuration=\(durationMilliseconds)\r\n".utf8)
    }

    /// The digit and duration (ms, nil when absent or not a number) of a dtmf-relay body; nil when it has no
    /// `Signal` line naming a DTMF key. Keys are case-insensitive, spaces around `=` and bare LF line ends are
    /// accepted; other lines are ignored. `Signal=10`/`11` are the `*`/`#` some gateways send.
    public static func parse(_ body: [UInt8], bare: Bool = false) -> (digit: DTMFDigit, durationMilliseconds: Int?)? {
        guard body.count <= 1024, let text = String(validating: body, as: UTF8.self) else { return nil }
        if bare {
            let key = trimmed(text)
            guard key.count == 1, let digit = DTMFDigit(key.first!) else { return nil }
            return (digit, nil)
        }
        var digit: DTMFDigit?
        var duration: Int?
        for line in text.split(whereSeparator: \.isNewline) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let name = trimmed(line[..<equals]).lowercased()
            let value = trimmed(line[line.index(after: equals)...])
            switch name {
            case "signal":
                if value.count == 1, let key = value.first { digit = DTMFDigit(key) }
                if let code = UInt8(value), code < 16 { digit = DTMFDigit(event: code) }
            case "duration":
                duration = Int(value).flatMap { (0...60_000).contains($0) ? $0 : nil }
            default:
                continue
            }
        }
        return digit.map { ($0, duration) }
    }
}

/// `text` without leading and trailing white space and line ends.
private func trimmed(_ text: some StringProtocol) -> String {
    String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
}

extension SIPInviteSession {
    /// The peer's INFO in the dialog: a DTMF relay is answered 200 and reported; any other body type 415 with the
    /// types we take; a relay body without a key 400.
    mutating func receivedInfo(_ request: SIPIncomingRequest) {
        let message = request.message
        let type = message.contentType
        let bare = type?.matches(SIPDTMFRelay.bareContentType) ?? false
        guard bare || (type?.matches(SIPDTMFRelay.contentType) ?? false) else {
            if message.body.isEmpty {
                respond(.response(to: message, status: 200), to: request)  // an empty INFO: a keep-alive probe
                return
            }
            var refused = SIPMessage.response(to: message, status: 415)
            refused.headers.add("Accept", "\(SIPDTMFRelay.contentType), \(SIPDTMFRelay.bareContentType)")
            respond(refused, to: request)
            return
        }
        guard let relay = SIPDTMFRelay.parse(message.body, bare: bare) else {
            respond(
                .response(to: message, status: 400, reasonPhrase: "Bad Request (no DTMF key in the body)"), to: request)
            return
        }
        respond(.response(to: message, status: 200), to: request)
        emit(.dtmfReceived(relay.digit, durationMilliseconds: relay.durationMilliseconds))
    }

    /// Sends one digit as an INFO along the dialog; the command completes with its final response.
    mutating func sendDTMFInfo(_ digit: DTMFDigit, durationMilliseconds: Int, _ id: CommandID) {
        guard phase == .confirmed || phase == .answered, var dialog else {
            complete(id, .failure(SIPCallError("DTMF: the call is not established")))
            return
        }
        let info = dialog.makeRequest(
            .info, contact: configuration.contact,
            body: SIPDTMFRelay.body(digit, durationMilliseconds: durationMilliseconds),
            contentType: SIPDTMFRelay.contentType.description)
        self.dialog = dialog
        actions.append(.send(info, to: .nextHop(dialog.nextHop), purpose: .info(id)))
    }

    /// The final response to our INFO (nil: none came).
    mutating func infoAnswered(_ response: SIPMessage?, _ id: CommandID, error: (any Error)? = nil) {
        if let code = response?.statusCode, (200...299).contains(code) {
            complete(id, .success(nil))
        } else if let response {
            complete(
                id,
                .failure(
                    SIPCallError(
                        statusCode: response.statusCode, "DTMF INFO refused: \(response.reasonPhrase ?? "")")))
        } else {
            complete(id, .failure(SIPCallError("DTMF INFO: \(error.map { "\($0)" } ?? "no response")")))
        }
    }
}
