import Foundation
import VoiceConference
import VoiceEngine
import VoiceSIP

/// One open room of the server: the mixer's `ConferenceRoom` (ticked by the server's media threads), its
/// participants' SIP calls and media legs, and its membership timeline. The mixer room is touched only through
/// `ConferenceMediaThreads.perform(on:_:)`; the bookkeeping here is guarded by the room's own lock.
final class ConferenceServerRoom: @unchecked Sendable {
    /// A participant as the server knows it: its call, its leg in the mixer (set once added) and its room.
    final class Member: @unchecked Sendable {
        let room: ConferenceServerRoom
        let call: SIPCall
        let name: String
        let joinedAt: Double
        var leftAt: Double?
        var muted = false
        /// Touched on the room's media thread only.
        var leg: ConferenceParticipant?
        /// Its last figures from the mixer (kept when it leaves).
        var statistics: ConferenceParticipantStatistics?
        /// The SRTP keys its leg runs with (the first answer's, then the last re-key's); under the room's lock.
        var srtp: MediaStreamSRTP?
        /// Re-keys applied to its leg.
        var rekeys = 0
        /// How its media is keyed (the report's `keying`).
        var keying: String?
        /// Why it was removed without being mixed (the report's `failure`).
        var failure: String?

        init(room: ConferenceServerRoom, call: SIPCall, name: String, joinedAt: Double) {
            self.room = room
            self.call = call
            self.name = name
            self.joinedAt = joinedAt
        }
    }

    /// The rising pair a joining participant announces itself with, and the falling pair of one leaving.
    static let joinTone = ConferenceServerRoom.pair(523, 784)
    static let leaveTone = ConferenceServerRoom.pair(784, 523)

    let address: ConferenceRoomAddress
    let mixer: ConferenceRoom
    private let threads: ConferenceMediaThreads
    private let clock = MonotonicClock()
    private let opened = Date()
    private let openedClock = ContinuousClock.now
    private let lock = NSLock()
    private var members: [Member] = []
    private var departed: [Member] = []
    private var timeline: [ConferenceRoomReport.Event] = []
    private var peak = 0

    init(address: ConferenceRoomAddress, configuration: ConferenceRoomConfiguration, threads: ConferenceMediaThreads)
        throws
    {
        self.address = address
        self.threads = threads
        mixer = try ConferenceRoom(id: address.user, configuration: configuration)
        threads.add(mixer)
        threads.perform(on: mixer) { [weak self] room in
            room.onKeyPressed = { participant, key in self?.keyPressed(key, leg: participant.label) }
        }
    }

    /// A participant's DTMF key, from its leg (RFC 4733, labelled with its Call-ID) or its SIP INFO: a `dtmf` event
    /// in the room's timeline.
    func keyPressed(_ key: DTMFDigit, leg callID: String) {
        lock.withLock {
            guard let member = members.first(where: { $0.call.callID == callID }) else { return }
            timeline.append(
                .init(
                    at: now, kind: .dtmf, participant: member.name, participants: members.count,
                    key: key.description))
        }
    }

    /// Participants in the room, and those about to join (`reserve()`), so the room does not close under them.
    var participantCount: Int { lock.withLock { members.count + reservations } }
    private var reservations = 0

    /// Counts a joining participant in before ``add(call:negotiated:transport:)`` (called under the server's lock
    /// that found or opened the room, so the last one leaving cannot close it in between).
    func reserve() { lock.withLock { reservations += 1 } }

