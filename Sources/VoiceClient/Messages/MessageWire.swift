import Foundation

/// What a message carries besides its text, between the client and the service (Services/kamailio/kamailio.cfg).
/// Pure: formatting and parsing only, every parser total (bad input gives nil, never a crash).
///
/// A message to one recipient is a SIP MESSAGE (`text/plain`) with
/// - `Call-ID: <message ID>-<recipient>`: one per message and recipient, the same on every retry;
/// - `Message-ID: <message ID>`: kept by the service with a message it stores for an offline recipient (whose
///   later delivery has a Call-ID of the service's);
/// - `Message-Recipients: <sip:bob@domain>, <sip:carol@domain>`: every recipient of the message;
/// - `Date:` (RFC 3261 §20.17, the service's clock): set by the service on every MESSAGE it relays — the time it
///   accepted the message, also when a stored message is delivered days later — and on the 2xx answer
///   it relays or sends (the time of delivery, or of storing).
///
/// A copy to the sender's own address, with `Sent-By-Device: <device ID>`, tells the user's other devices that
/// the message was sent (the sending device drops its own copy).
///
/// When a stored message reaches its recipient, the service tells the sender with a MESSAGE of type
/// `message/imdn+xml` (an RFC 5438 delivery notification: `message-id`, `datetime`, `recipient-uri`, status
/// `delivered`), stored in turn while the sender is offline.
enum MessageWire {
    static let messageIDHeader = "Message-ID"
    static let recipientsHeader = "Message-Recipients"
    static let sentByDeviceHeader = "Sent-By-Device"

    /// `<sip:bob@domain>, <sip:carol@domain>` (user IDs %-escaped, so `<`, `>`, `,` and `@` never appear raw).
    static func recipientsValue(_ recipients: [String], domain: String) -> String {
        recipients.map { "<sip:\(escapeListUser($0))@\(domain)>" }.joined(separator: ", ")
    }

    /// The user IDs of a `Message-Recipients` value; nil when it is not a list of `<sip:user@host>`.
    static func recipients(from value: String) -> [String]? {
        var result: [String] = []
        var rest = Substring(value)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" }
            guard rest.first == "<", let close = rest.firstIndex(of: ">") else { return nil }
            let uri = rest[rest.index(after: rest.startIndex)..<close]
            guard uri.lowercased().hasPrefix("sip:"), let at = uri.firstIndex(of: "@") else { return nil }
            let user = uri[uri.index(uri.startIndex, offsetBy: 4)..<at]
            guard !user.isEmpty else { return nil }
            result.append(SIPUserPart.unescape(String(user)))
            rest = rest[rest.index(after: close)...].drop { $0 == " " || $0 == "\t" }
            if rest.isEmpty { return result }
            guard rest.first == "," else { return nil }
            rest = rest.dropFirst()
        }
    }

    /// A user part that also escapes `,` (allowed in a SIP user part, but the list's separator).
    private static func escapeListUser(_ userID: String) -> String {
        SIPUserPart.escape(userID).replacingOccurrences(of: ",", with: "%2C")
    }

    /// A device ID as a header value: printable ASCII without spaces, else %-escaped like a user part.
    static func deviceValue(_ deviceID: String) -> String { SIPUserPart.escape(deviceID) }
}

/// The `Date` header's form, RFC 1123 in GMT (`Sat, 28 Nov 2026 17:20:18 GMT`), as Kamailio writes it.
enum SIPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        return String(
            format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", weekdays[(c.weekday ?? 1) - 1], c.day ?? 1,
            months[(c.month ?? 1) - 1], c.year ?? 1970, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    /// The time of a `Date` value; nil unless it is `[Wdy, ]D[D] Mon YYYY HH:MM:SS GMT` with valid fields
    /// (the weekday is not checked against the date).
    static func parse(_ value: String) -> Date? {
        var parts = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if let first = parts.first, first.hasSuffix(",") {
            guard weekdays.contains(String(first.dropLast())) else { return nil }
            parts.removeFirst()
        }
        guard parts.count == 5, parts[4] == "GMT" || parts[4] == "UTC",
            let day = digits(parts[0], count: 1...2), let month = months.firstIndex(of: parts[1]),
            let year = digits(parts[2], count: 4...4)
        else { return nil }
        let clock = parts[3].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard clock.count == 3, let hour = digits(clock[0], count: 2...2), let minute = digits(clock[1], count: 2...2),
            let second = digits(clock[2], count: 2...2)
        else { return nil }
        return utcDate(year: year, month: month + 1, day: day, hour: hour, minute: minute, second: second)
    }

    /// A date from fields, nil when a field is out of range (Feb 30, 25:00, …).
    static func utcDate(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(
            year: year, month: month, day: day, hour: hour, minute: minute, second: min(second, 59))
        guard components.isValidDate(in: calendar) else { return nil }
        return calendar.date(from: components)
    }

    /// A decimal number of `count` ASCII digits.
    static func digits(_ text: some StringProtocol, count: ClosedRange<Int>) -> Int? {
        guard count.contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }
}

