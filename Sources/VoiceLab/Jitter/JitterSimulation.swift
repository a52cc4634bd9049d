import VoiceEngine
import VoiceCodec
import VoiceCore
import VoiceNetSim

/// A fast-time pipeline: PCM → Opus encode → RTP numbering (DTX packets not sent) → simulated network →
/// jitter buffer strategy → 10 ms playout ticks → PCM, with statistics over time. Pure apart from the strategy it
/// is given; the same configuration always gives the same result. For tests, benchmarks and
/// `voice-engine simulate`.
public enum JitterSimulation {
    /// Where packet fates come from.
    public enum Network: Sendable {
        case conditions(NetworkConditions)
        case trace(NetworkTrace)
    }

    public struct Configuration: Sendable {
        /// Encoder settings; the input PCM is at `encoder.sampleRate`, mono. Defaults: 16 kHz, 20 ms, FEC on.
        public var encoder: OpusEncoderConfiguration
        public var network: Network
        /// RTP timestamp rate (48 kHz for Opus).
        public var rtpClockRate: Int = 48_000
        /// First RTP sequence number and timestamp (near the wrap, to exercise it).
        public var initialSequence: UInt16 = 65_000
        public var initialTimestamp: UInt32 = 4_294_000_000
        /// Keep playing this long after the last packet is sent, so the buffer drains.
        public var drainMilliseconds: Int = 1_000
        /// Interval of the timeline samples.
        public var timelineIntervalMilliseconds: Int = 100

        public init(encoder: OpusEncoderConfiguration = Self.defaultEncoder, network: Network) {
            self.encoder = encoder
            self.network = network
        }

        /// 16 kHz mono VoIP Opus, 20 ms frames, 24 kb/s, in-band FEC on with 10 % expected loss.
        public static let defaultEncoder = OpusEncoderConfiguration(
            sampleRate: 16_000, channels: 1, application: .voip, frameDuration: .ms20, bitrate: 24_000,
            complexity: 5, inbandFEC: true, expectedLossPercent: 10, dtx: false)
    }

    /// One timeline point.
    public struct Sample: Sendable, Hashable {
        public var time: MediaTime
        public var currentDelayMilliseconds: Double
        public var targetDelayMilliseconds: Double
        /// Play time minus send time of the audio being played (the sample played at `time` against the send
        /// time of its packet plus its offset in the frame), or nil before playout starts.
        public var endToEndDelayMilliseconds: Double?
    }

    public struct Result: Sendable {
        /// Everything played, one 10 ms block per tick, at the encoder's rate.
        public var output: [Int16]
        public var statistics: JitterBufferStatistics
        public var timeline: [Sample]
        /// The operation reported by each tick.
        public var operations: [PlayoutOperation]
        /// What the network did to each sent packet, in send order.
        public var trace: NetworkTrace
        /// Packets sent (DTX frames the encoder marked as not worth sending are not sent).
        public var packetsSent: Int
        /// Packets that carried in-band FEC.
        public var packetsWithFEC: Int
        /// Every encoded frame as sent and whether it arrived: the input of ``IdealReceiver``.
        public var sentFrames: [IdealReceiver.Frame]
        /// Mean and 95th percentile of the end-to-end delay (ms) over ticks after playout started.
        public var meanEndToEndDelayMilliseconds: Double
        public var p95EndToEndDelayMilliseconds: Double
    }

