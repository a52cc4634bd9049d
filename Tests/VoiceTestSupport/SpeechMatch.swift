import Foundation

/// Is the speech one side sent in what the other recorded? The median, over 0.25 s windows of speech, of the
/// normalised cross-correlation at each window's best alignment (the recordings start at different moments and a
/// jitter buffer may shift time between windows). 16 kHz mono.
public enum SpeechMatch {
    public static func median(sent: [Int16], heard: [Int16]) -> Double {
        let window = 4_000
        // Coarse offset from 10 ms energy envelopes (up to 5 s either way), then ±30 ms per window.
        let offset = envelopeOffset(sent: sent, heard: heard, maxFrames: 500) * 160
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

    public static func correlation(_ a: ArraySlice<Int16>, _ b: ArraySlice<Int16>) -> Double {
        var ab = 0.0, aa = 0.0, bb = 0.0
        var i = a.startIndex, j = b.startIndex
        while i < a.endIndex {
            let x = Double(a[i]), y = Double(b[j])
            ab += x * y
            aa += x * x
            bb += y * y
            i += 1
            j += 1
        }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
    }

    public static func level(_ samples: ArraySlice<Int16>) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))).squareRoot()
    }

    /// The shift (in 10 ms frames) of `heard` against `sent` that best lines up their log-energy envelopes.
    public static func envelopeOffset(sent: [Int16], heard: [Int16], maxFrames: Int) -> Int {
        func envelope(_ x: [Int16]) -> [Double] {
            stride(from: 0, to: x.count - 160, by: 160).map { log10(level(x[$0..<($0 + 160)]) + 1) }
        }
        let s = envelope(sent), h = envelope(heard)
        let ms = s.reduce(0, +) / Double(max(s.count, 1)), mh = h.reduce(0, +) / Double(max(h.count, 1))
        var best = (score: -Double.infinity, lag: 0)
        for lag in -maxFrames...maxFrames {
            var sum = 0.0, n = 0
            for i in s.indices where i + lag >= 0 && i + lag < h.count {
                sum += (s[i] - ms) * (h[i + lag] - mh)
                n += 1
            }
            if n > 100, sum / Double(n) > best.score { best = (sum / Double(n), lag) }
        }
        return best.lag
    }

    /// 48 kHz (baresip's dump) to 16 kHz: a 3-sample average, then every third sample.
    public static func to16k(_ samples: [Int16], rate: Int) -> [Int16] {
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
