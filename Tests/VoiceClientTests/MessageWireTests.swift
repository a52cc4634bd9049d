import Foundation
import Testing

@testable import VoiceClient

extension VoiceClientEvent {
    /// Whether this is the delivery of message `id` to `recipient` (at any time).
    func isDelivery(of id: String, to recipient: String) -> Bool {
        if case .messageDelivered(id, recipient, _) = self { true } else { false }
    }
}

/// The message wire's parsers: the service's `Date` header, the recipient list, RFC 5438 delivery notifications
/// and their RFC 3339 times — exact on what the service writes, total (nil, no crash) on anything else.
@Suite("Message wire: dates, recipients and delivery notifications")
struct MessageWireTests {
    @Test func dateHeaderInKamailiosFormatParsesAndRoundTrips() throws {
        let date = try #require(SIPDate.parse("Sat, 28 Nov 2026 17:20:18 GMT"))
        #expect(date.timeIntervalSince1970 == 1_795_886_418)
        #expect(SIPDate.format(date) == "Sat, 28 Nov 2026 17:20:18 GMT")
        #expect(SIPDate.parse("1 Jan 1970 00:00:00 GMT")?.timeIntervalSince1970 == 0)
        for bad in [
            "", "Sat, 28 Nov 2026 17:20:18", "Sat, 31 Feb 2026 17:20:18 GMT", "Sat, 28 Nov 2026 24:00:00 GMT",
            "Sat, 28 Foo 2026 17:20:18 GMT", "Xyz, 28 Nov 2026 17:20:18 GMT", "Sat, 28 Nov 26 17:20:18 GMT",
            "Sat, +8 Nov 2026 17:20:18 GMT", "Sat, 28 Nov 2026 17:20 GMT"
        ] {
            #expect(SIPDate.parse(bad) == nil, "\(bad)")
        }
        // Every second of a few years round-trips through the header's form (sampled).
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Double(UInt64.random(in: 0...4_102_444_800, using: &generator))
            let sample = Date(timeIntervalSince1970: seconds)
            #expect(SIPDate.parse(SIPDate.format(sample)) == sample)
        }
    }

    @Test func rfc3339TimesWithFractionsAndOffsets() {
        #expect(ISO8601Timestamp.parse("2026-11-28T17:20:18Z")?.timeIntervalSince1970 == 1_795_886_418)
        #expect(ISO8601Timestamp.parse("2026-11-28T18:20:18+01:00")?.timeIntervalSince1970 == 1_795_886_418)
        #expect(ISO8601Timestamp.parse("2026-11-28T12:20:18.5-05:00")?.timeIntervalSince1970 == 1_795_886_418.5)
        for bad in [
            "2026-11-28 17:20:18Z", "2026-11-28T17:20:18", "2026-13-28T17:20:18Z", "2026-11-28T17:20:18.Z",
            "2026-11-28T17:20:18+1:00", "2026-11-28T17:20:18+01:60", "x026-11-28T17:20:18Z"
        ] {
            #expect(ISO8601Timestamp.parse(bad) == nil, "\(bad)")
        }
        let now = Date(timeIntervalSince1970: 1_795_886_418)
        #expect(ISO8601Timestamp.parse(ISO8601Timestamp.format(now)) == now)
    }

    @Test func recipientListKeepsAnyUserID() {
        let users = ["bob", "carol smith", "a,b", "x@y", "<odd>", "%41", "Ünï"]
        let value = MessageWire.recipientsValue(users, domain: "voiceengine.test")
        #expect(MessageWire.recipients(from: value) == users)
        #expect(MessageWire.recipients(from: "<sip:bob@d>,<sip:carol@d>") == ["bob", "carol"])
        for bad in ["", "bob", "<sip:bob@d", "<sip:bob@d> <sip:c@d>", "<tel:+1@d>", "<sip:@d>", "<sip:bob@d>,"] {
            #expect(MessageWire.recipients(from: bad) == nil, "\(bad)")
        }
    }

    /// The notification exactly as Services/kamailio/kamailio.cfg writes it.
    @Test func deliveryNotificationAsTheServiceWritesIt() throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <imdn xmlns="urn:ietf:params:xml:ns:imdn"><message-id>0b5c6f3e-2d1a-4c1e-9a4b-5f6e7d8c9b0a</message-id>\
            <datetime>2026-11-28T17:20:18Z</datetime><recipient-uri>sip:bob%20&amp;%20co@voiceengine.test</recipient-uri>\
            <delivery-notification><status><delivered/></status></delivery-notification></imdn>
            """
        let notification = try #require(DeliveryNotification(parsing: Array(body.utf8)))
        #expect(notification.messageID == "0b5c6f3e-2d1a-4c1e-9a4b-5f6e7d8c9b0a")
        #expect(notification.recipient == "bob & co")
        #expect(notification.timestamp.timeIntervalSince1970 == 1_795_886_418)
        let written = DeliveryNotification(
            messageID: "m-1", recipient: "a<b>&c", timestamp: Date(timeIntervalSince1970: 1_000_000_000))
        #expect(DeliveryNotification(parsing: Array(written.xml(domain: "d").utf8)) == written)

        // Other statuses are not delivery; a document without its parts is nothing.
        for replaced in [
            ("<delivered/>", "<failed/>"), ("<message-id>", "<message-idx>"), ("2026-11-28T17:20:18Z", "yesterday"),
            ("sip:bob", "tel:bob"), ("<imdn ", "<xmdn ")
        ] {
            let changed = body.replacingOccurrences(of: replaced.0, with: replaced.1)
            #expect(DeliveryNotification(parsing: Array(changed.utf8)) == nil, "\(replaced)")
        }
    }

    /// Random bytes and random mutations of valid input: every parser answers (nil or a value), none crashes, and
    /// a value it gives is well-formed.
    @Test func parsersSurviveRandomAndMutatedInput() {
        var generator = SystemRandomNumberGenerator()
        let seeds: [String] = [
            "Sat, 28 Nov 2026 17:20:18 GMT", "2026-11-28T12:20:18.25-05:00",
            MessageWire.recipientsValue(["bob", "a,b", "c d"], domain: "voiceengine.test"),
            DeliveryNotification(messageID: "m", recipient: "bob", timestamp: Date(timeIntervalSince1970: 0))
                .xml(domain: "voiceengine.test")
        ]
        let alphabet = Array("<>/:,;@%&=\"' -T+Z.0123456789abcdefimnrstuvwxyzGMTNovSat\r\n\t\u{0}é".utf8)
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 4 == 0 {
                bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in
                    alphabet.randomElement(using: &generator)!
                }
            } else {
                bytes = Array(seeds[round % seeds.count].utf8)
                for _ in 0..<Int.random(in: 1...4, using: &generator) where !bytes.isEmpty {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0...2, using: &generator) {
                    case 0: bytes[index] = alphabet.randomElement(using: &generator)!
                    case 1: bytes.remove(at: index)
                    default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: index)
                    }
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if let date = SIPDate.parse(text) { #expect(date.timeIntervalSince1970.isFinite) }
            if let date = ISO8601Timestamp.parse(text) { #expect(date.timeIntervalSince1970.isFinite) }
            if let users = MessageWire.recipients(from: text) { #expect(!users.isEmpty) }
            if let notification = DeliveryNotification(parsing: bytes) {
                #expect(!notification.messageID.isEmpty && !notification.recipient.isEmpty)
            }
        }
    }
}
