import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

let sippPath = "/usr/bin/sipp"

/// SIPp (Debian's sip-tester) playing the peers a well-behaved UA rarely meets: rejections, silence, 200 OK
/// retransmissions, malformed messages. Scenarios are in Peers/sipp; SIPp's exit status says whether its side of
/// the scenario completed. Ports 25070–25079 and 25120–25129 are this suite's.
@Suite(
    "SIPp scenarios", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: sippPath),
        "sipp is not installed (make test-deps installs sip-tester)"))
struct SIPpTests {
    /// Starts SIPp with `scenario` bound to 127.0.0.1:`port`, runs `body`, and returns SIPp's exit status (nil
    /// if it had to be stopped). Skips the test when SIPp does not start.
    @discardableResult
    func withSIPp(
        _ scenario: String, port: Int, arguments extra: [String] = [], expectCompletion: Bool = true,
        _ body: (any EventLoop, SocketAddress) async throws -> Void
    ) async throws -> Int32? {
        let directory = try makeTemporaryDirectory("sipp")
        defer { try? FileManager.default.removeItem(at: directory) }
        let arguments =
            [
                "-sf", peersDirectory.appendingPathComponent("sipp/\(scenario).xml").path, "-i", "127.0.0.1", "-p",
                "\(port)",
                "-m", "1", "-timeout", "20s", "-timeout_error", "-nostdin", "-trace_err",
                "-error_file", directory.appendingPathComponent("errors.log").path
            ] + extra
        let sipp = try PeerProcess(name: "sipp", executable: sippPath, arguments: arguments, directory: directory)
        defer { sipp.stop() }
        guard await waitUntilUDPPortBound(port), sipp.isRunning else {
            try Test.cancel("SIPp did not start:\n\(sipp.logTail)")
        }
        try await withEventLoop { loop in try await body(loop, try SocketAddress(ipAddress: "127.0.0.1", port: port)) }
        guard expectCompletion else { return nil }
        let status = await sipp.waitForExit(timeout: .seconds(5))
        if status != 0 {
            let errors =
                (try? String(contentsOf: directory.appendingPathComponent("errors.log"), encoding: .utf8)) ?? ""
            Issue.record(
                "SIPp \(scenario) ended with \(status.map(String.init) ?? "no exit"):\n\(errors.suffix(1500))\n\(sipp.logTail)"
            )
        }
        return status
    }

    func makeInvite(to server: SocketAddress, callID: String) -> SIPMessage {
        var invite = makeOutgoing(
            .invite, to: SIPURI(user: "sipp", host: "127.0.0.1", port: server.port), callID: callID)
        invite.headers.add("Contact", "<sip:alice@127.0.0.1>")
        return invite
    }

    @Test(
        "rejected INVITE: the final status reaches the caller and the transaction ACKs it",
        arguments: [
            (486, "Busy Here", 25070), (603, "Decline", 25071)
        ])
    func rejectedInvite(status: Int, reason: String, port: Int) async throws {
        try await withSIPp(
            "uas-reject", port: port, arguments: ["-key", "status", "\(status)", "-key", "reason", reason]
        ) { loop, server in
            let endpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let provisional = NIOLockedValueBox<[Int]>([])
            let response = try await endpoint.request(
                makeInvite(to: server, callID: "reject-\(status)"), to: SIPPeer(.udp, server)
            ) { r in
                provisional.withLockedValue { $0.append(r.statusCode ?? 0) }
            }.get()
            #expect(response.statusCode == status)
            #expect(response.reasonPhrase == reason)
            #expect(provisional.withLockedValue { $0 } == [100])
            try await endpoint.close()
        }
    }

