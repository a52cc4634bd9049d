#if canImport(Glibc)
import Glibc
#endif

/// What a negative ALSA return code from the audio loop means and what the loop does about it. Pure, so the
/// mapping of faults to recovery and interruption events is tested directly (the null PCM never produces
/// xruns, suspends or device loss).
enum ALSAFault: Hashable, Sendable {
    /// `-EAGAIN`: nothing to transfer yet (non-blocking mode); wait on the poll descriptors.
    case wouldBlock
    /// `-EINTR`: a signal interrupted the call; retry.
    case interrupted
    /// `-EPIPE`: overrun (capture) or underrun (playout); `snd_pcm_prepare`, count, carry on.
    case xrun
    /// `-ESTRPIPE`: the system suspended the device; `snd_pcm_resume` until it stops saying `-EAGAIN`,
    /// `snd_pcm_prepare` if the device cannot resume; an interruption from the first error to the recovery.
    case suspended
    /// `-ENODEV`, `-ENXIO`, `-EBADFD`, `-ENOTTY`, `-EIO`, `-ESHUTDOWN`: the device is gone; the thread exits.
    case deviceLost
    /// `-EBUSY`: someone else holds the device.
    case deviceBusy
    /// Anything else: try `snd_pcm_prepare`; treated as lost after repeated failures.
    case other(code: Int)

    init(code: Int) {
        switch -code {
        case Int(EAGAIN): self = .wouldBlock
        case Int(EINTR): self = .interrupted
        case Int(EPIPE): self = .xrun
        case Int(ESTRPIPE): self = .suspended
        case Int(ENODEV), Int(ENXIO), Int(EBADFD), Int(ENOTTY), Int(EIO), Int(ESHUTDOWN): self = .deviceLost
        case Int(EBUSY): self = .deviceBusy
        default: self = .other(code: code)
        }
    }

    /// The interruption the audio session sees, if this fault is one.
    var interruptionReason: InterruptionReason? {
        switch self {
        case .suspended: .suspended
        case .deviceLost: .deviceLost
        case .deviceBusy: .deviceBusy
        case .wouldBlock, .interrupted, .xrun, .other: nil
        }
    }

    /// Whether the audio thread must exit (the device cannot be used again without reopening it).
    var isTerminal: Bool {
        switch self {
        case .deviceLost, .deviceBusy: true
        default: false
        }
    }
}
