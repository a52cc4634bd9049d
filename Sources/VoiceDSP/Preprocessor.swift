internal import CSpeexDSP
import Foundation

/// Settings of the ``Preprocessor``: what runs on the captured voice after echo cancellation.
public struct PreprocessorConfiguration: Sendable, Equatable {
    /// Processing rate in Hz: 8000, 16000, 32000 or 48000.
    public var sampleRate: Int
    /// Maximum noise attenuation in dB (negative, e.g. -15), or `nil` to switch noise suppression off.
    public var noiseSuppressionDB: Int?
    /// AGC target level in dBFS (e.g. -18), or `nil` to switch AGC off. Off by default: AGC rescales the
    /// near-end talker, which an echo or codec measurement must not mistake for distortion.
    public var agcTargetDBFS: Double?
    /// The most gain AGC may apply, in dB.
    public var agcMaxGainDB: Int
    /// Whether the voice-activity decision is computed (it is what drives Opus DTX).
    public var vad: Bool
    /// Residual-echo attenuation in dB when only the far end talks (used when an echo canceller is attached).
    public var echoSuppressionDB: Int
    /// Residual-echo attenuation in dB during double talk: milder, so the near-end talker survives.
    public var echoSuppressionActiveDB: Int

    public init(
        sampleRate: Int = 16_000, noiseSuppressionDB: Int? = -15, agcTargetDBFS: Double? = nil, agcMaxGainDB: Int = 30,
        vad: Bool = true, echoSuppressionDB: Int = -40, echoSuppressionActiveDB: Int = -15
    ) {
        self.sampleRate = sampleRate
        self.noiseSuppressionDB = noiseSuppressionDB
        self.agcTargetDBFS = agcTargetDBFS
        self.agcMaxGainDB = agcMaxGainDB
        self.vad = vad
        self.echoSuppressionDB = echoSuppressionDB
        self.echoSuppressionActiveDB = echoSuppressionActiveDB
    }
}

/// Noise suppression, automatic gain control and voice-activity detection over speexdsp's preprocessor, and
/// residual-echo suppression when an ``MDFEchoFilter`` is attached.
///
/// Processes 10 ms blocks in place. The single owner of its `SpeexPreprocessState` (destroyed in `deinit`); it
/// keeps the attached echo filter alive for as long as the C state points at it.
public final class Preprocessor {
    public let configuration: PreprocessorConfiguration
    /// Samples per block: `sampleRate / 100` (or the shorter frame an ``EchoCanceller`` created it with).
    public let blockSize: Int

    let state: OpaquePointer
    private var echo: MDFEchoFilter?
    private var lastVAD = false
    /// speexdsp's defaults for its VAD hysteresis (SPEEX_PREPROCESS_SET_PROB_START / _CONTINUE).
    static let speechProbabilityStart = 35
    static let speechProbabilityContinue = 20

    /// Creates the preprocessor.
    /// - Throws: ``SpeexDSPError`` naming a bad setting, or the speexdsp call that failed.
    public convenience init(configuration: PreprocessorConfiguration = PreprocessorConfiguration())
        throws(SpeexDSPError)
    {
        try self.init(configuration: configuration, frameSize: configuration.sampleRate / 100)
    }

