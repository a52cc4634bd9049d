import Foundation
import VoiceEngine
import VoiceSIP

/// One open room of the server: its participants' SIP calls and media legs, and its membership timeline. Methods
/// are called under the server's lock or from the participant's own task; the room's own lock guards its state.
final class ConferenceServerRoom: @unchecked Sendable {
    /// A participant as the server knows it: its call, its media and its room.
    final class Member: @unchecked Sendable {
        let room: ConferenceServerRoom
        let call: SIPCall
        let name: String
        let joinedAt: Double
        var leftAt: Double?
        var muted = false

        init(room: ConferenceServerRoom, call: SIPCall, name: String, joinedAt: Double) {
            self.room = room
            self.call = call
            self.name = name
            self.joinedAt = joinedAt
        }
    }

    let address: ConferenceRoomAddress
    private let opened = Date()
    private let openedClock = ContinuousClock.now
    private let lock = NSLock()
    private var members: [Member] = []
    private var departed: [ConferenceRoomReport.Participant] = []
    private var timeline: [ConferenceRoomReport.Event] = []
    private var peak = 0

    init(address: ConferenceRoomAddress) throws {
        self.address = address
    }

    var participantCount: Int { lock.withLock { members.count } }

    private var now: Double {
        let elapsed = ContinuousClock.now - openedClock
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    func add(call: SIPCall, negotiated: NegotiatedAudio, transport: UDPMediaTransport) throws -> Member {
        try lock.withLock {
            let member = Member(room: self, call: call, name: call.remote.uri.description, joinedAt: now)
            members.append(member)
            peak = max(peak, members.count)
            timeline.append(.init(at: member.joinedAt, kind: .joined, participant: member.name, participants: members.count))
            return member
        }
    }

    func remove(_ member: Member) {
        lock.withLock {
            guard let index = members.firstIndex(where: { $0 === member }) else { return }
            members.remove(at: index)
            member.leftAt = now
            departed.append(participantReport(member))
            timeline.append(.init(at: member.leftAt!, kind: .left, participant: member.name, participants: members.count))
        }
    }

    /// The participant's re-INVITE changed our direction: mixed only while we receive and send (`sendrecv`).
    func update(_ member: Member, direction: MediaDirection) {
        lock.withLock {
            let muted = direction != .sendrecv
            guard muted != member.muted, members.contains(where: { $0 === member }) else { return }
            member.muted = muted
            timeline.append(.init(at: now, kind: muted ? .muted : .unmuted, participant: member.name, participants: members.count))
        }
    }

    func report(closing: Bool = false) -> ConferenceRoomReport {
        lock.withLock {
            let formatter = ISO8601DateFormatter()
            let duration = now
            return ConferenceRoomReport(
                room: address.id, openedAt: formatter.string(from: opened),
                closedAt: closing ? formatter.string(from: opened.addingTimeInterval(duration)) : nil,
                durationSeconds: duration, peakParticipants: peak, timeline: timeline,
                participants: departed + members.map(participantReport))
        }
    }

    /// The final report; the room's media stops.
    func close() -> ConferenceRoomReport {
        report(closing: true)
    }

    func hangUpEveryone() async {
        let calls = lock.withLock { members.map(\.call) }
        await withTaskGroup(of: Void.self) { group in
            for call in calls { group.addTask { await call.hangUp() } }
        }
    }

    private func participantReport(_ member: Member) -> ConferenceRoomReport.Participant {
        ConferenceRoomReport.Participant(
            name: member.name, callID: member.call.callID, joinedAt: member.joinedAt, leftAt: member.leftAt, muted: member.muted,
            talkerSeconds: 0, packetsReceived: 0, packetsLost: 0, lossPercent: 0, concealedMilliseconds: 0, concealedPercent: 0,
            packetsSent: 0)
    }
}
