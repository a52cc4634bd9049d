import Foundation
import Testing
import VoiceConference
import VoiceCore
import VoiceEngine
import VoiceLab
import VoiceNetSim
import VoiceTestSupport

/// A sine at `frequency` with the given peak, `milliseconds` long, at 16 kHz.
func sine(_ frequency: Double, milliseconds: Int, peak: Double) -> [Int16] {
    (0..<(milliseconds * 16)).map { Int16((peak * sin(2 * Double.pi * frequency * Double($0) / 16_000)).rounded()) }
}

/// A tone with a syllable-like envelope (4 Hz, from 5 % to 100 % of `peak`): what Opus's voice activity
/// detection keeps treating as speech, so DTX stays off while it plays (a steady tone would soon count as noise).
func talk(_ frequency: Double, milliseconds: Int, peak: Double, phase: Double = 0) -> [Int16] {
    (0..<(milliseconds * 16)).map {
        let t = Double($0) / 16_000
        let envelope = 0.525 + 0.475 * sin(2 * Double.pi * 4 * t + phase)
        return Int16((peak * envelope * sin(2 * Double.pi * frequency * t)).rounded())
    }
}

/// Power of `frequency` in `samples` (Goertzel, normalised per sample²): how loudly one talker's tone is heard.
func tonePower(_ samples: ArraySlice<Int16>, frequency: Double) -> Double {
    let k = 2 * cos(2 * Double.pi * frequency / 16_000)
    var s1 = 0.0, s2 = 0.0
    for x in samples {
        let s0 = Double(x) + k * s1 - s2
        s2 = s1
        s1 = s0
    }
    let n = Double(samples.count)
    return (s1 * s1 + s2 * s2 - k * s1 * s2) / (n * n)
}

/// dB of one tone's power against a full-scale sine's.
func toneDB(_ samples: ArraySlice<Int16>, _ frequency: Double) -> Double {
    10 * log10(max(tonePower(samples, frequency: frequency), 1e-9) / (32_767.0 * 32_767.0 / 4))
}

