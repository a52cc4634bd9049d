import VoiceEngine

// The Swift side of every measured operation, shared by the ordo-one/benchmark suites and `voice-bench`.
//
// Each workload owns its wrapper object, its preallocated input/output buffers and a cursor into the input, so
// that `run(_:)` is exactly the steady-state call an audio thread makes, nothing else: no allocation, no array,
// no closure. `run` returns a running sum of what the calls returned, which callers pass to `blackHole` (or
// print), so the optimiser cannot drop the work.

/// Opus-encodes one 20 ms frame per iteration, cycling through `Fixtures.seconds` of speech.
public final class OpusEncodeWorkload {
    public let configuration: OpusEncoderConfiguration
    public let pcm: FixedBuffer<Int16>
    public let packet: FixedBuffer<UInt8>
    public let frameSamples: Int
    public let frameCount: Int
    public let encoder: OpusEncoder
    /// Index of the next frame to encode.
    public private(set) var next = 0

    public init(sampleRate: Int) throws(OpusError) {
        configuration = Fixtures.opusConfiguration(sampleRate: sampleRate)
        pcm = Fixtures.speech(sampleRate: sampleRate)
        packet = FixedBuffer(count: OpusEncoder.maxPacketBytes, repeating: 0)
        frameSamples = configuration.samplesPerFrame
        frameCount = pcm.count / frameSamples
        encoder = try OpusEncoder(configuration: configuration)
    }

    /// Encodes `iterations` frames; returns the bytes produced.
    public func run(_ iterations: Int) -> Int {
        let input = pcm.pointer.baseAddress!
        let output = packet.pointer
        let encoder = self.encoder
        let frameSamples = self.frameSamples
        var index = next
        var total = 0
        for _ in 0..<iterations {
            do {
                total &+= try encoder.encode(
                    UnsafeBufferPointer(start: input + index * frameSamples, count: frameSamples), into: output)
            } catch {
                fatalError("OpusEncodeWorkload: \(error)")
            }
            index += 1
            if index == frameCount { index = 0 }
        }
        next = index
        return total
    }
}

/// Opus-decodes one 20 ms packet per iteration, cycling through the packets of `Fixtures.seconds` of speech.
public final class OpusDecodeWorkload {
    public let sampleRate: Int
    public let stream: EncodedStream
    /// Output buffer of `decoder.maxFrameSamples` (120 ms): the capacity the receive chain gives `decode`.
    public let pcm: FixedBuffer<Int16>
    public let decoder: OpusDecoder
    public private(set) var next = 0

    public init(sampleRate: Int) throws(OpusError) {
        self.sampleRate = sampleRate
        stream = try EncodedStream(
            pcm: Fixtures.speech(sampleRate: sampleRate),
            configuration: Fixtures.opusConfiguration(sampleRate: sampleRate))
        decoder = try OpusDecoder(sampleRate: sampleRate, channels: 1)
        pcm = FixedBuffer(count: decoder.maxFrameSamples, repeating: 0)
    }

    /// Decodes `iterations` packets; returns the samples produced.
    public func run(_ iterations: Int) -> Int {
        let bytes = stream.bytes.pointer.baseAddress!
        let offsets = stream.offsets.pointer.baseAddress!
        let lengths = stream.lengths.pointer.baseAddress!
        let count = stream.count
        let output = pcm.pointer
        let decoder = self.decoder
        var index = next
        var total = 0
        for _ in 0..<iterations {
            do {
                total &+= try decoder.decode(
                    UnsafeBufferPointer(start: bytes + Int(offsets[index]), count: Int(lengths[index])), into: output)
            } catch {
                fatalError("OpusDecodeWorkload: \(error)")
            }
            index += 1
            if index == count { index = 0 }
        }
        next = index
        return total
    }
}

/// Conceals one lost 20 ms frame per iteration (PLC), in a decoder that has first decoded `warmUpPackets` real
/// packets: the cost of every frame of a loss burst.
public final class OpusConcealWorkload {
    public static let warmUpPackets = 50
    public let sampleRate: Int
    public let frameSamples: Int
    public let pcm: FixedBuffer<Int16>
    public let decoder: OpusDecoder

