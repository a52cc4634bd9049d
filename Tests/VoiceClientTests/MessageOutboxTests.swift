import Testing
import VoiceClient

@Suite("Message outbox: the 12-hour retry rule on a manual clock")
struct MessageOutboxTests {
    func message(at time: MediaTime) -> OutgoingMessage {
        OutgoingMessage(
            id: "m1", recipient: "bob", text: "hi", headers: [], firstAttempt: time, nextAttempt: time, attempts: 0)
    }

    @Test func unsentMessageIsRetriedWithGrowingIntervalsForTwelveHoursThenFails() {
        var outbox = MessageOutbox()
        let start = MediaTime.seconds(100)
        outbox.add(message(at: start))
        var now = start
        var intervals: [Double] = []
        var final: MessageFinalOutcome?
        var attempts = 0
        while final == nil {
            #expect(outbox.due(at: now).count == 1)
            attempts += 1
            final = outbox.record(.unsent(reason: "503 Service Unavailable"), for: "m1", recipient: "bob", at: now)
            guard final == nil, let next = outbox.nextDeadline else { break }
            // Not due before its time.
            #expect(outbox.due(at: next - .milliseconds(1)).isEmpty)
            intervals.append((next - now).seconds)
            now = next
        }
        #expect(Array(intervals.prefix(4)) == [5, 10, 20, 40])
        #expect(intervals.max() == 600)
        // The last attempt is exactly at 12 hours, and its failure is final.
        #expect(now - start == .seconds(12 * 3600))
        guard case .failed(let reason, let status) = final else {
            Issue.record("no final failure: \(String(describing: final))")
            return
        }
        #expect(reason.contains("12 hours") && reason.contains("503"))
        #expect(status == nil)
        #expect(outbox.pending.isEmpty)
        #expect(attempts > 70 && attempts < 90, "\(attempts) attempts")
    }

    @Test func deliveredAfterRetriesStopsRetrying() {
        var outbox = MessageOutbox()
        outbox.add(message(at: .zero))
        #expect(outbox.record(.unsent(reason: "timeout"), for: "m1", recipient: "bob", at: .zero) == nil)
        #expect(outbox.record(.unsent(reason: "timeout"), for: "m1", recipient: "bob", at: .seconds(5)) == nil)
        #expect(outbox.record(.delivered, for: "m1", recipient: "bob", at: .seconds(15)) == .delivered)
        #expect(outbox.pending.isEmpty)
    }

    @Test(arguments: [
        (200, MessageAttemptOutcome.delivered), (202, .storedForLaterDelivery),
        (404, .refused(status: 404, reason: "Not Found")),
        (403, .refused(status: 403, reason: "Not Found")), (408, .unsent(reason: "408 Not Found")),
        (480, .unsent(reason: "480 Not Found")),
        (503, .unsent(reason: "503 Not Found")), (603, .refused(status: 603, reason: "Not Found"))
    ])
    func finalResponsesAreClassified(status: Int, expected: MessageAttemptOutcome) {
        #expect(MessageAttemptOutcome.classify(status: status, reason: "Not Found") == expected)
    }

    @Test func refusedFailsAtOnceWithItsStatus() {
        var outbox = MessageOutbox()
        outbox.add(message(at: .zero))
        #expect(
            outbox.record(.refused(status: 404, reason: "Not Found"), for: "m1", recipient: "bob", at: .zero)
                == .failed(reason: "404 Not Found", sipStatus: 404))
    }
}
