import VoiceEngine
import Foundation
import VoiceCore
import VoiceDSP
import VoiceRTP

/// Two ``MediaStream``s, A and B, talking through a ``CallPacketPath``, driven by a ``ManualClock`` in 10 ms ticks:
/// each fed by its input (a WAV's samples, as a file-backed microphone would) and recording what it plays.
/// Optionally B has an acoustic echo path (B's microphone = B's near-end input + B's played audio through an
/// ``EchoPath``), so B's echo canceller has real work.
///
/// One tick at time t: datagrams that arrived by t are handed to each stream; each stream renders its playout
/// block (B's goes into the echo path); each stream processes its capture block (packets go into the path at t);
/// each stream polls RTCP; the clock advances 10 ms. Deterministic for seeded configurations.
public final class CallSimulation {
    public struct Configuration: Sendable {
        public var streamA: MediaStreamConfiguration
        public var streamB: MediaStreamConfiguration
        /// A's and B's microphone input, mono at their device rates; silence after the end.
        public var inputA: [Int16]
        public var inputB: [Int16]
        /// Echo at B (delays at B's device rate), or nil.
        public var echoPathB: EchoPath?
        /// Ticks to run; nil: the longer input plus `drainMilliseconds`.
        public var durationMilliseconds: Int?
        public var drainMilliseconds: Int
        /// Interval of ``Result/timeline`` samples.
        public var timelineIntervalMilliseconds: Int

        public init(
            streamA: MediaStreamConfiguration, streamB: MediaStreamConfiguration, inputA: [Int16],
            inputB: [Int16],
            echoPathB: EchoPath? = nil, durationMilliseconds: Int? = nil, drainMilliseconds: Int = 1_000,
            timelineIntervalMilliseconds: Int = 100
        ) {
            self.streamA = streamA
            self.streamB = streamB
            self.inputA = inputA
            self.inputB = inputB
            self.echoPathB = echoPathB
            self.durationMilliseconds = durationMilliseconds
            self.drainMilliseconds = drainMilliseconds
            self.timelineIntervalMilliseconds = timelineIntervalMilliseconds
        }
    }

    /// One point of the call's time line (for charts).
    public struct TimelineSample: Sendable, Codable {
        public var timeSeconds: Double
        public var side: CallSide
        public var bufferDelayMilliseconds: Double
        public var targetDelayMilliseconds: Double
        /// The adaptive buffer's playout delay and its target (nil for the speexdsp strategy); see
        /// `JitterBufferStatistics.playoutDelayMilliseconds`.
        public var playoutDelayMilliseconds: Double?
        public var targetPlayoutDelayMilliseconds: Double?
        /// Cumulative network loss (0...1) and concealment ratio of what this side received.
        public var lossRate: Double
        public var concealmentRatio: Double
        /// Level of the block this side played and of its microphone (dBFS).
        public var playedLevelDBFS: Double
        public var microphoneLevelDBFS: Double
        public var roundTripMilliseconds: Double?
    }

    public struct Result: Sendable {
        /// What A and B played, at their device rates.
        public var playedA: [Int16]
        public var playedB: [Int16]
        /// B's microphone signal as captured (its input plus echo).
        public var microphoneB: [Int16]
        public var statisticsA: MediaStreamStatistics
        public var statisticsB: MediaStreamStatistics
        public var timeline: [TimelineSample]
        public var ticks: Int
    }

    public let configuration: Configuration
    public let streamA: MediaStream
    public let streamB: MediaStream
    public let path: any CallPacketPath
    public let clock: ManualClock
    private let start: MediaTime

