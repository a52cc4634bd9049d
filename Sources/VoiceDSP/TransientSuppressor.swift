import Foundation

/// Settings of the ``TransientSuppressor``.
public struct TransientSuppressorConfiguration: Sendable, Equatable {
    /// Sample rate of the blocks, Hz: 16 kHz only (see ``TransientSuppressor/supportedSampleRates``).
    public var sampleRate: Int
    /// Rise of a 2 ms slice's high-band energy over the loudest slice of the 10 ms before it that marks an impulsive
    /// onset, dB. Clicks and handling knocks rise within a millisecond or two; fricatives rise over tens.
    public var onsetRiseDB: Double
    /// Only while the far end plays (or has within its echo tail): a handling knock then lands in what should be the
    /// quiet output of far-end single talk. Outside it, a near talker is the likelier source of any onset, and a
    /// word-initial plosive cannot be told from a knock without hearing what follows it.
    public var onlyWhileFarEndPlays: Bool
    /// The ceiling a suppressed block is brought down to, over the output's tracked floor, dB.
    public var ceilingOverFloorDB: Double

    public init(
        sampleRate: Int = 16_000, onsetRiseDB: Double = 12, onlyWhileFarEndPlays: Bool = true,
        ceilingOverFloorDB: Double = 6
    ) {
        self.sampleRate = sampleRate
        self.onsetRiseDB = onsetRiseDB
        self.onlyWhileFarEndPlays = onlyWhileFarEndPlays
        self.ceilingOverFloorDB = ceilingOverFloorDB
    }
}

/// Attenuates impulsive handling noise (knocks, clicks, the rattle of a device being moved) in the captured signal
/// after echo cancellation, where no near-end voice is present.
///
/// Like WebRTC's transient suppressor it detects sudden onsets and restores the signal towards its recent level only
/// where no voice is heard; unlike it, it needs no keyboard signal and no FFT, and adds no latency. Per 10 ms block:
/// - a one-pole split at 1.5 kHz gives a low and a high band; the high band's energy per 2 ms slice is compared with
///   the loudest slice of the 10 ms before it (``TransientSuppressorConfiguration/onsetRiseDB``);
/// - an onset counts only in a block whose energy is mostly high-band (a knock's is; a vowel's is not), well above
///   the output's floor, with no voiced block (low-band dominant, 12 dB over the low band's floor) in the last
///   300 ms and no near talker's vowel (three such blocks in a row, 24 dB over it) in the last 1.5 s, and (by
///   default) while the far end plays;
/// - from an onset, for 80 ms and as long as the blocks stay high-band dominant, each block's level is capped at the
///   floor plus ``TransientSuppressorConfiguration/ceilingOverFloorDB``; a voiced block ends it at once.
/// The gain falls before the knock's onset slice and recovers across a block. A near talker's word-initial
/// fricative in double talk (steady high-band noise rising out of a quiet, echo-free output) reads as a knock; in a
/// talker's turn it follows a vowel within a second or so, which the 1.5 s after a vowel protects. What it still
/// takes is such a fricative as the first sound of a turn begun over the far end. Only scalars and one fixed ring:
/// nothing is allocated after `init`. Use from one thread.
public struct TransientSuppressor: Sendable {
    public let configuration: TransientSuppressorConfiguration
    /// Samples per 10 ms block.
    public let blockSize: Int
    private let sliceSize: Int
    private let splitCoefficient: Float
    private let onsetRatio: Double
    private let ceilingRatio: Double
    private var lowState: Float = 0
    /// High-band energy of the last five slices (10 ms), oldest overwritten first.
    private var recentSlices: (Double, Double, Double, Double, Double) = (0, 0, 0, 0, 0)
    private var sliceIndex = 0
    /// Lower envelopes (energy per sample) of the block and of its low band, before suppression.
    private var floor = Double.greatestFiniteMagnitude
    private var lowFloor = Double.greatestFiniteMagnitude
    /// The low band's lower envelope for telling a talker's vowels, rising 0.03 dB per block (3 dB a second): through
    /// a phrase it stays near the pauses' level, where `lowFloor` climbs towards the vowels' within a second.
    private var talkerFloor = Double.greatestFiniteMagnitude
    private var blocksSinceVoice = Self.voiceProtectionBlocks
    private var blocksSinceTalker = Self.talkerProtectionBlocks
    private var strongVoicedRun = 0
    private var blocksSinceFarEnd = Self.farEndTailBlocks + 1
    private var holdBlocks = 0
    private var gain: Float = 1
    /// Blocks suppressed so far (for tests and diagnostics).
    public private(set) var suppressedBlocks = 0

