import Foundation
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// A participant that does not multiplex RTCP (Debian's baresip with SDES, `rtcp_mux no`) in a room of the
/// conference server: its leg has a port pair, so its reports (sent to the leg's RTP port + 1) reach its own leg
/// and the room's reports reach baresip's RTCP port. It joins first, so the leg after it (an engine that
/// multiplexes) would own that port if legs had one port each: that leg must refuse nothing. Server in process,
/// SIP on an ephemeral port, media 28740–28749, baresip's SIP on 28750.
@Suite(
    "RTCP of a participant without rtcp-mux in a conference room", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct ConferenceRTCPTests {
    static let seconds = 8.0

    @Test func reportsOfANonMultiplexingParticipantReachItsOwnLeg() async throws {
        let directory = try makeTemporaryDirectory("conference-rtcp")
        defer { if ProcessInfo.processInfo.environment["KEEP_CONFERENCE_FILES"] == nil { try? FileManager.default.removeItem(at: directory) } }
        let mics = try ConferenceDTLSTests.microphones(in: directory)
        let baresipDirectory = directory.appendingPathComponent("baresip")
        try FileManager.default.createDirectory(at: baresipDirectory, withIntermediateDirectories: true)
        try await withEventLoop { loop in
            let (server, port) = try await startLoopbackServer(rtpPorts: 28_740...28_749, on: loop)
            let arguments = try BaresipPeer.configure(
                directory: baresipDirectory, port: 28_750, microphone: mics.paths[1], seconds: Int(Self.seconds) + 20)
            let baresip = try ChildProcessGroup(
                BaresipPeer.executable, arguments + ["-e", "/dial sip:conf-rtcp@127.0.0.1:\(port)"],
                log: directory.appendingPathComponent("baresip.log"))
            defer { baresip.stop() }
            let joined = await eventually(.seconds(15)) { await server.openRoomReports().first?.participants.count == 1 }
            try #require(joined, "baresip did not join the room:\n\(baresip.logTail)\nclosed: \(server.closedRoomReports().map(\.text))")
            let engine = try await makeParticipant("engine", on: loop)
            let (call, media) = try await ConferenceRekeyTests.join(
                roomURI("rtcp", host: "127.0.0.1", port: port), from: engine, microphone: mics.paths[0], directory: directory,
                name: "engine")
            // RFC 3550's minimum interval is 5 s: both sides have sent reports and answered the other's by now.
            try await Task.sleep(for: .seconds(Self.seconds))
            let report = try #require(await server.openRoomReports().first)
            await call.hangUp()
            let result = await media.call.stop()
            baresip.stop()
            #expect(await eventually { server.roomOccupancy().isEmpty })
            await server.close()
            try await engine.endpoint.close()
            print(report.text)

            let baresipLeg = try #require(report.participants.first { $0.name.contains("sip:b@") }, "\(report.text)")
            let engineLeg = try #require(report.participants.first { $0.name.contains("engine") }, "\(report.text)")
            #expect(baresipLeg.packetsReceived > Int(Self.seconds * 40), "the room received \(baresipLeg.packetsReceived) packets from baresip")
            #expect(baresipLeg.rtcpReceived > 0, "baresip's reports did not reach its leg: \(baresipLeg)")
            // A round trip on baresip's leg means baresip answered the room's sender reports: they reached its
            // RTCP port.
            #expect(baresipLeg.roundTripMilliseconds != nil, "the room's reports did not reach baresip's RTCP port: \(baresipLeg)")
            #expect(baresipLeg.dropped == 0 && engineLeg.dropped == 0, "refused datagrams: \(report.text)")
            #expect(engineLeg.rtcpReceived > 0 && result.report.rtcp.received > 0, "the multiplexed leg's RTCP: \(engineLeg)")
            #expect(result.report.drops.counts.authenticationFailed == 0)
        }
    }
}