    @Test func unansweredInviteTimesOutWithTimerB() async throws {
        // SIPp just listens (its scenario never completes); what counts is what reached it and what we report.
        try await withSIPp("uas-silent", port: 25072, expectCompletion: false) { loop, server in
            // T1 = 20 ms: Timer B (64·T1) after 1.28 s instead of 32 s.
            let configuration = SIPEndpointConfiguration(
                timers: SIPTimerConfiguration(t1: .milliseconds(20), t2: .milliseconds(160), t4: .milliseconds(200)))
            let endpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0), configuration: configuration)
            let trace = TraceRecorder(endpoint)
            do {
                _ = try await endpoint.request(makeInvite(to: server, callID: "silent"), to: SIPPeer(.udp, server))
                    .get()
                Issue.record("an unanswered INVITE produced a response")
            } catch let error as SIPError {
                #expect(error.kind == .timeout)
                #expect(error.reason.contains("Timer B"))
            }
            // The INVITE and six Timer A retransmissions (20, 60, 140, 300, 620, 1260 ms).
            #expect(trace.count("send", containing: "INVITE sip:") == 7)
            try await endpoint.close()
        }
    }

    @Test func answeredInviteWith200RetransmittedUntilAckedThenBye() async throws {
        try await withSIPp("uas-answer", port: 25073) { loop, server in
            let endpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let retransmitted = NIOLockedValueBox(0)
            endpoint.onStrayResponse { response in
                if response.statusCode == 200 { retransmitted.withLockedValue { $0 += 1 } }
            }
            let invite = makeInvite(to: server, callID: "answer")
            let ok = try await endpoint.request(invite, to: SIPPeer(.udp, server)).get()
            #expect(ok.statusCode == 200)
            #expect(ok.sessionDescriptionText?.contains("opus/48000/2") == true)
            // Not ACKed for 1.2 s: SIPp retransmits the 200 (at 0.5 s and 1.5 s), and the ended INVITE transaction
            // passes the copies on as stray responses (RFC 6026: the dialog, not the transaction, ACKs a 2xx).
            try await Task.sleep(for: .milliseconds(1200))
            #expect(retransmitted.withLockedValue { $0 } >= 1)
            let remote = try #require(
                ok.contacts.first.flatMap { contact -> SIPURI? in
                    if case .address(let address) = contact { return address.uri }
                    return nil
                })
            var inDialog = SIPHeaders()
            inDialog.add("From", try #require(invite.headers.first("From")))
            inDialog.add("To", try #require(ok.headers.first("To")))
            inDialog.add("Call-ID", "answer")
            var ackHeaders = inDialog
            ackHeaders.add("CSeq", "1 ACK")
            let endpointVia = try await loop.submit { endpoint.makeVia(for: .udp) }.get()
            ackHeaders.prepend("Via", endpointVia.description)
            endpoint.sendStateless(.request(.ack, remote, headers: ackHeaders), to: SIPPeer(.udp, server))
            var byeHeaders = inDialog
            byeHeaders.add("CSeq", "2 BYE")
            let bye = try await endpoint.request(.request(.bye, remote, headers: byeHeaders), to: SIPPeer(.udp, server))
                .get()
            #expect(bye.statusCode == 200)
            try await endpoint.close()
        }
    }

    @Test func malformedMessagesAreDroppedAndTheNextRequestsAnswered() async throws {
        try await withEventLoop { loop in
            let endpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let server = AnsweringServer(endpoint)
            let local = try #require(await endpoint.localAddress(.udp))
            try await runSIPpClient("uac-options-malformed", port: 25074, target: local)
            let statistics = await endpoint.statistics()
            #expect(statistics.malformedDropped == 3, "\(statistics)")
            #expect(server.seen.map(\.message.requestMethod) == [.options, .message])
            #expect(server.seen.last.map { String(decoding: $0.message.body, as: UTF8.self) } == "hello from sipp\r\n")
            try await endpoint.close()
        }
    }

    @Test func invitesFromSIPpAreRejectedThroughTheServerTransaction() async throws {
        try await withEventLoop { loop in
            let endpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let server = AnsweringServer(endpoint, status: 486)
            let local = try #require(await endpoint.localAddress(.udp))
            try await runSIPpClient("uac-invite-rejected", port: 25075, target: local)
            // The INVITE reached the TU once (retransmissions absorbed); SIPp's ACK matched the transaction.
            #expect(server.seen.filter { $0.message.requestMethod == .invite }.count == 1)
            #expect(server.seen.filter { $0.message.requestMethod == .ack }.isEmpty)
            try await endpoint.close()
        }
    }

    /// SIPp calls a VoiceSIP user agent (Peers/sipp/uac-call-glare-cseq.xml): its INVITE retransmitted (one call),
    /// our hold re-INVITE crossed by its own (491 both ways, our retry after the back-off accepted), a BYE with an
    /// old CSeq (500), then an in-order BYE (200).
    @Test func reInviteGlareOutOfOrderCSeqAndRetransmittedInvite() async throws {
        try await withEventLoop { loop in
            let (agent, trace) = try await makeAgent("voiceengine", on: loop)
            let local = try #require(await agent.endpoint.localAddress(.udp))
            async let sipp: Void = runSIPpClient("uac-call-glare-cseq", port: 25120, target: local)
            var incoming = agent.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let log = CallEventLog(call)
            #expect(call.requestHeaders.first?.value == "glare")
            // Answered once the retransmission came, so that the transaction, still proceeding, answers it.
            let deadline = ContinuousClock.now + .seconds(5)
            while trace.count("recv", containing: "CSeq: 1 INVITE") < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            let answered = try await call.answer(with: testCapabilities(port: 40042))
            #expect(answered.remotePort == 40040 && answered.srtp?.suite == .aesCM128HmacSHA1_80)
            _ = try await log.established()
            let held = try await call.hold()
            #expect(held.direction == .sendonly)
            let end = try await log.ended()
            #expect(end.cause == .remoteHangup && end.headers.first?.value == "done")
            try await sipp
            // The retransmitted INVITE was answered from the transaction (a second 100) and made no second call.
            #expect(trace.count("recv", containing: "CSeq: 1 INVITE") >= 2)
            #expect(
                trace.count("send", containing: "SIP/2.0 100 Trying")
                    == trace.count("recv", containing: "CSeq: 1 INVITE"))
            #expect(trace.count("send", containing: "SIP/2.0 491") == 1)
            #expect(trace.count("recv", containing: "SIP/2.0 491") == 1)
            #expect(trace.count("send", containing: "SIP/2.0 500") == 1)
            #expect(trace.count("send", containing: "INVITE sip:sipp@") == 2)  // the re-INVITE and its retry
            try await agent.endpoint.close()
        }
    }

    /// A forked INVITE answered by both branches (Peers/sipp/uas-forked-2xx.xml, RFC 3261 §13.2.2.4): the call
    /// ACKs both 2xx, keeps the first dialog, ends the second with BYE; hanging up later ends the one it kept.
    /// SIPp checks each request's To tag and fails on the wrong fork.
    @Test func forkedAnswersAreEachAckedAndAllButOneHungUp() async throws {
        try await withSIPp("uas-forked-2xx", port: 25121) { loop, server in
            let (agent, trace) = try await makeAgent("alice", on: loop)
            let call = try await agent.call(
                SIPURI(user: "sipp", host: "127.0.0.1", port: server.port), offering: testCapabilities(port: 40064))
            let log = CallEventLog(call)
            let media = try await log.established()
            #expect(media.remotePort == 40060)  // fork A's answer
            let deadline = ContinuousClock.now + .seconds(5)
            while trace.count("recv", containing: "CSeq: 2 BYE") < 1, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(trace.count("send", containing: "ACK sip:") == 2)
            #expect(trace.count("send", containing: "BYE sip:forkB") == 1)
            #expect(trace.count("recv", containing: "CSeq: 2 BYE") == 1)  // fork B's 200 to our BYE
            #expect(await call.currentDialog?.id.remoteTag == "forkA1")
            // Only one call, and it is still up.
            #expect(!log.events.contains { if case .ended = $0 { true } else { false } })
            await call.hangUp()
            #expect(try await log.ended().cause == .localHangup)
            #expect(trace.count("send", containing: "BYE sip:forkA") == 1)
            try await agent.endpoint.close()
        }
    }

    /// RFC 3261 §15: a callee hanging up right after its 200 must hold the BYE until the ACK has come
    /// (Peers/sipp/uac-ack-delayed.xml: SIPp ACKs 1.5 s late and fails on a BYE before that). The 200 is
    /// retransmitted meanwhile; the BYE follows the ACK; the call ends as our hang-up, never established.
    @Test func calleeHoldsItsByeUntilTheAckOfIts2xx() async throws {
        try await withEventLoop { loop in
            let (agent, trace) = try await makeAgent("voiceengine", on: loop)
            let local = try #require(await agent.endpoint.localAddress(.udp))
            async let sipp: Void = runSIPpClient("uac-ack-delayed", port: 25122, target: local)
            var incoming = agent.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let log = CallEventLog(call)
            _ = try await call.answer(with: testCapabilities(port: 40072))
            await call.hangUp()
            let end = try await log.ended()
            #expect(end.cause == .localHangup && end.statusCode == nil, "\(end)")
            try await sipp
            let lines = trace.all
            let ack = lines.firstIndex { $0.hasPrefix("recv") && $0.contains("\nACK sip:") }
            let bye = lines.firstIndex { $0.hasPrefix("send") && $0.contains("\nBYE sip:") }
            #expect(ack != nil && bye != nil && ack! < bye!, "BYE before the ACK:\n\(lines.joined(separator: "\n"))")
            #expect(trace.count("send", containing: "SIP/2.0 200 OK") >= 2)  // the 2xx retransmitted meanwhile
            #expect(trace.count("send", containing: "\nBYE sip:") == 1)
            #expect(!log.events.contains { if case .established = $0 { true } else { false } })
            try await agent.endpoint.close()
        }
    }

    /// The ACK never comes (Peers/sipp/uac-ack-never.xml): the held BYE goes out when the 2xx's retransmissions
    /// end, 64·T1 after it was first sent (6.4 s with the test's T1 of 100 ms), not before.
    @Test func calleeSendsItsHeldByeWhenTheAckNeverComes() async throws {
        try await withEventLoop { loop in
            let (agent, trace) = try await makeAgent("voiceengine", on: loop)
            let local = try #require(await agent.endpoint.localAddress(.udp))
            async let sipp: Void = runSIPpClient("uac-ack-never", port: 25123, target: local)
            var incoming = agent.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let log = CallEventLog(call)
            let answered = ContinuousClock.now
            _ = try await call.answer(with: testCapabilities(port: 40074))
            await call.hangUp()
            let ended = ContinuousClock.now - answered
            let end = try await log.ended()
            #expect(end.cause == .localHangup && end.reasonPhrase.contains("64·T1"), "\(end)")
            #expect(ended >= .milliseconds(6_300) && ended < .seconds(12), "the BYE went out \(ended) after the 200")
            try await sipp
            #expect(trace.count("recv", containing: "\nACK sip:") == 0)
            #expect(trace.count("send", containing: "\nBYE sip:") == 1)
            try await agent.endpoint.close()
        }
    }

    /// An answered call over TCP whose ACK never comes: the 2xx is retransmitted over the connection too (it travels
    /// end to end, and a later hop may be UDP) and the call is ended with a BYE 64·T1 after it (RFC 3261 §13.3.1.4).
    /// Before, a reliable transport sent the 2xx once and the call stayed answered for ever.
    @Test func answeredCallOverTCPWithoutAckEndsAfter64T1() async throws {
        try await withEventLoop { loop in
            let endpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                configuration: SIPEndpointConfiguration(
                    timers: SIPTimerConfiguration(
                        t1: .milliseconds(100), t2: .milliseconds(800), t4: .milliseconds(800))))
            let trace = TraceRecorder(endpoint)
            let agent = SIPUserAgent(
                endpoint: endpoint, credentials: nil,
                configuration: SIPUserAgentConfiguration(
                    addressOfRecord: SIPURI(user: "voiceengine", host: "127.0.0.1"), transport: .tcp))
            let local = try #require(await endpoint.localAddress(.tcp))
            async let sipp: Void = runSIPpClient("uac-ack-never", port: 25124, target: local, transport: "t1")
            var incoming = agent.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let log = CallEventLog(call)
            let answered = ContinuousClock.now
            _ = try await call.answer(with: testCapabilities(port: 40076))
            let end = try await log.ended()
            let ended = ContinuousClock.now - answered
            #expect(end.cause == .failed && end.reasonPhrase.contains("64·T1"), "\(end)")
            #expect(ended >= .milliseconds(6_300) && ended < .seconds(12), "the call ended \(ended) after the 200")
            try await sipp
            #expect(trace.count("recv", containing: "\nACK sip:") == 0)
            // T1 doubling to T2 within 64·T1: 0.1, 0.3, 0.7, 1.5, 2.3, … — at least five retransmissions.
            #expect(
                trace.count("send", containing: "SIP/2.0 200 OK") >= 6,
                "\(trace.count("send", containing: "SIP/2.0 200 OK")) 200s sent")
            #expect(trace.count("send", containing: "\nBYE sip:") == 1)
            try await endpoint.close()
        }
    }

    /// Runs a SIPp client scenario against `target` and expects it to complete (exit status 0). `transport` is
    /// SIPp's `-t` mode (`u1`: UDP, `t1`: one TCP connection).
    func runSIPpClient(_ scenario: String, port: Int, target: SocketAddress, transport: String = "u1") async throws {
        let directory = try makeTemporaryDirectory("sipp")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sipp = try PeerProcess(
            name: "sipp", executable: sippPath,
            arguments: [
                "-sf", peersDirectory.appendingPathComponent("sipp/\(scenario).xml").path, "-i", "127.0.0.1", "-p",
                "\(port)",
                "-m", "1", "-timeout", "15s", "-timeout_error", "-nostdin", "-s", "voiceengine", "-trace_err",
                "-error_file", directory.appendingPathComponent("errors.log").path, "-t", transport,
                "127.0.0.1:\(target.port ?? 0)"
            ],
            directory: directory)
        defer { sipp.stop() }
        let status = await sipp.waitForExit(timeout: .seconds(20))
        if status == nil, !sipp.isRunning { try Test.cancel("SIPp did not run:\n\(sipp.logTail)") }
        let errors = (try? String(contentsOf: directory.appendingPathComponent("errors.log"), encoding: .utf8)) ?? ""
        #expect(status == 0, "SIPp \(scenario): \(errors.suffix(1500))\n\(sipp.logTail)")
    }
}
