#if canImport(Glibc)
import Glibc
#endif
import VoiceEngine
import VoiceLab

/// Settings and inputs of the full-duplex pipeline benchmark (`voice-bench pipeline`, `PipelineBenchmarks`): two
/// `MediaStream`s calling each other in fast time, each one call leg with its send and receive chains.
public enum PipelineFixtures {
    /// Device rate of both legs' capture and playout blocks (a 48 kHz sound card, `MediaStreamConfiguration`'s
    /// default), so each leg resamples 48 k → 16 k on capture and 16 k → 48 k on playout.
    public static let deviceRate = 48_000
    /// Processing rate: echo canceller, preprocessor, Opus.
    public static let processingRate = 16_000
    /// Opus bitrate and complexity (`MediaStreamConfiguration.defaultOpus`: voip, 20 ms, VBR, FEC off, DTX off).
    public static let bitrate = 32_000
    public static let complexity = 5
    /// Echo path of each leg: what that leg's loudspeaker played, 200 ms later, at about −10 dB (×81/256), added to
    /// its microphone (``PipelineRoom``) — a physical echo of the audio actually played, as in a call, so the
    /// canceller's alignment locks and stays locked. (An echo of the other talker's *original* speech, as this
    /// benchmark used before, is not what was played: the jitter buffer's time-stretching moved it against the
    /// reference by whole ticks, and the canceller spent the benchmark re-acquiring.) The C loop simulates the same
    /// room with the same integer arithmetic.
    public static let echoDelaySeconds = 0.2
    public static let echoGainQ8: Int32 = 81

    /// Payload type, SSRCs and SRTP suite of the two legs.
    public static let payloadType: UInt8 = 111
    public static let ssrcA: UInt32 = 0xA11C_E001
    public static let ssrcB: UInt32 = 0xB0B0_0002
    public static let suite = SRTPCryptoSuite.aesCM128HmacSHA1_80

    /// Deterministic 30-byte master keys (key ‖ salt) of leg A and leg B.
    public static func key(_ leg: UInt8) -> SRTPMasterKey {
        SRTPMasterKey(bytes: (0..<UInt8(suite.keyMaterialLength)).map { $0 &* 37 &+ leg &* 101 &+ 1 })
    }

    /// The echo canceller a call runs: defaults (100 ms tail after alignment, GCC-PHAT delay alignment, drift
    /// tracking, residual-echo suppression, noise suppression −15 dB, VAD) or, with `sameCallsOnly`, alignment and
    /// drift compensation off so that the leg makes exactly the library calls of the C loop (MDF, impulse-response
    /// read every 250 ms, preprocessor) and no Swift-only DSP.
    public static func echoCanceller(sameCallsOnly: Bool) -> EchoCancellerConfiguration {
        sameCallsOnly
            ? EchoCancellerConfiguration(stages: [.echoFilter, .preprocessorEchoSuppression])
            : EchoCancellerConfiguration()
    }

    /// One leg's stream configuration: leg A or leg B (keys and SSRCs), with SRTP or plain RTP (`srtp: false`
    /// only for the allocation suite's check of everything but libsrtp).
    /// The full-DSP legs run the transient suppressor as a call does, so the allocation suite holds it too.
    public static func configuration(isA: Bool, sameCallsOnly: Bool, srtp: Bool = true) -> MediaStreamConfiguration {
        var configuration = MediaStreamConfiguration(
            opus: MediaStreamConfiguration.defaultOpus, processingRate: processingRate,
            deviceFormat: AudioFormat(sampleRate: deviceRate), jitterBuffer: .adaptive(),
            srtp: srtp ? MediaStreamSRTP(suite: suite, localKey: key(isA ? 1 : 2), remoteKey: key(isA ? 2 : 1)) : nil,
            voiceProcessing: true, echoCanceller: echoCanceller(sameCallsOnly: sameCallsOnly),
            payloadType: payloadType, ssrc: isA ? ssrcA : ssrcB, remoteSSRC: isA ? ssrcB : ssrcA,
            seed: isA ? 0xA : 0xB)
        // The C baseline has no transient suppressor: the same-calls legs leave it out.
        if sameCallsOnly { configuration.transientSuppression = nil }
        return configuration
    }

