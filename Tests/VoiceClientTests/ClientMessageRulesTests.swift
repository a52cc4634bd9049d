import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// The SDKs' message rules against the repository's service (Kamailio with msilo, the registration service): a
/// message shows as sent on every device of its sender, incoming messages carry their recipients and the
/// service's time, and a message kept for an offline recipient is reported delivered when it reaches them — to
/// the sender online, or after the sender's client restarted. The clients' wall clocks run 10 minutes late, so a
/// time within seconds of the real one can only be the service's. Ports 26500–26509.
@Suite(
    "Message rules: sent on every device, recipients, the service's times, late delivery",
    .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ClientMessageRulesTests {
    /// A client of `service` whose wall clock runs 10 minutes late.
    func lateClient(_ user: String, device: String, on service: ServiceHarness) throws -> VoiceClient {
        var configuration = service.configuration()
        configuration.deviceID = device
        configuration.audio = CallAudioDevices(
            microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
        return try VoiceClient(
            userID: user, configuration: configuration, unixTime: { UInt64(Date().timeIntervalSince1970) - 600 }
        ) { [service] id in service.sign(id) }
    }

    /// Whether `time` is the service's clock around now (the clients' clocks are 600 s late).
    func isServiceTime(_ time: Date, from start: Date) -> Bool {
        time >= start.addingTimeInterval(-1) && time <= Date().addingTimeInterval(1)
    }

    @Test func sentMessageShowsOnTheSendersOtherDeviceAndArrivesWithRecipientsAndTheServicesTime() async throws {
        try await withService(sipPort: 26500) { service in
            let phone = try lateClient("alice", device: "phone", on: service)
            let tablet = try lateClient("alice", device: "tablet", on: service)
            let bob = try lateClient("bob", device: "bob-phone", on: service)
            let phoneEvents = EventLog(phone), tabletEvents = EventLog(tablet), bobEvents = EventLog(bob)
            for client in [phone, tablet, bob] { await client.start() }
            for log in [phoneEvents, tabletEvents, bobEvents] {
                #expect(await log.first { $0 == .started } != nil, "\(log.events)")
            }
            let start = Date()
            let id = try await phone.send(message: "dinner?", to: ["bob", "carol"], headers: ["X-Topic": "food"])

            // Bob: the recipients and the time the service accepted it.
            guard let message = await bobEvents.firstMessage() else {
                Issue.record("bob got nothing: \(bobEvents.events)")
                return
            }
            #expect(message.id == id && message.sender == "alice" && message.text == "dinner?")
            #expect(message.recipients == ["bob", "carol"])
            #expect(isServiceTime(message.timestamp, from: start), "\(message.timestamp) vs \(start)")
            #expect(message.headers == ["X-Topic": "food"])

            // The phone: delivered to bob at the service's time, stored for carol, sent once from this device.
            let delivered = await phoneEvents.first { $0.isDelivery(of: id, to: "bob") }
            guard case .messageDelivered(_, _, let deliveredAt) = delivered else {
                Issue.record("no delivery: \(phoneEvents.events)")
                return
            }
            #expect(isServiceTime(deliveredAt, from: start), "\(deliveredAt) vs \(start)")
            #expect(
                await phoneEvents.first { $0 == .messageStoredForLaterDelivery(id: id, recipient: "carol") } != nil)
            let sentHere = await phoneEvents.first {
                if case .messageSent(let sent) = $0 { sent.id == id } else { false }
            }
            guard case .messageSent(let sent) = sentHere else {
                Issue.record("not reported sent on the phone: \(phoneEvents.events)")
                return
            }
            #expect(sent.fromThisDevice && sent.recipients == ["bob", "carol"] && sent.text == "dinner?")
            #expect(isServiceTime(sent.timestamp, from: start))

            // The tablet: the same message, sent from another device, with the service's time.
            let sentThere = await tabletEvents.first {
                if case .messageSent(let sent) = $0 { sent.id == id } else { false }
            }
            guard case .messageSent(let copy) = sentThere else {
                Issue.record("not reported sent on the tablet: \(tabletEvents.events)")
                return
            }
            #expect(!copy.fromThisDevice && copy.recipients == ["bob", "carol"] && copy.text == "dinner?")
            #expect(copy.headers == ["X-Topic": "food"])
            #expect(isServiceTime(copy.timestamp, from: start), "\(copy.timestamp) vs \(start)")
            // The phone drops its own copy; the tablet did not take the copy for a message to it.
            try await Task.sleep(for: .milliseconds(500))
            let phoneSent = phoneEvents.events.filter { if case .messageSent = $0 { true } else { false } }
            #expect(phoneSent.count == 1, "\(phoneSent)")
            #expect(tabletEvents.messages.isEmpty, "\(tabletEvents.messages)")

            for client in [phone, tablet, bob] { await client.terminate() }
        }
    }

    @Test func storedMessageIsReportedDeliveredWhenTheRecipientComesOnlineAlsoAfterTheSenderRestarted() async throws {
        try await withService(sipPort: 26502) { service in
            let alice = try lateClient("alice", device: "phone", on: service)
            let aliceEvents = EventLog(alice)
            await alice.start()
            #expect(await aliceEvents.first { $0 == .started } != nil, "\(aliceEvents.events)")

            // Bob is offline: the service keeps the message.
            let storedAt = Date()
            let first = try await alice.send(message: "first while away", to: ["bob"])
            #expect(
                await aliceEvents.first { $0 == .messageStoredForLaterDelivery(id: first, recipient: "bob") } != nil,
                "\(aliceEvents.events)")
            #expect(!aliceEvents.events.contains { $0.isDelivery(of: first, to: "bob") })
            try await Task.sleep(for: .seconds(2))

            // Bob comes online: the message arrives with the time it was accepted, and Alice (online) hears of
            // its delivery with the time it reached Bob.
            let bob = try lateClient("bob", device: "bob-phone", on: service)
            let bobEvents = EventLog(bob)
            let onlineAt = Date()
            await bob.start()
            guard let message = await bobEvents.firstMessage() else {
                Issue.record("msilo delivered nothing: \(bobEvents.events)\n\(service.kamailio?.logTail ?? "")")
                return
            }
            #expect(message.id == first && message.recipients == ["bob"])
            #expect(
                isServiceTime(message.timestamp, from: storedAt) && message.timestamp < onlineAt.addingTimeInterval(-1))
            let late = await aliceEvents.first { $0.isDelivery(of: first, to: "bob") }
            guard case .messageDelivered(_, _, let deliveredAt) = late else {
                Issue.record("no late delivery: \(aliceEvents.events)\n\(service.kamailio?.logTail ?? "")")
                return
            }
            #expect(isServiceTime(deliveredAt, from: onlineAt.addingTimeInterval(-1)), "\(deliveredAt)")
            await bob.terminate()

            // Again, but Alice's app exits before Bob comes online: the notification waits for her next run.
            let second = try await alice.send(message: "second while away", to: ["bob"])
            #expect(
                await aliceEvents.first { $0 == .messageStoredForLaterDelivery(id: second, recipient: "bob") } != nil)
            await alice.terminate()
            let bobAgain = try lateClient("bob", device: "bob-phone", on: service)
            let bobAgainEvents = EventLog(bobAgain)
            let secondOnlineAt = Date()
            await bobAgain.start()
            #expect(await bobAgainEvents.firstMessage()?.id == second, "\(bobAgainEvents.events)")
            try await Task.sleep(for: .milliseconds(500))

            let restarted = try lateClient("alice", device: "phone", on: service)
            let restartedEvents = EventLog(restarted)
            await restarted.start()
            let afterRestart = await restartedEvents.first { $0.isDelivery(of: second, to: "bob") }
            guard case .messageDelivered(_, _, let secondDeliveredAt) = afterRestart else {
                Issue.record("no delivery after the restart: \(restartedEvents.events)")
                return
            }
            #expect(isServiceTime(secondDeliveredAt, from: secondOnlineAt.addingTimeInterval(-1)))
            // Reported once, and the first message's notification is not repeated.
            try await Task.sleep(for: .milliseconds(500))
            #expect(restartedEvents.events.filter { $0.isDelivery(of: second, to: "bob") }.count == 1)
            #expect(!restartedEvents.events.contains { $0.isDelivery(of: first, to: "bob") })
            await restarted.terminate()
            await bobAgain.terminate()
        }
    }

    /// msilo sends a stored message with about 980 bytes of headers at most: the service keeps the custom
    /// headers and the message ID first, the recipient list when it still fits (else the recipient reads itself as
    /// the only one), and refuses to store custom headers too large for that (413: the message fails at once
    /// rather than being retried for 12 hours).
    @Test func storedMessageWithLargeCustomHeadersKeepsThemAndItsID() async throws {
        try await withService(sipPort: 26504) { service in
            let alice = try lateClient("alice", device: "phone", on: service)
            let aliceEvents = EventLog(alice)
            await alice.start()
            #expect(await aliceEvents.first { $0 == .started } != nil, "\(aliceEvents.events)")
            let big = String(repeating: "v", count: 850)
            let others = (1...6).map { "a-rather-long-user-name-\($0)" }
            let id = try await alice.send(message: "big", to: ["bob"] + others, headers: ["X-Big": big])
            #expect(
                await aliceEvents.first { $0 == .messageStoredForLaterDelivery(id: id, recipient: "bob") } != nil,
                "\(aliceEvents.events)")
            let bob = try lateClient("bob", device: "bob-phone", on: service)
            let bobEvents = EventLog(bob)
            await bob.start()
            guard let message = await bobEvents.firstMessage() else {
                Issue.record("msilo delivered nothing: \(bobEvents.events)\n\(service.kamailio?.logTail ?? "")")
                return
            }
            #expect(message.id == id && message.headers["X-Big"] == big)
            #expect(message.recipients == ["bob"])
            #expect(await aliceEvents.first { $0.isDelivery(of: id, to: "bob") } != nil, "\(aliceEvents.events)")
            await bob.terminate()

            let tooBig = try await alice.send(
                message: "too big", to: ["bob"], headers: ["X-Big": String(repeating: "w", count: 1000)])
            let refused = await aliceEvents.first {
                if case .messageFailed(tooBig, "bob", _, 413) = $0 { true } else { false }
            }
            #expect(refused != nil, "\(aliceEvents.events)")
            await alice.terminate()
        }
    }
}
