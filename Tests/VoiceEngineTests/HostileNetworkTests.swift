import Foundation
import Testing
import VoiceEngine
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Hostile network against a running receive chain: a legitimate SRTP stream plus floods of random UDP, replayed
/// packets, packets under a wrong key, a second SSRC, RTCP with lying length fields, a huge timestamp jump and a
/// sequence wrap with reordering. Traffic only on 127.0.0.1; every test is bounded in packets.
///
/// Run: `swift test --filter HostileNetworkTests`.
///
/// The reference for "the call's audio continues" is a second, identical receiver fed only the legitimate
/// packets at the same times: every attack datagram must be dropped before it can touch the receive chain's
/// state, so the attacked receiver's playout must equal the reference's sample for sample.
///
/// SSRC policy (documented decision): the stream latches the first authenticated SSRC (or the one signalled in
/// the configuration) and counts RTP from any other SSRC as `unknownSSRC` for the rest of the call, even when it
/// authenticates under the peer's key and even after RFC 3550 probation would have validated it. RFC 3550 calls
/// a new SSRC a new source; in a one-to-one call the engine plays exactly one source, and switching to another
/// one is a signalling event (a new `a=ssrc`/re-INVITE), not something a datagram may decide.
@Suite(.tags(.live), .scheduledByTags, .serialized) struct HostileNetworkTests {
    static let ssrc: UInt32 = 0x5EED_0001

    /// 20 s of speech and the legitimate packets of it (SRTP under A's key), the receiver's configuration.
    struct Fixture {
        let input: [Int16]
        let srtpA: MediaStreamSRTP
        let srtpB: MediaStreamSRTP
        let receiver: MediaStreamConfiguration

        init(seconds: Double, seed: UInt64) {
            input = StreamTestSupport.speech(seconds: seconds, seed: seed)
            (srtpA, srtpB) = StreamTestSupport.srtpPair(seed: seed &+ 1)
            receiver = StreamTestSupport.configuration(seed: 500, srtp: srtpB)
        }

        func frame(_ k: Int) -> ArraySlice<Int16> {
            input[(k * HandmadeRTPSender.frameSamples)..<((k + 1) * HandmadeRTPSender.frameSamples)]
        }
        var frames: Int { input.count / HandmadeRTPSender.frameSamples }
    }

    /// The attack traffic of one 20 ms tick, tagged by category.
    enum Category: CaseIterable {
        case random, replay, wrongKey, newSSRC, lyingRTCPUnderSRTCP, lyingRTCPPlain
    }

    /// Generates a tick's attack datagrams. `recent` holds the last legitimate packets (for replays).
    final class Attacker {
        var rng: SeededGenerator
        let wrongKey: HandmadeRTPSender
        let newSource: HandmadeRTPSender
        let keyed: HandmadeRTPSender
        var recent: [[UInt8]] = []
        var counts: [Category: Int] = [:]

        init(fixture: Fixture, seed: UInt64) throws {
            rng = SeededGenerator(seed: seed)
            let wrong = StreamTestSupport.srtpPair(seed: seed &+ 77).0.localKey
            wrongKey = try HandmadeRTPSender(
                ssrc: HostileNetworkTests.ssrc, key: wrong, sequence: 0, timestamp: 0)
            newSource = try HandmadeRTPSender(
                ssrc: 0xBAD0_0002, key: fixture.srtpA.localKey, sequence: 4_000, timestamp: 99)
            // SRTCP under the legitimate key around lying RTCP: authenticates, then must fail to parse.
            keyed = try HandmadeRTPSender(
                ssrc: HostileNetworkTests.ssrc, key: fixture.srtpA.localKey, sequence: 0, timestamp: 0)
        }

        /// `randomCount` random datagrams of 0...1600 bytes (a quarter with RTP version 2 so they get past the
        /// version check), plus, when `special`, one datagram of each targeted category.
        func datagrams(
            tick: Int, randomCount: Int, special: Bool, legitNextSequence: UInt16, frame: ArraySlice<Int16>
        ) throws -> [[UInt8]] {
            var out: [[UInt8]] = []
            for _ in 0..<randomCount {
                let n = Int.random(in: 0...1_600, using: &rng)
                var d = [UInt8](repeating: 0, count: n)
                d.withUnsafeMutableBytes { raw in
                    var i = 0
                    while i < n {
                        var word = rng.next()
                        for _ in 0..<min(8, n - i) {
                            raw[i] = UInt8(truncatingIfNeeded: word)
                            word >>= 8
                            i += 1
                        }
                    }
                }
                if n > 0 && Int.random(in: 0..<4, using: &rng) == 0 { d[0] = 0x80 | (d[0] & 0x3F) }
                out.append(d)
            }
            counts[.random, default: 0] += randomCount
            guard special else { return out }
            if let old = recent.randomElement(using: &rng) {
                out.append(old)
                counts[.replay, default: 0] += 1
            }
            // Same SSRC, a sequence number the real sender has not used yet (so the replay check passes), wrong key.
            wrongKey.packetizer = RTPPacketizer(
                payloadType: 111, ssrc: HostileNetworkTests.ssrc, initialSequenceNumber: legitNextSequence &+ 5,
                initialTimestamp: UInt32(tick) &* 960)
            out.append(try wrongKey.packet(frame))
            counts[.wrongKey, default: 0] += 1
            out.append(try newSource.packet(frame))
            counts[.newSSRC, default: 0] += 1
            out.append(try keyed.srtcp(HandmadeRTPSender.lyingRTCP(ssrc: 0xBAD0_0003, variant: tick)))
            counts[.lyingRTCPUnderSRTCP, default: 0] += 1
            out.append(HandmadeRTPSender.lyingRTCP(ssrc: 0xBAD0_0003, variant: tick + 1))
            counts[.lyingRTCPPlain, default: 0] += 1
            return out
        }

        var total: Int { counts.values.reduce(0, +) }
    }

    /// Checks the per-category counts that can be told apart, and that the drops add up to the attack.
    static func checkDrops(_ d: MediaStreamDrops, attacker: Attacker, droppedBeforeStream: Int) {
        // Random bytes never reach the SRTP check for the latched SSRC (a random SSRC matching it is a 2^-32
        // event), so the replay and authentication counters belong to the targeted categories alone.
        #expect(d.replayed == attacker.counts[.replay, default: 0])
        #expect(d.authenticationFailed == attacker.counts[.wrongKey, default: 0])
        #expect(d.unknownSSRC >= attacker.counts[.newSSRC, default: 0])
        #expect(d.malformedRTCP >= attacker.counts[.lyingRTCPUnderSRTCP, default: 0])
        #expect(d.rtcpAuthenticationFailed >= attacker.counts[.lyingRTCPPlain, default: 0])
        #expect(d.badSequence == 0)
        #expect(d.total + droppedBeforeStream == attacker.total)
    }

    /// Over real loopback UDP: the legitimate sender and the attacker each own a socket; the receiver's
    /// `UDPMediaTransport` feeds the stream. 50 000 random datagrams and 500 targeted ones over 20 s of audio.
    @Test func loopbackFloodReplayWrongKeyNewSSRCAndLyingRTCPAreCountedAndAudioIsUntouched() async throws {
        let fixture = Fixture(seconds: 20, seed: 901)
        let transportConfig = UDPMediaTransport.Configuration(rtpQueueCapacity: 1_024, rtcpQueueCapacity: 256)
        let receiverSocket = try await UDPMediaTransport.bind(host: "127.0.0.1", configuration: transportConfig)
        let legitSocket = try await UDPMediaTransport.bind(host: "127.0.0.1")
        let attackSocket = try await UDPMediaTransport.bind(host: "127.0.0.1")
        let destination = receiverSocket.localEndpoint

        let stream = try MediaStream(configuration: fixture.receiver)
        let reference = try MediaStream(configuration: fixture.receiver)
        let legit = try HandmadeRTPSender(
            ssrc: Self.ssrc, key: fixture.srtpA.localKey, sequence: 1_000, timestamp: 12_345)
        let attacker = try Attacker(fixture: fixture, seed: 902)
        var frame = AudioFrame(format: .mono16k)
        var referenceFrame = AudioFrame(format: .mono16k)
        var played: [Int16] = []
        var referencePlayed: [Int16] = []
        var sentToReceiver = 0
        var kernelShortfall = 0
        let ticks = fixture.frames  // 1000
        var memory = HostileSupport.MemoryWatch(warmUp: 100..<110, endFrom: ticks - 10)

        /// Sends, then waits (bounded) until the receiver's event loop has read every datagram sent so far.
        func sendAndSettle(_ datagrams: ArraySlice<[UInt8]>, from socket: UDPMediaTransport) {
            for d in datagrams {
                let result = d.withUnsafeBytes { socket.send($0, to: destination) }
                #expect(result == .sent)
                sentToReceiver += 1
            }
            var waited = 0
            while receiverSocket.counters.datagramsRead < sentToReceiver - kernelShortfall && waited < 2_000 {
                usleep(500)
                waited += 1
            }
            kernelShortfall = sentToReceiver - receiverSocket.counters.datagramsRead
        }

        for k in 0..<ticks {
            let now = MediaTime.milliseconds(Int64(k) * 20 + 20)
            let packet = try legit.packet(fixture.frame(k))
            sendAndSettle([packet][...], from: legitSocket)
            let attack = try attacker.datagrams(
                tick: k, randomCount: 50, special: k % 10 == 5,
                legitNextSequence: legit.packetizer.nextSequenceNumber, frame: fixture.frame(k))
            var i = 0
            while i < attack.count {
                sendAndSettle(attack[i..<min(i + 16, attack.count)], from: attackSocket)
                i += 16
            }
            attacker.recent.append(packet)
            if attacker.recent.count > 64 { attacker.recent.removeFirst() }

            while receiverSocket.withNextPacket(.rtp, { stream.receiveDatagram($0.bytes, arrival: now) }) != nil {}
            while receiverSocket.withNextPacket(.rtcp, { stream.receiveDatagram($0.bytes, arrival: now) }) != nil {}
            reference.receiveDatagram(packet, arrival: now)
            for half in 0..<2 {
                let t = now + .milliseconds(Int64(half) * 10)
                stream.renderPlayout(into: &frame, now: t)
                reference.renderPlayout(into: &referenceFrame, now: t)
                played += frame.samples
                referencePlayed += referenceFrame.samples
            }
            memory.sample(tick: k)
        }
        let transport = receiverSocket.counters
        await receiverSocket.close()
        await legitSocket.close()
        await attackSocket.close()

        // Nothing lost on loopback; every datagram read was queued or dropped by the transport with a reason.
        #expect(kernelShortfall == 0)
        #expect(transport.datagramsRead == ticks + attacker.total)
        #expect(transport.droppedRTPQueueFull == 0 && transport.droppedRTCPQueueFull == 0)
        let droppedByTransport =
            transport.droppedEmpty + transport.droppedTooShort + transport.droppedNotRTP + transport.droppedOversize
            + transport.droppedOtherAddressFamily
        let s = stream.statistics
        Self.checkDrops(s.drops, attacker: attacker, droppedBeforeStream: droppedByTransport)
        #expect(transport.receivedRTP + transport.receivedRTCP == ticks + attacker.total - droppedByTransport)
        // Audio: every legitimate packet accepted, nothing lost, playout identical to the un-attacked reference.
        #expect(s.packetsReceived == ticks)
        #expect(s.lostPackets == 0)
        #expect(s.rtcpReceived == 0)
        #expect(stream.remoteSSRC == Self.ssrc)
        #expect(played == referencePlayed)
        let speechLevel = StreamTestSupport.level(played[16_000...])
        #expect(speechLevel > -35)
        // Memory: the flood must not grow the process (minimum over the last samples against the maximum after
        // warm-up, so another suite's transient allocation does not count; a leak would show in both).
        print(
            "hostile loopback: \(attacker.total) attack datagrams (\(attacker.counts)), transport drops "
                + "\(droppedByTransport), stream drops \(s.drops), RSS \(memory.summary), growth \(memory.growth) MiB, "
                + "playout level \(speechLevel) dBFS")
        #expect(memory.growth < 20)
    }

    /// The same attack mix straight into `receiveDatagram` at volume: 100 000 random datagrams and 5 000 targeted
    /// ones over 40 s of audio.
    @Test func directFloodOfOneHundredThousandDatagramsLeavesAudioAndMemoryUntouched() throws {
        let fixture = Fixture(seconds: 40, seed: 911)
        let stream = try MediaStream(configuration: fixture.receiver)
        let reference = try MediaStream(configuration: fixture.receiver)
        let legit = try HandmadeRTPSender(
            ssrc: Self.ssrc, key: fixture.srtpA.localKey, sequence: 65_000, timestamp: 0xFFFF_0000)
        let attacker = try Attacker(fixture: fixture, seed: 912)
        var frame = AudioFrame(format: .mono16k)
        var referenceFrame = AudioFrame(format: .mono16k)
        var played: [Int16] = []
        var referencePlayed: [Int16] = []
        let ticks = fixture.frames  // 2000
        var memory = HostileSupport.MemoryWatch(warmUp: 200..<210, endFrom: ticks - 10)
        for k in 0..<ticks {
            let now = MediaTime.milliseconds(Int64(k) * 20 + 20)
            let packet = try legit.packet(fixture.frame(k))
            stream.receiveDatagram(packet, arrival: now)
            reference.receiveDatagram(packet, arrival: now)
            for d in try attacker.datagrams(
                tick: k, randomCount: 50, special: k % 2 == 1,
                legitNextSequence: legit.packetizer.nextSequenceNumber, frame: fixture.frame(k))
            {
                stream.receiveDatagram(d, arrival: now)
            }
            attacker.recent.append(packet)
            if attacker.recent.count > 64 { attacker.recent.removeFirst() }
            for half in 0..<2 {
                let t = now + .milliseconds(Int64(half) * 10)
                stream.renderPlayout(into: &frame, now: t)
                reference.renderPlayout(into: &referenceFrame, now: t)
                played += frame.samples
                referencePlayed += referenceFrame.samples
            }
            memory.sample(tick: k)
        }
        let s = stream.statistics
        Self.checkDrops(s.drops, attacker: attacker, droppedBeforeStream: 0)
        #expect(s.drops.total == attacker.total)
        #expect(s.packetsReceived == ticks)
        #expect(s.lostPackets == 0)
        #expect(played == referencePlayed)
        #expect(StreamTestSupport.level(played[16_000...]) > -35)
        print(
            "hostile direct: \(attacker.total) datagrams, drops \(s.drops), RSS growth \(memory.growth) MiB "
                + "(\(memory.summary))")
        #expect(memory.growth < 20)
    }

    /// A second sender under the peer's own key with a new SSRC, first beside the real one and then alone (as a
    /// peer restarting without signalling would): rejected as `unknownSSRC` the whole time, through and past
    /// RFC 3550 probation; the latched source plays untouched while it lasts, then the call is silent.
    @Test func secondSenderWithNewSSRCIsRejectedForTheWholeCall() throws {
        let fixture = Fixture(seconds: 10, seed: 921)
        let stream = try MediaStream(configuration: fixture.receiver)
        let reference = try MediaStream(configuration: fixture.receiver)
        let legit = try HandmadeRTPSender(
            ssrc: Self.ssrc, key: fixture.srtpA.localKey, sequence: 10, timestamp: 10)
        let second = try HandmadeRTPSender(
            ssrc: 0x0000_0BAD, key: fixture.srtpA.localKey, sequence: 20_000, timestamp: 77)
        var frame = AudioFrame(format: .mono16k)
        var referenceFrame = AudioFrame(format: .mono16k)
        var played: [Int16] = []
        var referencePlayed: [Int16] = []
        var secondSent = 0
        for k in 0..<fixture.frames {
            let now = MediaTime.milliseconds(Int64(k) * 20 + 20)
            if k < 250 {  // the first 5 s: both senders; then only the new SSRC
                let p = try legit.packet(fixture.frame(k))
                stream.receiveDatagram(p, arrival: now)
                reference.receiveDatagram(p, arrival: now)
            }
            if k >= 50 {
                stream.receiveDatagram(try second.packet(fixture.frame(k)), arrival: now)
                secondSent += 1
            }
            for half in 0..<2 {
                let t = now + .milliseconds(Int64(half) * 10)
                stream.renderPlayout(into: &frame, now: t)
                reference.renderPlayout(into: &referenceFrame, now: t)
                played += frame.samples
                referencePlayed += referenceFrame.samples
            }
        }
        let s = stream.statistics
        #expect(s.drops.unknownSSRC == secondSent)
        #expect(s.drops.total == secondSent)
        #expect(s.packetsReceived == 250)
        #expect(stream.remoteSSRC == Self.ssrc)
        #expect(played == referencePlayed)
        #expect(StreamTestSupport.level(played[16_000..<(16_000 * 5)]) > -35)
        #expect(StreamTestSupport.level(played[(16_000 * 7)...]) < -60)
    }

    /// The legitimate sender starts 200 packets before the 16-bit sequence wrap and reorders pairs and triples
    /// around it (under SRTP, so libsrtp's rollover-counter estimate is exercised too); at packet 300 its timestamp
    /// jumps by `jump` ticks with the sequence numbers continuing (a sender restarting its media clock).
    /// Returns what was played and the receiver's figures.
    static func wrapReorderAndJump(jump: UInt32) throws -> (
        played: [Int16], input: [Int16], stats: MediaStreamStatistics, sent: Int
    ) {
        let fixture = Fixture(seconds: 16, seed: 931)
        let stream = try MediaStream(configuration: fixture.receiver)
        let legit = try HandmadeRTPSender(
            ssrc: Self.ssrc, key: fixture.srtpA.localKey, sequence: 65_336, timestamp: 0xFFFF_F000)
        var rng = SeededGenerator(seed: 932)
        var packets: [[UInt8]] = []
        for k in 0..<fixture.frames {
            if k == 300 { legit.packetizer.skip(ticks: jump) }
            packets.append(try legit.packet(fixture.frame(k)))
        }
        // Reorder: swap neighbours or rotate triples at random, always around the wrap (packet 200).
        var order = Array(packets.indices)
        var i = 0
        while i + 3 < order.count {
            let r = Int.random(in: 0..<10, using: &rng)
            if (180..<220).contains(i) || r < 3 {
                order.swapAt(i, i + 1)
                i += 2
            } else if r < 5 {
                order[i...(i + 2)] = [order[i + 2], order[i], order[i + 1]]
                i += 3
            } else {
                i += 1
            }
        }
        var frame = AudioFrame(format: .mono16k)
        var played: [Int16] = []
        for (slot, index) in order.enumerated() {
            // Arrival follows the (reordered) position: up to 40 ms late for a displaced packet.
            let now = MediaTime.milliseconds(Int64(slot) * 20 + 20)
            stream.receiveDatagram(packets[index], arrival: now)
            for half in 0..<2 {
                stream.renderPlayout(into: &frame, now: now + .milliseconds(Int64(half) * 10))
                played += frame.samples
            }
        }
        return (played, fixture.input, stream.statistics, packets.count)
    }

    /// Correlation of the played audio with the input over 2 s from `second`, at the best lag.
    static func correlationAfter(second: Int, played: [Int16], input: [Int16]) -> Double {
        let start = 16_000 * second
        let lag = StreamTestSupport.lag(
            reference: Array(input[start..<(start + 32_000)]), test: Array(played[start..<(start + 40_000)]),
            maxLag: 6_000)
        return HostileSupport.correlation(
            input[start..<(start + 32_000)], played[(start + lag)..<(start + lag + 32_000)])
    }

    /// Sequence wrap with reordering under SRTP, then a forward timestamp jump of 10 minutes: nothing dropped or
    /// counted lost, audio in every second (1 s allowed to settle after the jump), and it still follows the input.
    @Test func sequenceWrapWithReorderingAndTenMinuteTimestampJumpKeepAudioFlowing() throws {
        let (played, input, s, sent) = try Self.wrapReorderAndJump(jump: 48_000 * 600)
        print(
            "wrap/reorder/jump +10 min: drops \(s.drops.total), received \(s.packetsReceived), lost \(s.lostPackets), "
                + "late \(s.jitterBuffer.latePackets), concealed \(s.jitterBuffer.concealedSamples)")
        #expect(s.drops.total == 0)
        #expect(s.packetsReceived == sent)
        #expect(s.lostPackets == 0)
        // RFC 3550 A.1 counts from the end of probation (reordering among the first packets restarts it).
        #expect(s.expectedPackets == s.receivedPackets)
        #expect(s.expectedPackets > sent - 10)
        #expect(s.jitterBuffer.latePackets < 30)
        for second in 1..<(played.count / 16_000) where second != 6 {
            let level = StreamTestSupport.level(played[(second * 16_000)..<((second + 1) * 16_000)])
            #expect(level > -45, "second \(second): \(level) dBFS")
        }
        #expect(Self.correlationAfter(second: 12, played: played, input: input) > 0.5)
    }

    /// When the sender's timestamp steps backwards (here by 10 minutes; a forward jump of about 2^31 ticks reads the
    /// same in serial arithmetic) while its sequence numbers continue, the jitter buffer starts a new timeline
    /// (NetEq-style) instead of counting every later packet late: the call keeps its audio, where counting them late
    /// would leave it silent for the rest of its life.
    @Test(arguments: [0 &- UInt32(48_000 * 600), UInt32(1 << 31) &+ 960])
    func timestampJumpToANewBaseKeepsAudioFlowing(jump: UInt32) throws {
        let (played, input, s, _) = try Self.wrapReorderAndJump(jump: jump)
        #expect(s.drops.total == 0)
        #expect(s.jitterBuffer.timelineResets == 1)
        #expect(s.jitterBuffer.latePackets < 30)
        #expect(StreamTestSupport.level(played[(16_000 * 8)...]) > -45)
        #expect(Self.correlationAfter(second: 12, played: played, input: input) > 0.5)
    }

    /// Plain RTP (no SRTP to hide behind): RTCP whose length fields lie is counted `malformedRTCP`, never parsed
    /// past its end, and leaves the stream's RTCP state alone.
    @Test func plainRTCPWithLyingLengthFieldsIsCountedMalformed() throws {
        let stream = try MediaStream(configuration: StreamTestSupport.configuration(seed: 940))
        for k in 0..<500 {
            stream.receiveDatagram(
                HandmadeRTPSender.lyingRTCP(ssrc: 0x1234, variant: k), arrival: .milliseconds(Int64(k)))
        }
        let s = stream.statistics
        #expect(s.drops.malformedRTCP == 500)
        #expect(s.drops.total == 500)
        #expect(s.rtcpReceived == 0)
    }
}