    /// Runs the whole call in fast time.
    /// - Parameters:
    ///   - input: mono PCM at `configuration.encoder.sampleRate`; a trailing partial frame is ignored.
    ///   - strategy: a fresh jitter buffer whose format rate equals the encoder's.
    ///   - clock: advanced by 10 ms per tick (a new `ManualClock` by default).
    /// - Throws: `OpusError` from the encoder, `NetworkSimulatorError` from invalid conditions.
    public static func run(
        input: [Int16], configuration: Configuration, strategy: JitterBufferStrategy, clock: ManualClock = ManualClock()
    ) throws -> Result {
        let enc = configuration.encoder
        precondition(enc.channels == 1 && strategy.format.sampleRate == enc.sampleRate, "mono, matching rates")
        let encoder = try OpusEncoder(configuration: enc)
        let frame = enc.samplesPerChannelPerFrame
        let frameMs = enc.frameDuration.milliseconds
        let tsPerFrame = Int64(configuration.rtpClockRate * frameMs / 1000)
        let frameCount = input.count / frame
        let simulator: NetworkSimulator
        var skew = 0.0
        switch configuration.network {
        case .conditions(let c):
            simulator = try NetworkSimulator(conditions: c)
            skew = c.senderClockSkewPPM
        case .trace(let t): simulator = NetworkSimulator(trace: t)
        }

        struct Packet {
            var bytes: [UInt8]
            var sequence: UInt16
            var timestamp: UInt32
        }
        var link = SimulatedLink<Packet>(simulator: simulator)
        var sendTimes = [MediaTime](repeating: .zero, count: frameCount)
        var packet = [UInt8](repeating: 0, count: OpusEncoder.maxPacketBytes)
        var sequence = configuration.initialSequence
        var sent = 0
        var withFEC = 0
        var frames = [IdealReceiver.Frame](
            repeating: IdealReceiver.Frame(payload: [], arrived: false), count: frameCount)
        var sentFrameIndex: [Int] = []
        for k in 0..<frameCount {
            let n = try input.withUnsafeBufferPointer { pcm in
                try packet.withUnsafeMutableBufferPointer { out in
                    try encoder.encode(UnsafeBufferPointer(rebasing: pcm[(k * frame)..<((k + 1) * frame)]), into: out)
                }
            }
            // A frame is sent when it has been captured: at the end of its 20 ms.
            let nominal = MediaTime.milliseconds(Int64((k + 1) * frameMs))
            sendTimes[k] = MediaTime(nanoseconds: Int64((Double(nominal.nanoseconds) / (1 + skew * 1e-6)).rounded()))
            if enc.dtx && n <= 2 { continue }  // DTX: nothing worth sending, no sequence number used
            let bytes = Array(packet[0..<n])
            if OpusPacket.hasFEC(bytes) { withFEC += 1 }
            frames[k].payload = bytes
            sentFrameIndex.append(k)
            let ts = configuration.initialTimestamp &+ UInt32(truncatingIfNeeded: Int64(k) * tsPerFrame)
            let fate = link.send(Packet(bytes: bytes, sequence: sequence, timestamp: ts), nominalSendTime: nominal)
            sendTimes[k] = fate.sendTime
            sequence &+= 1
            sent += 1
        }

        let block = strategy.format.samplesPerBlock
        let lastSend = sendTimes.last ?? .zero
        let ticks = Int((lastSend.nanoseconds + Int64(configuration.drainMilliseconds) * 1_000_000) / 10_000_000) + 1
        var output = [Int16](repeating: 0, count: ticks * block)
        var operations: [PlayoutOperation] = []
        operations.reserveCapacity(ticks)
        var timeline: [Sample] = []
        var e2e: [Double] = []
        e2e.reserveCapacity(ticks)
        let start = clock.now
        let ts0 = Int64(configuration.initialTimestamp)
        let clockRate = Double(configuration.rtpClockRate)
        let lastEnd = Int64(frameCount) * tsPerFrame
        var maxPlayed: Int64 = 0
        for tick in 0..<ticks {
            let now = clock.now - start
            // Stop once everything sent has arrived and been played (no drain tail of concealment).
            if let playing = strategy.playoutTimestamp {
                maxPlayed = max(maxPlayed, (playing - ts0 + (1 << 32)) % (1 << 32))
            }
            if link.inFlight == 0, now > lastSend, maxPlayed + tsPerFrame / Int64(frameMs / 10) >= lastEnd {
                output.removeLast(output.count - tick * block)
                break
            }
            link.receive(until: now) { p, arrival in
                strategy.insert(
                    payload: p.bytes, sequenceNumber: p.sequence, rtpTimestamp: p.timestamp, arrival: arrival)
            }
            let playingBefore = strategy.playoutTimestamp
            let op = output.withUnsafeMutableBufferPointer { out in
                strategy.playoutTick(
                    into: UnsafeMutableBufferPointer(rebasing: out[(tick * block)..<((tick + 1) * block)]))
            }
            operations.append(op)
            var delay: Double?
            if let playing = playingBefore {
                // Send time of the sample played at `now`: its frame's send time plus its offset in the frame.
                var offset = playing - ts0
                if offset < 0 { offset += 1 << 32 }
                let k = Int(offset / tsPerFrame)
                let within = Double(offset % tsPerFrame) / clockRate * 1000
                let frameSend: Double
                if k < frameCount {
                    frameSend = sendTimes[k].milliseconds
                } else {
                    frameSend = lastSend.milliseconds + Double((k - frameCount) * frameMs)
                }
                let d = now.milliseconds - (frameSend + within)
                delay = d
                // Only ticks that play received audio count: while a buffer conceals, nothing is being played.
                switch op {
                case .normal, .accelerate, .slowDown, .merge, .fecRecover: e2e.append(d)
                case .buffering, .expand, .comfortNoise: break
                }
            }
            if tick % max(1, configuration.timelineIntervalMilliseconds / 10) == 0 {
                let s = strategy.statistics
                timeline.append(
                    Sample(
                        time: now, currentDelayMilliseconds: s.currentDelayMilliseconds,
                        targetDelayMilliseconds: s.targetDelayMilliseconds, endToEndDelayMilliseconds: delay))
            }
            clock.advance(by: .milliseconds(10))
        }
        let sorted = e2e.sorted()
        for (i, fate) in link.fates.enumerated() where i < sentFrameIndex.count {
            frames[sentFrameIndex[i]].arrived = !fate.isLost
        }
        return Result(
            output: output, statistics: strategy.statistics, timeline: timeline, operations: operations,
            trace: NetworkTrace(fates: link.fates), packetsSent: sent, packetsWithFEC: withFEC, sentFrames: frames,
            meanEndToEndDelayMilliseconds: e2e.isEmpty ? 0 : e2e.reduce(0, +) / Double(e2e.count),
            p95EndToEndDelayMilliseconds: sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 95 / 100)])
    }
}