    private var now: Double {
        let elapsed = ContinuousClock.now - openedClock
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Counts the participant in at once (so the room cannot close under it), then adds its leg to the mixer and
    /// plays the join tone. Throws (and counts it out again) when the mixer refuses the negotiated media.
    /// - Parameter dtlsKeys: the keys a DTLS-SRTP handshake produced, for a participant keyed that way (its
    ///   negotiated media then has no SDES keys).
    func add(call: SIPCall, negotiated: NegotiatedAudio, transport: UDPMediaTransport, dtlsKeys: MediaStreamSRTP? = nil)
        async throws
        -> Member
    {
        var configuration = MediaStreamConfiguration(negotiated: negotiated, voiceProcessing: false)
        if let dtlsKeys { configuration.srtp = dtlsKeys }
        let member = lock.withLock {
            let member = Member(room: self, call: call, name: call.remote.uri.description, joinedAt: now)
            member.keying =
                configuration.srtp.map { (dtlsKeys == nil ? "SDES-SRTP " : "DTLS-SRTP ") + $0.suite.rawValue } ?? "RTP"
            reservations -= 1
            members.append(member)
            peak = max(peak, members.count)
            timeline.append(
                .init(at: member.joinedAt, kind: .joined, participant: member.name, participants: members.count))
            return member
        }
        lock.withLock { member.srtp = configuration.srtp }
        let clock = self.clock
        let result: Result<Void, ConferenceError> = await withCheckedContinuation { continuation in
            threads.perform(on: mixer) { room in
                do throws(ConferenceError) {
                    member.leg = try room.addParticipant(
                        label: call.callID, configuration: configuration, sink: transport, transport: transport,
                        now: clock.now)
                    room.play(Self.joinTone)
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        switch result {
        case .success:
            return member
        case .failure(let error):
            // Never mixed: it leaves the timeline as if it had not come.
            lock.withLock {
                members.removeAll { $0 === member }
                timeline.removeAll { $0.kind == .joined && $0.participant == member.name && $0.at == member.joinedAt }
            }
            throw error
        }
    }

    /// Notes a participant that was answered but is not let in (its DTLS-SRTP handshake failed): it appears in
    /// the report, joined and left at once, with the reason. Takes back the reservation made for it.
    func refuse(call: SIPCall, reason: String) {
        lock.withLock {
            reservations -= 1
            let member = Member(room: self, call: call, name: call.remote.uri.description, joinedAt: now)
            member.leftAt = member.joinedAt
            member.keying = "DTLS-SRTP"
            member.failure = reason
            departed.append(member)
            timeline.append(
                .init(at: member.joinedAt, kind: .refused, participant: member.name, participants: members.count))
        }
    }

    /// Takes the participant's leg out of the mixer (its last figures kept for the report) and plays the leave
    /// tone to those who stay.
    func remove(_ member: Member) async {
        let statistics: ConferenceParticipantStatistics? = await withCheckedContinuation { continuation in
            threads.perform(on: mixer) { room in
                guard let leg = member.leg else { return continuation.resume(returning: nil) }
                let last = leg.statistics
                room.removeParticipant(leg)
                member.leg = nil
                if !room.participants.isEmpty { room.play(Self.leaveTone) }
                continuation.resume(returning: last)
            }
        }
        lock.withLock {
            guard let index = members.firstIndex(where: { $0 === member }) else { return }
            members.remove(at: index)
            member.leftAt = now
            member.statistics = statistics
            departed.append(member)
            timeline.append(
                .init(at: member.leftAt!, kind: .left, participant: member.name, participants: members.count))
        }
    }

    /// The participant's re-INVITE changed our direction or the SRTP keys. It is mixed only while we receive and
    /// send it (`sendrecv`); it is sent the room only while our direction includes sending (not when it offered
    /// `sendonly`, i.e. put the room on hold, or `inactive`). New keys reach its leg's stream
    /// (`MediaStream.rekey`): its packets are accepted under the old and the new key until the first under the new
    /// one, and ours switch then (or 200 ms later), so a re-key loses no packet whichever side applies it first.
    /// The libsrtp contexts are made here, off the media thread.
    func update(_ member: Member, negotiated: NegotiatedAudio) async {
        let direction = negotiated.direction
        let muted = direction != .sendrecv
        let sending = direction == .sendrecv || direction == .sendonly
        let configuration = MediaStreamConfiguration(negotiated: negotiated, voiceProcessing: false)
        let current = lock.withLock { member.srtp }
        var rekey: MediaStreamRekey?
        if let keys = configuration.srtp, let current, keys != current {
            do { rekey = try MediaStreamRekey(keys, packetCapacity: configuration.maximumDatagramBytes) } catch {
                // Its packets could not be read any more: better a clear end than a silent leg.
                await member.call.hangUp(headers: [("Reason", "SIP;cause=488;text=\"SRTP re-key refused: \(error)\"")])
                return
            }
        }
        let clock = self.clock
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            threads.perform(on: mixer) { room in
                if let leg = member.leg {
                    room.setMuted(muted, leg)
                    leg.stream.isOnHold = !sending
                    if let rekey { leg.stream.rekey(rekey, now: clock.now) }
                }
                continuation.resume()
            }
        }
        if let rekey {
            lock.withLock {
                member.srtp = rekey.keys
                member.rekeys += 1
            }
        }
        lock.withLock {
            guard muted != member.muted, members.contains(where: { $0 === member }) else { return }
            member.muted = muted
            timeline.append(
                .init(at: now, kind: muted ? .muted : .unmuted, participant: member.name, participants: members.count))
        }
    }

    /// The room's report as of now: the mixer's figures are read on its thread.
    func report(closing: Bool = false) async -> ConferenceRoomReport {
        let current: [String: ConferenceParticipantStatistics] = await withCheckedContinuation { continuation in
            threads.perform(on: mixer) { room in
                continuation.resume(
                    returning: Dictionary(
                        room.statistics.participants.map { ($0.label, $0) }, uniquingKeysWith: { a, _ in a }))
            }
        }
        let sampleRate = Double(mixer.configuration.sampleRate)
        return lock.withLock {
            let formatter = ISO8601DateFormatter()
            let duration = now
            let everyone = departed + members
            return ConferenceRoomReport(
                room: address.id, openedAt: formatter.string(from: opened),
                closedAt: closing ? formatter.string(from: opened.addingTimeInterval(duration)) : nil,
                durationSeconds: duration, peakParticipants: peak, timeline: timeline,
                participants: everyone.map { member in
                    Self.participantReport(
                        member, current[member.call.callID] ?? member.statistics, sampleRate: sampleRate)
                })
        }
    }

    /// The final report; the mixer room stops being ticked.
    func close() async -> ConferenceRoomReport {
        let report = await report(closing: true)
        threads.remove(mixer)
        return report
    }

    func hangUpEveryone() async {
        let calls = lock.withLock { members.map(\.call) }
        await withTaskGroup(of: Void.self) { group in
            for call in calls { group.addTask { await call.hangUp() } }
        }
    }

    private static func participantReport(
        _ member: Member, _ statistics: ConferenceParticipantStatistics?, sampleRate: Double
    )
        -> ConferenceRoomReport.Participant
    {
        let s = statistics ?? ConferenceParticipantStatistics(id: 0, label: member.call.callID)
        return ConferenceRoomReport.Participant(
            // Muted as the mixer has it (the re-INVITE's effect, not only our note of it) while the leg is in it.
            name: member.name, callID: member.call.callID, joinedAt: member.joinedAt, leftAt: member.leftAt,
            muted: statistics.map { $0.isMuted } ?? member.muted,
            talkerSeconds: Double(s.talkerTicks * ConferenceRoom.tickMilliseconds) / 1000,
            packetsReceived: s.packetsReceived,
            packetsLost: s.packetsLost, lossPercent: s.lossRatio * 100,
            concealedMilliseconds: Double(s.concealedSamples) / sampleRate * 1000,
            concealedPercent: s.concealmentRatio * 100,
            packetsSent: s.packetsSent, dropped: s.drops, rtcpReceived: s.rtcpReceived,
            roundTripMilliseconds: s.roundTripMilliseconds, senderReportsAnswered: s.senderReportsAnswered,
            rekeys: member.rekeys, keying: member.keying,
            failure: member.failure)
    }

    private static func pair(_ first: Double, _ second: Double) -> ConferenceClip {
        ConferenceClip(
            samples: ConferenceClip.tone(frequency: first, milliseconds: 120).samples
                + ConferenceClip.tone(frequency: second, milliseconds: 120).samples)
    }
}
