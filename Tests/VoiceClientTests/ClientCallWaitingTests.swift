import Foundation
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// Call waiting and device switching through Kamailio with baresip as the far ends: a second call answered while
/// the first is held, swapped back and forth, each one's speech heard on the active call after every swap; and
/// a running call moved to other devices without dropping it. Ports 26230–26239.
@Suite(
    "VoiceClient call waiting and device switching", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"),
    .enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"))
struct ClientCallWaitingTests {
    static let speech = ClientPeerCallTests.speech
    static let baresipSpeech = ClientPeerCallTests.baresipSpeech
    /// How long each call talks before the next swap: enough speech for ``SpeechMatch`` to line up.
    static let talk: Duration = .seconds(5)

    @Test func aSecondCallIsAnsweredWhileTheFirstIsHeldAndTheTwoAreSwapped() async throws {
        try await withService(sipPort: 26230) { service in
            let directory = service.directory
            let heardFromFirst = directory.appendingPathComponent("heard-first.wav").path
            let heardFromSecond = directory.appendingPathComponent("heard-second.wav").path
            let alice = try service.client("alice", audio: Self.devices(hearingInto: heardFromFirst))
            let events = EventLog(alice)
            await alice.start()

            try await withBaresipCaller("bob", port: 26231, calling: "alice", service: service) { _, _ in
                let first = try await Self.incomingCall(from: "bob", in: events)
                try await first.answer()
                try await waitFor(first, .established)
                try await Task.sleep(for: Self.talk)

                // The second call's media opens these devices when it is established.
                await alice.setAudioDevices(Self.devices(hearingInto: heardFromSecond))
                try await withBaresipCaller("carol", port: 26236, calling: "alice", service: service) { _, _ in
                    let second = try await Self.incomingCall(from: "carol", in: events)
                    // CallKit's hold-and-answer: answering while the first call talks is refused.
                    await #expect(throws: CallRefusal.self) { try await second.answer() }
                    // The article's hold-and-answer (GettingStartedTests).
                    try await answerWaiting(second, holding: first)
                    // Held, the first call's media left the devices (just after hold returned): its speaker file is
                    // closed and holds what bob said before the hold.
                    try await Task.sleep(for: .seconds(1))
                    try Self.expectSpeech(in: heardFromFirst, "bob before the hold")
                    try await waitFor(second, .established)
                    try await Task.sleep(for: Self.talk)

                    // Swap: the first call back, the second held; resuming the first while the second talks is refused.
                    await #expect(throws: CallRefusal.self) { try await first.hold(false) }
                    try await swap(talking: second, held: first)
                    try await Task.sleep(for: .seconds(1))
                    try Self.expectSpeech(in: heardFromSecond, "carol while bob was held")
                    try await Task.sleep(for: Self.talk)

                    // Ending the active call resumes nothing: the second stays held until the app resumes it.
                    try await first.hangup()
                    try await Task.sleep(for: .milliseconds(500))
                    try Self.expectSpeech(in: heardFromFirst, "bob after the swap back")
                    #expect(await second.state == .established)
                    #expect(await second.isOnHold, "ending the first call resumed the second")
                    try await second.hold(false)
                    try await Task.sleep(for: Self.talk)
                    try await second.hangup()
                    try await Task.sleep(for: .milliseconds(500))
                    try Self.expectSpeech(in: heardFromSecond, "carol after she was resumed")
                    #expect(await first.details.endCause == .localHangup)
                    #expect(await second.details.endCause == .localHangup)
                    // Each call's audio-session report is there, also for the one that was held in between.
                    #expect(await first.details.report != nil)
                    #expect(await second.details.report != nil)
                }
            }
            await alice.terminate()
        }
    }

    @Test func aRunningCallMovesToOtherDevicesWithoutDropping() async throws {
        try await withService(sipPort: 26234) { service in
            try await ClientPeerCallTests().withBaresip(port: 26235, in: service.directory) { directory, _ in
                let before = directory.appendingPathComponent("heard-before.wav").path
                let after = directory.appendingPathComponent("heard-after.wav").path
                let alice = try service.client("alice", audio: Self.devices(hearingInto: before))
                await alice.start()
                let call = try await alice.callSIP("b@127.0.0.1:26235")
                try await waitFor(call, .established)
                try await Task.sleep(for: Self.talk)

                try await call.setAudioDevices(Self.devices(hearingInto: after))
                // The old speaker file is closed by the move and holds the speech heard until then.
                try Self.expectSpeech(in: before, "baresip before the move")
                try await Task.sleep(for: Self.talk)

                // A device that does not exist: refused, and the call goes on on the devices it had.
                await #expect(throws: CallDeviceError.self) {
                    try await call.setAudioDevices(
                        CallAudioDevices(microphone: "hw:97,0", speaker: "hw:97,0", voiceProcessing: false))
                }
                // Back on them, a `file:` speaker is written afresh: it holds what is heard from now.
                try await Task.sleep(for: Self.talk)
                #expect(await call.state == .established)
                try await call.hangup()
                try await Task.sleep(for: .milliseconds(500))
                try Self.expectSpeech(in: after, "baresip after the move")
                #expect(await call.details.endCause == .localHangup)
                // Each move starts the client's file microphone afresh: the last 4 s baresip heard are the start of
                // the speech, sent from the devices the call ended on.
                let heardByBaresip = SpeechMatch.median(
                    sent: try WAVFile.read(path: Self.speech).int16Samples,
                    heard: Array(try BaresipPeer.heard(in: directory).suffix(4 * 16_000)))
                print("device switch: baresip heard the client \(heardByBaresip)")
                #expect(heardByBaresip > 0.5, "baresip did not hear the client across the move (\(heardByBaresip))")
                await alice.terminate()
            }
        }
    }

    static func devices(hearingInto speaker: String) -> CallAudioDevices {
        CallAudioDevices(microphone: "file:" + speech, speaker: "file:" + speaker, voiceProcessing: false)
    }

    static func incomingCall(from caller: String, in events: EventLog) async throws -> Call {
        let event = await events.first(timeout: .seconds(15)) {
            if case .incomingCall(let incoming) = $0 { incoming.caller == caller } else { false }
        }
        guard case .incomingCall(let incoming) = event else {
            throw CallWaitingTestError.noIncomingCall(caller)
        }
        return incoming.call
    }

    /// Whether a speaker file holds baresip's speech.
    static func expectSpeech(in path: String, _ what: String) throws {
        let heard = try WAVFile.read(path: path).int16Samples
        let sent = try WAVFile.read(path: baresipSpeech).int16Samples
        // baresip loops its speech from its own start, long before a later stretch of the call begins. Aligned
        // again every 2 s: media reopened on other devices starts a new jitter buffer, whose delay may still grow
        // in steps while a loaded machine delivers bursts, which one alignment for the whole file scores as not
        // heard.
        // A 2 s piece's own coarse alignment can also lock onto the wrong place (a 5 s recording scored 0.36 aligned
        // piece by piece and 0.96 aligned whole): the speech is heard when either alignment finds it.
        var match = SpeechMatch.piecewiseMedian(sent: sent, heard: heard, maximumOffsetSeconds: 30)
        let peak = heard.lazy.map { abs(Int($0)) }.max() ?? 0
        print("call waiting: \(what): piecewise median correlation \(match) (\(heard.count) samples, peak \(peak))")
        if match <= 0.5 {
            let single = SpeechMatch.median(sent: sent, heard: heard, maximumOffsetSeconds: 30)
            print("call waiting: \(what): one alignment for the whole recording scores \(single)")
            match = max(match, single)
        }
        if match <= 0.5 {
            // Keeps the recording (the service's directory is removed) for a look at what was heard instead.
            let kept = FileManager.default.temporaryDirectory.appendingPathComponent(
                "call-waiting-\(getpid())-\(URL(fileURLWithPath: path).lastPathComponent)")
            try? FileManager.default.removeItem(at: kept)
            try? FileManager.default.copyItem(at: URL(fileURLWithPath: path), to: kept)
            print("call waiting: \(what): recording kept at \(kept.path)")
        }
        #expect(match > 0.5, "\(what) was not heard (\(match))")
    }
}

