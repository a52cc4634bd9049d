/// Whether a capture opened muted: under -80 dBFS for 150 ms while the far end played above -60 dBFS, before any
/// frame rose above it. A live microphone holds at least its own noise by then; a shorter silence is the echo path's
/// delay (the AEC vectors' microphone is their echo alone, up to 120 ms late, and their background is zero).
///
/// The ``ResidualEchoSuppressor``'s background trackers restart from the first frame heard after such an opening: a
/// minimum started in the silence (or in a fade from it) stays there, and the comfort noise played at it leaves the
/// output muted under the echo (a real device whose first 225 ms were under one LSB: its floor under far talk 57 dB
/// under the microphone's). Scalars only; one per suppressor.
struct MutedCaptureOpening {
    /// Mean square (16-bit units²) under which a frame is silence: -80 dBFS.
    static let silentMeanSquare: Float = 10.7
    private let mutedFrames: Int
    private var silentFrames = 0
    private var opened = false

    init(hop: Int, sampleRate: Int) {
        mutedFrames = (150 * sampleRate / 1000 + hop - 1) / hop
    }

    /// Feeds one frame's mean square; true for the first frame above silence after a muted opening.
    mutating func reopens(meanSquare: Float, farActive: Bool) -> Bool {
        if meanSquare < Self.silentMeanSquare {
            if farActive && !opened { silentFrames += 1 }
            return false
        }
        defer { opened = true }
        return !opened && silentFrames >= mutedFrames
    }

    mutating func reset() {
        silentFrames = 0
        opened = false
    }
}