    private final class PathSink: MediaPacketSink {
        unowned let path: any CallPacketPath
        let side: CallSide
        init(path: any CallPacketPath, side: CallSide) {
            self.path = path
            self.side = side
        }
        func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
            path.send(datagram, kind: kind, from: side, now: now)
        }
    }

    /// - Throws: ``MediaStreamError`` when a stream cannot be created.
    public init(
        configuration: Configuration, path: any CallPacketPath, clock: ManualClock = ManualClock()
    ) throws(MediaStreamError) {
        if let echo = configuration.echoPathB,
            echo.sampleRate != configuration.streamB.deviceFormat.sampleRate
        {
            throw .invalidConfiguration(
                field: "echoPathB", reason: "echo path rate differs from B's device rate")
        }
        self.configuration = configuration
        self.path = path
        self.clock = clock
        start = clock.now
        streamA = try MediaStream(
            configuration: configuration.streamA, sink: PathSink(path: path, side: .a), now: clock.now)
        streamB = try MediaStream(
            configuration: configuration.streamB, sink: PathSink(path: path, side: .b), now: clock.now)
    }

    /// Runs the whole call in fast time.
    /// - Parameter progress: called every 100 ticks with the fraction done.
    public func run(progress: ((Double) -> Void)? = nil) -> Result {
        let c = configuration
        let formatA = c.streamA.deviceFormat
        let formatB = c.streamB.deviceFormat
        let blockA = formatA.samplesPerBlock
        let blockB = formatB.samplesPerBlock
        let inputTicks = max(
            (c.inputA.count + blockA - 1) / blockA, (c.inputB.count + blockB - 1) / blockB)
        let ticks = (c.durationMilliseconds ?? (inputTicks * 10 + c.drainMilliseconds)) / 10
        var playedA = [Int16](repeating: 0, count: ticks * blockA)
        var playedB = [Int16](repeating: 0, count: ticks * blockB)
        var micB = [Int16](repeating: 0, count: ticks * blockB)
        var frameA = AudioFrame(format: formatA)
        var frameB = AudioFrame(format: formatB)
        var micFrameA = AudioFrame(format: formatA)
        var micFrameB = AudioFrame(format: formatB)
        var timeline: [TimelineSample] = []
        let timelineEvery = max(1, c.timelineIntervalMilliseconds / 10)
        let echo = c.echoPathB

        for tick in 0..<ticks {
            let now = clock.now
            path.deliver(to: .a, until: now) { bytes, arrival in
                streamA.receiveDatagram(bytes, arrival: arrival)
            }
            path.deliver(to: .b, until: now) { bytes, arrival in
                streamB.receiveDatagram(bytes, arrival: arrival)
            }

            streamA.renderPlayout(into: &frameA, now: now)
            streamB.renderPlayout(into: &frameB, now: now)
            frameA.withUnsafeSamples { s in for i in 0..<blockA { playedA[tick * blockA + i] = s[i] } }
            frameB.withUnsafeSamples { s in for i in 0..<blockB { playedB[tick * blockB + i] = s[i] } }

            Self.fill(&micFrameA, from: c.inputA, block: tick)
            Self.fill(&micFrameB, from: c.inputB, block: tick)
            if let echo {
                // B's microphone picks up what B played through the room (played before or during this block).
                micFrameB.withUnsafeMutableSamples { mic in
                    for i in 0..<blockB {
                        let t = tick * blockB + i
                        var acc = Float(mic[i])
                        for tap in echo.taps where t - tap.delay >= 0 {
                            acc += tap.gain * Float(playedB[t - tap.delay])
                        }
                        mic[i] = Int16(max(-32768, min(32767, acc.rounded())))
                    }
                }
            }
            micFrameB.withUnsafeSamples { s in
                for i in 0..<blockB { micB[tick * blockB + i] = s[i] }
            }
            streamA.processCapture(micFrameA, now: now)
            streamB.processCapture(micFrameB, now: now)
            streamA.pollRTCP(now: now)
            streamB.pollRTCP(now: now)

            if tick % timelineEvery == 0 {
                for (side, stream, frame, mic) in [
                    (CallSide.a, streamA, frameA, micFrameA), (.b, streamB, frameB, micFrameB)
                ] {
                    let s = stream.statistics
                    timeline.append(
                        TimelineSample(
                            timeSeconds: (now - start).seconds, side: side,
                            bufferDelayMilliseconds: s.jitterBuffer.currentDelayMilliseconds,
                            targetDelayMilliseconds: s.jitterBuffer.targetDelayMilliseconds,
                            playoutDelayMilliseconds: s.jitterBuffer.playoutDelayMilliseconds,
                            targetPlayoutDelayMilliseconds: s.jitterBuffer.targetPlayoutDelayMilliseconds,
                            lossRate: s.lossRate,
                            concealmentRatio: s.jitterBuffer.concealmentRatio, playedLevelDBFS: Self.level(frame),
                            microphoneLevelDBFS: Self.level(mic), roundTripMilliseconds: s.roundTripMilliseconds))
                }
            }
            if let progress, tick % 100 == 0 { progress(Double(tick) / Double(ticks)) }
            clock.advance(by: .milliseconds(10))
        }
        progress?(1)
        return Result(
            playedA: playedA, playedB: playedB, microphoneB: micB, statisticsA: streamA.statistics,
            statisticsB: streamB.statistics, timeline: timeline, ticks: ticks)
    }

    private static func fill(_ frame: inout AudioFrame, from input: [Int16], block: Int) {
        let n = frame.samplesPerChannel
        frame.withUnsafeMutableSamples { out in
            for i in 0..<n {
                let k = block * n + i
                out[i] = k < input.count ? input[k] : 0
            }
        }
    }

    private static func level(_ frame: AudioFrame) -> Double {
        frame.withUnsafeSamples { s in
            var sum = 0.0
            for v in s { sum += Double(v) * Double(v) }
            let ms = sum / Double(max(s.count, 1)) / (32768.0 * 32768.0)
            return 10 * log10(max(ms * 2, 1e-20))
        }
    }
}