    /// Both near-end talkers at the device rate, `Fixtures.seconds` long: leg A's the speech-like signal with seed
    /// `Fixtures.seed`, leg B's the one with the next seed. Each leg's echo is added as it plays (``PipelineRoom``).
    public static func microphones() -> (a: FixedBuffer<Int16>, b: FixedBuffer<Int16>) {
        let near = [Fixtures.seed, Fixtures.seed &+ 1].map {
            FixedBuffer(
                copying: SignalGenerator.toInt16(
                    SignalGenerator.speechLike(sampleRate: deviceRate, seconds: Fixtures.seconds, seed: $0)))
        }
        return (near[0], near[1])
    }
}

/// One leg's acoustics: a delay line of what its loudspeaker played; the microphone hears the near-end talker plus
/// that, `PipelineFixtures.echoDelaySeconds` later, × `echoGainQ8`/256. Preallocated; `cb_room_*` in CBaseline is
/// the same arithmetic.
public final class PipelineRoom {
    let line: FixedBuffer<Int16>
    var position = 0

    public init() {
        line = FixedBuffer(
            count: Int(PipelineFixtures.echoDelaySeconds * Double(PipelineFixtures.deviceRate)), repeating: 0)
    }

    /// The microphone block: `near` plus the echo of what was played a delay-line length ago; then `played` (the
    /// block the loudspeaker played this tick) enters the line.
    public func capture(
        near: UnsafeBufferPointer<Int16>, played: UnsafeBufferPointer<Int16>,
        into mic: UnsafeMutableBufferPointer<Int16>
    ) {
        let l = line.pointer
        var p = position
        for i in 0..<near.count {
            let echo = (Int32(l[p]) &* PipelineFixtures.echoGainQ8) >> 8
            mic[i] = Int16(clamping: Int32(near[i]) &+ echo)
            l[p] = played[i]
            p += 1
            if p == l.count { p = 0 }
        }
        position = p
    }
}

/// Keeps the last RTP datagram a stream sent (copied into a preallocated buffer) for the peer to receive.
public final class PipelinePacketSlot: MediaPacketSink {
    public let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 16)
    public private(set) var length = 0

    public init() {}
    deinit { bytes.deallocate() }

    public func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
        guard kind == .rtp, datagram.count <= bytes.count else { return }
        UnsafeMutableRawBufferPointer(rebasing: bytes[0..<datagram.count]).copyMemory(from: datagram)
        length = datagram.count
    }

    public var datagram: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[0..<length]) }
}

/// Time spent per operation, in CLOCK_MONOTONIC nanoseconds, summed over both legs.
public struct PipelineOperationTimes: Sendable {
    /// `processCapture` calls: resample, echo canceller + preprocessor, and every 20 ms encode, packetize, protect.
    public var capture: UInt64 = 0
    /// `receiveDatagram` calls: copy, unprotect, parse, statistics, jitter-buffer insert.
    public var receive: UInt64 = 0
    /// `renderPlayout` calls: jitter-buffer tick (decode), far-end reference, resample.
    public var playout: UInt64 = 0
    public init() {}
}

/// Two `MediaStream`s calling each other over a loopback with SRTP, stepped in fast time. One step is 20 ms of
/// a call for both legs: per 10 ms tick `a.renderPlayout`, `a.processCapture`, `b.renderPlayout`,
/// `b.processCapture` (the order a duplex sound card's callback runs them; each microphone block is the near-end
/// talker plus the leg's own loudspeaker through its ``PipelineRoom``); then B receives A's packet and A
/// receives B's (arrival = now: no network delay). RTCP is not polled (it builds arrays, a few packets per 5 s).
/// `cb_pipeline_pair_loop` in CBaseline is the same loop over the C library calls.
public final class PipelineLoopback {
    public let a: MediaStream
    public let b: MediaStream
    public let slotA = PipelinePacketSlot()
    public let slotB = PipelinePacketSlot()
    /// The near-end talkers, contiguous (what the C loop reads), and as device frames.
    public let micA: FixedBuffer<Int16>
    public let micB: FixedBuffer<Int16>
    let framesA: [AudioFrame]
    let framesB: [AudioFrame]
    public let deviceBlock: Int
    public var blockCount: Int { framesA.count }
    var speakerA: AudioFrame
    var speakerB: AudioFrame
    let roomA = PipelineRoom()
    let roomB = PipelineRoom()
    var microphoneA: AudioFrame
    var microphoneB: AudioFrame
    /// Index of the next microphone block.
    public private(set) var nextBlock = 0
    var now = MediaTime.zero

