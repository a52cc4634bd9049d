import VoiceCodec
import VoiceDSP

/// The best any receiver can do with the packets a call delivered: perfect timing, so only loss hurts; a lost
/// frame is recovered from the in-band FEC of the next packet when that one arrived and carries FEC, and
/// concealed by Opus PLC otherwise. Built from the same decoder as the jitter buffers, it is the reference a
/// jitter buffer's output is scored against (``SpectralDistance``): whatever it loses beyond this is the
/// buffer's doing, not the network's.
public enum IdealReceiver {
    /// One frame as the sender sent it.
    public struct Frame: Sendable {
        /// The Opus packet (empty when the sender sent nothing for this frame, e.g. DTX).
        public var payload: [UInt8]
        /// Whether it reached the receiver (at any time: timing is perfect here).
        public var arrived: Bool

        public init(payload: [UInt8], arrived: Bool) {
            self.payload = payload
            self.arrived = arrived
        }
    }

    /// How the frames were rendered.
    public struct Result: Sendable {
        /// Mono PCM at the decoder's rate, one frame after another from the first frame's start.
        public var output: [Int16]
        public var decodedFrames = 0
        public var fecRecoveredFrames = 0
        public var concealedFrames = 0
    }

    /// Decodes `frames` in order.
    /// - Parameters:
    ///   - frameSamples: samples per frame at `sampleRate` (320 for 20 ms at 16 kHz).
    /// - Throws: `OpusError` when the decoder cannot be created.
    public static func render(frames: [Frame], frameSamples: Int, sampleRate: Int) throws(OpusError) -> Result {
        let decoder = try OpusDecoder(sampleRate: sampleRate, channels: 1)
        var result = Result(output: [Int16](repeating: 0, count: frames.count * frameSamples))
        var pcm = [Int16](repeating: 0, count: decoder.maxFrameSamples)
        for (k, frame) in frames.enumerated() {
            var n = 0
            if frame.arrived && !frame.payload.isEmpty, let d = try? decoder.decode(frame.payload, into: &pcm), d > 0 {
                n = d
                result.decodedFrames += 1
            } else if k + 1 < frames.count, frames[k + 1].arrived, OpusPacket.hasFEC(frames[k + 1].payload),
                let d = try? decoder.decodeFEC(from: frames[k + 1].payload, frameSamples: frameSamples, into: &pcm),
                d > 0
            {
                n = d
                result.fecRecoveredFrames += 1
            } else {
                n = (try? decoder.conceal(frameSamples: frameSamples, into: &pcm)) ?? 0
                result.concealedFrames += 1
            }
            for i in 0..<min(n, frameSamples) { result.output[k * frameSamples + i] = pcm[i] }
        }
        return result
    }

    /// `pcm` converted from `inputRate` to `outputRate` (speexdsp's resampler), whole: to compare the ideal
    /// receiver's output (at the decoder's rate) with a call's (at the device's), or to join clips of several rates.
    /// - Throws: `ResamplerError` for rates the resampler refuses.
    public static func resampled(_ pcm: [Int16], from inputRate: Int, to outputRate: Int) throws(ResamplerError)
        -> [Int16]
    {
        guard inputRate != outputRate else { return pcm }
        let resampler = try Resampler(inputRate: inputRate, outputRate: outputRate)
        var out = [Int16](repeating: 0, count: resampler.maximumOutputCount(forInput: pcm.count) + 1_024)
        let produced = try out.withUnsafeMutableBufferPointer { (o) throws(ResamplerError) -> Int in
            try pcm.withUnsafeBufferPointer { (i) throws(ResamplerError) -> Int in
                try resampler.process(i, into: o).produced
            }
        }
        return Array(out[0..<produced])
    }
}
