import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// A phone-number call through the service to a gateway that offers only PCMA, with an IVR behind it: the client's
/// `callPhoneNumber` goes over TLS to Kamailio, which routes the E.164 number to its GATEWAY; SIPp stands in for
/// the gateway (Tests/VoiceSIPTests/Peers/sipp/uas-gateway-pcma-ivr.xml), answers PCMA with SDES-SRTP and no
/// telephone-event (as many trunks do), so the client sends its keys as SIP INFO; the IVR waits for each key and
/// answers it with an INFO of its own, which the app sees as a key on its call before it sends the next one.
/// Ports 26160–26161, SIPp's media 28260.
@Suite(
    "A phone-number call to a PCMA gateway with an IVR", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sipp"),
        "sipp is not installed (make test-deps installs sip-tester)"))
struct ClientGatewayIVRTests {
    static let scenario = repositoryRoot.appendingPathComponent(
        "Tests/VoiceSIPTests/Peers/sipp/uas-gateway-pcma-ivr.xml")

    @Test func keysReachTheIVRDigitByDigitAndItsAnswersReachTheApp() async throws {
        try await withService(sipPort: 26160, gateway: "sip:127.0.0.1:26161") { service in
            let sipp = try ChildProcessGroup(
                "/usr/bin/sipp",
                [
                    "-sf", Self.scenario.path, "-i", "127.0.0.1", "-p", "26161", "-mp", "28260", "-m", "1",
                    "-timeout", "40s", "-nostdin", "-trace_err", "-error_file",
                    service.directory.appendingPathComponent("sipp-errors.log").path, "-trace_msg", "-message_file",
                    service.directory.appendingPathComponent("sipp-messages.log").path
                ], log: service.directory.appendingPathComponent("sipp.log"))
            defer { sipp.stop() }
            guard await waitUntilUDPBound(26161) else {
                Issue.record("SIPp did not start:\n\(sipp.logTail)")
                return
            }
            let alice = try service.client("alice")
            await alice.start()
            let call = try await alice.callPhoneNumber("+46 70 123 45 67")
            let answers = KeyCollector(call)
            try await waitFor(call, .established)
            for (index, key) in ["4", "2", "#"].enumerated() {
                try await call.sendDTMF(key)
                let deadline = ContinuousClock.now + .seconds(5)
                while answers.text.count <= index, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(answers.text.count == index + 1, "the IVR did not answer key \(key): \(answers.text)")
            }
            #expect(answers.text == "42#", "the IVR's answers: \(answers.text)")
            try await call.hangup()
            #expect(await call.details.endCause == .localHangup)
            let status = await sipp.wait(timeout: .seconds(10))
            let errors =
                (try? String(
                    contentsOf: service.directory.appendingPathComponent("sipp-errors.log"), encoding: .utf8)) ?? ""
            // The scenario checks the number and PCMA in the offer, and each key in the INFO it waited for.
            #expect(status == 0, "the gateway's scenario did not complete:\n\(errors.suffix(2000))\n\(sipp.logTail)")
            await alice.terminate()
        }
    }
}
