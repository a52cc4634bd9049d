import Foundation
import VoiceEngine

/// What a listener hears from an echo canceller on a real device while the far end talks: the output against the same
/// output's background (what it sends while the far end is silent) and against the microphone's own noise floor.
/// Real-device recordings have no clean echo track, so the echo left is judged by level: an output that rises over its
/// own background while the far end talks carries residual echo; one that sinks under the microphone's noise floor
/// pumps the background. Used by `voice-engine aec`, `voice-bench aec --devices` and `DeviceEchoTests`, so all three
/// measure the same thing.
///
/// Levels are taken above ``audibleFromHz``, in the band a call carries to the listener: many devices' background
/// holds most of its energy in rumble below it (one of the AEC-Challenge devices 15 dB over every other 25 Hz band,
/// under 25 Hz), which no listener hears. Counted at full band, an output that removes it while the far end talks
/// reads as a background that drops then, and a background that keeps it reads loud enough to hide residual echo.
public struct ResidualOverBackground: Codable, Sendable, Equatable {
    /// The output's energy level over the far-talk blocks against its energy level over the background blocks, dB.
    /// Energy, not a median: residual echo comes in bursts on the far end's syllables, and the bursts are what is heard.
    /// 0 = echo under the background; positive = echo heard over it; negative = the background dropped.
    public var residualOverBackgroundDB: Double
    /// The output's floor (20th percentile of its 10 ms block levels) over the far-talk blocks against the microphone's
    /// floor over the background blocks, dB: the background under the echo, between its bursts. 0 = the microphone's
    /// noise kept; strongly negative = the background pumps down while the far end talks (or noise suppression took it).
    public var floorUnderFarTalkDB: Double
    /// The output's floor over the background blocks against the microphone's floor there, dB: what the processing
    /// does to the background with nobody talking (noise suppression's depth). `floorUnderFarTalkDB` minus this is the
    /// pumping alone.
    public var backgroundAgainstMicrophoneDB: Double
    /// The microphone's energy level over the far-talk blocks against its level over the background blocks, dB: how
    /// far the echo stands over the device's noise before any processing.
    public var echoToNoiseDB: Double
    public var farTalkBlocks: Int
    public var backgroundBlocks: Int

    /// Far-end blocks are active within this many blocks before a microphone block for it to count as far talk, and
    /// silent for at least as long for a background block: 300 ms covers the device delays of the recordings at hand
    /// (30-170 ms) plus the room's tail.
    public static let echoReachBlocks = 30

    /// The levels' lower band edge (Hz): the lowest corner of the high-pass that Opus's VoIP application, the
    /// engine's, runs on everything it sends (SILK's variable high-pass, 60-100 Hz), so nothing under it reaches the
    /// far end.
    public static let audibleFromHz = 60.0

    /// Far-talk blocks of a recording: the far end (unaligned loopback) within 35 dB of its loudest block in this block
    /// or the ``echoReachBlocks`` before it, and the block before `singleTalkUntilBlock` (where the near talker enters in
    /// a double-talk recording).
    public static func farTalkBlocks(far: [Int16], blockSize: Int, singleTalkUntilBlock: Int? = nil) -> [Bool] {
        let active = farActivity(far: far, blockSize: blockSize)
        var since = Int.max / 2
        var mask = [Bool](repeating: false, count: active.count)
        for b in active.indices {
            since = active[b] ? 0 : since + 1
            mask[b] = since <= echoReachBlocks && b < (singleTalkUntilBlock ?? .max)
        }
        return mask
    }

    /// Background blocks: the blocks of `range` when given (a stretch the recording's notes name as both ends silent),
    /// or else the blocks before `singleTalkUntilBlock` whose far end has been silent for ``echoReachBlocks`` (or has
    /// not started).
    public static func backgroundBlocks(
        far: [Int16], blockSize: Int, range: Range<Int>? = nil, singleTalkUntilBlock: Int? = nil
    ) -> [Bool] {
        let active = farActivity(far: far, blockSize: blockSize)
        if let range { return active.indices.map { range.contains($0) } }
        var since = Int.max / 2
        var mask = [Bool](repeating: false, count: active.count)
        for b in active.indices {
            since = active[b] ? 0 : since + 1
            mask[b] = since > echoReachBlocks && b < (singleTalkUntilBlock ?? .max)
        }
        return mask
    }

    /// The figures of `output` (aligned with `mic`, as ``AECRunner/runEngine(far:mic:configuration:)`` returns it) on
    /// the given blocks; nil without far-talk or background blocks, or with a digitally silent microphone background.
    public static func measure(
        mic: [Int16], output: [Int16], farTalk: [Bool], background: [Bool], blockSize: Int
    ) -> ResidualOverBackground? {
        let blocks = min(farTalk.count, background.count, mic.count / blockSize, output.count / blockSize)
        let talk = (0..<blocks).filter { farTalk[$0] }
        let quiet = (0..<blocks).filter { background[$0] }
        guard !talk.isEmpty, !quiet.isEmpty else { return nil }
        let rate = Double(blockSize * 100)
        let audibleMic = highPassed(mic, cutoffHz: audibleFromHz, sampleRate: rate)
        let audibleOutput = highPassed(output, cutoffHz: audibleFromHz, sampleRate: rate)
        func powers(_ x: [Double], _ chosen: [Int]) -> [Double] {
            chosen.map { b in
                var sum = 0.0
                for i in b * blockSize..<(b + 1) * blockSize { sum += x[i] * x[i] }
                return sum / Double(blockSize)
            }
        }
        func energyDB(_ p: [Double]) -> Double { 10 * log10(max(p.reduce(0, +) / Double(p.count), 1e-3)) }
        func floorDB(_ p: [Double]) -> Double {
            let sorted = p.sorted()
            return 10 * log10(max(sorted[sorted.count / 5], 1e-3))
        }
        let micQuiet = powers(audibleMic, quiet)
        guard micQuiet.contains(where: { $0 > 0 }) else { return nil }
        let outTalk = powers(audibleOutput, talk)
        let outQuiet = powers(audibleOutput, quiet)
        return ResidualOverBackground(
            residualOverBackgroundDB: energyDB(outTalk) - energyDB(outQuiet),
            floorUnderFarTalkDB: floorDB(outTalk) - floorDB(micQuiet),
            backgroundAgainstMicrophoneDB: floorDB(outQuiet) - floorDB(micQuiet),
            echoToNoiseDB: energyDB(powers(audibleMic, talk)) - energyDB(micQuiet),
            farTalkBlocks: talk.count, backgroundBlocks: quiet.count)
    }

