import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceSIP
import VoiceTestSupport

/// A softphone that registers with a GRUU (RFC 5627) behind the service: SIPp plays it (scenarios
/// Tests/VoiceSIPTests/Peers/sipp/uas-gruu-*.xml), registered by the test with `+sip.instance` and
/// `Supported: gruu`, and answers with its public GRUU as Contact. A client calls it over TLS; the ACK reaches it
/// and a BYE from either side ends the call on both (the service looks the GRUU up in its location table rather
/// than failing DNS on the domain with 478). Ports 26130–26133, SIPp's media 28230–28233.
@Suite(
    "A GRUU softphone through the service", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sipp"),
        "sipp is not installed (make test-deps installs sip-tester)"))
struct ClientGRUUTests {
    static let scenarios = repositoryRoot.appendingPathComponent("Tests/VoiceSIPTests/Peers/sipp")

    @Test(arguments: [("uas-gruu-caller-hangs-up", 26130), ("uas-gruu-hangs-up", 26132)])
    func byeFromEitherSideEndsACallToAGRUUContact(scenario: String, sipPort: Int) async throws {
        try await withService(sipPort: sipPort) { service in
            let instance = UUID().uuidString.lowercased()
            let sippPort = sipPort + 1
            let script = try String(
                contentsOf: Self.scenarios.appendingPathComponent("\(scenario).xml"), encoding: .utf8
            ).replacingOccurrences(of: "[instance]", with: instance)
            let scenarioFile = service.directory.appendingPathComponent("\(scenario).xml")
            try script.write(to: scenarioFile, atomically: true, encoding: .utf8)
            let sipp = try ChildProcessGroup(
                "/usr/bin/sipp",
                [
                    "-sf", scenarioFile.path, "-i", "127.0.0.1", "-p", "\(sippPort)", "-mp", "\(sipPort + 2100)",
                    "-m", "1", "-timeout", "30s", "-nostdin", "-trace_err", "-error_file",
                    service.directory.appendingPathComponent("sipp-errors.log").path
                ], log: service.directory.appendingPathComponent("sipp.log"))
            defer { sipp.stop() }
            // SIPp is installed (the suite's condition): a scenario it refuses is a failure, not a skip.
            guard await waitUntilUDPBound(sippPort) else {
                Issue.record("SIPp did not start:\n\(sipp.logTail)")
                return
            }

            let gruu = try await Self.registerWithGRUU(
                "gruu", contactPort: sippPort, instance: instance, service: service)
            #expect(gruu == "sip:gruu@voiceengine.test;gr=urn:uuid:\(instance)")

            let alice = try service.client("alice")
            let aliceEvents = EventLog(alice)
            await alice.start()
            #expect(await aliceEvents.first { $0 == .started } != nil, "\(aliceEvents.events)")
            let call = try await alice.callUser("gruu")
            try await waitFor(call, .established)
            if scenario == "uas-gruu-caller-hangs-up" {
                try await Task.sleep(for: .milliseconds(500))
                try await call.hangup()
            }
            try await waitFor(call, .ended)
            let details = await call.details
            let hungUpBy: CallEndCause = scenario == "uas-gruu-caller-hangs-up" ? .localHangup : .remoteHangup
            #expect(details.endCause == hungUpBy && details.error == nil, "\(details)")
            let status = await sipp.wait(timeout: .seconds(10))
            let errors =
                (try? String(
                    contentsOf: service.directory.appendingPathComponent("sipp-errors.log"), encoding: .utf8)) ?? ""
            #expect(
                status == 0, "SIPp's side did not complete (ACK or BYE lost):\n\(errors.suffix(2000))\n\(sipp.logTail)")
            await alice.terminate()
        }
    }

    /// REGISTERs `user` with Contact 127.0.0.1:`contactPort`, `+sip.instance` and `Supported: gruu`, with the
    /// service's own ephemeral credentials, over UDP from a port of its own; returns the public GRUU granted.
    static func registerWithGRUU(_ user: String, contactPort: Int, instance: String, service: ServiceHarness)
        async throws -> String?
    {
        let grant = EphemeralCredentialIssuer(sharedSecret: service.sharedSecret, domain: "voiceengine.test").issue(
            userID: user, now: UInt64(Date().timeIntervalSince1970))
        let endpoint = try await SIPEndpoint.start(
            on: service.group.next(), udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
            configuration: SIPEndpointConfiguration(
                timers: SIPTimerConfiguration(t1: .milliseconds(20), t2: .milliseconds(200), t4: .milliseconds(200))))
        let sender = SIPRequestSender(
            endpoint: endpoint, credentials: SIPStaticCredentials(username: grant.username, password: grant.password))
        var headers = SIPHeaders()
        headers.add("From", "<sip:\(user)@voiceengine.test>;tag=\(UUID().uuidString.prefix(8))")
        headers.add("To", "<sip:\(user)@voiceengine.test>")
        headers.add("Call-ID", "gruu-\(UUID().uuidString)")
        headers.add("CSeq", "1 REGISTER")
        headers.add("Contact", "<sip:\(user)@127.0.0.1:\(contactPort)>;+sip.instance=\"<urn:uuid:\(instance)>\"")
        headers.add("Supported", "gruu")
        headers.add("Expires", "120")
        let response = try await sender.send(
            .request(.register, SIPURI(host: "voiceengine.test"), headers: headers),
            to: SIPPeer(.udp, try SocketAddress(ipAddress: "127.0.0.1", port: service.sipPort)))
        try? await endpoint.close()
        #expect(response.statusCode == 200, "\(response.wireText)")
        for contact in response.contacts {
            if case .address(let address) = contact, let gruu = address.parameters[parameter: "pub-gruu"] {
                return gruu.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        Issue.record("no pub-gruu in \(response.wireText)")
        return nil
    }
}