enum CallWaitingTestError: Error { case noIncomingCall(String) }

/// baresip as a caller of the service: an account of `user` in the service's domain with ephemeral credentials
/// (auth_user/auth_pass), Kamailio as its outbound proxy, dialing `callee` as soon as it runs, speech as its
/// microphone, DTLS-SRTP keyed.
func withBaresipCaller(
    _ user: String, port: Int, calling callee: String, service: ServiceHarness,
    _ body: (URL, ChildProcessGroup) async throws -> Void
) async throws {
    let directory = service.directory.appendingPathComponent("baresip-\(user)-\(port)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    // baresip hangs up when its microphone file ends: long enough for the slowest run of the longest test.
    let microphone = try BaresipPeer.repeated(ClientPeerCallTests.baresipSpeech, seconds: 150, into: directory)
    var arguments = try BaresipPeer.configure(
        directory: directory, port: port, user: user, microphone: microphone, seconds: 180,
        mediaEncryption: "dtls_srtp")
    let grant = EphemeralCredentialIssuer(
        sharedSecret: service.sharedSecret, lifetime: 3600, domain: "voiceengine.test"
    )
    .issue(userID: user, now: UInt64(Date().timeIntervalSince1970))
    try """
    <sip:\(user)@voiceengine.test>;auth_user=\(grant.username);auth_pass=\(grant.password);\
    outbound="sip:127.0.0.1:\(service.sipPort)";regint=0;mediaenc=dtls_srtp;audio_codecs=opus;answermode=manual

    """.write(to: directory.appendingPathComponent("accounts"), atomically: true, encoding: .utf8)
    arguments += ["-e", "/dial sip:\(callee)@voiceengine.test"]
    let baresip = try ChildProcessGroup(
        BaresipPeer.executable, arguments, log: directory.appendingPathComponent("baresip.log"))
    defer { baresip.stop() }
    guard await waitUntilUDPBound(port) else { try Test.cancel("baresip did not start:\n\(baresip.logTail)") }
    do { try await body(directory, baresip) } catch {
        Issue.record("\(error); baresip \(user)'s log:\n\(baresip.logTail)")
        throw error
    }
}
