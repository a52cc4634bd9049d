/// SplitMix64: a small seeded generator, written once for every test target, so randomised tests replay the
/// same inputs on every run and machine. The sequence is the one VoiceDSP's `SeededGenerator` produces for the
/// same seed (test targets that do not link VoiceDSP use this one).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's whole state; the seed is the initial state.
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
