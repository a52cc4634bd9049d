import VoiceCore
import VoiceDevices
import VoiceSession

/// Something that happened to a ``LiveCall``, published on ``LiveCall/events`` in order.
public enum LiveCallEvent: Sendable, Hashable, CustomStringConvertible {
    /// The media thread runs; the transport is bound at `local`.
    case started(local: UDPEndpoint)
    /// Media is now sent to `remote`: the source of the peer's first packet that passed SRTP authentication
    /// (symmetric RTP), or a new source after the peer moved.
    case remoteLatched(UDPEndpoint)
    /// Authenticated media flows both ways: we sent RTP to the peer and received RTP from it that passed SRTP
    /// (or plain RTP parsing with `--no-srtp`).
    case established
    /// A device stopped delivering audio; the call's audio is paused.
    case interruptionBegan(InterruptionReason)
    /// The devices deliver again; buffered stale audio was dropped and the call's audio resumed.
    case interruptionEnded
    /// A file-backed microphone reached the end of its file and now delivers silence.
    case microphoneEnded
    /// The peer pressed a key: an RFC 4733 telephone-event, reported once at its start.
    case dtmfReceived(DTMFDigit)
    /// The call ended; ``LiveCall/stop(cause:)`` returns the report.
    case ended(CallEndCause)

    public var description: String {
        switch self {
        case .started(let local): "started on \(local)"
        case .remoteLatched(let remote): "sending to \(remote)"
        case .established: "established"
        case .interruptionBegan(let reason): "interrupted (\(reason))"
        case .interruptionEnded: "interruption ended"
        case .microphoneEnded: "microphone input ended"
        case .dtmfReceived(let digit): "DTMF \(digit) received"
        case .ended(let cause): "ended (\(cause))"
        }
    }
}

/// Tuning of a ``LiveCall``'s media thread. The defaults suit 10 ms device periods.
public struct LiveCallOptions: Sendable, Hashable {
    /// Blocks the capture ring must hold before the media thread starts reading it, so the phase between the
    /// device's period clock and the media tick does not turn into underruns. 2 (20 ms) by default.
    public var captureCushionBlocks: Int
    /// When the capture ring holds this many blocks or more (the device clock runs faster than the media tick,
    /// or the thread stalled), a tick processes one extra block to catch up.
    public var captureHighWaterBlocks: Int
    /// Blocks of silence queued for the speaker before the first tick, against the same phase jitter.
    public var playoutPrimeBlocks: Int
    /// The media thread does not queue more than this many blocks for the speaker; a block that would exceed
    /// it is dropped and counted (the speaker clock runs slower than the media tick).
    public var playoutHighWaterBlocks: Int
    /// End the call with `CallEndCause.timeout` (VoiceSession) when no RTP was received for this long
    /// after it was established; nil never does.
    public var mediaTimeoutSeconds: Double?
    /// Ticks may fall this far behind their deadline before the schedule is reset (the missed ticks are
    /// counted as late, not run).
    public var maximumLagTicks: Int
    /// SCHED_FIFO priority the media thread asks for (as ALSA devices do), so a busy machine delays its ticks
    /// by microseconds instead of a scheduler slice; nil keeps normal scheduling. Refusal (no CAP_SYS_NICE or
    /// RLIMIT_RTPRIO) is not an error: the thread runs normally and ``LiveCallStatistics/realtime`` says so.
    public var realtimePriority: Int32?
    /// Tick this call on one of the process's shared media threads (`LiveCallTicker`, at most one per core,
    /// started as the calls' measured cost needs them) with the other calls that ask for it: one wake-up per
    /// 10 ms per thread for all of them. The default; for one call it is the same one thread a call of its own
    /// would have. `false` gives the call a thread of its own, which isolates it from other calls' stalls. Each
    /// shared thread uses the ``maximumLagTicks`` and ``realtimePriority`` of the call that started it.
    public var sharedMediaThread: Bool

    public init(
        captureCushionBlocks: Int = 2, captureHighWaterBlocks: Int = 8, playoutPrimeBlocks: Int = 2,
        playoutHighWaterBlocks: Int = 8, mediaTimeoutSeconds: Double? = nil,
        maximumLagTicks: Int = 5, realtimePriority: Int32? = 10, sharedMediaThread: Bool = true
    ) {
        self.sharedMediaThread = sharedMediaThread
        self.realtimePriority = realtimePriority
        self.captureCushionBlocks = captureCushionBlocks
        self.captureHighWaterBlocks = captureHighWaterBlocks
        self.playoutPrimeBlocks = playoutPrimeBlocks
        self.playoutHighWaterBlocks = playoutHighWaterBlocks
        self.mediaTimeoutSeconds = mediaTimeoutSeconds
        self.maximumLagTicks = maximumLagTicks
    }
}

