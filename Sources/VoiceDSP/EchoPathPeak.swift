/// Where the adapted filter has the echo: the main peak of its impulse response (the direct path), to a fraction
/// of a tap. Its position is what the canceller's delay statistics, the edge re-alignment and the drift fit read;
/// whether it stays put from one read to the next says whether the filter holds a stable echo path at all.
///
/// The impulse-response buffer is allocated in `init` and shared with the jump search (``EchoReturnMonitor``),
/// which reads the same filter.
final class EchoPathPeak {
    /// The impulse response of the last read.
    var taps: [Int32]
    /// Position of the main peak (taps), or `nil` while the filter has no clear peak.
    private(set) var position: Double?
    /// Consecutive reads that found the peak where the previous one was (a single read can be a noise tap).
    private(set) var stableReads = 0
    /// Peak-to-mean tap energy ratio of the last read (for tests and diagnostics).
    private(set) var lastPeakToMean = 0.0

    init(taps count: Int) {
        taps = [Int32](repeating: 0, count: count)
    }

    /// Whether the filter shows a stable echo path: the peak found in the same place twice in a row.
    var isStable: Bool { stableReads >= 2 }

    /// Reads `filter`'s impulse response into ``taps``.
    func readImpulseResponse(of filter: MDFEchoFilter) throws(SpeexDSPError) {
        try taps.withUnsafeMutableBufferPointer { t throws(SpeexDSPError) in try filter.impulseResponse(into: t) }
    }

    /// Reads `filter` and locates its main peak. Returns the index of the largest tap when the peak is clear
    /// (``position`` then holds its refined position), else `nil` (and forgets the peak).
    func locate(in filter: MDFEchoFilter) throws(SpeexDSPError) -> Int? {
        try readImpulseResponse(of: filter)
        var best = 0
        var bestMagnitude = 0.0
        var energy = 0.0
        taps.withUnsafeBufferPointer { t in
            for i in t.indices {
                let v = Double(t[i])
                energy += v * v
                if abs(v) > bestMagnitude {
                    bestMagnitude = abs(v)
                    best = i
                }
            }
        }
        // A clear peak: far above the mean tap energy. An adapted room response has its direct path ~20 dB above
        // the mean (a diffuse tail decaying over the filter); an unadapted filter's largest tap is noise, ~10 dB.
        lastPeakToMean = energy > 0 ? bestMagnitude * bestMagnitude * Double(taps.count) / energy : 0
        let keeping = position.map { abs($0 - Double(best)) <= 4 } ?? false
        guard bestMagnitude > 0, lastPeakToMean > (keeping ? 25 : 40) else {
            forget()
            return nil
        }
        stableReads = keeping ? stableReads + 1 : 0
        var refined = Double(best)
        if best > 0 && best < taps.count - 1 {
            let y0 = abs(Double(taps[best - 1]))
            let y1 = bestMagnitude
            let y2 = abs(Double(taps[best + 1]))
            let denominator = y0 - 2 * y1 + y2
            if denominator < 0 { refined += max(-0.5, min(0.5, 0.5 * (y0 - y2) / denominator)) }
        }
        position = refined
        return best
    }

    /// Forgets the peak (the filter was restarted, or shows none).
    func forget() {
        position = nil
        stableReads = 0
    }
}
