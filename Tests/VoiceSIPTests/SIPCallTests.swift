import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// Collects a call's events as they come, so that a test can wait for one.
final class CallEventLog: @unchecked Sendable {
    private let lock = NIOLock()
    private var _events: [SIPCallEvent] = []
    let call: SIPCall

    init(_ call: SIPCall) {
        self.call = call
        let events = call.events
        Task { [self] in
            for await event in events { lock.withLock { _events.append(event) } }
        }
    }

    var events: [SIPCallEvent] { lock.withLock { _events } }

    /// The first event `pick` accepts, waiting up to `timeout`.
    func wait<T>(_ what: String, timeout: Duration = .seconds(10), _ pick: (SIPCallEvent) -> T?) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = events.lazy.compactMap(pick).first { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("no \(what) within \(timeout); events: \(events)")
        throw SIPCallError("no \(what)")
    }

    func established() async throws -> NegotiatedAudio {
        try await wait("established") { if case .established(let media, _) = $0 { media } else { nil } }
    }

    func ended() async throws -> SIPCallEnd {
        try await wait("ended") { if case .ended(let end) = $0 { end } else { nil } }
    }
}

/// A user agent on loopback UDP (any port), fast timers, the given AOR user.
func makeAgent(
    _ user: String, on loop: any EventLoop, proxy: SIPPeer? = nil, credentials: (any SIPCredentialsDelegate)? = nil,
    domain: String = "127.0.0.1", glare: ClosedRange<Double> = 0.05...0.3
) async throws -> (SIPUserAgent, TraceRecorder) {
    let endpoint = try await SIPEndpoint.startClosedWithLoop(
        on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
        configuration: SIPEndpointConfiguration(
            timers: SIPTimerConfiguration(t1: .milliseconds(100), t2: .milliseconds(800), t4: .milliseconds(800))))
    let trace = TraceRecorder(endpoint)
    let agent = SIPUserAgent(
        endpoint: endpoint, credentials: credentials,
        configuration: SIPUserAgentConfiguration(
            addressOfRecord: SIPURI(user: user, host: domain), outboundProxy: proxy,
            glareBackoffAsCaller: glare.lowerBound + 0.3...glare.upperBound + 0.3, glareBackoffAsCallee: glare))
    return (agent, trace)
}

/// Capabilities for signalling tests: an RTP port nobody listens on (no media flows in these tests).
func testCapabilities(port: Int) -> AudioCapabilities { AudioCapabilities(address: "127.0.0.1", port: port) }

/// The URI that reaches `agent` directly (no proxy).
func directURI(_ user: String, _ agent: SIPUserAgent) async throws -> SIPURI {
    let address = try #require(await agent.endpoint.localAddress(.udp))
    return SIPURI(user: user, host: "127.0.0.1", port: address.port)
}