/// An RFC 5438 delivery notification (`message/imdn+xml`), as the service sends it when a stored message reached
/// its recipient: which message, which recipient, when.
struct DeliveryNotification: Equatable {
    var messageID: String
    var recipient: String
    var timestamp: Date

    static let contentType = (type: "message", subtype: "imdn+xml")

    /// The notification's XML, the form the service writes (the recipient's address in `domain`).
    func xml(domain: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <imdn xmlns="urn:ietf:params:xml:ns:imdn"><message-id>\(Self.escape(messageID))</message-id>\
        <datetime>\(ISO8601Timestamp.format(timestamp))</datetime>\
        <recipient-uri>sip:\(Self.escape(SIPUserPart.escape(recipient)))@\(domain)</recipient-uri>\
        <delivery-notification><status><delivered/></status></delivery-notification></imdn>
        """
    }

    /// The notification in `body`; nil unless it is an `imdn` document with a message ID, a valid `datetime`, a
    /// `sip:` recipient and the status `delivered` (other statuses — failed, forbidden, displayed — are not
    /// delivery).
    init?(parsing body: [UInt8]) {
        guard body.count <= 16_384, let text = String(validating: body, as: UTF8.self),
            Self.element("imdn", in: text) != nil,
            let id = Self.element("message-id", in: text).map(Self.unescape), !id.isEmpty,
            let datetime = Self.element("datetime", in: text), let timestamp = ISO8601Timestamp.parse(datetime),
            let uri = Self.element("recipient-uri", in: text).map(Self.unescape), uri.lowercased().hasPrefix("sip:"),
            let status = Self.element("status", in: text), status.contains("<delivered/>")
        else { return nil }
        let user = uri.dropFirst(4).prefix { $0 != "@" && $0 != ";" && $0 != ">" }
        guard !user.isEmpty else { return nil }
        self.init(messageID: id, recipient: SIPUserPart.unescape(String(user)), timestamp: timestamp)
    }

    init(messageID: String, recipient: String, timestamp: Date) {
        (self.messageID, self.recipient, self.timestamp) = (messageID, recipient, timestamp)
    }

    /// The text between `<name …>` and `</name>` (the first such element, any namespace prefix absent).
    private static func element(_ name: String, in text: String) -> String? {
        var searchFrom = text.startIndex
        while let open = text.range(of: "<" + name, range: searchFrom..<text.endIndex) {
            // `<name>` or `<name attr…>`, not `<name-longer>`.
            guard let next = text[open.upperBound...].first else { return nil }
            if next == ">" || next == " " || next == "\t" || next == "\r" || next == "\n" {
                guard let end = text[open.upperBound...].firstIndex(of: ">"),
                    let close = text.range(of: "</" + name + ">", range: text.index(after: end)..<text.endIndex)
                else { return nil }
                return String(text[text.index(after: end)..<close.lowerBound])
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            searchFrom = open.upperBound
        }
        return nil
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}

/// RFC 3339 times (IMDN's `datetime`): `2026-11-28T17:20:18Z`, fractional seconds and `±hh:mm` offsets allowed.
enum ISO8601Timestamp {
    static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02dZ", c.year ?? 1970, c.month ?? 1, c.day ?? 1, c.hour ?? 0,
            c.minute ?? 0, c.second ?? 0)
    }

    static func parse(_ value: String) -> Date? {
        let bytes = Array(value.utf8)
        guard bytes.count >= 20, bytes.count <= 40, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            SIPDate.digits(String(decoding: bytes[from..<from + count], as: UTF8.self), count: count...count)
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2),
            let base = SIPDate.utcDate(
                year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == UInt8(ascii: ".") {
            var scale = 0.1
            index += 1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start, index < bytes.count else { return nil }
        }
        let zone = bytes[index...]
        if zone.count == 1, zone.first == UInt8(ascii: "Z") || zone.first == UInt8(ascii: "z") {
            return base.addingTimeInterval(fraction)
        }
        guard zone.count == 6, zone.first == UInt8(ascii: "+") || zone.first == UInt8(ascii: "-"),
            bytes[index + 3] == UInt8(ascii: ":"), let hours = number(index + 1, 2), let minutes = number(index + 4, 2),
            hours <= 23, minutes <= 59
        else { return nil }
        let offset = Double(hours * 3600 + minutes * 60) * (zone.first == UInt8(ascii: "+") ? 1 : -1)
        return base.addingTimeInterval(fraction - offset)
    }
}