    /// Blocks after a voiced block in which no onset is suppressed (300 ms: the consonants around a vowel).
    static let voiceProtectionBlocks = 30
    /// Blocks after a near talker's vowel in which no onset is suppressed (1.5 s): the word-initial fricatives of
    /// a talker's turn (the AEC-Challenge double-talk recordings' follow a vowel by up to 0.96 s) rise out of an
    /// output the echo suppressor holds quiet as steeply as a knock.
    static let talkerProtectionBlocks = 150
    /// Voiced blocks in a row this far over the low band's slow floor make a near talker's vowel (24 dB, 30 ms): a
    /// residual echo's voiced blocks and a lone voiced click stay under it.
    static let talkerVowelBlocks = 3
    private static let talkerOverLowFloor = Foundation.pow(10, 2.4)
    private static let talkerFloorRise = Foundation.pow(10, 0.003)
    /// Blocks after the far end stopped in which it counts as playing (its echo tail).
    static let farEndTailBlocks = 30
    /// Blocks a detected knock is followed while the blocks stay high-band dominant.
    static let holdAfterOnsetBlocks = 8
    /// Aligned-reference mean square over which the far end counts as playing: −50 dBFS.
    public static let farEndMeanSquare = 10_737.0
    /// Floor's rise per block: 0.2 dB (it follows a rising background within seconds, a word not at all).
    private static let floorRise = Foundation.pow(10, 0.02)
    private static let voicedOverLowFloor = Foundation.pow(10, 1.2)
    /// A block this far over the floor can hold a knock worth suppressing (10 dB).
    private static let significantOverFloor = 10.0

    /// The rates whose band shares the thresholds were set on. The one-pole split's shares depend on the rate (white
    /// noise is 58 % high band at 16 kHz, 22 % at 8 kHz, 88 % at 48 kHz), so at other rates a knock would read as a
    /// vowel or a fricative as a knock.
    public static let supportedSampleRates: Set<Int> = [16_000]

    /// - Throws: ``SpeexDSPError/invalidArgument(field:reason:)`` for an unsupported rate or out-of-range setting.
    public init(configuration: TransientSuppressorConfiguration = TransientSuppressorConfiguration())
        throws(SpeexDSPError)
    {
        guard Self.supportedSampleRates.contains(configuration.sampleRate) else {
            throw .invalidArgument(field: "sampleRate", reason: "\(configuration.sampleRate); 16 kHz only")
        }
        guard (3...40).contains(configuration.onsetRiseDB) else {
            throw .invalidArgument(field: "onsetRiseDB", reason: "\(configuration.onsetRiseDB); 3 ... 40 dB")
        }
        guard (0...40).contains(configuration.ceilingOverFloorDB) else {
            throw .invalidArgument(
                field: "ceilingOverFloorDB", reason: "\(configuration.ceilingOverFloorDB); 0 ... 40 dB")
        }
        self.configuration = configuration
        blockSize = configuration.sampleRate / 100
        sliceSize = blockSize / 5
        splitCoefficient = Float(1 - Foundation.exp(-2 * Double.pi * 1_500 / Double(configuration.sampleRate)))
        onsetRatio = Foundation.pow(10, configuration.onsetRiseDB / 10)
        ceilingRatio = Foundation.pow(10, configuration.ceilingOverFloorDB / 10)
    }

    /// The suppressor a capture path at `sampleRate` runs for `configuration` (its rate replaced by `sampleRate`): nil
    /// when it is off (`configuration` nil) or the rate is not one of ``supportedSampleRates``.
    /// - Throws: ``SpeexDSPError/invalidArgument(field:reason:)`` for an out-of-range setting.
    public static func forCapture(_ configuration: TransientSuppressorConfiguration?, sampleRate: Int)
        throws(SpeexDSPError) -> TransientSuppressor?
    {
        guard var configuration, supportedSampleRates.contains(sampleRate) else { return nil }
        configuration.sampleRate = sampleRate
        return try TransientSuppressor(configuration: configuration)
    }