    /// A preprocessor working on frames of `frameSize` samples instead of 10 ms: the ``EchoCanceller`` runs MDF on
    /// shorter frames (more adaptation steps a second), and an attached preprocessor must use the same frame.
    init(configuration: PreprocessorConfiguration, frameSize: Int) throws(SpeexDSPError) {
        try SpeexDSPError.checkRate(configuration.sampleRate)
        if let ns = configuration.noiseSuppressionDB, !(-100...0).contains(ns) {
            throw .invalidArgument(field: "noiseSuppressionDB", reason: "\(ns); -100 ... 0 dB")
        }
        if let target = configuration.agcTargetDBFS, !(target.isFinite && (-60...0).contains(target)) {
            throw .invalidArgument(field: "agcTargetDBFS", reason: "\(target); -60 ... 0 dBFS")
        }
        guard (0...60).contains(configuration.agcMaxGainDB) else {
            throw .invalidArgument(field: "agcMaxGainDB", reason: "\(configuration.agcMaxGainDB); 0 ... 60 dB")
        }
        guard (-100...0).contains(configuration.echoSuppressionDB),
            (-100...0).contains(configuration.echoSuppressionActiveDB)
        else { throw .invalidArgument(field: "echoSuppressionDB", reason: "-100 ... 0 dB") }

        blockSize = frameSize
        guard let created = speex_preprocess_state_init(Int32(blockSize), Int32(configuration.sampleRate)) else {
            throw .initFailed(call: "speex_preprocess_state_init")
        }
        state = created
        self.configuration = configuration
        // From here on `deinit` frees the state if a setting fails.
        try setInt(SPEEX_PREPROCESS_SET_DENOISE, configuration.noiseSuppressionDB == nil ? 0 : 1, "SET_DENOISE")
        if let ns = configuration.noiseSuppressionDB {
            try setInt(SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, ns, "SET_NOISE_SUPPRESS")
        }
        try setInt(SPEEX_PREPROCESS_SET_AGC, configuration.agcTargetDBFS == nil ? 0 : 1, "SET_AGC")
        if let target = configuration.agcTargetDBFS {
            var level = Float(32768 * pow10(target / 20))
            try SpeexDSPError.check(
                speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_AGC_LEVEL, &level),
                "speex_preprocess_ctl", "SPEEX_PREPROCESS_SET_AGC_LEVEL")
            try setInt(SPEEX_PREPROCESS_SET_AGC_MAX_GAIN, configuration.agcMaxGainDB, "SET_AGC_MAX_GAIN")
        }
        // speexdsp's own VAD switch (SPEEX_PREPROCESS_SET_VAD) only prints "The VAD has been replaced by a hack"
        // to stderr and applies a hysteresis to the speech probability it computes anyway; the same decision is
        // taken in `process(_:)` from SPEEX_PREPROCESS_GET_PROB, without the console noise.
        try setInt(SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, configuration.echoSuppressionDB, "SET_ECHO_SUPPRESS")
        try setInt(
            SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, configuration.echoSuppressionActiveDB,
            "SET_ECHO_SUPPRESS_ACTIVE")
    }

    deinit { speex_preprocess_state_destroy(state) }

    private func setInt(_ request: Int32, _ value: Int, _ name: StaticString) throws(SpeexDSPError) {
        var v = Int32(value)
        let result = speex_preprocess_ctl(state, request, &v)
        if result != 0 {
            throw .controlFailed(call: "speex_preprocess_ctl", request: "SPEEX_PREPROCESS_\(name)", code: result)
        }
    }

    private func pow10(_ x: Double) -> Double { Foundation.pow(10, x) }

    /// Attaches the echo filter whose residual echo this preprocessor suppresses (`SPEEX_PREPROCESS_SET_ECHO_STATE`).
    /// The filter must run on the same block, just before ``process(_:)``.
    public func attach(echoFilter: MDFEchoFilter) throws(SpeexDSPError) {
        guard echoFilter.sampleRate == configuration.sampleRate, echoFilter.blockSize == blockSize else {
            throw .invalidArgument(field: "echoFilter", reason: "rate and block size must match the preprocessor's")
        }
        try SpeexDSPError.check(
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echoFilter.state)),
            "speex_preprocess_ctl", "SPEEX_PREPROCESS_SET_ECHO_STATE")
        echo = echoFilter
    }

    /// Processes one block in place and returns the voice-activity decision (always `true` when VAD is off, so
    /// DTX never drops audio it was not asked to judge). Never allocates.
    @discardableResult
    public func process(_ block: UnsafeMutableBufferPointer<Int16>) -> Bool {
        precondition(block.count == blockSize, "Preprocessor blocks must be \(blockSize) samples")
        speex_preprocess_run(state, block.baseAddress!)
        if configuration.vad {
            // speexdsp's VAD rule (preprocess.c): start above 35 %, continue above 20 %.
            let probability = speechProbability
            lastVAD =
                probability > Self.speechProbabilityStart || (lastVAD && probability > Self.speechProbabilityContinue)
        } else {
            lastVAD = true
        }
        return lastVAD
    }

    /// Algorithmic delay of ``process(_:)`` in samples: one block. speexdsp's preprocessor analyses overlapping
    /// windows of two blocks and rebuilds the signal by overlap-add, so a sample comes out one block after it went
    /// in — whatever is switched on. A measurement comparing the output with its input (ERLE block by block,
    /// near-end preservation) must shift by this much first.
    public var latencySamples: Int { blockSize }

    /// The decision of the last ``process(_:)``: whether the block holds speech. Drives DTX.
    public var voiceActive: Bool { lastVAD }

    /// speexdsp's speech probability for the last block, 0 ... 100.
    public var speechProbability: Int {
        var p: Int32 = 0
        // A GET request on a valid state cannot fail; a failure would leave 0, which is what we report.
        _ = try? SpeexDSPError.check(
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_GET_PROB, &p), "speex_preprocess_ctl",
            "SPEEX_PREPROCESS_GET_PROB")
        return Int(p)
    }

    /// The current AGC gain in dB (0 when AGC is off).
    public var agcGainDB: Double {
        guard configuration.agcTargetDBFS != nil else { return 0 }
        var g: Int32 = 0
        _ = try? SpeexDSPError.check(
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_GET_AGC_GAIN, &g), "speex_preprocess_ctl",
            "SPEEX_PREPROCESS_GET_AGC_GAIN")
        return Double(g)
    }
}