@Suite("Conference mixer")
struct ConferenceMixerTests {
    /// Three talkers on distinct tones, two silent listeners with DTX: each talker hears the other two and not
    /// itself (mix-minus), each listener hears all three from the one shared encode, the silent members cost no
    /// decode once dormant, and nothing clips.
    @Test func mixMinusSharedEncodeAndDormantListeners() throws {
        let tones = [440.0, 700.0, 1_100.0]
        var members = tones.enumerated().map { i, f in
            ConferenceSimulation.Member(
                label: "talker\(i)", input: talk(f, milliseconds: 3_000, peak: 9_000, phase: Double(i)))
        }
        members += [ConferenceSimulation.Member(label: "listener0"), ConferenceSimulation.Member(label: "listener1")]
        let sim = try ConferenceSimulation(configuration: .init(members: members, durationMilliseconds: 3_000))
        let r = sim.run()
        let window = 1_000 * 16..<2_500 * 16  // steady state
        for (i, f) in tones.enumerated() {
            let heard = r.received[i][window]
            #expect(toneDB(heard, f) < -40, "talker \(i) hears itself at \(toneDB(heard, f)) dB")
            for (j, g) in tones.enumerated() where j != i {
                #expect(toneDB(heard, g) > -25, "talker \(i) hears talker \(j) at \(toneDB(heard, g)) dB")
            }
        }
        for l in 3...4 {
            for f in tones { #expect(toneDB(r.received[l][window], f) > -25, "listener \(l) misses \(f) Hz") }
        }
        // Cost model: 3 own encodes per tick (talkers' mix-minus) + 1 shared encode, 2 shared sends per tick. Each
        // talker also gets the shared frame once: in the tick its first packet waits as the one-packet FEC
        // look-ahead the room's streams hold from a call's start, it is not yet a talker.
        let ticks = r.ticks
        #expect(r.room.ownEncodedFrames >= 3 * (ticks - 10) && r.room.ownEncodedFrames <= 3 * ticks)
        #expect(r.room.sharedEncodedFrames <= ticks && r.room.sharedEncodedFrames >= ticks - 10)
        #expect(r.room.sharedFramesSent == 2 * r.room.sharedEncodedFrames + tones.count)
        #expect(r.room.encoderGroups == 1)
        // DTX: the silent members are dormant nearly all the time.
        for l in 3...4 {
            let p = r.participants[l]
            #expect(p.dormantTicks > ticks * 8 / 10, "listener \(l) dormant \(p.dormantTicks) of \(ticks)")
            // Its receive chain ran only for its first packets and one tick per DTX update (every 400 ms).
            #expect(p.decodedTicks < ticks / 4, "listener \(l) decoded \(p.decodedTicks) of \(ticks) ticks")
            #expect(p.talkerTicks == 0)
        }
        #expect(r.room.clippedSamples == 0)
        for p in r.participants { #expect(p.drops == 0) }
    }

    /// Four talkers of different loudness with N = 3: the quietest is not mixed; with N = 4 it is.
    @Test func theNLoudestAreChosen() throws {
        let levels = [8_000.0, 6_000, 4_000, 1_500]
        let tones = [440.0, 700.0, 1_100.0, 1_500.0]
        var members = zip(tones, levels).enumerated().map { i, fl in
            ConferenceSimulation.Member(label: "t\(i)", input: sine(fl.0, milliseconds: 2_000, peak: fl.1), dtx: false)
        }
        members.append(ConferenceSimulation.Member(label: "listener"))
        for n in [3, 4] {
            let sim = try ConferenceSimulation(
                configuration: .init(
                    members: members, room: ConferenceRoomConfiguration(maximumTalkers: n), durationMilliseconds: 2_000)
            )
            let r = sim.run()
            let heard = r.received[4][(800 * 16)..<(1_800 * 16)]
            for f in tones.prefix(3) { #expect(toneDB(heard, f) > -30) }
            if n == 3 {
                #expect(toneDB(heard, 1_500) < -45, "quietest talker mixed with N = 3: \(toneDB(heard, 1_500)) dB")
                #expect(r.participants[3].talkerTicks < 10)
            } else {
                #expect(toneDB(heard, 1_500) > -40, "quietest talker missing with N = 4")
            }
            #expect(r.room.meanTalkers <= Double(n))
        }
    }

    /// Three full-scale talkers sum to three times full scale: the limiter keeps every output inside 16 bits
    /// without clipping (no sample clamped, the listener's peak below full scale, the limiter visibly working).
    @Test func limiterPreventsClipping() throws {
        let members =
            [440.0, 700.0, 1_100.0].enumerated().map { i, f in
                ConferenceSimulation.Member(
                    label: "loud\(i)", input: sine(f, milliseconds: 2_000, peak: 32_000), dtx: false)
            } + [ConferenceSimulation.Member(label: "listener")]
        let r = try ConferenceSimulation(configuration: .init(members: members, durationMilliseconds: 2_000)).run()
        #expect(r.room.clippedSamples == 0)
        #expect(r.room.limitedBlocks > 50)
        // The listener's decoded mix: loud but no run of samples stuck at full scale (what clipping looks like).
        let heard = r.received[3][(500 * 16)...]
        let atRail = heard.filter { abs(Int($0)) >= 32_700 }.count
        #expect(atRail < heard.count / 1000, "\(atRail) samples at the rail")
    }

    @Test func limiterArithmetic() {
        var limiter = ConferenceLimiter(threshold: 30_000)
        let acc = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 320)
        let out = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 320)
        defer {
            acc.deallocate()
            out.deallocate()
        }
        for round in 0..<50 {
            for i in 0..<320 { acc[i] = Int32((90_000 * sin(Double(i + round * 320) * 0.1)).rounded()) }
            limiter.process(UnsafeBufferPointer(acc), minus: nil, into: out)
            #expect(out.allSatisfy { abs(Int($0)) <= 30_000 })
        }
        #expect(limiter.clippedSamples == 0)
        #expect(limiter.gain < 0.4)
        // Quiet input: the gain recovers towards 1 and the signal passes unchanged.
        for _ in 0..<200 {
            for i in 0..<320 { acc[i] = Int32(i % 100) }
            limiter.process(UnsafeBufferPointer(acc), minus: nil, into: out)
        }
        #expect(limiter.gain > 0.99)
        // Mix-minus: accumulator minus own voice.
        for i in 0..<320 { acc[i] = 1_000 }
        let own = [Int16](repeating: 400, count: 320)
        own.withUnsafeBufferPointer { limiter.process(UnsafeBufferPointer(acc), minus: $0, into: out) }
        #expect(out.allSatisfy { abs(Int($0) - 600) <= 6 })
    }

    /// The limiter gives, sample for sample, what its earlier loop gave (truncation by `.rounded(.towardZero)`, which
    /// called libm per sample, where it now converts with `Int32(_:)`), through attack, release and unity, with and
    /// without mix-minus; the mixed audio, and so the bytes sent, cannot change with that rewrite.
    @Test func limiterMatchesGeneralLoop() {
        let n = 320
        var limiter = ConferenceLimiter(threshold: 30_934)
        var gain = 1.0
        let acc = UnsafeMutableBufferPointer<Int32>.allocate(capacity: n)
        let own = UnsafeMutableBufferPointer<Int16>.allocate(capacity: n)
        let out = UnsafeMutableBufferPointer<Int16>.allocate(capacity: n)
        defer {
            acc.deallocate()
            own.deallocate()
            out.deallocate()
        }
        var scaledBlocks = 0
        var unityBlocks = 0
        for round in 0..<400 {
            // Loud (limiting), then falling (release), then quiet long enough for the gain to reach 1 (unity), in
            // cycles of 200 blocks.
            let phase = round % 200
            let amplitude = phase < 20 ? 95_000.0 : (phase < 35 ? 40_000 : (phase < 50 ? 20_000 : 5_000))
            for i in 0..<n {
                let t = Double(i + round * n)
                acc[i] = Int32((amplitude * sin(t * 0.037) + 0.3 * amplitude * sin(t * 0.71)).rounded())
                own[i] = Int16((0.2 * min(amplitude, 30_000) * sin(t * 0.037)).rounded())
            }
            let minus: UnsafeBufferPointer<Int16>? = round % 3 == 0 ? nil : UnsafeBufferPointer(own)
            limiter.process(UnsafeBufferPointer(acc), minus: minus, into: out)
            // The general loop, as it was.
            var peak: Int32 = 0
            for i in 0..<n { peak = max(peak, abs(minus.map { acc[i] &- Int32($0[i]) } ?? acc[i])) }
            let target = peak > 30_934 ? 30_934.0 / Double(peak) : 1
            let (start, end) =
                target <= gain ? (target, target) : (gain, min(target, gain + (target - gain) * 0.1 + 1e-6))
            let step = (end - start) / Double(n)
            var g = start
            var same = true
            for i in 0..<n {
                let x = minus.map { acc[i] &- Int32($0[i]) } ?? acc[i]
                var y = start == 1 && end == 1 ? x : Int32((Double(x) * g).rounded(.towardZero))
                y = min(max(y, -30_934), 30_934)
                if out[i] != Int16(y) { same = false }
                g += step
            }
            gain = end
            if start == 1 && end == 1 { unityBlocks += 1 } else { scaledBlocks += 1 }
            #expect(same, "block \(round) differs")
            #expect(limiter.gain == gain)
        }
        #expect(
            scaledBlocks > 100 && unityBlocks > 50,
            "both the unity and the scaled path exercised: \(scaledBlocks) scaled, \(unityBlocks) unity")
        #expect(limiter.clippedSamples == 0)
    }

