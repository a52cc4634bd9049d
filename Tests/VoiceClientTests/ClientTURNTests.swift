import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// Calls whose registration grants name a TURN server (coturn on loopback, port 28878, relay ports 28900–28999;
/// SIP ports 26410–26419): the client gathers its relayed candidate from it with the grant's credentials, and a
/// server that refuses them fails the placed call with a typed error before anything is sent; a SIP peer without ICE
/// (baresip) gets its media through the relayed address the offer names.
@Suite(
    "VoiceClient calls with the service's TURN server", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: TURNServerProcess.isInstalled, "coturn is not installed (make test-deps installs it)"))
struct ClientTURNTests {
    static func startTURN(secret: String) async throws -> TURNServerProcess {
        let server = try TURNServerProcess(port: 28878, relayPorts: 28900...28999, secret: secret)
        guard await server.waitUntilListening() else {
            server.stop()
            throw TURNStartFailure(log: server.logTail)
        }
        return server
    }

    /// coturn checks the grants with another secret than the service's: the allocation is refused (401) and
    /// `callUser` throws `.turnRefused` saying so; the callee never hears of the call.
    @Test func refusedTURNCredentialsFailThePlacedCallWithATypedError() async throws {
        let turn = try await Self.startTURN(secret: "a secret the service does not share")
        defer { turn.stop() }
        try await withService(sipPort: 26410, prepare: { $0.iceServerURLs = [turn.url] }) { service in
            let alice = try service.client("alice")
            let bob = try service.client("bob")
            let bobLog = EventLog(bob)
            await alice.start()
            await bob.startListening()
            do {
                let call = try await alice.callUser("bob")
                Issue.record("the call was placed (\(await call.state)) although the TURN server refused")
            } catch let error as VoiceClientError {
                if case .turnRefused(let refusal) = error {
                    #expect(refusal.code == 401, "\(refusal)")
                    #expect(refusal.server == "127.0.0.1:28878")
                    #expect(error.description.contains("refused the allocation: 401"), "\(error)")
                } else {
                    Issue.record("expected turnRefused, got \(error)")
                }
            }
            #expect(await bobLog.incomingCall(timeout: .seconds(1)) == nil)
            await alice.terminate()
            await bob.terminate()
        }
    }

    /// With coturn sharing the service's secret the grants' credentials are accepted: a call between two clients
    /// is established and both sides' media run.
    @Test func aCallWithTheGrantsTURNServerIsEstablished() async throws {
        try await withService(sipPort: 26412, prepare: { $0.iceServerURLs = ["turn:127.0.0.1:28878"] }) { service in
            let turn = try await Self.startTURN(secret: service.sharedSecret)
            defer { turn.stop() }
            let alice = try service.client("alice")
            let bob = try service.client("bob")
            let bobLog = EventLog(bob)
            await alice.start()
            await bob.startListening()
            let call = try await alice.callUser("bob")
            let incoming = try #require(await bobLog.incomingCall())
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await waitFor(incoming.call, .established)
            #expect(await call.state == .established)
            #expect(await incoming.call.state == .established)
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            await alice.terminate()
            await bob.terminate()
        }
    }

    /// A SIP peer without ICE (baresip, no `ice` module) called by a client whose grant names the TURN server: the
    /// offer's c=/m= is the client's relayed candidate, baresip sends its media there, and the client's media
    /// reaches baresip's c=/m= through the relay too (a channel to it); speech is heard both ways.
    @Test(
        .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"),
        .enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"))
    func aPeerWithoutICEGetsItsMediaThroughTheRelayedAddressInTheOffer() async throws {
        try await withService(sipPort: 26414, prepare: { $0.iceServerURLs = ["turn:127.0.0.1:28878"] }) { service in
            let turn = try await Self.startTURN(secret: service.sharedSecret)
            defer { turn.stop() }
            try await ClientPeerCallTests().withBaresip(port: 26415, in: service.directory) { directory, baresip in
                let heardPath = directory.appendingPathComponent("alice-heard.wav").path
                let alice = try service.client(
                    "alice",
                    audio: CallAudioDevices(
                        microphone: "file:" + ClientPeerCallTests.speech, speaker: "file:" + heardPath,
                        voiceProcessing: false))
                await alice.start()
                let call = try await alice.callSIP("b@127.0.0.1:26415")
                try await waitFor(call, .established)
                try await Task.sleep(for: .seconds(6))
                try await call.hangup()
                await alice.terminate()
                try await Task.sleep(for: .milliseconds(500))

                // baresip sends only to the offer's c=/m=, and the client's media goes nowhere but through the relay
                // (the call fails when the channel to baresip is not confirmed).
                let log = try String(contentsOf: baresip.log, encoding: .utf8)
                let lines = log.split(whereSeparator: \.isNewline)
                let offeredPorts = lines.compactMap { line -> Int? in
                    let fields = line.split(whereSeparator: \.isWhitespace)
                    guard fields.count > 1, fields[0] == "m=audio" else { return nil }
                    return Int(fields[1])
                }
                let relayPorts = 28900...28999
                #expect(
                    offeredPorts.contains { relayPorts.contains($0) },
                    "no m=audio in baresip's trace names a relay port: \(offeredPorts)")
                let toAlice = SpeechMatch.median(
                    sent: try WAVFile.read(path: ClientPeerCallTests.baresipSpeech).int16Samples,
                    heard: try WAVFile.read(path: heardPath).int16Samples)
                let toBaresip = SpeechMatch.median(
                    sent: try WAVFile.read(path: ClientPeerCallTests.speech).int16Samples,
                    heard: try BaresipPeer.heard(in: directory))
                print(
                    "client ↔ baresip without ICE through the relay: speech match to the client \(toAlice), to baresip "
                        + "\(toBaresip)")
                #expect(toAlice > 0.5, "the client did not hear baresip (\(toAlice))")
                #expect(toBaresip > 0.5, "baresip did not hear the client (\(toBaresip))")
            }
        }
    }
}

struct TURNStartFailure: Error, CustomStringConvertible {
    let log: String
    var description: String { "coturn did not start:\n\(log)" }
}