    public init(sampleRate: Int) throws(OpusError) {
        self.sampleRate = sampleRate
        let configuration = Fixtures.opusConfiguration(sampleRate: sampleRate)
        frameSamples = configuration.samplesPerChannelPerFrame
        decoder = try OpusDecoder(sampleRate: sampleRate, channels: 1)
        pcm = FixedBuffer(count: decoder.maxFrameSamples, repeating: 0)
        let stream = try EncodedStream(pcm: Fixtures.speech(sampleRate: sampleRate), configuration: configuration)
        for index in 0..<min(Self.warmUpPackets, stream.count) {
            _ = try decoder.decode(stream.packet(index), into: pcm.pointer)
        }
    }

    /// Conceals `iterations` frames; returns the samples produced.
    public func run(_ iterations: Int) -> Int {
        let output = pcm.pointer
        let decoder = self.decoder
        let frameSamples = self.frameSamples
        var total = 0
        for _ in 0..<iterations {
            do {
                total &+= try decoder.conceal(frameSamples: frameSamples, into: output)
            } catch {
                fatalError("OpusConcealWorkload: \(error)")
            }
        }
        return total
    }
}

/// Resamples one 10 ms block per iteration, cycling through `Fixtures.seconds` of speech at `inputRate`.
public final class ResampleWorkload {
    public let inputRate: Int
    public let outputRate: Int
    public let quality: Int
    public let input: FixedBuffer<Int16>
    public let output: FixedBuffer<Int16>
    public let blockSamples: Int
    public let blockCount: Int
    public let resampler: Resampler
    public private(set) var next = 0

    public init(inputRate: Int, outputRate: Int) throws(ResamplerError) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        quality = Fixtures.resamplerQuality
        input = Fixtures.speech(sampleRate: inputRate)
        blockSamples = inputRate / 100
        blockCount = input.count / blockSamples
        resampler = try Resampler(inputRate: inputRate, outputRate: outputRate, channels: 1, quality: quality)
        output = FixedBuffer(count: resampler.maximumOutputCount(forInput: blockSamples), repeating: 0)
    }

    /// Resamples `iterations` blocks; returns the samples produced.
    public func run(_ iterations: Int) -> Int {
        let source = input.pointer.baseAddress!
        let destination = output.pointer
        let resampler = self.resampler
        let blockSamples = self.blockSamples
        var index = next
        var total = 0
        for _ in 0..<iterations {
            do {
                total &+= try resampler.process(
                    UnsafeBufferPointer(start: source + index * blockSamples, count: blockSamples), into: destination
                ).produced
            } catch {
                fatalError("ResampleWorkload: \(error)")
            }
            index += 1
            if index == blockCount { index = 0 }
        }
        next = index
        return total
    }
}

/// G.711 or G.722 through spandsp, one 20 ms frame per iteration: encode, then decode (with the concealer fed),
/// cycling through `Fixtures.seconds` of speech at the codec's rate; ``decodeAndConceal(_:)`` receives every other
/// frame and conceals the rest.
public final class TelephonyWorkload {
    public let codec: TelephonyCodec
    public let input: FixedBuffer<Int16>
    public let frameSamples: Int
    public let frameCount: Int
    public let payload: FixedBuffer<UInt8>
    public let pcm: FixedBuffer<Int16>
    public let encoder: TelephonyEncoder
    public let decoder: TelephonyDecoder
    /// The input encoded once, `frameCount` payloads of `payload.count` bytes back to back: what the receiving
    /// side of ``decodeAndConceal(_:)`` gets.
    public let encoded: FixedBuffer<UInt8>
    /// The receiving side of ``decodeAndConceal(_:)``, apart from ``decoder`` so each loop keeps its own state.
    public let lossyDecoder: TelephonyDecoder
    public private(set) var next = 0
    /// Index of the next received frame of ``decodeAndConceal(_:)``.
    public private(set) var nextReceived = 0

