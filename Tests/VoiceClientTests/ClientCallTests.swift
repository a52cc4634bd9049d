import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// Calls between clients through the repository's Kamailio, and to real peers behind it (baresip, SIPp): the
/// SIP dialog, the live media (Opus over DTLS-SRTP: the service's signalling is not encrypted) and what the call
/// object reports. Ports 26040–26099.
@Suite(
    "VoiceClient calls through Kamailio", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ClientSIPCallTests {
    static let aliceSpeech = SharedTestData.speech + "/jfk_16k_mono.wav"
    static let bobSpeech = SharedTestData.speech + "/pjsip_input_16k.wav"

    @Test(.enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"))
    func twoClientsCallEachOtherWithSpeechBothWaysThenMuteHoldAndHangUp() async throws {
        try await withService(sipPort: 26040) { service in
            let directory = service.directory
            let aliceHeard = directory.appendingPathComponent("alice-heard.wav").path
            let bobHeard = directory.appendingPathComponent("bob-heard.wav").path
            let alice = try service.client(
                "alice",
                audio: CallAudioDevices(
                    microphone: "file:" + Self.aliceSpeech, speaker: "file:" + aliceHeard, voiceProcessing: false))
            let bob = try service.client(
                "bob",
                audio: CallAudioDevices(
                    microphone: "file:" + Self.bobSpeech, speaker: "file:" + bobHeard, voiceProcessing: false))
            let aliceLog = EventLog(alice), bobLog = EventLog(bob)
            await alice.start()
            await bob.startListening()
            let aliceStarted = await aliceLog.first { $0 == .started },
                bobStarted = await bobLog.first { $0 == .started }
            #expect(aliceStarted != nil && bobStarted != nil)

            let call = try await alice.callUser("bob", headers: ["X-Order": "42"])
            let incoming = try #require(await bobLog.incomingCall(), "bob got no call: \(bobLog.events)")
            #expect(incoming.caller == "alice")
            #expect(incoming.headers["X-Order"] == "42")
            #expect(!incoming.viaPush)
            try await waitFor(call, .ringing)

            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await waitFor(incoming.call, .established)
            #expect(await alice.audioSession.state.applicationActivated || true)
            try await Task.sleep(for: .seconds(6))
            try await call.mute(true)
            #expect(await call.isMuted)
            try await call.mute(false)
            // Holding moves bob's media off his devices, which closes his speaker file; resuming writes it afresh:
            // what he heard before the hold is read in between.
            try await incoming.call.hold(true)
            #expect(await incoming.call.isOnHold)
            var bobHeardBeforeHold: [Int16] = []
            for _ in 0..<30 where bobHeardBeforeHold.count < 16_000 {
                try await Task.sleep(for: .milliseconds(100))
                bobHeardBeforeHold = (try? WAVFile.read(path: bobHeard).int16Samples) ?? []
            }
            try await incoming.call.hold(false)
            try await call.hangup()
            try await waitFor(incoming.call, .ended)

            let callerDetails = await call.details, calleeDetails = await incoming.call.details
            #expect(callerDetails.endCause == .localHangup && calleeDetails.endCause == .remoteHangup)
            #expect(
                callerDetails.report?.endCause == .localHangup && calleeDetails.report?.endCause == .remoteHangup,
                "the reports say what the calls say")
            #expect(callerDetails.progressedAt != nil && callerDetails.establishedAt != nil)
            #expect(callerDetails.duration > .seconds(5), "duration \(callerDetails.duration)")
            #expect(callerDetails.report != nil && calleeDetails.report != nil)
            // The callee saw the BYE after its media stopped; the caller's media stops just after its hang-up.
            // The first stretch of media, before the hold moved it off bob's devices.
            let calleeMedia = try #require(
                await incoming.call.mediaReports.first, "no media report on the callee's call")
            #expect(
                calleeMedia.rtp.received > 200, "the callee received \(calleeMedia.rtp.received) RTP packets in 6 s")
            #expect(await alice.audioSession.state.phase.call == nil, "alice's audio session still holds a call")
            #expect(await bob.audioSession.state.phase.call == nil, "bob's audio session still holds a call")

            try await Task.sleep(for: .milliseconds(300))
            let toAlice = SpeechMatch.median(
                sent: try WAVFile.read(path: Self.bobSpeech).int16Samples,
                heard: try WAVFile.read(path: aliceHeard).int16Samples)
            let toBob = SpeechMatch.median(
                sent: try WAVFile.read(path: Self.aliceSpeech).int16Samples, heard: bobHeardBeforeHold)
            let control = SpeechMatch.median(
                sent: try WAVFile.read(path: Self.aliceSpeech).int16Samples,
                heard: try WAVFile.read(path: aliceHeard).int16Samples)
            print(
                "client calls: bob → alice median window correlation \(toAlice); alice → bob \(toBob); control \(control)"
            )
            #expect(
                control < 0.3,
                "alice's own speech correlates with what she heard (\(control)): the measure cannot tell them apart")
            #expect(toAlice > 0.5, "alice did not hear bob (\(toAlice))")
            #expect(toBob > 0.5, "bob did not hear alice (\(toBob))")
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func declineCancelAndNoAnswerEndBothSidesWithTheirCause() async throws {
        try await withService(sipPort: 26042) { service in
            let clock = ManualClock()
            let alice = try service.client("alice", clock: clock)
            let bob = try service.client("bob")
            let bobLog = EventLog(bob)
            await alice.start()
            await bob.startListening()

            // Decline: the callee hangs up before answering; the caller sees denied.
            let declined = try await alice.callUser("bob")
            let first = try #require(await bobLog.incomingCall(number: 1))
            try await waitFor(declined, .ringing)
            try await first.call.hangup()
            try await waitFor(declined, .ended)
            #expect(await declined.details.endCause == .denied)
            #expect(await declined.details.error == .sip(status: 603, reason: "Decline"))
            #expect(await first.call.details.endCause == .denied)

            // Cancel: the caller hangs up while it rings.
            let canceled = try await alice.callUser("bob")
            let second = try #require(await bobLog.incomingCall(number: 2))
            try await waitFor(canceled, .ringing)
            try await canceled.hangup()
            try await waitFor(second.call, .ended)
            #expect(await canceled.details.endCause == .canceled)
            #expect(await second.call.details.endCause == .canceled)

            // No answer: 60 s on the caller's clock without an answer cancel the call.
            let unanswered = try await alice.callUser("bob")
            let third = try #require(await bobLog.incomingCall(number: 3))
            try await waitFor(unanswered, .ringing)
            clock.advance(by: .seconds(59))
            await alice.tickCalls()
            #expect(await unanswered.state == .ringing)
            clock.advance(by: .seconds(2))
            await alice.tickCalls()
            #expect(await unanswered.details.endCause == .noAnswer)
            try await waitFor(third.call, .ended)
            #expect(await third.call.details.endCause == .canceled)
            await alice.terminate()
            await bob.terminate()
        }
    }

    /// Bob on two devices: Kamailio forks alice's INVITE to both; when the first answers, it CANCELs the other
    /// branch with `Reason: SIP;cause=200` (RFC 3326), which the second device reports as answered elsewhere.
    @Test func theDeviceThatDidNotAnswerEndsWithOtherDeviceAnswered() async throws {
        try await withService(sipPort: 26150) { service in
            let alice = try service.client("alice")
            let phone = try service.client("bob"), laptop = try service.client("bob")
            let phoneLog = EventLog(phone), laptopLog = EventLog(laptop)
            await alice.start()
            await phone.startListening()
            await laptop.startListening()
            let phoneStarted = await phoneLog.first { $0 == .started },
                laptopStarted = await laptopLog.first { $0 == .started }
            #expect(phoneStarted != nil && laptopStarted != nil)

            let call = try await alice.callUser("bob")
            let onPhone = try #require(
                await phoneLog.incomingCall(), "bob's first device got no call: \(phoneLog.events)")
            let onLaptop = try #require(
                await laptopLog.incomingCall(), "bob's second device got no call: \(laptopLog.events)")
            try await waitFor(call, .ringing)

            try await onPhone.call.answer()
            try await waitFor(call, .established)
            try await waitFor(onPhone.call, .established)
            try await waitFor(onLaptop.call, .ended)
            let laptopDetails = await onLaptop.call.details
            #expect(laptopDetails.endCause == .otherDeviceAnswered, "\(laptopDetails)")
            #expect(
                await laptop.audioSession.state.phase.call == nil,
                "the second device's audio session still holds the call")
            let callerState = await call.state, phoneState = await onPhone.call.state
            #expect(callerState == .established && phoneState == .established)

            try await call.hangup()
            try await waitFor(onPhone.call, .ended)
            #expect(await onPhone.call.details.endCause == .remoteHangup)
            await alice.terminate()
            await phone.terminate()
            await laptop.terminate()
        }
    }

    /// Tones outside call media are rendered on the chosen speaker: the callee's ringtone while it rings, the
    /// caller's ringback while it rings and then the busy tone after the decline (files read back).
    @Test func ringtoneRingbackAndBusyToneAreHeardOnTheSpeaker() async throws {
        try await withService(sipPort: 26101) { service in
            let aliceSpeaker = service.directory.appendingPathComponent("alice-tones.wav").path
            let bobSpeaker = service.directory.appendingPathComponent("bob-tones.wav").path
            let alice = try service.client(
                "alice",
                audio: CallAudioDevices(
                    microphone: "null", speaker: "file:" + aliceSpeaker, sampleRate: 16_000, voiceProcessing: false))
            let bob = try service.client(
                "bob",
                audio: CallAudioDevices(
                    microphone: "null", speaker: "file:" + bobSpeaker, sampleRate: 16_000, voiceProcessing: false))
            let (call, incoming, _) = try await ringingCall(from: alice, to: bob, "bob")
            try await Task.sleep(for: .milliseconds(1500))
            try await incoming.call.hangup()  // declines: the caller hears the busy tone (3 s)
            try await waitFor(call, .ended)
            try await waitFor(incoming.call, .ended)
            try await Task.sleep(for: .seconds(4))  // the busy tone ends and alice's speaker is closed
            let bobHeard = try HeardTones(file: bobSpeaker), aliceHeard = try HeardTones(file: aliceSpeaker)
            print(
                "tones heard (100 ms windows): bob ringing \(bobHeard.ringing) busy \(bobHeard.busy); alice ringing \(aliceHeard.ringing) busy \(aliceHeard.busy)"
            )
            #expect(bobHeard.ringing >= 6, "bob's speaker did not play the ringtone (\(bobHeard.ringing) windows)")
            #expect(bobHeard.busy == 0, "bob's speaker played a busy tone")
            #expect(
                aliceHeard.ringing >= 6,
                "alice's speaker did not play ringback (\(aliceHeard.ringing) windows): \(aliceHeard.levels)")
            #expect(aliceHeard.busy >= 8, "alice's speaker did not play the busy tone (\(aliceHeard.busy) windows)")
            await alice.terminate()
            await bob.terminate()
        }
    }

    /// In a call the live playout mixes the tones: a second call's ringtone (call waiting) is heard in the call.
    @Test func aWaitingCallsRingtoneIsMixedIntoTheRunningCall() async throws {
        try await withService(sipPort: 26102) { service in
            let bobSpeaker = service.directory.appendingPathComponent("bob-call.wav").path
            let alice = try service.client("alice"), carol = try service.client("carol")
            let bob = try service.client(
                "bob",
                audio: CallAudioDevices(
                    microphone: "null", speaker: "file:" + bobSpeaker, sampleRate: 16_000, voiceProcessing: false))
            await carol.start()
            let (call, incoming, bobLog) = try await ringingCall(from: alice, to: bob, "bob")
            try await incoming.call.answer()
            try await waitFor(incoming.call, .established)
            try await Task.sleep(for: .seconds(1))
            let waiting = try await carol.callUser("bob")
            let second = try #require(await bobLog.incomingCall(number: 2))
            try await waitFor(waiting, .ringing)
            try await Task.sleep(for: .milliseconds(1500))
            try await waiting.hangup()
            try await waitFor(second.call, .ended)
            try await Task.sleep(for: .milliseconds(500))
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            try await Task.sleep(for: .milliseconds(500))
            let heard = try HeardTones(file: bobSpeaker)
            print("call waiting: bob's call recording has \(heard.ringing) ringtone windows")
            #expect(
                heard.ringing >= 6,
                "the waiting call's ringtone was not mixed into bob's call (\(heard.ringing) windows)")
            #expect(heard.busy == 0)
            await alice.terminate()
            await carol.terminate()
            await bob.terminate()
        }
    }

    /// Hold reaches the media both ways: held by the callee (re-INVITE sendonly, our answer recvonly), the caller's
    /// LiveCall stops sending RTP until the resume.
    @Test func theCalleesHoldStopsTheCallersRTPUntilResumed() async throws {
        try await withService(sipPort: 26103) { service in
            // A tone the whole call long, so the microphones always have something to send.
            let tone = service.directory.appendingPathComponent("tone.wav").path
            let samples = (0..<16_000 * 10).map { Int16(8000 * sin(2 * Double.pi * 300 * Double($0) / 16_000)) }
            try WAVFile.write(pcm16: samples, format: AudioFormat(sampleRate: 16_000, channels: 1), to: tone)
            let devices = CallAudioDevices(
                microphone: "file:" + tone, speaker: "null", sampleRate: 16_000, voiceProcessing: false)
            let alice = try service.client("alice", audio: devices), bob = try service.client("bob", audio: devices)
            let (call, incoming, _) = try await ringingCall(from: alice, to: bob, "bob")
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await Task.sleep(for: .seconds(1))
            try await incoming.call.hold(true)
            try await Task.sleep(for: .seconds(2))
            try await incoming.call.hold(false)
            try await Task.sleep(for: .seconds(1))
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            try await Task.sleep(for: .milliseconds(300))
            let sent = try #require(await call.mediaReport, "no media report on alice's call").rtp.packetsSent
            let seconds = await call.details.duration.seconds
            print("hold: alice sent \(sent) RTP packets in a \(seconds) s call held 2 s")
            // 50 packets a second while not held: about half the call's worth.
            #expect(
                Double(sent) < seconds * 50 * 0.75, "alice kept sending while held: \(sent) packets in \(seconds) s")
            #expect(
                Double(sent) > seconds * 50 * 0.3,
                "alice did not send before the hold or after the resume: \(sent) packets in \(seconds) s")
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func theCalleesNoAnswerTimeoutEndsTheCallerWithNoAnswer() async throws {
        try await withService(sipPort: 26100) { service in
            let calleeClock = ManualClock()
            let alice = try service.client("alice")
            let bob = try service.client("bob", clock: calleeClock)
            let (call, incoming, _) = try await ringingCall(from: alice, to: bob, "bob")
            calleeClock.advance(by: .seconds(61))
            await bob.tickCalls()
            try await waitFor(incoming.call, .ended)
            #expect(await incoming.call.details.endCause == .noAnswer)
            try await waitFor(call, .ended)
            // The caller hears *no answer* (not a failure, no busy tone), with the callee's 480 kept.
            #expect(await call.details.endCause == .noAnswer)
            #expect(await call.details.error == .sip(status: 480, reason: "Temporarily Unavailable"))
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func devicesChosenBeforeACallAreTheOnesItUses() async throws {
        try await withService(sipPort: 26050) { service in
            let alice = try service.client("alice"), bob = try service.client("bob")
            let bobLog = EventLog(bob)
            await alice.start()
            await bob.startListening()
            let heard = service.directory.appendingPathComponent("bob-speaker.wav").path
            await bob.setAudioDevices(
                CallAudioDevices(
                    microphone: "null", speaker: "file:" + heard, sampleRate: 16_000, voiceProcessing: false))
            let call = try await alice.callUser("bob")
            let incoming = try #require(await bobLog.incomingCall())
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await Task.sleep(for: .seconds(2))
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            try await Task.sleep(for: .milliseconds(300))
            let file = try WAVFile.read(path: heard)
            #expect(file.frameCount > 16_000, "bob's chosen speaker got \(file.frameCount) frames in 2 s")
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func stopHangsUpALiveCallWithABye() async throws {
        try await withService(sipPort: 26052) { service in
            let alice = try service.client("alice"), bob = try service.client("bob")
            let bobLog = EventLog(bob)
            await alice.start()
            await bob.startListening()
            let call = try await alice.callUser("bob")
            let incoming = try #require(await bobLog.incomingCall())
            try await incoming.call.answer()
            try await waitFor(call, .established)
            await bob.stop()
            #expect(await incoming.call.details.endCause == .localHangup)
            try await waitFor(call, .ended)
            let details = await call.details
            #expect(details.endCause == .remoteHangup, "the caller did not get bob's BYE: \(details)")
            #expect(await bob.audioSession.state.phase.call == nil)
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func badTargetsAndHeadersAreRefusedBeforeAnyTraffic() async throws {
        try await withService(sipPort: 26044) { service in
            let alice = try service.client("alice")
            // Not started: checked first anyway.
            await #expect(throws: VoiceClientError.self) { try await alice.callUser("bob\u{7}") }
            await alice.start()
            for bad in ["+0461234", "46123", "+46 12a", "+1234567890123456"] {
                await #expect(throws: VoiceClientError.self, "\(bad)") { try await alice.callPhoneNumber(bad) }
            }
            await #expect(throws: VoiceClientError.self) {
                try await alice.callConference(String(repeating: "r", count: 65))
            }
            await #expect(throws: VoiceClientError.self) { try await alice.callSIP("no-at-sign") }
            do {
                _ = try await alice.callUser("bob", headers: ["Subject": "x"])
                Issue.record("a header without x- was accepted")
            } catch {
                #expect("\(error)".contains("must start with x-"), "\(error)")
            }
            do {
                _ = try await alice.callUser("bob", headers: ["X-Big": String(repeating: "v", count: 1100)])
                Issue.record("1100 bytes of headers were accepted")
            } catch {
                #expect("\(error)".contains("at most 1024"), "\(error)")
            }
            await alice.terminate()
        }
    }

    /// Over UDP the INVITE goes out and Timer B ends the call; over TLS the refused connection is an error of
    /// `callUser` itself: nothing was sent, no call was placed.
    @Test func unreachableServerEndsTheCallWithANetworkFailure() async throws {
        try await withService(sipPort: 26045) { service in
            let alice = try service.client("alice")
            await alice.start()
            service.stopKamailio()
            await #expect {
                _ = try await alice.callUser("bob")
            } throws: { error in
                if case .network(let reason) = error as? VoiceClientError {
                    reason.contains("Connection refused")
                } else {
                    false
                }
            }
            await alice.terminate()
        }
        try await withService(sipPort: 26046, insecure: true) { service in
            let alice = try service.client("alice")
            await alice.start()
            service.stopKamailio()
            let call = try await alice.callUser("bob")
            try await waitFor(call, .ended, timeout: .seconds(10))
            let details = await call.details
            #expect(details.endCause == .failure, "\(details)")
            if case .network = details.error {
            } else {
                Issue.record("the error is not in the network domain: \(String(describing: details.error))")
            }
            await alice.terminate()
        }
    }

    @Test func aRefreshThatFailsAfterStartRaisesRegistrationLost() async throws {
        try await withService(sipPort: 26048) { service in
            var configuration = service.configuration()
            configuration.registrationExpires = 2
            let alice = try VoiceClient(userID: "alice", configuration: configuration) { id in service.sign(id) }
            let log = EventLog(alice)
            await alice.start()
            #expect(await log.first { $0 == .started } != nil)
            service.stopKamailio()
            let lost = await log.first(timeout: .seconds(10)) { if case .registrationLost = $0 { true } else { false } }
            #expect(lost != nil, "no registrationLost event: \(log.events)")
            await alice.terminate()
        }
    }

    /// Credentials the client still holds valid but the service refuses (here the device's clock is an hour
    /// behind, the credentials live 2 s): the refused refresh raises registrationLost and asks the app to sign
    /// again at once instead of sending the dead credentials until the scheduled renewal.
    @Test func aRefusedRefreshAsksTheAppToSignAgain() async throws {
        try await withService(sipPort: 26104, credentialLifetime: 2) { service in
            var configuration = service.configuration()
            configuration.registrationExpires = 2
            let signatures = SignatureCount()
            let alice = try VoiceClient(
                userID: "alice", configuration: configuration, unixTime: { UInt64(Date().timeIntervalSince1970) - 3600 }
            ) { id in
                signatures.add()
                return service.sign(id)
            }
            let log = EventLog(alice)
            await alice.start()
            #expect(await log.first { $0 == .started } != nil)
            #expect(signatures.value == 1)
            let lost = await log.first(timeout: .seconds(10)) { if case .registrationLost = $0 { true } else { false } }
            #expect(lost != nil, "no registrationLost event: \(log.events)")
            let deadline = ContinuousClock.now + .seconds(3)
            while signatures.value < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(
                signatures.value == 2,
                "the app was asked to sign \(signatures.value) times; expected once more after the refused refresh")
            await alice.terminate()
        }
    }
}

/// How often a client asked the app to sign (the test's signing closure runs on the client's tasks).
final class SignatureCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Starts both clients, calls `calleeID` (the callee's user ID) and waits until the call rings at both ends.
func ringingCall(from caller: VoiceClient, to callee: VoiceClient, _ calleeID: String) async throws -> (
    call: Call, incoming: IncomingCall, calleeLog: EventLog
) {
    let calleeLog = EventLog(callee)
    await caller.start()
    await callee.startListening()
    let call = try await caller.callUser(calleeID)
    let incoming = try #require(await calleeLog.incomingCall(), "\(calleeID) got no call: \(calleeLog.events)")
    try await waitFor(call, .ringing)
    return (call, incoming, calleeLog)
}

/// Waits until `call` is in `state` (or fails the test with the state it is in).
func waitFor(_ call: Call, _ state: CallState, timeout: Duration = .seconds(10)) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        let now = await call.state
        if now == state || (now == .ended && state != .ended) { break }
        try await Task.sleep(for: .milliseconds(20))
    }
    let reached = await call.state
    let details = await call.details
    try #require(reached == state, "call \(call.id) is \(reached), not \(state): \(details)")
}

/// What an audio controller plays now: the RMS level of 200 ms it mixes into silence (as the playout path does).
/// Which call-progress tones a recorded speaker file holds, counted in 100 ms windows (Goertzel levels): the
/// US ringtone and ringback are 440 + 480 Hz, the busy tone 480 + 620 Hz.
struct HeardTones {
    let ringing: Int, busy: Int
    /// Per window: the 440 Hz and 620 Hz levels (dBFS), for the failure messages.
    let levels: [(Int, Int)]

    init(file path: String) throws {
        let wav = try WAVFile.read(path: path)
        let rate = wav.format.sampleRate
        let samples = wav.int16Samples.map { Float($0) / 32768 }
        var ringing = 0, busy = 0
        var levels: [(Int, Int)] = []
        for start in stride(from: 0, to: samples.count - rate / 10, by: rate / 10) {
            let window = Array(samples[start..<start + rate / 10])
            let at440 = SignalMetrics.toneLevelDBFS(window, frequency: 440, sampleRate: rate)
            let at620 = SignalMetrics.toneLevelDBFS(window, frequency: 620, sampleRate: rate)
            if at620 > -40 { busy += 1 } else if at440 > -40 { ringing += 1 }
            levels.append((Int(at440), Int(at620)))
        }
        self.levels = levels
        self.ringing = ringing
        self.busy = busy
    }
}

extension EventLog {
    /// The `number`-th incoming call (1-based), waiting for it.
    func incomingCall(number: Int = 1, timeout: Duration = .seconds(10)) async -> IncomingCall? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let calls = events.compactMap { if case .incomingCall(let call) = $0 { call } else { nil } }
            if calls.count >= number { return calls[number - 1] }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}
