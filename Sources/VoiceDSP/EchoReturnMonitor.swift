import Foundation

/// Watches how much echo the filter removes and notices when the echo has moved: a bulk-delay jump (a device
/// latency change) that the coarse alignment would take seconds to see and would answer by restarting the filter.
///
/// Over far-end-active blocks it follows the short-term echo return (microphone against filter output) and the
/// return the filter has been reaching. When a filter that had been cancelling well (an established return above
/// 10 dB) stops cancelling at all (under 3 dB) for 250 ms of far-end activity, ``DelayJumpSearch`` looks for where
/// the echo went, from the reference filtered by the adapted echo path, to the sample; two searches in a row must
/// agree, and the canceller then shifts the reference by the jump and keeps the adapted filter (a device latency
/// change is re-aligned within ~0.25 s). Double talk looks the same, but there the search finds the echo where it
/// was and nothing changes; the searches then back off (250 ms, 500 ms, ... up to 2 s apart) while the collapse
/// lasts. Storage is allocated in `init`.
final class EchoReturnMonitor {
    private let jumpSearch: DelayJumpSearch
    /// The last `jumpSearch.window` microphone samples (a ring at the microphone's sample count).
    private var micHistory: [Int16]
    /// Short-term microphone and filter-output energies over far-end-active blocks.
    private var shortMicEnergy = 0.0
    private var shortOutEnergy = 0.0
    /// The long-term echo return the filter has been reaching (dB).
    private var establishedERLE = 0.0
    /// Far-end-active blocks in a row with the echo return lost.
    private var collapsedBlocks = 0
    /// Consecutive far-end-active blocks with the echo return not collapsed.
    private var goodBlocks = 0
    private var blocksSinceJumpSearch = 0
    /// Blocks between jump searches while a collapse lasts: doubles (up to 2 s) each time the search finds the echo
    /// where it was (double talk, not a jump), back to 250 ms once the echo return has been good for a second
    /// (continuous double talk flickers in and out of collapse; a flicker must not restart the fast searches).
    private var jumpSearchInterval = 25
    /// A jump the last search found, waiting for the next search to confirm it.
    private var pendingJump: Int?

    init(sampleRate: Int, maxDelay: Int, taps: Int) {
        jumpSearch = DelayJumpSearch(window: sampleRate / 4, maxDelay: maxDelay, taps: taps)
        micHistory = [Int16](repeating: 0, count: sampleRate / 4)
    }

    /// Takes one block: `mic` (its last sample is microphone sample `end - 1`), the filter's `output` for it, and
    /// the mean square of the reference it was cancelled against. Returns the delay (samples) the reference should
    /// jump to, confirmed by two searches, or `nil`.
    func observe(
        mic: UnsafeBufferPointer<Int16>, output: UnsafeBufferPointer<Int16>, end: Int64, referenceMeanSquare: Double,
        filter: MDFEchoFilter, peak: EchoPathPeak, reference: EchoReferenceLine, appliedDelay: Int
    ) throws(SpeexDSPError) -> Int? {
        record(mic, end: end)
        blocksSinceJumpSearch += 1
        guard referenceMeanSquare > 900 else { return nil }
        var micEnergy = 0.0
        var outEnergy = 0.0
        for i in 0..<mic.count {
            micEnergy += Double(mic[i]) * Double(mic[i])
            outEnergy += Double(output[i]) * Double(output[i])
        }
        shortMicEnergy = 0.7 * shortMicEnergy + 0.3 * micEnergy
        shortOutEnergy = 0.7 * shortOutEnergy + 0.3 * outEnergy
        let short = 10 * log10((shortMicEnergy + 1) / (shortOutEnergy + 1))
        if short < 3 && establishedERLE > 10 {
            collapsedBlocks += 1
            goodBlocks = 0
        } else {
            collapsedBlocks = 0
            goodBlocks += 1
            if goodBlocks >= 100 { jumpSearchInterval = 25 }
            // What the filter reaches when it works: a peak hold decaying 2 dB a second of far-end activity, so double
            // talk (near-end speech in the output) does not drag it down and a collapse is seen against it.
            establishedERLE = max(min(short, 40), establishedERLE - 0.02)
        }
        guard collapsedBlocks >= 25, blocksSinceJumpSearch >= jumpSearchInterval, peak.isStable else { return nil }
        blocksSinceJumpSearch = 0
        try peak.readImpulseResponse(of: filter)
        // The last window of microphone samples and the reference span ending at the same time with no offset.
        let window = jumpSearch.window
        let capacity = micHistory.count
        micHistory.withUnsafeBufferPointer { h in
            var position = Int(end % Int64(capacity))
            for t in 0..<window {
                jumpSearch.mic[t] = Float(h[position])
                position += 1
                if position == capacity { position = 0 }
            }
        }
        reference.read(from: end - Int64(jumpSearch.referenceLength), into: jumpSearch.reference)
        let found = peak.taps.withUnsafeBufferPointer { jumpSearch.search(impulseResponse: $0) }
        guard let found, found.confidence >= 10, abs(found.delay - appliedDelay) >= 2 else {
            jumpSearchInterval = min(2 * jumpSearchInterval, 200)
            pendingJump = nil
            return nil
        }
        // Two searches in a row must agree: in double talk a single search can find a confident wrong offset (the
        // AEC-Challenge double-talk clip was shifted 11.7 ms off its true echo at 16 s and echoed for two seconds;
        // `RealEchoRecordingTests`).
        guard let pending = pendingJump, abs(pending - found.delay) <= 2 else {
            pendingJump = found.delay
            blocksSinceJumpSearch = jumpSearchInterval - 2  // the confirming search 20 ms later
            return nil
        }
        pendingJump = nil
        collapsedBlocks = 0
        return found.delay
    }

    private func record(_ mic: UnsafeBufferPointer<Int16>, end: Int64) {
        let capacity = micHistory.count
        micHistory.withUnsafeMutableBufferPointer { h in
            var position = Int((end - Int64(mic.count)) % Int64(capacity))
            for s in mic {
                h[position] = s
                position += 1
                if position == capacity { position = 0 }
            }
        }
    }

    func reset() {
        shortMicEnergy = 0
        shortOutEnergy = 0
        establishedERLE = 0
        collapsedBlocks = 0
        blocksSinceJumpSearch = 0
        jumpSearchInterval = 25
        pendingJump = nil
        goodBlocks = 0
        micHistory.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
    }
}