/// Counters of a ``LiveCall``'s media thread and its packet sink; a snapshot, readable from any thread.
public struct LiveCallStatistics: Sendable, Hashable, Codable {
    /// 10 ms ticks run.
    public var ticks = 0
    /// Ticks skipped because the thread fell more than ``LiveCallOptions/maximumLagTicks`` behind.
    public var lateTicks = 0
    /// Ticks that began 10 ms or more after their deadline (run, but a whole tick late: the thread was behind —
    /// on a shared media thread, the calls ticked before this one used up the tick). What tells a media thread
    /// that misses its deadlines from a peer or network that delays packets.
    public var delayedTicks = 0
    /// Capture blocks handed to the stream (including silence while the microphone is closed).
    public var captureBlocks = 0
    /// Blocks padded with silence because the capture ring held less than 10 ms.
    public var captureUnderruns = 0
    /// Extra blocks processed to drain a capture ring above its high-water mark.
    public var captureCatchUps = 0
    /// Captured samples dropped unsent after skipped ticks (a stall past ``LiveCallOptions/maximumLagTicks``):
    /// what the microphone captured while no tick ran, beyond the cushion, whose deadline had passed.
    public var captureDiscardedSamples = 0
    /// Samples left in the capture ring after the latest tick's read: the microphone's share of the send
    /// latency (about ``LiveCallOptions/captureCushionBlocks`` − 1 blocks in steady state).
    public var captureBacklogSamples = 0
    /// Playout blocks written to the speaker's ring.
    public var playoutBlocks = 0
    /// Playout blocks dropped because the speaker's ring was at its high-water mark.
    public var playoutOverflows = 0
    /// Datagrams the stream produced that the transport sent.
    public var datagramsSent = 0
    /// Datagrams not sent: no remote known yet (the listener before the peer's first packet).
    public var datagramsNoRemote = 0
    /// Datagrams not sent: socket buffer full, transport closed or `sendto` failed.
    public var datagramsFailed = 0
    /// Datagrams taken from the transport's queues (RTP and RTCP) and handed to the stream.
    public var datagramsReceived = 0
    /// Datagrams discarded without the stream seeing them (while interrupted, or stale after one).
    public var datagramsDiscarded = 0
    /// Whether the media thread got the real-time scheduling it asked for (``LiveCallOptions/realtimePriority``).
    public var realtime = false
    /// Whether the ticks ran on the microphone's own thread at each of its periods (an ALSA microphone,
    /// ``VoiceDevices/PeriodDrivingDevice``) rather than on a media thread with its own 10 ms clock.
    public var drivenByDevice = false

    public init() {}
}

/// What a ``LiveCall`` has received so far (cumulative), as its media thread saw it at its latest tick: the input
/// of mid-call quality figures and of a media timeout that counts RTP and RTCP alike.
public struct LiveCallReception: Sendable, Hashable {
    /// RTP packets that passed SRTP and validation.
    public var rtpPacketsAccepted = 0
    /// RTCP packets that passed SRTCP and parsing.
    public var rtcpPacketsAccepted = 0
    /// Datagrams that arrived but were dropped unseen (while an interruption paused the call, or stale after it).
    public var datagramsDiscarded = 0
    /// RFC 3550 A.3 expected and lost packets of the peer's stream.
    public var expectedPackets = 0
    public var lostPackets = 0
    /// RFC 3550 interarrival jitter of the peer's stream.
    public var jitterMilliseconds = 0.0
    /// The latest round-trip time from RTCP (nil before the peer answered a sender report).
    public var roundTripMilliseconds: Double?
    /// Samples played since playout started, and of those the ones loss concealment synthesised.
    public var playedSamples = 0
    public var concealedSamples = 0

    public init(
        rtpPacketsAccepted: Int = 0, rtcpPacketsAccepted: Int = 0, datagramsDiscarded: Int = 0,
        expectedPackets: Int = 0, lostPackets: Int = 0, jitterMilliseconds: Double = 0,
        roundTripMilliseconds: Double? = nil, playedSamples: Int = 0, concealedSamples: Int = 0
    ) {
        self.rtpPacketsAccepted = rtpPacketsAccepted
        self.rtcpPacketsAccepted = rtcpPacketsAccepted
        self.datagramsDiscarded = datagramsDiscarded
        self.expectedPackets = expectedPackets
        self.lostPackets = lostPackets
        self.jitterMilliseconds = jitterMilliseconds
        self.roundTripMilliseconds = roundTripMilliseconds
        self.playedSamples = playedSamples
        self.concealedSamples = concealedSamples
    }

    /// Everything that arrived from the peer: RTP and RTCP, also what an interruption made the call drop.
    public var datagramsArrived: Int { rtpPacketsAccepted + rtcpPacketsAccepted + datagramsDiscarded }
}

/// What a finished ``LiveCall`` leaves behind.
public struct LiveCallResult: Sendable {
    /// Why it ended.
    public var cause: CallEndCause
    /// The end-of-call report of the stream (with the audio session's part when a session was attached).
    public var report: CallReport
    /// The media thread's counters.
    public var statistics: LiveCallStatistics
    /// The UDP transport's counters.
    public var transport: UDPTransportCounters
    /// The capture and playout devices' counters.
    public var capture: DeviceStatistics
    public var playout: DeviceStatistics
    /// Whether media flowed both ways at some point.
    public var wasEstablished: Bool
    /// A speaker file that could not be written completely, if any.
    public var playoutWriteError: String?
}

/// Why a ``LiveCall`` could not be created or started.
public enum LiveCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The devices and the stream configuration do not fit together (format, channels).
    case deviceMismatch(String)
    /// The media stream could not be created.
    case stream(MediaStreamError)
    /// A device could not be opened (its error, described).
    case deviceOpenFailed(device: String, reason: String)
    /// A device failed to start (its error, described).
    case deviceStartFailed(device: String, reason: String)
    /// The media thread could not be started, or the call was already started or ended.
    case invalidState(String)

    public var description: String {
        switch self {
        case .deviceMismatch(let reason): "devices do not fit the call: \(reason)"
        case .stream(let error): "\(error)"
        case .deviceOpenFailed(let device, let reason): "cannot open device \(device): \(reason)"
        case .deviceStartFailed(let device, let reason): "device \(device) failed to start: \(reason)"
        case .invalidState(let reason): "live call: \(reason)"
        }
    }
}
