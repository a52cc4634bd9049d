import Foundation

/// Is the speech one side sent in what the other recorded? The median, over 0.25 s windows of speech, of the
/// normalised cross-correlation at each window's best alignment (the recordings start at different moments and a
/// jitter buffer may shift time between windows). 16 kHz mono. Shared by the baresip call tests and the
/// conference tests (where `heard` is a mix of several talkers and each is looked for on its own).
public enum SpeechMatch {
    /// - Parameter maximumOffsetSeconds: how far apart the two recordings may start. A conference test, whose
    ///   participants start together and loop short recordings, keeps it under half a loop so that the search
    ///   cannot line up the wrong repetition of a quieter talker in a mix.
    public static func median(sent: [Int16], heard: [Int16], maximumOffsetSeconds: Double = 5) -> Double {
        let window = 4_000
        // Coarse offset from 10 ms energy envelopes (up to 5 s either way by default), then ±30 ms per window.
        let offset = envelopeOffset(sent: sent, heard: heard, maxFrames: Int(maximumOffsetSeconds * 100)) * 160
        var results: [Double] = []
        var start = 0
        while start + window <= sent.count {
            let reference = sent[start..<(start + window)]
            if level(reference) > 300 {
                var best = -1.0
                for fine in -480...480 {
                    let at = start + offset + fine
                    guard at >= 0, at + window <= heard.count else { continue }
                    best = max(best, correlation(reference, heard[at..<(at + window)]))
                }
                if best > -1 { results.append(best) }
            }
            start += window
        }
        let sorted = results.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// Like ``median(sent:heard:maximumOffsetSeconds:)``, with the coarse alignment found again for every
    /// `pieceSeconds` of `heard`, the windows taken from `heard`, and each window searched `fineSearchSeconds`
    /// either side of its piece's alignment (instead of ±30 ms): for a path whose delay moves while it is
    /// recorded — a room's adaptive jitter buffer growing in steps of 100+ ms under a bursty sender (baresip on a
    /// loaded machine: 1.24 → 1.33 → 1.46 s within 2 s) — which a single alignment would score as not heard.
    /// The wide search runs on both signals decimated by 4 and is refined at the full rate around its best lag
    /// (``bestCorrelation(of:in:decimated:from:through:)``): searched sample by sample it took tens of seconds in a
    /// debug build, long enough for a live call under test to outlast its peer's recording.
    public static func piecewiseMedian(
        sent: [Int16], heard: [Int16], pieceSeconds: Double = 2, fineSearchSeconds: Double = 0.15,
        maximumOffsetSeconds: Double = 5
    ) -> Double {
        let window = 4_000, piece = Int(pieceSeconds * 16_000), reach = Int(fineSearchSeconds * 16_000)
        let sentDecimated = decimatedBy4(sent)
        var results: [Double] = []
        var pieceStart = 0
        while pieceStart + piece <= heard.count {
            let part = Array(heard[pieceStart..<(pieceStart + piece)])
            // heard index = sent index + offset (as in median).
            // The piece starts `pieceStart` into the recording: its lag (piece index − sent index) is searched
            // around minus that, as far either way as the whole recording's would be.
            let offset =
                envelopeOffset(
                    sent: sent, heard: part, maxFrames: Int(maximumOffsetSeconds * 100), around: -pieceStart / 160)
                * 160
            var at = 0
            while at + window <= part.count {
                let observed = part[at..<(at + window)]
                if level(observed) > 300 {
                    let best = bestCorrelation(
                        of: observed, in: sent, decimated: sentDecimated, from: at - offset - reach,
                        through: at - offset + reach)
                    if best > -1 { results.append(best) }
                }
                at += window
            }
            pieceStart += piece
        }
        let sorted = results.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// The highest normalised correlation of `observed` with a run of `sent` starting anywhere in
    /// `first...last` (−1 when none fits): every 4th start on the decimated signals, then every start within
    /// ±8 samples of the best one. A 4-sample average keeps speech below 2 kHz, where its correlation peak is
    /// broad enough that the decimated peak lies within a decimated sample of the full-rate one.
    static func bestCorrelation(
        of observed: ArraySlice<Int16>, in sent: [Int16], decimated sentDecimated: [Int16], from first: Int,
        through last: Int
    ) -> Double {
        let length = observed.count
        let observedDecimated = decimatedBy4(Array(observed))
        let shortLength = observedDecimated.count
        var coarse = (score: -2.0, start: 0)
        var start = max(first, 0)
        start += (4 - start % 4) % 4
        while start <= last, start / 4 + shortLength <= sentDecimated.count {
            let score = correlation(
                sentDecimated[(start / 4)..<(start / 4 + shortLength)], observedDecimated[0..<shortLength])
            if score > coarse.score { coarse = (score, start) }
            start += 4
        }
        guard coarse.score > -2 else { return -1 }
        var best = -1.0
        for from in max(coarse.start - 8, first, 0)...min(coarse.start + 8, last) where from + length <= sent.count {
            best = max(best, correlation(sent[from..<(from + length)], observed))
        }
        return best
    }

    /// Averages of 4 samples: a crude low-pass and a quarter of the search.
    static func decimatedBy4(_ samples: [Int16]) -> [Int16] {
        stride(from: 0, to: samples.count - 3, by: 4).map { (index: Int) -> Int16 in
            let sum: Int = samples[index..<(index + 4)].reduce(0) { $0 + Int($1) }
            return Int16(sum / 4)
        }
    }

    /// Normalised cross-correlation of two equally long runs. Through unsafe buffers: the search calls it about a
    /// million times per measure, which takes minutes with checked slice indexing in a debug build.
    public static func correlation(_ a: ArraySlice<Int16>, _ b: ArraySlice<Int16>) -> Double {
        precondition(a.count <= b.count)
        return a.withUnsafeBufferPointer { x in
            b.withUnsafeBufferPointer { y in
                var ab: Int64 = 0, aa: Int64 = 0, bb: Int64 = 0
                for k in 0..<x.count {
                    let p = Int64(x[k]), q = Int64(y[k])
                    ab &+= p &* q
                    aa &+= p &* p
                    bb &+= q &* q
                }
                return aa > 0 && bb > 0 ? Double(ab) / (Double(aa) * Double(bb)).squareRoot() : 0
            }
        }
    }

    public static func level(_ samples: ArraySlice<Int16>) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))).squareRoot()
    }

    /// The shift (in 10 ms frames) of `heard` against `sent` that best lines up their log-energy envelopes, within
    /// `maxFrames` of `around`.
    public static func envelopeOffset(sent: [Int16], heard: [Int16], maxFrames: Int, around: Int = 0) -> Int {
        func envelope(_ x: [Int16]) -> [Double] {
            stride(from: 0, to: x.count - 160, by: 160).map { log10(level(x[$0..<($0 + 160)]) + 1) }
        }
        let s = envelope(sent), h = envelope(heard)
        let ms = s.reduce(0, +) / Double(max(s.count, 1)), mh = h.reduce(0, +) / Double(max(h.count, 1))
        var best = (score: -Double.infinity, lag: 0)
        for lag in (around - maxFrames)...(around + maxFrames) {
            var sum = 0.0, n = 0
            for i in s.indices where i + lag >= 0 && i + lag < h.count {
                sum += (s[i] - ms) * (h[i + lag] - mh)
                n += 1
            }
            if n > 100, sum / Double(n) > best.score { best = (sum / Double(n), lag) }
        }
        return best.lag
    }

    /// 48 kHz (baresip's dump) to 16 kHz: a 3-sample average, then every third sample; 8 kHz (a G.711 dump or
    /// recording) to 16 kHz by linear interpolation.
    public static func to16k(_ samples: [Int16], rate: Int) -> [Int16] {
        if rate == 8_000 {
            var out: [Int16] = []
            out.reserveCapacity(samples.count * 2)
            for (i, sample) in samples.enumerated() {
                let next = i + 1 < samples.count ? samples[i + 1] : sample
                out.append(sample)
                out.append(Int16((Int(sample) + Int(next)) / 2))
            }
            return out
        }
        guard rate == 48_000 else { return samples }
        var out: [Int16] = []
        out.reserveCapacity(samples.count / 3)
        var i = 0
        while i + 2 < samples.count {
            let sum: Int = Int(samples[i]) + Int(samples[i + 1]) + Int(samples[i + 2])
            out.append(Int16(sum / 3))
            i += 3
        }
        return out
    }
}