    /// `x` through a second-order Butterworth high-pass at `cutoffHz` (the audio-EQ cookbook's, transposed direct
    /// form II from rest; the same filter as scipy's `butter(2, cutoff, "highpass")`, which the project's scripts use).
    static func highPassed(_ x: [Int16], cutoffHz: Double, sampleRate: Double) -> [Double] {
        let w0 = 2 * Double.pi * cutoffHz / sampleRate
        let alpha = sin(w0) / 2.0.squareRoot()
        let a0 = 1 + alpha
        let b0 = (1 + cos(w0)) / 2 / a0
        let b1 = -2 * b0
        let a1 = -2 * cos(w0) / a0
        let a2 = (1 - alpha) / a0
        var z1 = 0.0
        var z2 = 0.0
        return x.map { sample in
            let input = Double(sample)
            let y = b0 * input + z1
            z1 = b1 * input - a1 * y + z2
            z2 = b0 * input - a2 * y
            return y
        }
    }

    private static func farActivity(far: [Int16], blockSize: Int) -> [Bool] {
        let power = stride(from: 0, to: far.count / blockSize * blockSize, by: blockSize).map { start in
            far[start..<start + blockSize].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(blockSize)
        }
        let peak = power.max() ?? 0
        return power.map { peak > 0 && $0 > peak * 3.1623e-4 }
    }
}

/// A real-device recording of far-end single talk (a loudspeaker reference and the device's microphone), as the
/// `clips.json` of a device folder lists it (the project's shared test data, `aec-devices`; its README names every
/// source). Shared by `voice-bench aec --devices` and `DeviceEchoTests`.
public struct DeviceEchoClip: Codable, Sendable, Equatable {
    public var name: String
    /// File names inside the folder: what the loudspeaker played, what the microphone recorded (16 kHz mono).
    public var lpb: String
    public var mic: String
    /// Far-end single talk ends here (a double-talk recording's near talker enters); nil: the whole recording.
    public var singleTalkUntilSeconds: Double?
    /// A stretch with both ends silent, for recordings whose far end never pauses inside the single talk.
    public var backgroundFromSeconds: Double?
    public var backgroundToSeconds: Double?
    /// What the device and the far-end material are.
    public var note: String?

    enum CodingKeys: String, CodingKey {
        case name, lpb, mic, note
        case singleTalkUntilSeconds = "single_talk_until_s"
        case backgroundFromSeconds = "background_from_s"
        case backgroundToSeconds = "background_to_s"
    }

    public static func load(folder: URL) throws -> [DeviceEchoClip] {
        try JSONDecoder().decode(
            [DeviceEchoClip].self, from: Data(contentsOf: folder.appendingPathComponent("clips.json")))
    }

    /// Far end and microphone cut to the same whole number of 10 ms blocks.
    public func read(folder: URL) throws -> (far: [Int16], mic: [Int16]) {
        let far = try WAVFile.read(path: folder.appendingPathComponent(lpb).path)
        let mic = try WAVFile.read(path: folder.appendingPathComponent(mic).path)
        guard far.format == AudioFormat(sampleRate: 16_000, channels: 1), far.format == mic.format else {
            throw DeviceEchoClipError(description: "\(name): \(far.format) / \(mic.format); 16 kHz mono expected")
        }
        let count = min(far.int16Samples.count, mic.int16Samples.count) / 160 * 160
        return (Array(far.int16Samples.prefix(count)), Array(mic.int16Samples.prefix(count)))
    }

    /// The clip's figures for `output` (aligned with `mic`); nil when the clip has no background to measure against.
    public func measure(far: [Int16], mic: [Int16], output: [Int16]) -> ResidualOverBackground? {
        let until = singleTalkUntilSeconds.map { Int($0 * 100) }
        var range: Range<Int>?
        if let from = backgroundFromSeconds, let to = backgroundToSeconds { range = Int(from * 100)..<Int(to * 100) }
        return ResidualOverBackground.measure(
            mic: mic, output: output,
            farTalk: ResidualOverBackground.farTalkBlocks(far: far, blockSize: 160, singleTalkUntilBlock: until),
            background: ResidualOverBackground.backgroundBlocks(
                far: far, blockSize: 160, range: range, singleTalkUntilBlock: until),
            blockSize: 160)
    }
}

public struct DeviceEchoClipError: Error, CustomStringConvertible {
    public var description: String
}
