/// Decoded audio waiting to be played (NetEq's sync buffer): the playout operations append to its end — decoded
/// packets, concealment, comfort noise — and stretch what it holds; each tick takes one block from its front.
///
/// Fixed capacity (four of the longest Opus frames, 120 ms), allocated in `init`; nothing allocates after.
struct SyncBuffer {
    private var samples: [Int16]
    /// Samples waiting.
    private(set) var count = 0

    init(capacity: Int) {
        samples = [Int16](repeating: 0, count: capacity)
    }

    var capacity: Int { samples.count }

    /// Room left after the waiting samples.
    var free: Int { samples.count - count }

    /// Calls `body` with the `length` samples after the waiting ones (to be written; they are not waiting until
    /// ``commit(_:)``).
    mutating func withSpace<R>(_ length: Int, _ body: (UnsafeMutableBufferPointer<Int16>) -> R) -> R {
        let start = count
        return samples.withUnsafeMutableBufferPointer { s in
            body(UnsafeMutableBufferPointer(rebasing: s[start..<(start + length)]))
        }
    }

    /// Makes `n` samples written with ``withSpace(_:_:)`` wait to be played.
    mutating func commit(_ n: Int) {
        count += n
    }

    /// Calls `body` with the whole storage and the waiting count, for stretching in place; `body` returns how many
    /// samples it added (negative: removed). Returns the same.
    mutating func stretch(_ body: (UnsafeMutableBufferPointer<Int16>, Int) -> Int) -> Int {
        let waiting = count
        let added = samples.withUnsafeMutableBufferPointer { body($0, waiting) }
        count += added
        return added
    }

    mutating func appendSilence(_ n: Int) {
        samples.withUnsafeMutableBufferPointer { s in
            for i in count..<(count + n) { s[i] = 0 }
        }
        count += n
    }

    /// Removes `n` waiting samples from `start` on, moving the later ones down.
    mutating func remove(_ n: Int, at start: Int) {
        guard n > 0 else { return }
        let end = count
        samples.withUnsafeMutableBufferPointer { s in
            for i in (start + n)..<end { s[i - n] = s[i] }
        }
        count -= n
    }

    /// Fades from `tail` (concealment continued past the waiting audio) into the `available` samples at `start`.
    mutating func crossfade(from tail: UnsafeBufferPointer<Int16>, at start: Int, available: Int) {
        let fade = min(tail.count, available)
        samples.withUnsafeMutableBufferPointer { s in
            for n in 0..<fade {
                let w = Double(n + 1) / Double(fade + 1)
                s[start + n] = Int16(clamping: Int((Double(tail[n]) * (1 - w) + Double(s[start + n]) * w).rounded()))
            }
        }
    }

    /// Mean square of the waiting samples.
    var meanSquare: Double {
        var energy = 0.0
        samples.withUnsafeBufferPointer { s in
            for i in 0..<count { energy += Double(s[i]) * Double(s[i]) }
        }
        return energy / Double(max(1, count))
    }

    /// Moves the first `output.count` waiting samples to `output` and returns their energy (sum of squares).
    mutating func take(into output: UnsafeMutableBufferPointer<Int16>) -> Double {
        let block = output.count
        var energy = 0.0
        samples.withUnsafeMutableBufferPointer { s in
            for i in 0..<block {
                output[i] = s[i]
                energy += Double(s[i]) * Double(s[i])
            }
            for i in block..<count { s[i - block] = s[i] }
        }
        count -= block
        return energy
    }
}
