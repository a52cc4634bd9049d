import Foundation
import Testing
import NIOCore
import NIOPosix
import VoiceSIP
@testable import VoiceClient
import VoiceTestSupport

/// The client calling real SIP peers behind the repository's Kamailio: baresip as a SIP address (custom headers
/// seen on its side, speech both ways over DTLS-SRTP) and as the phone gateway, SIPp answering busy. Ports
/// 26060–26079.
@Suite(
    "VoiceClient calls to baresip and SIPp", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct ClientPeerCallTests {
    static let speech = SharedTestData.speech + "/jfk_16k_mono.wav"
    static let baresipSpeech = SharedTestData.speech + "/pjsip_input_16k.wav"

    @Test(.enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"))
    func appToSIPCallReachesBaresipWithCustomHeadersAndSpeechBothWays() async throws {
        try await withService(sipPort: 26060) { service in
            try await withBaresip(port: 26061, in: service.directory) { directory, baresip in
                let heardPath = directory.appendingPathComponent("alice-heard.wav").path
                let alice = try service.client(
                    "alice",
                    audio: CallAudioDevices(
                        microphone: "file:" + Self.speech, speaker: "file:" + heardPath, voiceProcessing: false))
                await alice.start()
                let call = try await alice.callSIP(
                    "b@127.0.0.1:26061", headers: ["X-Account": "42", "x-campaign": "spring"])
                try await waitFor(call, .established)
                try await Task.sleep(for: .seconds(6))
                try await call.hangup()
                let details = await call.details
                #expect(details.endCause == .localHangup && details.report?.endCause == .localHangup)
                let log = try String(contentsOf: baresip.log, encoding: .utf8)
                #expect(
                    log.contains("X-Account: 42") && log.contains("x-campaign: spring"),
                    "baresip's trace lacks the custom headers")
                // The client signals over TLS: its INVITE offers DTLS-SRTP (the fingerprint) with SDES keys beside it,
                // and baresip's dtls_srtp module answers one of the two.
                #expect(
                    log.contains("m=audio") && log.contains("a=fingerprint:") && log.contains("a=setup:actpass"),
                    "the client's offer in baresip's trace carries no DTLS-SRTP fingerprint")
                try await Task.sleep(for: .milliseconds(500))
                let toAlice = SpeechMatch.median(
                    sent: try WAVFile.read(path: Self.baresipSpeech).int16Samples,
                    heard: try WAVFile.read(path: heardPath).int16Samples)
                let toBaresip = SpeechMatch.median(
                    sent: try WAVFile.read(path: Self.speech).int16Samples, heard: try BaresipPeer.heard(in: directory))
                print(
                    "client ↔ baresip: baresip → client median window correlation \(toAlice); client → baresip \(toBaresip)"
                )
                #expect(toAlice > 0.5, "the client did not hear baresip (\(toAlice))")
                #expect(toBaresip > 0.5, "baresip did not hear the client (\(toBaresip))")
                await alice.terminate()
            }
        }
    }

    /// The offer a call makes over SIP/TLS (DTLS-SRTP with SDES `a=crypto` lines next to it, on `RTP/SAVP`) as
    /// baresip answers it in either keying: with `srtp-mand` (its SDES default) by SDES, with `dtls_srtp` by
    /// DTLS-SRTP; media flows both ways after either. Sent here from a user agent straight to baresip on loopback.
    @Test(arguments: ["srtp-mand", "dtls_srtp"])
    func theOfferForTLSSignallingIsAnsweredByBaresipInEitherKeying(_ mediaEncryption: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "client-offer-\(mediaEncryption)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = mediaEncryption == "dtls_srtp" ? 26_076 : 26_074
        try await withBaresip(port: port, mediaEncryption: mediaEncryption, in: directory) { _, _ in
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let agent = try await loopbackAgent("alice", on: group.next())
            let media = try await CallLink.bindMedia(
                host: "127.0.0.1", signallingEncrypted: true, iceRole: .controlling)
            let call = try await agent.call(
                SIPURI(user: "b", host: "127.0.0.1", port: port), offering: media.capabilities)
            let answer = try #require(
                await answeredMedia(of: call), "baresip (\(mediaEncryption)) did not answer our offer")
            if mediaEncryption == "dtls_srtp" {
                #expect(answer.dtls != nil && answer.srtp == nil, "baresip's dtls_srtp answered \(answer)")
            } else {
                #expect(answer.srtp != nil && answer.dtls == nil, "baresip's srtp-mand answered \(answer)")
            }
            let live = try await SIPCallMedia.start(
                negotiated: answer, callID: CallID(call.callID), transport: media.transport,
                certificate: media.certificate, ice: media.ice,
                devices: CallAudioDevices(
                    microphone: SharedTestData.isPresent ? "file:" + Self.speech : "null", speaker: "null",
                    sampleRate: 16_000, voiceProcessing: false))
            try await Task.sleep(for: .seconds(3))
            let result = await live.stop(cause: .localHangup)
            await call.hangUp()
            #expect(result.wasEstablished, "media did not flow both ways with baresip (\(mediaEncryption))")
            await media.transport.close()
            try await agent.endpoint.close()
            try await group.shutdownGracefully()
        }
    }

    /// Calls the service routes to a server of their own: phone numbers to the gateway, rooms to the conference
    /// server (baresip stands in, with the number or room as its account's user).
    enum RoutedCall: String, CaseIterable, Sendable {
        case phoneNumber, conference

        var sipPort: Int { self == .phoneNumber ? 26064 : 26066 }
        var serverPort: Int { sipPort + 1 }
        var serverUser: String { self == .phoneNumber ? "+46701234567" : "conf-standup-7" }
        var requestLine: String {
            self == .phoneNumber
                ? "INVITE sip:+46701234567@voiceengine.test;user=phone" : "INVITE sip:conf-standup-7@voiceengine.test"
        }

        func place(on client: VoiceClient) async throws -> Call {
            switch self {
            case .phoneNumber: try await client.callPhoneNumber("+46 70 123 45 67", headers: ["X-Caller-Ref": "7"])
            case .conference: try await client.callConference("standup-7")
            }
        }
    }

    @Test(arguments: RoutedCall.allCases)
    func callIsRoutedToItsServer(_ routed: RoutedCall) async throws {
        let server = "sip:127.0.0.1:\(routed.serverPort)"
        try await withService(
            sipPort: routed.sipPort, gateway: routed == .phoneNumber ? server : nil,
            conferenceServer: routed == .conference ? server : nil
        ) { service in
            try await withBaresip(port: routed.serverPort, user: routed.serverUser, in: service.directory) {
                _, baresip in
                let alice = try service.client("alice")
                await alice.start()
                let call = try await routed.place(on: alice)
                try await waitFor(call, .established)
                try await call.hangup()
                #expect(await call.details.endCause == .localHangup)
                let log = try String(contentsOf: baresip.log, encoding: .utf8)
                #expect(
                    log.contains(routed.requestLine),
                    "\(routed.serverUser)'s server did not get '\(routed.requestLine)'")
                await alice.terminate()
            }
        }
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sipp"),
            "sipp is not installed (make test-deps installs sip-tester)"))
    func busyFromSIPpEndsTheCallDenied() async throws {
        try await withService(sipPort: 26070) { service in
            let scenario = service.directory.appendingPathComponent("uas-busy.xml")
            try Self.busyScenario.write(to: scenario, atomically: true, encoding: .utf8)
            let sipp = try ChildProcessGroup(
                "/usr/bin/sipp",
                [
                    "-sf", scenario.path, "-i", "127.0.0.1", "-p", "26071", "-m", "1", "-timeout", "20s", "-nostdin"
                ], log: service.directory.appendingPathComponent("sipp.log"))
            defer { sipp.stop() }
            guard await waitUntilUDPBound(26071) else { try Test.cancel("SIPp did not start:\n\(sipp.logTail)") }
            let alice = try service.client("alice")
            await alice.start()
            let call = try await alice.callSIP("busy@127.0.0.1:26071")
            try await waitFor(call, .ended)
            let details = await call.details
            #expect(details.endCause == .denied, "\(details)")
            #expect(details.error == .sip(status: 486, reason: "Busy Here"))
            #expect(await sipp.wait(timeout: .seconds(5)) == 0, "SIPp's scenario did not complete: \(sipp.logTail)")
            await alice.terminate()
        }
    }

    /// A UAS that answers 180 then 486 Busy Here and completes when the ACK comes (SIPp 3.6's `-key` does not
    /// reach a response's status line, so the status is written here).
    static let busyScenario = """
        <?xml version="1.0" encoding="ISO-8859-1" ?>
        <scenario name="uas-busy">
          <recv request="INVITE" />
          <send><![CDATA[

              SIP/2.0 180 Ringing
              [last_Via:]
              [last_Record-Route:]
              [last_From:]
              [last_To:];tag=[pid]sipp[call_number]
              [last_Call-ID:]
              [last_CSeq:]
              Content-Length: 0

            ]]></send>
          <pause milliseconds="200" />
          <send><![CDATA[

              SIP/2.0 486 Busy Here
              [last_Via:]
              [last_From:]
              [last_To:];tag=[pid]sipp[call_number]
              [last_Call-ID:]
              [last_CSeq:]
              Content-Length: 0

            ]]></send>
          <recv request="ACK" />
        </scenario>
        """

    /// baresip on `port` for the body, stopped afterwards; its log is printed when the body fails. It keys SRTP by
    /// DTLS-SRTP (its `dtls_srtp` module): over the service's unencrypted signalling the client offers no SDES keys.
    func withBaresip(
        port: Int, user: String = "b", mediaEncryption: String = "dtls_srtp", in parent: URL,
        microphoneSeconds: Double = 25, _ body: (URL, ChildProcessGroup) async throws -> Void
    ) async throws {
        let directory = parent.appendingPathComponent("baresip-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let microphone =
            SharedTestData.isPresent
            ? try BaresipPeer.repeated(Self.baresipSpeech, seconds: microphoneSeconds, into: directory)
            : try silence(seconds: microphoneSeconds, into: directory)
        let arguments = try BaresipPeer.configure(
            directory: directory, port: port, user: user, microphone: microphone, mediaEncryption: mediaEncryption)
        let baresip = try ChildProcessGroup(
            BaresipPeer.executable, arguments, log: directory.appendingPathComponent("baresip.log"))
        defer { baresip.stop() }
        guard await waitUntilUDPBound(port) else { try Test.cancel("baresip did not start:\n\(baresip.logTail)") }
        do { try await body(directory, baresip) } catch {
            Issue.record("baresip's log:\n\(baresip.logTail)")
            throw error
        }
    }

    /// Silence as baresip's microphone when the speech recordings are absent.
    func silence(seconds: Double, into directory: URL) throws -> String {
        let path = directory.appendingPathComponent("silence.wav").path
        try WAVFile.write(
            pcm16: [Int16](repeating: 0, count: Int(16_000 * seconds)),
            format: AudioFormat(sampleRate: 16_000, channels: 1),
            to: path)
        return path
    }
}

