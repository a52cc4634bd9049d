import Foundation
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// A participant that does not multiplex RTCP (Debian's baresip, `rtcp_mux no`, SDES or DTLS-SRTP) in a room of the
/// conference server: its leg has a port pair, so its reports (sent to the leg's RTP port + 1) reach its own leg
/// and the room's reports reach baresip's RTCP port. It joins first, so the leg after it (an engine that
/// multiplexes) would own that port if legs had one port each: that leg must refuse nothing. Server in process,
/// SIP on an ephemeral port, media 28740–28749, baresip's SIP on 28750.
@Suite(
    "RTCP of a participant without rtcp-mux in a conference room", .tags(.interop, .live), .scheduledByTags,
    .serialized, .timeLimit(.minutes(2)),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct ConferenceRTCPTests {
    static let seconds = 8.0

    @Test func reportsOfANonMultiplexingParticipantReachItsOwnLeg() async throws {
        let directory = try makeTemporaryDirectory("conference-rtcp")
        defer {
            if ProcessInfo.processInfo.environment["KEEP_CONFERENCE_FILES"] == nil {
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let mics = try ConferenceDTLSTests.microphones(in: directory)
        // RFC 3550's minimum interval is 5 s: in 8 s both sides have sent reports and answered the other's.
        let room = try await Self.baresipAndEngineInRoom(
            "rtcp", rtpPorts: 28_740...28_749, baresipPort: 28_750, microphones: mics.paths, seconds: Self.seconds,
            directory: directory)
        let (baresipLeg, engineLeg, result) = (room.baresipLeg, room.engineLeg, room.engine)
        #expect(
            baresipLeg.packetsReceived > Int(Self.seconds * 40),
            "the room received \(baresipLeg.packetsReceived) packets from baresip")
        #expect(baresipLeg.rtcpReceived > 0, "baresip's reports did not reach its leg: \(baresipLeg)")
        // baresip's report blocks carry the LSR of the room's sender reports only if those reached its RTCP port.
        #expect(
            baresipLeg.senderReportsAnswered > 0, "the room's reports did not reach baresip's RTCP port: \(baresipLeg)")
        // Nothing of baresip's lands on the next leg. Its own leg refuses one packet: the lone RTCP APP packet
        // baresip sends to the RTCP port as the call starts (PT 204 without SR/RR first, seen in a capture of this
        // test), which is not a compound packet RFC 3550 §6.1 allows.
        #expect(engineLeg.dropped == 0, "refused datagrams on the leg after baresip's: \(room.report.text)")
        #expect(baresipLeg.dropped <= 1, "refused datagrams on baresip's leg: \(room.report.text)")
        #expect(
            engineLeg.rtcpReceived > 0 && result.report.rtcp.received > 0, "the multiplexed leg's RTCP: \(engineLeg)")
        #expect(result.report.drops.counts.authenticationFailed == 0)
    }

    /// baresip keying by DTLS-SRTP without rtcp-mux (`dtls_srtp`, `rtcp_mux no`): a handshake on its RTP port and one
    /// on its RTCP port (RFC 5764 §4.1), each against the leg's port of the pair; the RTCP component's keys protect
    /// the reports both ways. Media 28850–28859, baresip's SIP on 28860.
    @Test func dtlsSRTPParticipantWithoutMuxKeysItsRTCPPortByItsOwnHandshake() async throws {
        let directory = try makeTemporaryDirectory("conference-rtcp-dtls")
        defer {
            if ProcessInfo.processInfo.environment["KEEP_CONFERENCE_FILES"] == nil {
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let mics = try ConferenceDTLSTests.microphones(in: directory)
        let room = try await Self.baresipAndEngineInRoom(
            "rtcpdtls", rtpPorts: 28_850...28_859, baresipPort: 28_860, mediaEncryption: "dtls_srtp", rtcpMux: false,
            microphones: mics.paths, seconds: Self.seconds, directory: directory)
        let baresipLeg = room.baresipLeg
        #expect(
            baresipLeg.keying?.hasPrefix("DTLS-SRTP") == true,
            "baresip's leg is keyed \(String(describing: baresipLeg.keying))")
        #expect(
            baresipLeg.packetsReceived > Int(Self.seconds * 40),
            "the room received \(baresipLeg.packetsReceived) packets from baresip")
        #expect(baresipLeg.rtcpReceived > 0, "baresip's SRTCP did not pass on its leg's RTCP port: \(baresipLeg)")
        #expect(
            baresipLeg.senderReportsAnswered > 0, "the room's SRTCP did not reach baresip's RTCP port: \(baresipLeg)")
        #expect(room.engineLeg.dropped == 0, "refused datagrams on the leg after baresip's: \(room.report.text)")
        #expect(baresipLeg.dropped <= 1, "refused datagrams on baresip's leg: \(room.report.text)")
    }

    /// What a room with baresip and an engine participant left: the room's report while both were in it, their
    /// legs in it, the engine's call result and where its speaker was recorded.
    struct TwoParticipantRoom {
        let report: ConferenceRoomReport
        let baresipLeg: ConferenceRoomReport.Participant
        let engineLeg: ConferenceRoomReport.Participant
        let engine: LiveCallResult
        let engineSpeaker: String
    }

    /// Runs room `room` on a loopback server for `seconds`: baresip (`mediaEncryption`, only `codec`, its audio at
    /// `audioRate`, `microphones[1]`) joins first, then an engine participant with SDES and Opus
    /// (`microphones[0]`); everyone hangs up and the server closes.
    static func baresipAndEngineInRoom(
        _ room: String, rtpPorts: ClosedRange<Int>, baresipPort: Int, mediaEncryption: String = "srtp-mand",
        rtcpMux: Bool? = nil, codec: String = "opus", audioRate: Int = 16_000, microphones: [String], seconds: Double,
        directory: URL
    ) async throws -> TwoParticipantRoom {
        try await withEventLoop { loop in
            let (server, port) = try await startLoopbackServer(rtpPorts: rtpPorts, on: loop)
            let baresip = try await Self.baresipJoins(
                room, server: server, serverPort: port, baresipPort: baresipPort, microphone: microphones[1],
                seconds: seconds, mediaEncryption: mediaEncryption, rtcpMux: rtcpMux, codec: codec,
                audioRate: audioRate,
                directory: directory)
            defer { baresip.stop() }
            let engine = try await makeParticipant("engine", on: loop)
            let (call, media) = try await ConferenceRekeyTests.join(
                roomURI(room, host: "127.0.0.1", port: port), from: engine, microphone: microphones[0],
                directory: directory, name: "engine")
            try await Task.sleep(for: .seconds(seconds))
            let report = try #require(await server.openRoomReports().first)
            await call.hangUp()
            let result = await media.call.stop()
            baresip.stop()  // SIGTERM: baresip hangs up and closes its sndfile dump
            #expect(await eventually { server.roomOccupancy().isEmpty })
            await server.close()
            try await engine.endpoint.close()
            print(report.text)
            return TwoParticipantRoom(
                report: report,
                baresipLeg: try #require(report.participants.first { $0.name.contains("sip:b@") }, "\(report.text)"),
                engineLeg: try #require(report.participants.first { $0.name.contains("engine") }, "\(report.text)"),
                engine: result, engineSpeaker: media.speaker)
        }
    }

    /// Starts baresip (its files in `directory/baresip`) dialing room `room` on the server at `serverPort` with
    /// `mediaEncryption`, only `codec` and its audio at `audioRate`, and returns once it is the room's participant; the caller stops it.
    static func baresipJoins(
        _ room: String, server: ConferenceServer, serverPort: Int, baresipPort: Int, microphone: String,
        seconds: Double,
        mediaEncryption: String = "srtp-mand", rtcpMux: Bool? = nil, codec: String = "opus", audioRate: Int = 16_000,
        directory: URL
    ) async throws -> ChildProcessGroup {
        let baresipDirectory = directory.appendingPathComponent("baresip")
        try FileManager.default.createDirectory(at: baresipDirectory, withIntermediateDirectories: true)
        let arguments = try BaresipPeer.configure(
            directory: baresipDirectory, port: baresipPort, microphone: microphone, seconds: Int(seconds) + 20,
            mediaEncryption: mediaEncryption, rtcpMux: rtcpMux, codec: codec, audioRate: audioRate)
        let baresip = try ChildProcessGroup(
            BaresipPeer.executable, arguments + ["-e", "/dial sip:conf-\(room)@127.0.0.1:\(serverPort)"],
            log: directory.appendingPathComponent("baresip.log"))
        let joined = await eventually(.seconds(15)) { await server.openRoomReports().first?.participants.count == 1 }
        guard joined else {
            baresip.stop()
            throw ConferenceServerError(
                "baresip did not join the room:\n\(baresip.logTail)\nclosed: \(server.closedRoomReports().map(\.text))")
        }
        return baresip
    }
}