    public init(codec: TelephonyCodec) {
        self.codec = codec
        input = Fixtures.speech(sampleRate: codec.sampleRate)
        frameSamples = codec.sampleRate / 50
        frameCount = input.count / frameSamples
        payload = FixedBuffer(count: codec.payloadBytes(forSamples: frameSamples), repeating: 0)
        pcm = FixedBuffer(count: frameSamples, repeating: 0)
        encoder = TelephonyEncoder(codec: codec)
        decoder = TelephonyDecoder(codec: codec)
        lossyDecoder = TelephonyDecoder(codec: codec)
        let payloadBytes = payload.count
        encoded = FixedBuffer(count: frameCount * payloadBytes, repeating: 0)
        let streamEncoder = TelephonyEncoder(codec: codec)
        for frame in 0..<frameCount {
            let written = try? streamEncoder.encode(
                input.slice(frame * frameSamples, frameSamples),
                into: UnsafeMutableBufferPointer(
                    rebasing: encoded.pointer[frame * payloadBytes..<(frame + 1) * payloadBytes]))
            precondition(written == payloadBytes, "TelephonyWorkload: frame \(frame) encoded to \(written ?? -1) bytes")
        }
    }

    /// Encodes and decodes `iterations` frames; returns the samples decoded.
    public func run(_ iterations: Int) -> Int {
        let source = input.pointer.baseAddress!
        let packet = payload.pointer
        let output = pcm.pointer
        let encoder = self.encoder
        let decoder = self.decoder
        let frameSamples = self.frameSamples
        var index = next
        var total = 0
        for _ in 0..<iterations {
            do {
                let bytes = try encoder.encode(
                    UnsafeBufferPointer(start: source + index * frameSamples, count: frameSamples), into: packet)
                total &+= try decoder.decode(UnsafeBufferPointer(start: packet.baseAddress, count: bytes), into: output)
            } catch {
                fatalError("TelephonyWorkload: \(error)")
            }
            index += 1
            if index == frameCount { index = 0 }
        }
        next = index
        return total
    }

    /// Every other frame lost (one received frame, one lost, `iterations` times): decodes received frame k
    /// (decode + `plc_rx`), then conceals frame k + 1 (`plc_fillin` at the start of a gap: pitch search, one
    /// pitch period built, the overlap-add with the last real audio), so each concealment does the full work of a
    /// loss; returns the samples produced.
    public func decodeAndConceal(_ iterations: Int) -> Int {
        let packets = encoded.pointer.baseAddress!
        let payloadBytes = payload.count
        let output = pcm.pointer
        let decoder = lossyDecoder
        let frameSamples = self.frameSamples
        var index = nextReceived
        var total = 0
        for _ in 0..<iterations {
            do {
                total &+= try decoder.decode(
                    UnsafeBufferPointer(start: packets + index * payloadBytes, count: payloadBytes), into: output)
            } catch {
                fatalError("TelephonyWorkload: \(error)")
            }
            total &+= decoder.conceal(frameSamples: frameSamples, into: output)
            index += 2
            if index >= frameCount { index -= frameCount }
        }
        nextReceived = index
        return total
    }
}

/// The in-band DTMF receiver of a 16 kHz stream (``MediaStreamConfiguration/detectsInBandDTMF``): one 20 ms frame
/// of speech per iteration brought to 8 kHz and through spandsp's receiver, then its key queue polled.
public final class InBandDTMFWorkload {
    public let input: FixedBuffer<Int16>
    public let narrowband: FixedBuffer<Int16>
    public let frameSamples = 320
    public let frameCount: Int
    public let resampler: Resampler
    public let detector = InBandDTMFDetector()
    public private(set) var next = 0

    public init() throws(ResamplerError) {
        input = Fixtures.speech(sampleRate: 16_000)
        frameCount = input.count / frameSamples
        resampler = try Resampler(inputRate: 16_000, outputRate: InBandDTMFDetector.sampleRate)
        narrowband = FixedBuffer(count: resampler.maximumOutputCount(forInput: frameSamples), repeating: 0)
    }

    /// Runs `iterations` frames; returns the 8 kHz samples examined plus the keys found.
    public func run(_ iterations: Int) -> Int {
        let source = input.pointer.baseAddress!
        let output = narrowband.pointer
        var index = next
        var total = 0
        for _ in 0..<iterations {
            let produced: Int
            do {
                produced = try resampler.process(
                    UnsafeBufferPointer(start: source + index * frameSamples, count: frameSamples), into: output
                ).produced
            } catch {
                fatalError("InBandDTMFWorkload: \(error)")
            }
            detector.process(UnsafeBufferPointer(rebasing: output[0..<produced]))
            while let key = detector.nextKey() { total &+= Int(key) }
            total &+= produced
            index += 1
            if index == frameCount { index = 0 }
        }
        next = index
        return total
    }
}
