/// DTMF keys as tones (ITU-T Q.23: one frequency of the key's row plus one of its column), for key feedback and for
/// peers that take keys only in the audio.
extension ToneSpec {
    /// The row and column frequencies of each key, in Hz.
    static let dtmfFrequencies: [Character: (row: Double, column: Double)] = {
        let rows: [Double] = [697, 770, 852, 941]
        let columns: [Double] = [1209, 1336, 1477, 1633]
        let layout = ["123A", "456B", "789C", "*0#D"]
        var table: [Character: (row: Double, column: Double)] = [:]
        for (r, line) in layout.enumerated() {
            for (c, key) in line.enumerated() { table[key] = (rows[r], columns[c]) }
        }
        return table
    }()

    /// Key `key` (`0`–`9`, `*`, `#`, `A`–`D`; lower-case `a`–`d` too) sounding for `milliseconds`, then silent
    /// for `pauseMilliseconds`, once; nil for any other character.
    public static func dtmf(
        _ key: Character, milliseconds: Int = 100, pauseMilliseconds: Int = 100, amplitude: Double = 0.3
    ) -> ToneSpec? {
        guard let pair = dtmfFrequencies[Character(key.uppercased())] else { return nil }
        return ToneSpec(
            frequencies: [pair.row, pair.column], cadence: [.on(milliseconds), .off(pauseMilliseconds)],
            repeats: false, amplitude: amplitude)
    }

    /// The tones of `keys` one after the other (each as ``dtmf(_:milliseconds:pauseMilliseconds:amplitude:)``),
    /// rendered at `sampleRate`; nil if a character is not a key.
    public static func dtmfSamples(
        _ keys: String, sampleRate: Int, milliseconds: Int = 100, pauseMilliseconds: Int = 100
    ) -> [Int16]? {
        var samples: [Int16] = []
        for key in keys {
            guard let spec = dtmf(key, milliseconds: milliseconds, pauseMilliseconds: pauseMilliseconds) else {
                return nil
            }
            var generator = ToneGenerator(spec: spec, sampleRate: sampleRate)
            var block = [Int16](repeating: 0, count: (milliseconds + pauseMilliseconds) * sampleRate / 1000)
            block.withUnsafeMutableBufferPointer { generator.render(into: $0) }
            samples += block
        }
        return samples
    }
}
