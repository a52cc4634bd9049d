import Foundation
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// Another independent SIP softphone behind the service: linphonec (Debian's `linphone-cli`) registers with the
/// service's ephemeral credentials over UDP with its `+sip.instance`, gets a GRUU and answers with it as its
/// Contact, offers only G.711 and does not multiplex RTCP; a client calls it over TLS by its user name through
/// Kamailio, and the speech is heard both ways. Ports 26162–26166.
@Suite(
    "linphonec through the service", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: LinphonePeer.isInstalled, "linphonec is not installed (make test-deps installs linphone-cli)"),
    .enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"))
struct ClientLinphoneTests {
    static let speech = SharedTestData.speech + "/jfk_16k_mono.wav"
    static let linphoneSpeech = SharedTestData.speech + "/pjsip_input_16k.wav"

    @Test func clientCallsAGRUUSoftphoneWithoutRTCPMuxAndBothHearEachOther() async throws {
        try await withService(sipPort: 26162) { service in
            let grant = EphemeralCredentialIssuer(sharedSecret: service.sharedSecret, domain: "voiceengine.test")
                .issue(userID: "lin", now: UInt64(Date().timeIntervalSince1970))
            let directory = service.directory.appendingPathComponent("linphonec")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let microphone = try BaresipPeer.repeated(Self.linphoneSpeech, seconds: 30, into: directory)
            let linphone = try LinphonePeer(
                directory: directory, sipPort: 26163, rtpPort: 26164, microphone: microphone,
                account: .init(
                    identity: "sip:lin@voiceengine.test", proxy: "sip:127.0.0.1:26162", username: grant.username,
                    password: grant.password),
                tracesSIP: true)
            defer { linphone.stop() }
            // Registered once the service's 200 to its REGISTER, which grants the GRUU, is in its log.
            var registered = false
            for _ in 0..<150 where !registered {
                registered = ((try? String(contentsOf: linphone.trace, encoding: .utf8)) ?? "").contains("pub-gruu")
                if !registered { try await Task.sleep(for: .milliseconds(100)) }
            }
            guard registered else {
                let trace = (try? String(contentsOf: linphone.trace, encoding: .utf8)) ?? ""
                Issue.record("linphonec was granted no GRUU:\n\(trace.suffix(3000))\n\(linphone.logTail)")
                return
            }
            let heardPath = service.directory.appendingPathComponent("alice-heard.wav").path
            let alice = try service.client(
                "alice",
                audio: CallAudioDevices(
                    microphone: "file:" + Self.speech, speaker: "file:" + heardPath, voiceProcessing: false))
            await alice.start()
            let call = try await alice.callUser("lin")
            try await waitFor(call, .established, timeout: .seconds(15))
            try await Task.sleep(for: .seconds(8))
            try await call.hangup()
            #expect(await call.details.endCause == .localHangup)
            #expect(await linphone.waitForOutput("ended", timeout: .seconds(5)), "linphonec:\n\(linphone.logTail)")

            let trace = (try? String(contentsOf: linphone.trace, encoding: .utf8)) ?? ""
            // Its REGISTER carried its instance and the registrar granted a GRUU, which its 200 to the INVITE names.
            #expect(trace.contains("+sip.instance"), "linphonec's REGISTER carried no +sip.instance")
            // Each message in its log runs up to the next log line (which starts with the year).
            let answer = try #require(
                trace.components(separatedBy: "SIP/2.0 200 ").dropFirst()
                    .map { $0.components(separatedBy: "\n20").first ?? $0 }
                    .first { $0.contains("m=audio") && $0.contains("INVITE") },
                "no 200 to the INVITE with SDP in linphonec's log")
            // Only its Contact can carry a gr= parameter (To and From name the address of record).
            #expect(answer.contains("gr=urn:uuid:"), "linphonec's 200 does not name its GRUU:\n\(answer.prefix(1500))")
            #expect(!answer.contains("a=rtcp-mux"), "linphonec's answer multiplexes RTCP")
            #expect(answer.contains("RTP/SAVP") && answer.contains("a=crypto:"), "linphonec's answer: SDES-SRTP")

            try await Task.sleep(for: .milliseconds(500))
            let toAlice = SpeechMatch.median(
                sent: try WAVFile.read(path: Self.linphoneSpeech).int16Samples,
                heard: try WAVFile.read(path: heardPath).int16Samples)
            let toLinphone = SpeechMatch.median(
                sent: try WAVFile.read(path: Self.speech).int16Samples, heard: try await linphone.heard())
            print("client ↔ linphonec: linphonec → client \(toAlice); client → linphonec \(toLinphone)")
            #expect(toAlice > 0.5, "the client did not hear linphonec (\(toAlice))")
            #expect(toLinphone > 0.5, "linphonec did not hear the client (\(toLinphone))")
            await alice.terminate()
        }
    }
}