    /// Suppresses a knock in one block (`blockSize` samples) in place. `farEndMeanSquare` is the mean square of the
    /// far-end reference played during the block (the echo canceller's aligned reference); 0 without a far end.
    /// Returns whether the block was attenuated. Never allocates.
    @discardableResult
    public mutating func process(_ block: UnsafeMutableBufferPointer<Int16>, farEndMeanSquare: Double) -> Bool {
        precondition(block.count == blockSize, "transient suppressor blocks must be \(blockSize) samples")
        var low = 0.0
        var high = 0.0
        var rise = 0.0
        var onsetSample = 0
        var state = lowState
        for start in stride(from: 0, to: blockSize, by: sliceSize) {
            var slice = 0.0
            for i in start..<start + sliceSize {
                let x = Float(block[i])
                state += splitCoefficient * (x - state)
                let h = Double(x - state)
                let l = Double(state)
                low += l * l
                slice += h * h
            }
            high += slice
            let previous = max(
                max(recentSlices.0, recentSlices.1), max(max(recentSlices.2, recentSlices.3), recentSlices.4))
            // +1 per sample: digital silence before a slice is not an infinite rise.
            let sliceRise = (slice + Double(sliceSize)) / (previous + Double(sliceSize))
            if sliceRise > rise {
                rise = sliceRise
                onsetSample = start
            }
            switch sliceIndex {
            case 0: recentSlices.0 = slice
            case 1: recentSlices.1 = slice
            case 2: recentSlices.2 = slice
            case 3: recentSlices.3 = slice
            default: recentSlices.4 = slice
            }
            sliceIndex = sliceIndex == 4 ? 0 : sliceIndex + 1
        }
        lowState = state.isFinite ? state : 0
        let n = Double(blockSize)
        low /= n
        high /= n
        let energy = low + high
        let highShare = energy > 0 ? high / energy : 0
        let voiced = highShare < 0.5 && low > lowFloor * Self.voicedOverLowFloor
        strongVoicedRun = voiced && low > talkerFloor * Self.talkerOverLowFloor ? strongVoicedRun + 1 : 0
        blocksSinceTalker = strongVoicedRun >= Self.talkerVowelBlocks ? 0 : min(blocksSinceTalker + 1, Int.max / 2)
        // Floors before this block: a knock must stand over what came before it.
        let ceiling = floor * ceilingRatio
        let significant = energy > floor * Self.significantOverFloor
        // At least 1 per sample (−90 dBFS): after digital silence not every sound is a knock.
        floor = max(1, energy < floor ? energy : floor * Self.floorRise)
        lowFloor = max(1, low < lowFloor ? low : lowFloor * Self.floorRise)
        talkerFloor = max(1, low < talkerFloor ? low : talkerFloor * Self.talkerFloorRise)
        blocksSinceFarEnd = farEndMeanSquare > Self.farEndMeanSquare ? 0 : min(blocksSinceFarEnd + 1, Int.max / 2)
        let farEndPlays = !configuration.onlyWhileFarEndPlays || blocksSinceFarEnd <= Self.farEndTailBlocks

        var onset = false
        if voiced {
            blocksSinceVoice = 0
            holdBlocks = 0
        } else {
            blocksSinceVoice = min(blocksSinceVoice + 1, Int.max / 2)
            if rise >= onsetRatio && highShare > 0.6 && significant && farEndPlays
                && blocksSinceVoice > Self.voiceProtectionBlocks && blocksSinceTalker > Self.talkerProtectionBlocks
            {
                holdBlocks = Self.holdAfterOnsetBlocks
                onset = true
            } else if holdBlocks > 0 {
                holdBlocks = highShare > 0.5 ? holdBlocks - 1 : 0
            }
        }
        var target: Float = 1
        if holdBlocks > 0 && energy > ceiling {
            target = Float((ceiling / energy).squareRoot())
            suppressedBlocks += 1
        }
        apply(target, to: block, fallingBy: onset ? max(onsetSample, sliceSize / 4) : sliceSize / 4)
        return target < 1
    }

    /// Ramps from the last gain to `target`: down by sample `fall` (the knock's onset slice when it is not the first:
    /// its first milliseconds are its loudest, and what comes before it is quiet), up across the block.
    private mutating func apply(_ target: Float, to block: UnsafeMutableBufferPointer<Int16>, fallingBy fall: Int) {
        guard target != 1 || gain != 1 else { return }
        let ramp = target < gain ? fall : blockSize
        let step = (target - gain) / Float(ramp)
        for i in 0..<blockSize {
            let g = i < ramp ? gain + step * Float(i + 1) : target
            block[i] = Int16(clamping: Int((Float(block[i]) * g).rounded()))
        }
        gain = target
    }

    /// Forgets everything heard (a new call).
    public mutating func reset() {
        lowState = 0
        recentSlices = (0, 0, 0, 0, 0)
        sliceIndex = 0
        floor = .greatestFiniteMagnitude
        lowFloor = .greatestFiniteMagnitude
        talkerFloor = .greatestFiniteMagnitude
        blocksSinceVoice = Self.voiceProtectionBlocks
        blocksSinceTalker = Self.talkerProtectionBlocks
        strongVoicedRun = 0
        blocksSinceFarEnd = Self.farEndTailBlocks + 1
        holdBlocks = 0
        gain = 1
        suppressedBlocks = 0
    }
}
