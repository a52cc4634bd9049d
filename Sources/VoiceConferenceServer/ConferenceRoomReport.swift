import Foundation

/// What happened in one room: who was in it when (participants over time), who talked, and how each
/// participant's media arrived (loss, concealment). Printed when the room closes and on SIGUSR1, and written as
/// JSON (`--stats-dir`) so that an operator or a test can read it without parsing text.
public struct ConferenceRoomReport: Codable, Sendable, Equatable {
    /// One change of the room's membership or of a participant's state, `at` seconds after the room opened.
    public struct Event: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable {
            case joined, left, muted, unmuted
            /// Answered but never mixed: its DTLS-SRTP handshake failed (the participant's `failure` says why).
            case refused
            /// The participant pressed a DTMF key (`key`), in its media (RFC 4733) or by SIP INFO.
            case dtmf
        }
        public var at: Double
        public var kind: Kind
        public var participant: String
        /// Participants in the room after the event.
        public var participants: Int
        /// The key of a `dtmf` event.
        public var key: String? = nil
    }

    /// One participant's leg, from the mixer's counters at the time of the report.
    public struct Participant: Codable, Sendable, Equatable {
        /// The caller (From URI) and the SIP Call-ID of its leg.
        public var name: String
        public var callID: String
        public var joinedAt: Double
        /// nil while the participant is still in the room.
        public var leftAt: Double?
        /// Whether it is muted now (a re-INVITE without a send direction: not mixed).
        public var muted: Bool
        /// Seconds during which the mixer counted it among the talkers (its voice went into the others' mix).
        public var talkerSeconds: Double
        public var packetsReceived: Int
        /// RTP packets that never arrived (RFC 3550 expected − received) and the share of the expected.
        public var packetsLost: Int
        public var lossPercent: Double
        /// Audio the receive chain had to make up (PLC or FEC instead of a decoded packet), and its share of what
        /// was played into the mix.
        public var concealedMilliseconds: Double
        public var concealedPercent: Double
        public var packetsSent: Int
        /// Datagrams its leg refused (failed SRTP authentication, malformed, wrong SSRC …).
        public var dropped: Int
        /// Authenticated RTCP reports from the participant on its leg, and the latest round trip they gave.
        public var rtcpReceived: Int
        public var roundTripMilliseconds: Double?
        /// Its report blocks that answer the room's sender reports: the room's RTCP reached the participant.
        public var senderReportsAnswered: Int
        /// SRTP re-keys (re-INVITEs with new keys) applied to its leg.
        public var rekeys: Int
        /// How its media is keyed: "SDES-SRTP <suite>", "DTLS-SRTP <suite>" (RFC 5764, the suite its handshake
        /// chose) or "RTP".
        public var keying: String?
        /// Why it was removed without being mixed (a failed DTLS-SRTP handshake, a fingerprint mismatch).
        public var failure: String?
    }

    public var room: String
    /// ISO 8601 times; `closedAt` is nil in a report of an open room.
    public var openedAt: String
    public var closedAt: String?
    public var durationSeconds: Double
    public var peakParticipants: Int
    public var timeline: [Event]
    public var participants: [Participant]

    /// The text printed on close and on SIGUSR1.
    public var text: String {
        func f(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        var lines = [
            "room \(room): \(closedAt == nil ? "open" : "closed") after \(f(durationSeconds)) s, peak \(peakParticipants) participants"
        ]
        lines.append(
            "  participants over time:"
                + timeline.map {
                    " +\(f($0.at))s \($0.kind.rawValue)\($0.key.map { " " + $0 } ?? "") \($0.participant) (\($0.participants))"
                }.joined(
                    separator: ","))
        for p in participants {
            let stay = p.leftAt.map { "\(f(p.joinedAt))-\(f($0)) s" } ?? "since \(f(p.joinedAt)) s"
            lines.append(
                "  \(p.name) [\(stay)\(p.muted ? ", muted" : "")]: talker \(f(p.talkerSeconds)) s, received \(p.packetsReceived), "
                    + "lost \(p.packetsLost) (\(f(p.lossPercent, 2)) %), concealed \(f(p.concealedMilliseconds, 0)) ms (\(f(p.concealedPercent, 2)) %), sent \(p.packetsSent), dropped \(p.dropped), RTCP \(p.rtcpReceived) (\(p.senderReportsAnswered) answering ours)"
                    + (p.roundTripMilliseconds.map { " (RTT \(f($0)) ms)" } ?? "") + ", re-keyed \(p.rekeys)×"
                    + (p.keying.map { ", \($0)" } ?? "") + (p.failure.map { ", removed: \($0)" } ?? ""))
        }
        return lines.joined(separator: "\n")
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}
