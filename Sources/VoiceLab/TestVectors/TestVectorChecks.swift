import VoiceEngine
import Foundation
import VoiceCodec
import VoiceCore
import VoiceDSP

/// The outcome of one manifest check.
public struct TestVectorResult: Sendable, Codable {
    public var name: String
    public var metric: String
    public var value: Double
    public var minimum: Double
    public var passed: Bool { value >= minimum }
}

/// Runs the manifest's checks through the real codec and resampler.
public struct TestVectorRunner: Sendable {
    /// The folder holding `manifest.json` and the WAV files.
    public let directory: URL
    public let manifest: TestVectorManifest

    public init(directory: URL) throws {
        self.directory = directory
        manifest = try TestVectorManifest.load(from: directory.appendingPathComponent("manifest.json"))
    }

    /// Runs every check, in manifest order.
    public func runAll() throws -> [TestVectorResult] {
        try manifest.checks.map(run)
    }

    /// Runs one check and measures its metric.
    public func run(_ check: TestVectorManifest.CheckSpec) throws -> TestVectorResult {
        let (rate, input) = try loadMono(check.input)
        let value: Double
        switch check.kind {
        case "opusRoundTrip": value = try opusRoundTrip(check, rate: rate, input: input)
        case "resamplerRoundTrip": value = try resamplerRoundTrip(check, rate: rate, input: input)
        case "resamplerStopBand": value = try resamplerStopBand(check, rate: rate, input: input)
        case "fecVersusPLC": value = try fecVersusPLC(check, rate: rate, input: input)
        default: throw TestVectorError.unknownCheck(check.kind)
        }
        return TestVectorResult(name: check.name, metric: check.metric, value: value, minimum: check.min)
    }

    private func loadMono(_ file: String) throws -> (Int, [Float]) {
        let wav = try WAVFile.read(path: directory.appendingPathComponent(file).path)
        guard wav.format.channels == 1 else { throw TestVectorError.unexpectedInput(file, "must be mono") }
        return (wav.format.sampleRate, wav.floatSamples)
    }

    private func required<T>(_ value: T?, _ name: String, _ check: TestVectorManifest.CheckSpec) throws -> T {
        guard let value else { throw TestVectorError.missingParameter(check: check.name, parameter: name) }
        return value
    }

    // MARK: Opus

    private func encoderConfiguration(_ check: TestVectorManifest.CheckSpec, rate: Int, fec: Bool) throws
        -> OpusEncoderConfiguration
    {
        let p = check.parameters
        let application: OpusApplication = p.application == "audio" ? .audio : .voip
        guard let duration = OpusFrameDuration(rawValue: p.frameMilliseconds ?? 20) else {
            throw TestVectorError.missingParameter(check: check.name, parameter: "frameMilliseconds (10, 20, 40 or 60)")
        }
        return OpusEncoderConfiguration(
            sampleRate: rate, channels: 1, application: application, frameDuration: duration,
            bitrate: try required(p.bitrate, "bitrate", check), complexity: p.complexity ?? 9,
            inbandFEC: fec, expectedLossPercent: fec ? Int((p.lossPercent ?? 10).rounded(.up)) * 2 : 0)
    }

    /// Encodes `input` frame by frame; returns the packets (the last frame zero-padded).
    private func encode(_ input: [Float], configuration: OpusEncoderConfiguration) throws -> [[UInt8]] {
        let encoder = try OpusEncoder(configuration: configuration)
        let frame = configuration.samplesPerChannelPerFrame
        let pcm = SignalGenerator.toInt16(input)
        var packets: [[UInt8]] = []
        var block = [Int16](repeating: 0, count: frame)
        var packet = [UInt8](repeating: 0, count: 1500)
        var start = 0
        while start < pcm.count {
            let end = min(start + frame, pcm.count)
            for i in 0..<frame { block[i] = start + i < end ? pcm[start + i] : 0 }
            let bytes = try block.withUnsafeBufferPointer { source in
                try packet.withUnsafeMutableBufferPointer { try encoder.encode(source, into: $0) }
            }
            packets.append(Array(packet[0..<bytes]))
            start += frame
        }
        return packets
    }

    /// How each frame is produced by the decoder.
    private enum FrameSource { case packet, fecFromNext, concealed }