    /// - Parameters:
    ///   - sameCallsOnly: the echo canceller without delay alignment and drift tracking (see `PipelineFixtures`).
    ///   - srtp: SRTP on (the benchmark) or plain RTP (to show what allocates besides libsrtp).
    public init(sameCallsOnly: Bool, srtp: Bool = true) throws(MediaStreamError) {
        let format = AudioFormat(sampleRate: PipelineFixtures.deviceRate)
        a = try MediaStream(
            configuration: PipelineFixtures.configuration(isA: true, sameCallsOnly: sameCallsOnly, srtp: srtp),
            sink: slotA)
        b = try MediaStream(
            configuration: PipelineFixtures.configuration(isA: false, sameCallsOnly: sameCallsOnly, srtp: srtp),
            sink: slotB)
        (micA, micB) = PipelineFixtures.microphones()
        let block = format.samplesPerBlock
        deviceBlock = block
        func frames(_ pcm: FixedBuffer<Int16>) -> [AudioFrame] {
            (0..<(pcm.count / block)).map {
                AudioFrame(format: format, samples: Array(pcm.slice($0 * block, block)))
            }
        }
        framesA = frames(micA)
        framesB = frames(micB)
        speakerA = AudioFrame(format: format)
        speakerB = AudioFrame(format: format)
        microphoneA = AudioFrame(format: format)
        microphoneB = AudioFrame(format: format)
    }

    /// What a leg's microphone hears this tick: its near-end block plus the room's echo of its loudspeaker.
    static func hear(_ room: PipelineRoom, near: AudioFrame, speaker: AudioFrame, into mic: inout AudioFrame) {
        near.withUnsafeSamples { n in
            speaker.withUnsafeSamples { s in
                mic.withUnsafeMutableSamples { m in room.capture(near: n, played: s, into: m) }
            }
        }
    }

    /// Runs `steps` 20 ms steps, adding the time of each operation to `times`; returns a checksum of the audio
    /// played (so the work cannot be optimised away).
    public func run(_ steps: Int, times: inout PipelineOperationTimes) -> Int {
        var sum = 0
        var capture: UInt64 = 0
        var receive: UInt64 = 0
        var playout: UInt64 = 0
        var t = monotonicNanoseconds()
        var u: UInt64
        for _ in 0..<steps {
            for _ in 0..<2 {
                a.renderPlayout(into: &speakerA, now: now, scheduledAt: now)  // as a live call ticks it
                u = monotonicNanoseconds()
                playout &+= u &- t
                t = u
                Self.hear(roomA, near: framesA[nextBlock], speaker: speakerA, into: &microphoneA)
                a.processCapture(microphoneA, now: now)
                u = monotonicNanoseconds()
                capture &+= u &- t
                t = u
                sum &+= speakerA.withUnsafeSamples { Int($0[0]) }
                b.renderPlayout(into: &speakerB, now: now, scheduledAt: now)
                u = monotonicNanoseconds()
                playout &+= u &- t
                t = u
                Self.hear(roomB, near: framesB[nextBlock], speaker: speakerB, into: &microphoneB)
                b.processCapture(microphoneB, now: now)
                u = monotonicNanoseconds()
                capture &+= u &- t
                t = u
                sum &+= speakerB.withUnsafeSamples { Int($0[0]) }
                nextBlock += 1
                if nextBlock == framesA.count { nextBlock = 0 }
                now = now + .milliseconds(10)
            }
            b.receiveDatagram(slotA.datagram, arrival: now)
            a.receiveDatagram(slotB.datagram, arrival: now)
            u = monotonicNanoseconds()
            receive &+= u &- t
            t = u
            sum &+= slotA.length &+ slotB.length
        }
        times.capture &+= capture
        times.receive &+= receive
        times.playout &+= playout
        return sum
    }

    /// Runs `steps` steps without reporting the per-operation times (the allocation suite).
    public func run(_ steps: Int) -> Int {
        var times = PipelineOperationTimes()
        return run(steps, times: &times)
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock the C loop reads the same way.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
}