    /// A member joins mid-room and another leaves: the newcomer hears and is heard from its join, the leaver's
    /// voice leaves the mix, and nothing is sent to it afterwards.
    @Test func joinAndLeaveMidRoom() throws {
        let members = [
            ConferenceSimulation.Member(label: "a", input: sine(440, milliseconds: 4_000, peak: 6_000), dtx: false),
            ConferenceSimulation.Member(
                label: "b", input: sine(700, milliseconds: 4_000, peak: 6_000), leaveMilliseconds: 2_000, dtx: false),
            ConferenceSimulation.Member(
                label: "c", input: sine(1_100, milliseconds: 4_000, peak: 6_000), joinMilliseconds: 1_000, dtx: false),
            ConferenceSimulation.Member(label: "listener")
        ]
        let r = try ConferenceSimulation(configuration: .init(members: members, durationMilliseconds: 4_000)).run()
        let l = r.received[3]
        // Before c joins: a and b. While all are in: a, b, c. After b left: a and c, no b.
        #expect(toneDB(l[(300 * 16)..<(900 * 16)], 1_100) < -45)
        #expect(toneDB(l[(300 * 16)..<(900 * 16)], 700) > -30)
        #expect(toneDB(l[(1_400 * 16)..<(1_900 * 16)], 1_100) > -30)
        #expect(toneDB(l[(2_400 * 16)..<(3_800 * 16)], 700) < -45)
        #expect(toneDB(l[(2_400 * 16)..<(3_800 * 16)], 440) > -30)
        // c hears a from its join; b's last statistics were taken when it left.
        #expect(toneDB(r.received[2][(1_500 * 16)..<(1_900 * 16)], 440) > -30)
        #expect(r.participants[1].packetsSent > 0)
        #expect(r.room.participants.count == 3)
    }

