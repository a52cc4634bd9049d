import VoiceCodec
import VoiceCore
import VoiceDSP
import VoiceJitter
import VoiceNetSim
import VoiceLab

/// Speech-like 16 kHz test audio and simulation helpers shared by the jitter tests.
enum JitterFixtures {
    /// `seconds` of speech-like audio (seeded), as 16-bit PCM at 16 kHz.
    /// Generated once (the generator is slow in debug builds) and repeated to the length asked for.
    static let speechLoop: [Int16] = SignalGenerator.toInt16(
        SignalGenerator.speechLike(sampleRate: 16_000, seconds: 12, seed: 7))

    static func speech(seconds: Double, seed: UInt64 = 7) -> [Int16] {
        let count = Int(seconds * 16_000)
        var out = [Int16]()
        out.reserveCapacity(count)
        while out.count < count { out += speechLoop.prefix(count - out.count) }
        return out
    }

    static func run(
        _ strategy: JitterBufferStrategy, seconds: Double, network: JitterSimulation.Network,
        encoder: OpusEncoderConfiguration = JitterSimulation.Configuration.defaultEncoder, seed: UInt64 = 7
    ) throws -> JitterSimulation.Result {
        var configuration = JitterSimulation.Configuration(encoder: encoder, network: network)
        configuration.drainMilliseconds = 1_000
        return try JitterSimulation.run(
            input: speech(seconds: seconds, seed: seed), configuration: configuration, strategy: strategy)
    }

    static func adaptive() throws -> AdaptiveJitterBuffer { try AdaptiveJitterBuffer() }
    static func speex() throws -> SpeexJitterBuffer { try SpeexJitterBuffer() }

    /// Largest absolute difference between neighbouring samples: a click shows up as a step far above what the
    /// decoded speech itself contains.
    static func maxStep(_ x: ArraySlice<Int16>) -> Int {
        var best = 0
        var previous = Int(x.first ?? 0)
        for s in x.dropFirst() {
            best = max(best, abs(Int(s) - previous))
            previous = Int(s)
        }
        return best
    }
}

extension JitterFixtures {
    /// `count` real Opus packets (16 kHz, 20 ms, FEC on unless `fec` is false) of speech-like audio, starting
    /// inside a talk spurt so FEC is actually spent.
    static func opusPackets(count: Int, fec: Bool = true, dtx: Bool = false, skipSeconds: Double = 0.3) throws
        -> [[UInt8]]
    {
        var configuration = JitterSimulation.Configuration.defaultEncoder
        configuration.inbandFEC = fec
        configuration.expectedLossPercent = fec ? 20 : 0
        configuration.dtx = dtx
        let encoder = try OpusEncoder(configuration: configuration)
        let pcm = speech(seconds: skipSeconds + Double(count) * 0.02 + 0.1)
        let start = Int(skipSeconds * 16_000)
        var out: [[UInt8]] = []
        var packet = [UInt8](repeating: 0, count: OpusEncoder.maxPacketBytes)
        for k in 0..<count {
            let frame = Array(pcm[(start + k * 320)..<(start + (k + 1) * 320)])
            let n = try encoder.encode(frame, into: &packet)
            out.append(Array(packet[0..<n]))
        }
        return out
    }

    /// Plays `ticks` 10 ms ticks, returning each tick's operation.
    static func play(_ buffer: JitterBufferStrategy, ticks: Int) -> [PlayoutOperation] {
        var frame = AudioFrame(format: buffer.format)
        return (0..<ticks).map { _ in buffer.playoutTick(into: &frame) }
    }
}

extension JitterFixtures {
    static func hasFEC(_ packet: [UInt8]) -> Bool { OpusPacket.hasFEC(packet) }
}

extension JitterFixtures {
    /// Feeds `arrivals` (ms, nil = lost; packet i carries frame i) into `buffer` in fast time, 10 ms per tick,
    /// inserting what has arrived before each tick, and returns each tick's operation.
    static func feed(
        _ buffer: JitterBufferStrategy, _ packets: [[UInt8]], arrivals: [Int64?], ticks: Int,
        sequence: (Int) -> Int = { $0 }
    ) -> [PlayoutOperation] {
        var frame = AudioFrame(format: buffer.format)
        var ops: [PlayoutOperation] = []
        let order = arrivals.indices.filter { arrivals[$0] != nil }.sorted { arrivals[$0]! < arrivals[$1]! }
        var next = 0
        for tick in 0..<ticks {
            let now = Int64(tick * 10)
            while next < order.count, arrivals[order[next]]! <= now {
                let i = order[next]
                buffer.insert(
                    payload: packets[i], sequenceNumber: 65_530 &+ UInt16(sequence(i)),
                    rtpTimestamp: 4_294_960_000 &+ UInt32(i * 960), arrival: .milliseconds(arrivals[i]!))
                next += 1
            }
            ops.append(buffer.playoutTick(into: &frame))
        }
        return ops
    }

    /// Arrival times that keep about `ahead` packets buffered: packet i arrives at (i − ahead) × 20 ms.
    static func steadyArrivals(count: Int, ahead: Int = 3) -> [Int64?] {
        (0..<count).map { Int64(max(0, $0 - ahead) * 20) }
    }
}

/// Seconds after `start` until the buffer's delay is back within 20 ms of its target and stays there for 1 s.
func settleSeconds(_ r: JitterSimulation.Result, after start: Double) -> Double? {
    let samples = r.timeline.filter { $0.time.seconds >= start }
    for (i, s) in samples.enumerated() {
        let window = samples[i...].prefix(10)
        if window.count == 10,
            window.allSatisfy({ abs($0.currentDelayMilliseconds - $0.targetDelayMilliseconds) <= 20 })
        {
            return s.time.seconds - start
        }
    }
    return nil
}