/// INVITE dialogs between two engines on loopback: offer/answer, ringing, early media, CANCEL, rejection, hold and
/// resume, re-keying, custom headers both ways, BYE, and re-INVITE glare.
@Suite("SIP calls between two user agents", .tags(.live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)))
struct SIPCallTests {
    @Test func callIsAnsweredHeldResumedRekeyedAndHungUpWithCustomHeaders() async throws {
        try await withEventLoop { loop in
            let (alice, aliceTrace) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let target = try await directURI("bob", bob)
            let outgoing = try await alice.call(
                target, offering: testCapabilities(port: 40000), headers: [("X-Account", "42")])
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            #expect(call.requestHeaders.map(\.name) == ["X-Account"])
            #expect(call.requestHeaders.first?.value == "42")
            #expect(call.remote.uri.user == "alice")
            let offer = try #require(call.remoteOffer)
            #expect(offer.audio.opus != nil && offer.audio.crypto.count == 2)

            try await call.ring()
            let progress = try await aliceLog.wait("180") {
                if case .progress(let code, let reason, let early) = $0 { (code, reason, early) } else { nil }
            }
            #expect(progress.0 == 180 && progress.1 == "Ringing" && progress.2 == nil)

            let bobMedia = try await call.answer(
                with: testCapabilities(port: 40002), headers: [("X-Answered-By", "bob")])
            let aliceMedia = try await aliceLog.established()
            _ = try await bobLog.established()
            #expect(aliceMedia.remotePort == 40002 && bobMedia.remotePort == 40000)
            #expect(
                aliceMedia.srtp?.localKey == bobMedia.srtp?.remoteKey
                    && aliceMedia.srtp?.remoteKey == bobMedia.srtp?.localKey)
            #expect(aliceMedia.direction == .sendrecv)
            let answeredHeaders = try await aliceLog.wait("2xx headers") {
                if case .established(_, let h) = $0 { h } else { nil }
            }
            #expect(answeredHeaders.first { $0.name == "X-Answered-By" }?.value == "bob")

            let held = try await outgoing.hold()
            #expect(held.direction == .sendonly)
            let bobHeld = try await bobLog.wait("hold at bob") {
                if case .mediaUpdated(let m, true) = $0, m.direction == .recvonly { m } else { nil }
            }
            #expect(bobHeld.srtp?.remoteKey == aliceMedia.srtp?.localKey)  // hold keeps the keys: alice's
            #expect(bobHeld.srtp?.localKey == bobMedia.srtp?.localKey)  // and bob's, in his answer
            let resumed = try await outgoing.resume()
            #expect(resumed.direction == .sendrecv)
            let rekeyed = try await outgoing.rekey()
            #expect(rekeyed.srtp != nil && rekeyed.srtp?.localKey != aliceMedia.srtp?.localKey)
            let bobRekeyed = try await bobLog.wait("re-key at bob") {
                if case .mediaUpdated(let m, true) = $0, m.srtp?.remoteKey == rekeyed.srtp?.localKey { m } else { nil }
            }
            #expect(bobRekeyed.direction == .sendrecv)
            #expect(bobRekeyed.srtp?.localKey == bobMedia.srtp?.localKey)  // alice re-keyed, bob kept his key

            await call.hangUp(headers: [("X-Hangup-Cause", "done")])
            let end = try await aliceLog.ended()
            #expect(end.cause == .remoteHangup)
            #expect(end.headers.first { $0.name == "X-Hangup-Cause" }?.value == "done")
            #expect(try await bobLog.ended().cause == .localHangup)
            // Each in-dialog INVITE was ACKed: 1 initial + 3 re-INVITEs.
            #expect(aliceTrace.count("send", containing: "ACK sip:bob@") == 4)
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    @Test func cancelWhileRingingEndsBothSidesWith487() async throws {
        try await withEventLoop { loop in
            let (alice, aliceTrace) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let outgoing = try await alice.call(
                try await directURI("bob", bob), offering: testCapabilities(port: 40000))
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            try await call.ring()
            _ = try await aliceLog.wait("ringing") { if case .progress(180, _, _) = $0 { true } else { nil } }
            await outgoing.hangUp()
            let end = try await aliceLog.ended()
            #expect(end.cause == .cancelled && end.statusCode == 487)
            let bobEnd = try await bobLog.ended()
            #expect(bobEnd.cause == .cancelled)
            #expect(aliceTrace.count("send", containing: "CANCEL sip:bob@") == 1)
            #expect(aliceTrace.count("recv", containing: "SIP/2.0 487") >= 1)
            // Answering after the CANCEL is refused, not sent.
            await #expect(throws: SIPCallError.self) { try await call.answer(with: testCapabilities(port: 40002)) }
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    @Test func rejectionAndUnacceptableOfferAreSurfacedWithStatusAndReason() async throws {
        try await withEventLoop { loop in
            let (alice, _) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let target = try await directURI("bob", bob)
            var incoming = bob.incomingCalls.makeAsyncIterator()

            let busy = CallEventLog(try await alice.call(target, offering: testCapabilities(port: 40000)))
            let first = try #require(await incoming.next())
            await first.reject(status: 486, headers: [("X-Busy-Reason", "in a meeting")])
            let end = try await busy.ended()
            #expect(end.cause == .rejected && end.statusCode == 486 && end.reasonPhrase == "Busy Here")
            #expect(end.headers.first?.value == "in a meeting")

            // Plain RTP offered to a callee that requires SRTP: the answer fails and the caller hears 488.
            var plain = testCapabilities(port: 40004)
            plain.srtp = .disabled
            let refused = CallEventLog(try await alice.call(target, offering: plain))
            let second = try #require(await incoming.next())
            await #expect(throws: SDPError.self) { try await second.answer(with: testCapabilities(port: 40006)) }
            let refusedEnd = try await refused.ended()
            #expect(refusedEnd.cause == .rejected && refusedEnd.statusCode == 488)

            // Nobody there: Timer B (64·T1 = 6.4 s with T1 = 100 ms) or ICMP ends the call as failed.
            let nowhere = CallEventLog(
                try await alice.call(
                    SIPURI(user: "nobody", host: "127.0.0.1", port: 25110), offering: testCapabilities(port: 40008)))
            let failed = try await nowhere.ended()
            #expect(failed.cause == .failed)
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    @Test func earlyMediaIsNegotiatedFrom183() async throws {
        try await withEventLoop { loop in
            let (alice, _) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let aliceLog = CallEventLog(
                try await alice.call(try await directURI("bob", bob), offering: testCapabilities(port: 40000)))
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let early = try #require(try await call.ring(earlyMedia: testCapabilities(port: 40010)))
            let heard = try await aliceLog.wait("183 with SDP") {
                if case .progress(183, _, let media?) = $0 { media } else { nil }
            }
            #expect(heard.remotePort == 40010 && heard.srtp?.remoteKey == early.srtp?.localKey)
            try await call.answer(with: testCapabilities(port: 40010))
            let media = try await aliceLog.established()
            #expect(media.srtp?.remoteKey == early.srtp?.localKey)  // the 200 repeats the 183's answer
            await aliceLog.call.hangUp()
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    /// Both sides re-INVITE at once. Whether the two cross on the wire (491 both ways, RFC 3261 §14.1 back-off) or
    /// one waits for the other's transaction, both holds must succeed. SIPpTests forces the crossing.
    @Test func simultaneousReInvitesBothSucceed() async throws {
        try await withEventLoop { loop in
            let (alice, _) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let outgoing = try await alice.call(
                try await directURI("bob", bob), offering: testCapabilities(port: 40000))
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            try await call.answer(with: testCapabilities(port: 40002))
            _ = try await aliceLog.established()
            for _ in 0..<3 {
                async let aliceHold = outgoing.hold()
                async let bobHold = call.hold()
                let (a, b) = try await (aliceHold, bobHold)
                // Each is on hold one way; the later offer finds the other side sendonly too: inactive.
                #expect([MediaDirection.sendonly, .inactive].contains(a.direction))
                #expect([MediaDirection.sendonly, .inactive].contains(b.direction))
                #expect(a.direction == .inactive || b.direction == .inactive)
                async let aliceResume = outgoing.resume()
                async let bobResume = call.resume()
                _ = try await (aliceResume, bobResume)
            }
            let final = try #require(await outgoing.media)
            #expect(final.direction == .sendrecv)
            await outgoing.hangUp()
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    /// Requests a user agent cannot take are answered with their status, never dropped silently or trapped on:
    /// unknown dialogs 481, unreadable SDP 488, an offer with no common codec 488 (with `Warning: 305`) before it
    /// rings, other methods 405.
    @Test func badRequestsGetTheirStatus() async throws {
        try await withEventLoop { loop in
            let (bob, _) = try await makeAgent("bob", on: loop)
            let target = try await directURI("bob", bob)
            let probe = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let peer = SIPPeer(.udp, try #require(await bob.endpoint.localAddress(.udp)))
            func send(_ method: SIPMethod, callID: String, toTag: String? = nil, sdp: String? = nil) async throws
                -> SIPMessage
            {
                var request = makeOutgoing(method, to: target, callID: callID)
                if let toTag { request.headers.replace("To", with: "<\(target)>;tag=\(toTag)") }
                request.headers.add("Contact", "<sip:probe@127.0.0.1>")
                if let sdp {
                    request.headers.add("Content-Type", "application/sdp")
                    request.body = Array(sdp.utf8)
                }
                return try await probe.request(request, to: peer).get()
            }
            #expect(try await send(.bye, callID: "no-such-call", toTag: "x").statusCode == 481)
            #expect(try await send(.cancel, callID: "no-such-invite").statusCode == 481)
            #expect(try await send(.invite, callID: "garbage-sdp", sdp: "this is not SDP").statusCode == 488)
            let message = try await send(.message, callID: "im")
            #expect(message.statusCode == 405 && message.headers.first("Allow")?.contains("INVITE") == true)
            #expect(try await send(.options, callID: "ping").statusCode == 200)

            let gsmOnly =
                "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40050 RTP/AVP 3\r\na=rtpmap:3 GSM/8000\r\n"
            async let refused = send(.invite, callID: "no-common-codec", sdp: gsmOnly)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            await #expect(throws: SDPError.noCommonCodec(offered: ["GSM/8000"])) {
                try await call.refuseUnacceptableOffer(testCapabilities(port: 40052))
            }
            let refusal = try await refused
            #expect(
                refusal.statusCode == 488
                    && refusal.reasonPhrase == "Not Acceptable Here (no common audio codec (offered: GSM/8000))")
            let warning = try #require(refusal.headers.first("Warning"))
            #expect(warning.hasPrefix("305 127.0.0.1") && warning.hasSuffix(" \"Incompatible media format\""))
            try await probe.close()
            try await bob.endpoint.close()
        }
    }

    /// Shutdown order: closing an endpoint ends its calls there and then (on its loop, before `close()` returns),
    /// so that nothing of theirs — a 2xx retransmission, a held BYE, a response awaited in a task — is left to run
    /// on an event loop its owner shuts down right after `close()` (NIO prints "Cannot schedule tasks on an
    /// EventLoop that has already shut down" for work that arrives then). An established call ends `failed`; a
    /// callee's BYE held for the ACK ends as its hang-up, at once rather than at 64·T1.
    @Test func closingTheEndpointEndsItsCallsBeforeCloseReturns() async throws {
        try await withEventLoop { loop in
            let (alice, _) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let aliceLog = CallEventLog(
                try await alice.call(try await directURI("bob", bob), offering: testCapabilities(port: 40000)))
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            try await call.answer(with: testCapabilities(port: 40002))
            _ = try await aliceLog.established()
            _ = try await bobLog.established()
            try await bob.endpoint.close()
            let end = try await bobLog.ended()
            #expect(end.cause == .failed && end.reasonPhrase == "the SIP endpoint closed", "\(end)")
            try await alice.endpoint.close()
            #expect(try await aliceLog.ended().reasonPhrase == "the SIP endpoint closed")

            // A caller that never ACKs (a bare endpoint): the callee's hang-up holds its BYE until its endpoint closes.
            let (carol, _) = try await makeAgent("carol", on: loop)
            let probe = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let target = try await directURI("carol", carol)
            var invite = makeOutgoing(.invite, to: target, callID: "never-acked")
            invite.headers.add("Contact", "<sip:probe@127.0.0.1>")
            invite.headers.add("Content-Type", "application/sdp")
            invite.body = Array(SessionDescription.makeOffer(testCapabilities(port: 40004)).serialize().utf8)
            let carolAddress = try #require(await carol.endpoint.localAddress(.udp))
            async let answered = probe.request(invite, to: SIPPeer(.udp, carolAddress)).get()
            var carolIncoming = carol.incomingCalls.makeAsyncIterator()
            let carolCall = try #require(await carolIncoming.next())
            let carolLog = CallEventLog(carolCall)
            try await carolCall.answer(with: testCapabilities(port: 40006))
            #expect(try await answered.statusCode == 200)
            let hangingUp = Task { await carolCall.hangUp() }
            try await Task.sleep(for: .milliseconds(300))
            #expect(carolLog.events.isEmpty, "\(carolLog.events)")  // the BYE is held: no ACK
            let closing = ContinuousClock.now
            try await carol.endpoint.close()
            await hangingUp.value
            #expect(ContinuousClock.now - closing < .seconds(2), "the held hang-up outlived the endpoint")
            #expect(try await carolLog.ended().cause == .localHangup)
            try await probe.close()
        }
    }
}