    /// A muted talker is not heard; a clip played into the room is heard by everyone.
    @Test func muteAndClip() throws {
        let members = [
            ConferenceSimulation.Member(
                label: "a", input: sine(440, milliseconds: 2_000, peak: 6_000), muted: true, dtx: false),
            ConferenceSimulation.Member(label: "b", input: sine(700, milliseconds: 2_000, peak: 6_000), dtx: false),
            ConferenceSimulation.Member(label: "listener")
        ]
        let sim = try ConferenceSimulation(configuration: .init(members: members, durationMilliseconds: 2_000))
        sim.room.play(ConferenceClip.tone(frequency: 1_000, milliseconds: 3_000))
        let r = sim.run()
        let heard = r.received[2][(500 * 16)..<(1_800 * 16)]
        #expect(toneDB(heard, 440) < -45, "muted talker heard")
        #expect(toneDB(heard, 700) > -30)
        #expect(toneDB(heard, 1_000) > -30, "clip not heard by the listener")
        #expect(toneDB(r.received[1][(500 * 16)..<(1_800 * 16)], 1_000) > -30, "clip not heard by the talker")
        #expect(r.participants[0].talkerTicks == 0)
    }

    /// A silent (dormant, DTX) participant that starts talking wakes on its first packet and is heard at once.
    @Test func dormantParticipantWakesWhenItTalks() throws {
        let members = [
            ConferenceSimulation.Member(label: "a", input: talk(440, milliseconds: 4_000, peak: 9_000)),
            ConferenceSimulation.Member(
                label: "late", input: talk(1_100, milliseconds: 2_000, peak: 9_000), inputOffsetMilliseconds: 2_000),
            ConferenceSimulation.Member(label: "listener")
        ]
        let r = try ConferenceSimulation(configuration: .init(members: members, durationMilliseconds: 4_000)).run()
        let l = r.received[2]
        #expect(toneDB(l[(1_000 * 16)..<(1_900 * 16)], 1_100) < -45)
        // Heard within 150 ms of starting (the path's delay plus waking), and steadily afterwards.
        #expect(toneDB(l[(2_150 * 16)..<(2_400 * 16)], 1_100) > -30, "late talker not heard promptly")
        #expect(toneDB(l[(2_400 * 16)..<(3_900 * 16)], 1_100) > -25)
        #expect(r.participants[1].dormantTicks > 50)
        #expect(r.participants[1].talkerTicks > 80)
    }

    /// The media-thread pool ticks a room in real time and runs control-plane requests on the room's thread.
    @Test func mediaThreadsTickRoomsAndRunRequests() async throws {
        let threads = ConferenceMediaThreads(threadCount: 1)
        defer { threads.shutdown() }
        let room = try ConferenceRoom(id: "pool")
        threads.add(room)
        let counted = ClosurePacketSink { _, _, _ in }
        // (participants, ticks, monotonic ns) as seen on the room's thread.
        let seen = AsyncStream<(Int, Int, Int64)>.makeStream()
        threads.perform(on: room) { room in
            _ = try? room.addParticipant(
                label: "p", configuration: MediaStreamConfiguration(voiceProcessing: false), sink: counted,
                now: MonotonicClock().now)
            seen.continuation.yield((room.participants.count, room.statistics.ticks, MonotonicClock().now.nanoseconds))
        }
        var iterator = seen.stream.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.0 == 1)
        try await Task.sleep(for: .milliseconds(300))
        threads.perform(on: room) { room in
            seen.continuation.yield((room.participants.count, room.statistics.ticks, MonotonicClock().now.nanoseconds))
        }
        let second = try #require(await iterator.next())
        let ticks = second.1 - first.1
        let elapsedTicks = Int((second.2 - first.2) / 20_000_000)
        // One tick per 20 ms of the time that passed on the room's thread (never more; a starved thread skips the
        // ticks it missed by more than one instead of bursting through them, so fewer on a loaded machine).
        #expect(ticks >= 2 && ticks <= elapsedTicks + 2, "\(ticks) ticks in \(elapsedTicks) × 20 ms")
        #expect(threads.tickCounts.ticks >= second.1)
    }
}
