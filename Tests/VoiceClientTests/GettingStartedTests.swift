import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

// The function of the GettingStarted article, copied verbatim (articleHoldsThisFunction checks that it is).
func sendGreeting(
    from userID: String, to friend: String, configuration: VoiceClientConfiguration,
    signRegistration: @escaping VoiceClient.SignRegistration
) async throws -> VoiceClientEvent? {
    let client = try VoiceClient(userID: userID, configuration: configuration, signRegistration: signRegistration)
    var events = client.events.makeAsyncIterator()
    await client.start()
    guard await events.next() == .started else {
        await client.terminate()
        return nil
    }
    let id = try await client.send(message: "Hello!", to: [friend], headers: ["X-Topic": "greeting"])
    var outcome: VoiceClientEvent?
    while outcome == nil, let event = await events.next() {
        switch event {
        case .messageDelivered(id, _, _), .messageStoredForLaterDelivery(id, _), .messageFailed(id, _, _, _):
            outcome = event
        default: continue
        }
    }
    await client.terminate()
    return outcome
}

// The push function of the GettingStarted article, copied verbatim (articleHoldsThePushFunction checks that it is).
func pushEveryDevice(
    _ event: VoiceClientEvent, send: (_ pushData: Data, _ payload: Data) async throws -> Void
) async throws -> [String] {
    guard case .shouldSendPushNotifications(_, let pushPairs) = event else { return [] }
    for pair in pushPairs {
        try await send(pair.pushData, pair.payload)  // through your push service, to the device pushData names
    }
    return pushPairs.map(\.deviceID)
}

// The call function of the GettingStarted article, copied verbatim (articleHoldsTheCallFunction checks that it is).
func callFriend(_ friend: String, on client: VoiceClient, talkFor seconds: Int) async throws
    -> (details: CallDetails, worstQuality: NetworkQuality?)
{
    let call = try await client.callUser(friend, headers: ["X-Topic": "dinner"])
    var worst: NetworkQuality?
    for await update in call.updates {
        switch update {
        case .stateChanged(.established):
            Task {
                try await Task.sleep(for: .seconds(seconds))
                try await call.hangup()
            }
        case .qualityUpdated(let quality):
            // Below .fair, show "poor connection"; quality also has loss, jitter, RTT and an estimated MOS.
            worst = min(worst ?? quality.networkQuality, quality.networkQuality)
        default:
            continue
        }
    }
    return (await call.details, worst)
}

// The call-waiting functions of the GettingStarted article, copied verbatim (articleHoldsTheCallWaitingFunctions
// checks that they are; ClientCallWaitingTests runs them against baresip).
func answerWaiting(_ waiting: Call, holding active: Call) async throws {
    try await active.hold(true)
    try await waiting.answer()
}

func swap(talking: Call, held: Call) async throws {
    try await talking.hold(true)
    try await held.hold(false)
}

/// The client article's code compiles and works against the real service. Port 26016.
@Suite(
    "The VoiceClient getting-started article", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)))
struct ClientGettingStartedTests {
    @Test func articleHoldsThisFunction() throws { try expectVerbatimInThisFile(articleFunction("func sendGreeting(")) }

    @Test func articleHoldsTheCallFunction() throws {
        try expectVerbatimInThisFile(articleFunction("func callFriend("))
    }

    @Test func articleHoldsThePushFunction() throws {
        try expectVerbatimInThisFile(articleFunction("func pushEveryDevice("))
    }

    @Test func articleHoldsTheCallWaitingFunctions() throws {
        try expectVerbatimInThisFile(articleFunction("func answerWaiting("))
        try expectVerbatimInThisFile(articleFunction("func swap(talking: Call, held: Call)"))
    }

    /// The article's function that starts with `signature`, through its closing brace.
    func articleFunction(_ signature: String) throws -> String {
        let article = try String(
            contentsOf: repositoryRoot.appendingPathComponent("Sources/VoiceClient/VoiceClient.docc/GettingStarted.md"),
            encoding: .utf8)
        let start = try #require(article.range(of: signature), "the article has no \(signature)")
        let function = article[start.lowerBound...]
        return String(function[..<(try #require(function.range(of: "\n}\n")).upperBound)])
    }

    func expectVerbatimInThisFile(_ code: String) throws {
        let test = try String(contentsOfFile: #filePath, encoding: .utf8)
        #expect(test.contains(code), "this file does not hold the article's code verbatim:\n\(code)")
    }

    @Test(.enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
    func articleCallFunctionTalksAndHangsUp() async throws {
        try await withService(sipPort: 26018) { service in
            let alice = try service.client("alice"), bob = try service.client("bob")
            let bobEvents = bob.events
            Task {
                for await event in bobEvents {
                    if case .incomingCall(let incoming) = event { try await incoming.call.answer() }
                }
            }
            await alice.start()
            await bob.startListening()
            let (details, worst) = try await callFriend("bob", on: alice, talkFor: 3)
            #expect(details.endCause == .localHangup && details.duration >= .seconds(3), "\(details)")
            // A quality report every 2 s; on loopback every one is good.
            #expect(worst == .good)
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test(.enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
    func articlePushFunctionPushesEveryDeviceOfAnOfflineRecipient() async throws {
        try await withService(sipPort: 26017) { service in
            let tokens = ["phone": Data("token-of-bobs-phone".utf8), "tablet": Data("token-of-bobs-tablet".utf8)]
            var devices: [VoiceClient] = []
            for (device, token) in tokens {
                var configuration = service.configuration(pushData: token)
                configuration.deviceID = device
                let bob = try service.client("bob", configuration: configuration)
                await bob.start()
                await bob.stop()
                devices.append(bob)
            }
            let alice = try service.client("alice")
            var events = alice.events.makeAsyncIterator()
            await alice.start()
            let id = try await alice.send(message: "Call me", to: ["bob"])
            var pushed: [Data: Data] = [:]
            var pushedDevices: [String] = []
            while pushedDevices.isEmpty, let event = await events.next() {
                pushedDevices = try await pushEveryDevice(event) { pushData, payload in pushed[pushData] = payload }
            }
            #expect(Set(pushedDevices) == ["phone", "tablet"])
            #expect(Set(pushed.keys) == Set(tokens.values))
            for payload in pushed.values { #expect(try PushPayload.parse(payload).id == id) }
            await alice.terminate()
            for bob in devices { await bob.terminate() }
        }
    }

    @Test(.enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
    func articleFunctionDeliversAGreeting() async throws {
        try await withService(sipPort: 26016) { service in
            let bob = try service.client("bob")
            let bobEvents = EventLog(bob)
            await bob.start()
            #expect(await bobEvents.first { $0 == .started } != nil)
            let outcome = try await sendGreeting(from: "alice", to: "bob", configuration: service.configuration()) {
                service.sign($0)
            }
            guard case .messageDelivered(_, "bob", _) = outcome else {
                Issue.record("\(String(describing: outcome))")
                return
            }
            #expect(await bobEvents.firstMessage()?.text == "Hello!")
            // To someone offline: stored by the service.
            let stored = try await sendGreeting(from: "alice", to: "carol", configuration: service.configuration()) {
                service.sign($0)
            }
            guard case .messageStoredForLaterDelivery(_, "carol") = stored else {
                Issue.record("\(String(describing: stored))")
                return
            }
            await bob.terminate()
        }
    }
}
