import Foundation
import NIOCore
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// The conference server's SIP behaviour in one process (server and participants on loopback, ephemeral SIP
/// ports, media ports 28650–28689): which URIs are rooms, OPTIONS, a room's life from first join to last leave,
/// mute by re-INVITE, and the room's report.
@Suite("Conference server: rooms over SIP", .tags(.live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)))
struct ConferenceServerSIPTests {
    @Test func roomIDsAreCheckedWithAReason() throws {
        #expect(try ConferenceRoomAddress(requestURI: roomURI("team-42")).id == "team-42")
        #expect(try ConferenceRoomAddress(id: String(repeating: "a", count: 64)).id.count == 64)
        #expect(throws: ConferenceRoomAddress.Refusal.self) {
            try ConferenceRoomAddress(id: String(repeating: "a", count: 65))
        }
        let cases: [(SIPURI, Int)] = [
            (SIPURI(user: "alice", host: conferenceDomain), 404), (SIPURI(host: conferenceDomain), 404),
            (roomURI(""), 400), (roomURI(String(repeating: "x", count: 65)), 400), (roomURI("a%2Fb"), 400)
        ]
        for (uri, status) in cases {
            do {
                _ = try ConferenceRoomAddress(requestURI: uri)
                Issue.record("\(uri) was accepted")
            } catch {
                #expect(error.statusCode == status, "\(uri): \(error)")
                #expect(!error.reason.isEmpty)
            }
        }
    }

    /// Each participant gets a pair (RTP even, RTCP on the next port); a pair with a port other programs hold is
    /// skipped; a used-up range is an error (the call is then refused 503).
    @Test func portRangeHandsOutPairsSkipsHeldPortsAndRunsOut() async throws {
        let other = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 28_781)
        let range = RTPPortRange(28_779...28_783)
        let first = try await range.bind(host: "127.0.0.1")
        #expect(first.port == 28_782 && first.transport.rtcpEndpoint?.port == 28_783)
        await #expect(throws: ConferenceServerError.self) { try await range.bind(host: "127.0.0.1") }
        await first.transport.close()
        range.release(first.port)
        await other.close()
        let again = try await range.bind(host: "127.0.0.1")
        #expect([28_780, 28_782].contains(again.port), "freed pairs are handed out again")
        #expect(again.transport.rtcpEndpoint?.port == UInt16(again.port + 1))
        await again.transport.close()
    }

    func withServer(_ body: (any EventLoop, ConferenceServer, SIPURI) async throws -> Void) async throws {
        try await withEventLoop { loop in
            let (server, port) = try await startLoopbackServer(rtpPorts: 28_650...28_689, on: loop)
            do {
                try await body(loop, server, SIPURI(host: "127.0.0.1", port: port))
            } catch {
                await server.close()
                throw error
            }
            await server.close()
        }
    }

    @Test func nonRoomURIsAreRefusedAndOptionsAnswered() async throws {
        try await withServer { loop, server, base in
            let caller = try await makeParticipant("alice", on: loop)
            for (user, status) in [
                ("alice", 404), ("conf-" + String(repeating: "x", count: 65), 400), ("conf-a!b", 400)
            ] {
                let call = try await caller.call(
                    SIPURI(user: user, host: base.host, port: base.port),
                    offering: AudioCapabilities(address: "127.0.0.1", port: 28_690))
                guard case .failure(let end) = await outcome(of: call) else {
                    Issue.record("\(user) was answered")
                    continue
                }
                #expect(end.statusCode == status, "\(user): \(end)")
                #expect(end.reasonPhrase.contains("conference room"), "\(end)")
            }
            // The dispatcher's liveness probe.
            var headers = SIPHeaders()
            headers.add("From", "<sip:dispatcher@\(conferenceDomain)>;tag=probe")
            headers.add("To", "<\(base)>")
            headers.add("Call-ID", "probe-1")
            headers.add("CSeq", "1 OPTIONS")
            let answer = try await caller.endpoint.request(
                .request(.options, base, headers: headers),
                to: SIPPeer(.udp, try SocketAddress(ipAddress: "127.0.0.1", port: base.port!))
            ).get()
            #expect(answer.statusCode == 200)
            #expect(server.roomOccupancy().isEmpty)
            try await caller.endpoint.close()
        }
    }

    @Test func roomOpensWithTheFirstAndClosesAfterTheLastWithItsReport() async throws {
        try await withServer { loop, server, base in
            let alice = try await makeParticipant("alice", on: loop)
            let bob = try await makeParticipant("bob", on: loop)
            let room = roomURI("standup", host: base.host, port: base.port)
            let aliceCall = try await alice.call(room, offering: AudioCapabilities(address: "127.0.0.1", port: 28_690))
            guard case .success(let media) = await outcome(of: aliceCall) else {
                throw SIPCallError("alice could not join")
            }
            #expect(media.srtp != nil, "the room's answer is SDES-SRTP")
            #expect((28_650...28_689).contains(media.remotePort))
            #expect(await eventually { server.roomOccupancy() == ["standup": 1] })
            // bob prefers 40 ms packets (a=ptime:40): the room still takes him and sends him 20 ms ones.
            var slow = OpusEncoderConfiguration()
            slow.frameDuration = .ms40
            let bobCall = try await bob.call(
                room, offering: AudioCapabilities(address: "127.0.0.1", port: 28_692, send: slow))
            guard case .success(let bobMedia) = await outcome(of: bobCall) else {
                throw SIPCallError("bob could not join")
            }
            #expect(bobMedia.remotePort != media.remotePort, "each participant has a media port of its own")
            #expect(await eventually { server.roomOccupancy() == ["standup": 2] })

            // bob mutes himself (a=sendonly, what the engine's hold() offers) and comes back.
            #expect(try await bobCall.hold().direction == .sendonly)
            #expect(
                await eventually {
                    await server.openRoomReports().first?.participants.contains { $0.name.contains("bob") && $0.muted }
                        == true
                })
            #expect(try await bobCall.resume().direction == .sendrecv)
            #expect(
                await eventually {
                    await server.openRoomReports().first?.participants.contains { $0.name.contains("bob") && !$0.muted }
                        == true
                })

            await aliceCall.hangUp()
            #expect(await eventually { server.roomOccupancy() == ["standup": 1] })
            await bobCall.hangUp()
            #expect(await eventually { server.roomOccupancy().isEmpty })
            // The report is made after the room left the server's list (the mixer's figures are read first).
            #expect(await eventually { !server.closedRoomReports().isEmpty })
            let report = try #require(server.closedRoomReports().first)
            #expect(report.room == "standup")
            #expect(report.closedAt != nil)
            #expect(report.peakParticipants == 2)
            #expect(report.timeline.map(\.kind) == [.joined, .joined, .muted, .unmuted, .left, .left])
            #expect(report.timeline.map(\.participants) == [1, 2, 2, 2, 1, 0])
            #expect(report.participants.count == 2 && report.participants.allSatisfy { $0.leftAt != nil })
            print(report.text)
            // A new call to the same id opens a new room.
            let again = try await alice.call(room, offering: AudioCapabilities(address: "127.0.0.1", port: 28_690))
            guard case .success = await outcome(of: again) else { throw SIPCallError("alice could not rejoin") }
            #expect(await eventually { server.roomOccupancy() == ["standup": 1] })
            await again.hangUp()
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }
}
