import Testing
import VoiceEngine
import VoiceTestSupport

/// Real UDP sockets on 127.0.0.1. Every wait is bounded (at most ~4 s of 2 ms polls) and only used to let the event
/// loop deliver what was sent; nothing asserts on time.
@Suite(.tags(.live), .scheduledByTags) struct TransportTests {
    static func rtp(sequence: UInt16, payloadType: UInt8 = 111, payload: Int = 40) -> [UInt8] {
        var p: [UInt8] = [0x80, payloadType, UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
        p += [0, 0, 0x03, 0xC0, 0x12, 0x34, 0x56, 0x78]
        p += [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: payload)
        return p
    }

    /// An empty receiver report (RFC 3550 6.4.2): 8 bytes, PT 201.
    static func rtcpReceiverReport(ssrc: UInt8) -> [UInt8] { [0x80, 201, 0, 1, 0, 0, 0, ssrc] }

    static func bound(_ configuration: UDPMediaTransport.Configuration = .init()) async throws -> UDPMediaTransport {
        try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0, configuration: configuration)
    }

    /// Polls `condition` every 2 ms, at most 2000 times; returns its last value.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<2000 {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return condition()
    }

    static func send(_ bytes: [UInt8], from transport: UDPMediaTransport, to destination: UDPEndpoint? = nil)
        -> UDPSendResult
    {
        bytes.withUnsafeBytes { raw in
            if let destination { transport.send(raw, to: destination) } else { transport.send(raw) }
        }
    }

    /// Drains one queue into (bytes, source) pairs.
    static func drain(_ kind: MediaPacketKind, _ transport: UDPMediaTransport) -> [([UInt8], UDPEndpoint)] {
        var out: [([UInt8], UDPEndpoint)] = []
        while let item = transport.withNextPacket(kind, { p in (Array(p.bytes), p.source) }) { out.append(item) }
        return out
    }

    @Test func twoTransportsExchangeRTPAndRTCPOnOnePortAndTheDemuxSeparatesThem() async throws {
        let a = try await Self.bound(), b = try await Self.bound()
        a.setRemote(b.localEndpoint)
        b.setRemote(a.localEndpoint)
        #expect(a.localEndpoint.port != 0 && a.localEndpoint.port != b.localEndpoint.port)
        for i in 0..<20 {
            #expect(Self.send(Self.rtp(sequence: UInt16(i)), from: a) == .sent)
            if i % 4 == 0 { #expect(Self.send(Self.rtcpReceiverReport(ssrc: UInt8(i)), from: a) == .sent) }
        }
        for i in 0..<10 { _ = Self.send(Self.rtp(sequence: UInt16(100 + i), payloadType: 96), from: b) }
        #expect(await Self.eventually { b.counters.receivedRTP == 20 && b.counters.receivedRTCP == 5 })
        #expect(await Self.eventually { a.counters.receivedRTP == 10 })

        let rtp = Self.drain(.rtp, b)
        #expect(rtp.map { UInt16($0.0[2]) << 8 | UInt16($0.0[3]) } == Array(0..<20))
        #expect(rtp.allSatisfy { $0.1 == a.localEndpoint && $0.0.count == 52 && $0.0[1] == 111 })
        let rtcp = Self.drain(.rtcp, b)
        #expect(rtcp.map(\.0) == [0, 4, 8, 12, 16].map { Self.rtcpReceiverReport(ssrc: UInt8($0)) })
        #expect(Self.drain(.rtp, a).map { $0.0[1] } == Array(repeating: 96, count: 10))
        #expect(a.counters.sent == 25 && b.counters.sent == 10)
        #expect(b.counters.datagramsRead == 25)
        await a.close()
        await b.close()
    }

    @Test func firstPacketPolicyLatchesOntoTheSourceOfTheFirstPacket() async throws {
        let a = try await Self.bound(), other = try await Self.bound()
        let b = try await Self.bound(.init(latchPolicy: .firstPacket))
        // Signalling said port 9 (discard); the peer's packets really come from `a`.
        b.setRemote(try UDPEndpoint(host: "127.0.0.1", port: 9))
        #expect(!b.isLatched)
        #expect(Self.send(Self.rtp(sequence: 1), from: a, to: b.localEndpoint) == .sent)
        #expect(await Self.eventually { b.isLatched })
        #expect(b.remote == a.localEndpoint)
        // Later packets from elsewhere do not steal the latch.
        #expect(Self.send(Self.rtp(sequence: 2), from: other, to: b.localEndpoint) == .sent)
        #expect(await Self.eventually { b.counters.receivedRTP == 2 })
        #expect(b.remote == a.localEndpoint && b.counters.latches == 1)
        // Symmetric: b's media now reaches a.
        #expect(Self.send(Self.rtp(sequence: 3), from: b) == .sent)
        #expect(await Self.eventually { a.counters.receivedRTP == 1 })
        for t in [a, b, other] { await t.close() }
    }

    @Test func manualPolicyLatchesOnlyWhenTheReceivePathConfirms() async throws {
        let a = try await Self.bound(), b = try await Self.bound(.init(latchPolicy: .manual))
        let signalled = try UDPEndpoint(host: "127.0.0.1", port: 9)
        b.setRemote(signalled)
        _ = Self.send(Self.rtp(sequence: 7), from: a, to: b.localEndpoint)
        #expect(await Self.eventually { b.pendingPackets(.rtp) == 1 })
        #expect(b.remote == signalled && !b.isLatched)
        // The receive path authenticates the packet (SRTP in the real chain), then latches on its source.
        let source = try #require(b.withNextPacket(.rtp) { $0.source })
        #expect(b.latchRemote(to: source))
        #expect(!b.latchRemote(to: source))
        #expect(b.remote == a.localEndpoint && b.isLatched && b.counters.latches == 1)
        #expect(Self.send(Self.rtp(sequence: 8), from: b) == .sent)
        #expect(await Self.eventually { a.counters.receivedRTP == 1 })
        // Signalling a new remote clears the latch.
        b.setRemote(signalled)
        #expect(!b.isLatched && b.remote == signalled)
        await a.close()
        await b.close()
    }

    @Test func aFullQueueCountsAndDropsTheOverflowAndRecoversWhenDrained() async throws {
        let a = try await Self.bound(), b = try await Self.bound(.init(rtpQueueCapacity: 8, rtcpQueueCapacity: 2))
        a.setRemote(b.localEndpoint)
        for i in 0..<30 { _ = Self.send(Self.rtp(sequence: UInt16(i)), from: a) }
        for i in 0..<5 { _ = Self.send(Self.rtcpReceiverReport(ssrc: UInt8(i)), from: a) }
        #expect(await Self.eventually { b.counters.datagramsRead == 35 })
        let c = b.counters
        #expect(c.receivedRTP == 8 && c.droppedRTPQueueFull == 22)
        #expect(c.receivedRTCP == 2 && c.droppedRTCPQueueFull == 3)
        // The oldest packets were kept, the newest dropped.
        #expect(Self.drain(.rtp, b).map { Int($0.0[3]) } == Array(0..<8))
        #expect(b.discardPending(.rtcp) == 2)
        _ = Self.send(Self.rtp(sequence: 99), from: a)
        #expect(await Self.eventually { b.counters.receivedRTP == 9 })
        #expect(Self.drain(.rtp, b).map { Int($0.0[3]) } == [99])
        await a.close()
        await b.close()
    }

    @Test func garbageDatagramsAreCountedByReasonAndNothingIsQueuedWrongly() async throws {
        let a = try await Self.bound(), b = try await Self.bound(.init(maxPacketSize: 1200))
        a.setRemote(b.localEndpoint)
        _ = Self.send([], from: a)  // empty
        _ = Self.send([0x00, 0x01, 0x00, 0x08] + [UInt8](repeating: 0x21, count: 16), from: a)  // STUN-like
        _ = Self.send([0x16, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 30), from: a)  // DTLS-like
        _ = Self.send(Self.rtp(sequence: 1, payload: 1200 - 12 + 1), from: a)  // one byte over the slot
        _ = Self.send(Self.rtp(sequence: 2, payload: 3000), from: a)  // far over
        _ = Self.send([0x80, 111, 0, 1, 0, 0, 0, 0, 0, 0], from: a)  // 10-byte RTP: short
        _ = Self.send([0x80, 200, 0, 0, 1], from: a)  // 5-byte RTCP: short
        _ = Self.send(Self.rtp(sequence: 3, payload: 1200 - 12), from: a)  // exactly a slot: accepted
        #expect(await Self.eventually { b.counters.datagramsRead == 8 })
        var c = b.counters
        #expect(c.droppedEmpty == 1 && c.droppedNotRTP == 2 && c.droppedOversize == 2 && c.droppedTooShort == 2)
        #expect(c.receivedRTP == 1 && c.receivedRTCP == 0)
        #expect(Self.drain(.rtp, b).map(\.0.count) == [1200])

        // Random datagrams of random sizes: every one is accounted for, the transport keeps working.
        var generator = SeededGenerator(seed: 0x5EED)
        for _ in 0..<300 {
            let length = Int.random(in: 0...1600, using: &generator)
            _ = Self.send((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }, from: a)
        }
        #expect(await Self.eventually { b.counters.datagramsRead == 308 })
        c = b.counters
        #expect(c.datagramsRead == 308 && c.droppedRTPQueueFull == 0)
        #expect(Self.drain(.rtp, b).count + Self.drain(.rtcp, b).count == c.receivedRTP + c.receivedRTCP - 1)
        _ = Self.send(Self.rtp(sequence: 4), from: a)
        #expect(await Self.eventually { b.pendingPackets(.rtp) == 1 })
        await a.close()
        await b.close()
    }

    @Test func arrivalTimesComeFromTheInjectedClock() async throws {
        let clock = ManualClock(start: .milliseconds(5_000))
        let a = try await Self.bound(), b = try await Self.bound(.init(clock: clock))
        _ = Self.send(Self.rtp(sequence: 1), from: a, to: b.localEndpoint)
        #expect(await Self.eventually { b.pendingPackets(.rtp) == 1 })
        clock.advance(by: .milliseconds(20))
        _ = Self.send(Self.rtp(sequence: 2), from: a, to: b.localEndpoint)
        #expect(await Self.eventually { b.pendingPackets(.rtp) == 2 })
        var arrivals: [MediaTime] = []
        while let t = b.withNextPacket(.rtp, { $0.arrival }) { arrivals.append(t) }
        #expect(arrivals == [.milliseconds(5_000), .milliseconds(5_020)])
        await a.close()
        await b.close()
    }

    /// `.consumerPolls`: nothing is read until the consumer polls; then every datagram is classified and counted as
    /// the event loop would, stamped with when the kernel received it (not when it was polled); after close()
    /// polling reads nothing and the port is free.
    @Test func aConsumerPolledSocketIsReadOnlyWhenPolledWithKernelArrivalTimes() async throws {
        let a = try await Self.bound()
        let b = try await Self.bound(.init(maxPacketSize: 1200, receive: .consumerPolls))
        a.setRemote(b.localEndpoint)
        // The kernel turns receive timestamping on (a static key) in deferred work when the first socket asks;
        // a call's socket lives long enough, this test waits for it.
        try await Task.sleep(for: .milliseconds(200))
        let sentAt = MonotonicClock().now
        #expect(Self.send(Self.rtp(sequence: 1), from: a) == .sent)
        _ = Self.send(Self.rtcpReceiverReport(ssrc: 7), from: a)
        _ = Self.send([0x16, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 30), from: a)  // DTLS-like
        _ = Self.send(Self.rtp(sequence: 2, payload: 1200 - 12 + 1), from: a)  // one byte over the slot
        _ = Self.send(Self.rtp(sequence: 3, payload: 3000), from: a)  // far over
        _ = Self.send(Self.rtp(sequence: 4, payload: 1200 - 12), from: a)  // exactly a slot
        try await Task.sleep(for: .milliseconds(60))
        #expect(b.counters.datagramsRead == 0 && b.pendingPackets(.rtp) == 0, "read without a poll")
        let polledAt = MonotonicClock().now
        #expect(b.receiveFromSocket() == 6)
        #expect(b.receiveFromSocket() == 0)
        let c = b.counters
        #expect(c.receivedRTP == 2 && c.receivedRTCP == 1 && c.droppedNotRTP == 1 && c.droppedOversize == 2)
        var arrivals: [MediaTime] = []
        var sizes: [Int] = []
        while let (t, n) = b.withNextPacket(.rtp, { ($0.arrival, $0.bytes.count) }) {
            arrivals.append(t)
            sizes.append(n)
        }
        #expect(sizes == [52, 1200])
        #expect(Self.drain(.rtcp, b).map(\.0) == [Self.rtcpReceiverReport(ssrc: 7)])
        // The kernel's receive time: just after sending, well before the poll 60 ms later.
        for t in arrivals {
            #expect(
                t >= sentAt - .milliseconds(2) && t < polledAt - .milliseconds(40),
                "arrival \(t) sent \(sentAt) polled \(polledAt)")
        }
        let port = Int(b.localEndpoint.port)
        await b.close()
        _ = Self.send(Self.rtp(sequence: 5), from: a)
        #expect(b.receiveFromSocket() == 0)
        let again = try await UDPMediaTransport.bind(host: "127.0.0.1", port: port)
        await again.close()
        await a.close()
    }

    @Test func sendingWithoutARemoteIsCountedNotSent() async throws {
        let a = try await Self.bound()
        #expect(Self.send(Self.rtp(sequence: 1), from: a) == .noRemote)
        #expect(a.counters.sendNoRemote == 1 && a.counters.sent == 0)
        await a.close()
    }

    @Test func closeStopsSendersReleasesThePortAndIsIdempotent() async throws {
        let a = try await Self.bound(), b = try await Self.bound()
        a.setRemote(b.localEndpoint)
        #expect(Self.send(Self.rtp(sequence: 1), from: a) == .sent)
        let port = Int(a.localEndpoint.port)
        await a.close()
        await a.closed
        #expect(Self.send(Self.rtp(sequence: 2), from: a) == .closed)
        await a.close()
        // The port is free again right away.
        let again = try await UDPMediaTransport.bind(host: "127.0.0.1", port: port)
        #expect(Int(again.localEndpoint.port) == port)
        await again.close()
        await b.close()
    }

    @Test func badBindAddressesAreTypedErrors() async throws {
        await #expect(throws: UDPTransportError.badAddress("'localhost' is neither an IPv4 nor an IPv6 address")) {
            _ = try await UDPMediaTransport.bind(host: "localhost", port: 0)
        }
        let a = try await Self.bound()
        await #expect(throws: UDPTransportError.socketCall("bind", errno: 98)) {  // EADDRINUSE
            _ = try await UDPMediaTransport.bind(host: "127.0.0.1", port: Int(a.localEndpoint.port))
        }
        await a.close()
    }
}