    private func decode(_ packets: [[UInt8]], sources: [FrameSource], rate: Int, frame: Int) throws -> [Float] {
        let decoder = try OpusDecoder(sampleRate: rate, channels: 1)
        var out = [Int16](repeating: 0, count: frame)
        var decoded: [Int16] = []
        decoded.reserveCapacity(packets.count * frame)
        for (index, source) in sources.enumerated() {
            let produced = try out.withUnsafeMutableBufferPointer { pcm -> Int in
                switch source {
                case .packet: try packets[index].withUnsafeBufferPointer { try decoder.decode($0, into: pcm) }
                case .fecFromNext:
                    try packets[index + 1].withUnsafeBufferPointer {
                        try decoder.decodeFEC(from: $0, frameSamples: frame, into: pcm)
                    }
                case .concealed: try decoder.conceal(frameSamples: frame, into: pcm)
                }
            }
            decoded.append(contentsOf: out[0..<produced])
        }
        return SignalGenerator.toFloat(decoded)
    }

    /// Segmental SNR of the decoded signal against the input, after removing the codec delay.
    private func opusRoundTrip(_ check: TestVectorManifest.CheckSpec, rate: Int, input: [Float]) throws -> Double {
        let configuration = try encoderConfiguration(check, rate: rate, fec: false)
        let packets = try encode(input, configuration: configuration)
        let decoded = try decode(
            packets, sources: Array(repeating: .packet, count: packets.count), rate: rate,
            frame: configuration.samplesPerChannelPerFrame)
        let lag = SignalMetrics.bestLag(reference: input, test: decoded, maxLag: rate / 100)
        return SignalMetrics.segmentalSNR(
            reference: input, test: SignalMetrics.aligned(decoded, lag: lag), frameLength: rate / 50)
    }

    /// The seeded loss pattern: each frame lost with probability `lossPercent`, never the last frame.
    static func lossPattern(count: Int, percent: Double, seed: UInt64) -> [Bool] {
        var rng = SeededGenerator(seed: seed)
        return (0..<count).map { $0 < count - 1 && rng.nextUnit() * 100 < percent }
    }

    /// Mean per-frame SNR over the lost frames, with in-band FEC recovery minus with PLC only, both against
    /// the loss-free decode: how much better FEC restores a lost frame than concealment does.
    private func fecVersusPLC(_ check: TestVectorManifest.CheckSpec, rate: Int, input: [Float]) throws -> Double {
        let p = check.parameters
        let configuration = try encoderConfiguration(check, rate: rate, fec: true)
        let frame = configuration.samplesPerChannelPerFrame
        let packets = try encode(input, configuration: configuration)
        let lost = Self.lossPattern(
            count: packets.count, percent: try required(p.lossPercent, "lossPercent", check), seed: p.lossSeed ?? 1)
        let clean = try decode(
            packets, sources: Array(repeating: .packet, count: packets.count), rate: rate, frame: frame)
        let plcSources: [FrameSource] = lost.map { $0 ? .concealed : .packet }
        let fecSources: [FrameSource] = lost.indices.map { i in
            !lost[i] ? .packet : (i + 1 < lost.count && !lost[i + 1] ? .fecFromNext : .concealed)
        }
        let plc = try decode(packets, sources: plcSources, rate: rate, frame: frame)
        let fec = try decode(packets, sources: fecSources, rate: rate, frame: frame)
        func meanLostFrameSNR(_ test: [Float]) -> Double {
            var total = 0.0
            var count = 0
            for (i, isLost) in lost.enumerated() where isLost {
                let range = (i * frame)..<((i + 1) * frame)
                let reference = Array(clean[range])
                guard SignalMetrics.rmsDBFS(reference) > -50 else { continue }  // silence says nothing
                total += max(-10, min(35, SignalMetrics.snr(reference: reference, test: Array(test[range]))))
                count += 1
            }
            return count > 0 ? total / Double(count) : 0
        }
        return meanLostFrameSNR(fec) - meanLostFrameSNR(plc)
    }

    // MARK: Resampler

