import Foundation
import Testing
import VoiceEngine
import VoiceSRTP
import VoiceTestSupport

/// A re-INVITE's outcome reaching running media (`LiveCall.updateMedia`): two real-time calls over loopback UDP
/// with SRTP and speech files, re-keyed, held and resumed mid-call.
@Suite(.tags(.live), .scheduledByTags, .serialized) struct LiveCallUpdateTests {
    @Test(
        "re-key, hold and resume a running call", arguments: [SRTPCryptoSuite.aesCM128HmacSHA1_80, .aeadAES128GCM])
    func reKeyHoldAndResumeReachTheRunningMedia(suite: SRTPCryptoSuite) async throws {
        try #require(
            FileManager.default.fileExists(atPath: LiveCallTests.speech), "TestVectors/speech_like_16k.wav missing")
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (keysA, keysB) = StreamTestSupport.srtpPair(suite: suite)
        let (a, b) = try await LiveCallTests.makePair(directory: dir, keysA: keysA, keysB: keysB)
        try a.call.start()
        try b.call.start()
        try await Task.sleep(for: .seconds(1))

        // Re-key as over SIP: each side offers a new local key; A (the offerer) applies on the 2xx, B on the ACK,
        // 60 ms later. Both keep hearing each other without an authentication failure.
        let newA = SRTPMasterKey.random(for: suite), newB = SRTPMasterKey.random(for: suite)
        try a.call.updateMedia(
            srtp: MediaStreamSRTP(suite: suite, localKey: newA, remoteKey: newB), direction: .sendrecv)
        try await Task.sleep(for: .milliseconds(60))
        try b.call.updateMedia(
            srtp: MediaStreamSRTP(suite: suite, localKey: newB, remoteKey: newA), direction: .sendrecv)
        try await Task.sleep(for: .seconds(1))

        // A holds B: A sendonly, B recvonly. B's RTP stops (RTCP goes on), A's continues.
        let (aBefore, bBefore) = (a.call.statistics.datagramsSent, b.call.statistics.datagramsSent)
        try a.call.updateMedia(srtp: nil, direction: .sendonly)
        try b.call.updateMedia(srtp: nil, direction: .recvonly)
        try await Task.sleep(for: .seconds(1))
        let (aHeld, bHeld) = (a.call.statistics.datagramsSent - aBefore, b.call.statistics.datagramsSent - bBefore)

        // Resume: both send again.
        let bBeforeResume = b.call.statistics.datagramsSent
        try a.call.updateMedia(srtp: nil, direction: .sendrecv)
        try b.call.updateMedia(srtp: nil, direction: .sendrecv)
        try await Task.sleep(for: .seconds(1))
        let bResumed = b.call.statistics.datagramsSent - bBeforeResume

        // Only A re-keys its sending side now and B is never told: B must drop A's packets from then on (the new
        // keys really are on the wire), while A keeps hearing B.
        let strayA = SRTPMasterKey.random(for: suite)
        try a.call.updateMedia(
            srtp: MediaStreamSRTP(suite: suite, localKey: strayA, remoteKey: newB), direction: .sendrecv)
        try await Task.sleep(for: .milliseconds(800))
        let resultA = await a.call.stop()
        let resultB = await b.call.stop()

        print(
            "update \(suite): held A \(aHeld) B \(bHeld) datagrams/s, resumed B \(bResumed); A drops \(resultA.report.drops.counts), B drops \(resultB.report.drops.counts)"
        )
        #expect(resultA.wasEstablished && resultB.wasEstablished)
        // 50 RTP packets a second, plus RTCP; on hold B sends RTCP only.
        #expect(aHeld >= 40, "A sent \(aHeld) datagrams while holding")
        #expect(bHeld <= 5, "B sent \(bHeld) datagrams while held")
        #expect(bResumed >= 40, "B sent \(bResumed) datagrams after resuming")
        // A's re-key and B's both went through without one packet refused.
        #expect(resultA.report.drops.counts.authenticationFailed == 0)
        #expect(resultA.report.drops.counts.rtcpAuthenticationFailed == 0)
        // B refused A's packets only after A's unannounced key change (≈ 0.8 s, minus the 200 ms grace in which A
        // still sent with the key B knows): about 30 RTP packets.
        let refused = resultB.report.drops.counts.authenticationFailed
        #expect(refused >= 15 && refused <= 45, "B refused \(refused) packets")
        // Speech reached both speakers throughout (level of the decoded audio).
        for side in [a, b] {
            let heard = try WAVFile.read(path: side.speaker).int16Samples
            #expect(StreamTestSupport.level(heard[...]) > -40)
        }
    }
}