/// Managed push: Kamailio keeps the INVITE to a callee with no binding (tsilo) and posts the payload to the push
/// gateway (http_client); the callee's app relays it, its client registers and gets the call. Ports 26090–26099.
@Suite(
    "VoiceClient push for calls (managed and app-sent)", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: managedPushModulesInstalled, "\(managedPushModulesMissing)"))
struct ManagedPushTests {
    @Test func offlineCalleeIsPushedRelaysThePayloadAndGetsTheHeldCall() async throws {
        let gateway = try PushGateway(port: 26091)
        defer { gateway.close() }
        try await withService(sipPort: 26090, pushGateway: "http://127.0.0.1:26091/push") { service in
            let alice = try service.client("alice")
            let bob = try service.client("bob")
            let bobLog = EventLog(bob)
            await alice.start()
            let call = try await alice.callUser("bob", headers: ["X-Topic": "dinner \"at 8\"", "x-order": "42"])

            let push = try #require(await gateway.request(number: 1), "the gateway got no push")
            #expect(push.target == "/push?to=bob")
            let payload = try PushPayload.parse(push.body)
            #expect(payload.kind == .call && payload.sender == "alice" && !payload.canceled)
            #expect(payload.id == call.id.rawValue)
            // The call's custom headers ride in the push (names as sent, the quotes JSON-escaped).
            #expect(
                payload.headers == ["X-Topic": "dinner \"at 8\"", "x-order": "42"], "push headers: \(payload.headers)")

            // The callee's app hands the payload over: its client registers and the kept INVITE arrives.
            let relayed = try await bob.relayPushPayload(push.body)
            #expect(relayed == payload)
            let incoming = try #require(await bobLog.incomingCall(), "the held call did not arrive: \(bobLog.events)")
            #expect(incoming.viaPush && incoming.caller == "alice")
            #expect(await incoming.call.details.viaPush)
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            #expect(await incoming.call.details.endCause == .remoteHangup)
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func appSentPushForACallReachesTheCalleeThroughTheRelayedPayload() async throws {
        try await withService(sipPort: 26094, appPush: true) { service in
            let token = Data("apns-token-of-bobs-phone".utf8)
            let bobBefore = try service.client("bob", pushData: token)
            await bobBefore.start()
            await bobBefore.terminate()  // offline now
            let alice = try service.client("alice")
            let aliceLog = EventLog(alice)
            await alice.start()
            let call = try await alice.callUser("bob", headers: ["X-Topic": "dinner"])
            let push = await aliceLog.first { if case .shouldSendPushNotifications = $0 { true } else { false } }
            guard case .shouldSendPushNotifications(let recipient, let pairs) = push, let payload = pairs.first?.payload
            else {
                Issue.record("no push request: \(aliceLog.events)")
                return
            }
            #expect(recipient == "bob" && pairs.map(\.pushData) == [token])
            let parsed = try PushPayload.parse(payload)
            #expect(
                parsed.kind == .call && parsed.id == call.id.rawValue && parsed.headers == ["X-Topic": "dinner"]
                    && !parsed.canceled)
            #expect(await call.state == .ringing)
            let bob = try service.client("bob", pushData: token)
            let bobLog = EventLog(bob)
            try await bob.relayPushPayload(payload)
            let incoming = try #require(await bobLog.incomingCall(), "the held call did not arrive: \(bobLog.events)")
            #expect(incoming.viaPush && incoming.headers["X-Topic"] == "dinner")
            try await incoming.call.answer()
            try await waitFor(call, .established)
            let hangingUp = ContinuousClock.now
            try await incoming.call.hangup()
            try await waitFor(call, .ended)
            print("app-sent push: the caller saw the callee's BYE after \(ContinuousClock.now - hangingUp)")
            #expect(await call.details.endCause == .remoteHangup)
            #expect(await incoming.call.details.endCause == .localHangup)
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func aCanceledHeldCallIsPushedAgainMarkedCanceled() async throws {
        let gateway = try PushGateway(port: 26093)
        defer { gateway.close() }
        try await withService(sipPort: 26092, pushGateway: "http://127.0.0.1:26093/push") { service in
            let alice = try service.client("alice")
            await alice.start()
            let call = try await alice.callUser("carol")
            let first = try #require(await gateway.request(number: 1))
            #expect(try PushPayload.parse(first.body).canceled == false)
            try await call.hangup()
            let second = try #require(await gateway.request(number: 2), "no push after the cancel")
            let payload = try PushPayload.parse(second.body)
            #expect(payload.canceled && payload.id == call.id.rawValue && second.target == "/push?to=carol")
            #expect(await call.details.endCause == .canceled)
            await alice.terminate()
        }
    }
}