    /// Resamples in 10 ms blocks, as the pipeline does. `exact` uses the float API, so that the measurement is not
    /// floored by 16-bit quantization (a stop band below -96 dBFS rounds to digital silence in 16-bit).
    private func resample(_ input: [Float], from: Int, to: Int, quality: Int?, exact: Bool = false) throws -> [Float] {
        let resampler =
            try quality.map { try Resampler(inputRate: from, outputRate: to, quality: $0) }
            ?? Resampler(inputRate: from, outputRate: to)
        if exact { return try resampleBlocks(input, block: from / 100, resampler: resampler) }
        return SignalGenerator.toFloat(
            try resampleBlocks(SignalGenerator.toInt16(input), block: from / 100, resampler: resampler))
    }

    private func resampleBlocks<Sample: ResamplerSample>(_ input: [Sample], block: Int, resampler: Resampler) throws
        -> [Sample]
    {
        var output: [Sample] = []
        var scratch = [Sample](repeating: .zero, count: resampler.maximumOutputCount(forInput: block))
        var offset = 0
        while offset < input.count {
            let end = min(offset + block, input.count)
            let (consumed, produced) = try input[offset..<end].withUnsafeBufferPointer { source in
                try scratch.withUnsafeMutableBufferPointer { try Sample.process(resampler, source, $0) }
            }
            output.append(contentsOf: scratch[0..<produced])
            guard consumed > 0 || produced > 0 else { break }
            offset += consumed
        }
        return output
    }

    /// SNR of input → intermediate rate → input rate against the input, after removing the filter delay.
    private func resamplerRoundTrip(_ check: TestVectorManifest.CheckSpec, rate: Int, input: [Float]) throws -> Double {
        let middle = try required(check.parameters.intermediateRate, "intermediateRate", check)
        let down = try resample(input, from: rate, to: middle, quality: check.parameters.quality)
        let back = try resample(down, from: middle, to: rate, quality: check.parameters.quality)
        let lag = SignalMetrics.bestLag(reference: input, test: back, maxLag: rate / 50)
        // Skip the first 50 ms, where the filters are still filling.
        let skip = rate / 20
        let reference = Array(input.dropFirst(skip))
        let test = Array(SignalMetrics.aligned(back, lag: lag).dropFirst(skip))
        return SignalMetrics.snr(reference: reference, test: test)
    }

    /// Attenuation in dB of a tone above the target rate's Nyquist frequency when downsampling.
    private func resamplerStopBand(_ check: TestVectorManifest.CheckSpec, rate: Int, input: [Float]) throws -> Double {
        let target = try required(check.parameters.intermediateRate, "intermediateRate", check)
        let frequency = try required(check.parameters.toneFrequency, "toneFrequency", check)
        let inputLevel = SignalMetrics.rmsDBFS(input)
        guard abs(SignalMetrics.toneLevelDBFS(input, frequency: frequency, sampleRate: rate) - inputLevel) < 1 else {
            throw TestVectorError.unexpectedInput(check.input, "is not a pure \(frequency) Hz tone")
        }
        let output = try resample(input, from: rate, to: target, quality: check.parameters.quality, exact: true)
        // Whatever leaks through is aliased below the new Nyquist frequency: measure all output energy,
        // after the first 50 ms in which the filter fills.
        let outputLevel = SignalMetrics.rmsDBFS(Array(output.dropFirst(target / 20)))
        return inputLevel - outputLevel
    }
}

/// The two sample types the resampler processes, so one block loop serves both.
private protocol ResamplerSample: AdditiveArithmetic {
    static func process(
        _ resampler: Resampler, _ input: UnsafeBufferPointer<Self>, _ output: UnsafeMutableBufferPointer<Self>
    ) throws -> (consumed: Int, produced: Int)
}

extension Int16: ResamplerSample {
    fileprivate static func process(
        _ resampler: Resampler, _ input: UnsafeBufferPointer<Int16>, _ output: UnsafeMutableBufferPointer<Int16>
    ) throws -> (consumed: Int, produced: Int) { try resampler.process(input, into: output) }
}

extension Float: ResamplerSample {
    fileprivate static func process(
        _ resampler: Resampler, _ input: UnsafeBufferPointer<Float>, _ output: UnsafeMutableBufferPointer<Float>
    ) throws -> (consumed: Int, produced: Int) { try resampler.process(input, into: output) }
}
