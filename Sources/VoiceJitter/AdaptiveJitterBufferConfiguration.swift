import VoiceCodec

/// What a jitter buffer plays for. It decides how playout restarts after a gap longer than
/// ``AdaptiveJitterBuffer/Configuration/maximumDTXGapMilliseconds`` (a sender that went quiet for long, or a
/// participant the mixer stopped ticking).
public enum JitterBufferRole: Sendable, Hashable {
    /// A call's receiver: every tick is played, DTX pauses included, so a restart is rare. It is cross-faded from
    /// the decoder's concealment (hiding the jump, at one 2.5 ms concealment) and played at once.
    case call
    /// A participant of a conference mixer, which stops ticking a silent participant's buffer and so restarts it at
    /// every talk spurt. The restart starts clean: the concealment during the gap was never mixed, so there is
    /// nothing to fade from. With `restartsAtTargetDelay`, playout resumes early enough (comfort noise first) that
    /// the new packet plays at the target playout delay: at once, each spurt would start below the target (late
    /// packets, then slowed-down speech) and each talker sit at a different delay in the mix.
    case conference(restartsAtTargetDelay: Bool = true)

    /// Whether a restart cross-fades from the decoder's concealment.
    var mergesAfterRestart: Bool {
        if case .call = self { return true }
        return false
    }

    /// Whether a restart resumes at the target playout delay.
    var restartsAtTargetDelay: Bool {
        if case .conference(let atTarget) = self { return atTarget }
        return false
    }
}

extension AdaptiveJitterBuffer {
    /// Settings of the ``AdaptiveJitterBuffer``: the stream, the role, and the tunables by what they steer. The
    /// defaults are the measured ones; each says where its value comes from.
    public struct Configuration: Sendable, Hashable {
        /// Output (and decoding) sample rate.
        public var sampleRate: Int = 16_000
        /// RTP clock rate of the timestamps (48 kHz for Opus, RFC 7587), a multiple of ``sampleRate``: a G.722
        /// stream (RTP clock 8000 for 16 kHz audio) hands in its timestamps doubled, on a 16 kHz clock.
        public var rtpClockRate: Int = 48_000
        /// The codec of the payloads: what decodes and conceals them.
        public var codec: AudioCodec = .opus
        /// Packets the buffer can hold; when full it is flushed.
        public var packetCapacity: Int = 250
        public var maxPayloadBytes: Int = 1_500
        public var role: JitterBufferRole = .call
        /// DTX gaps longer than this are treated as a stream restart (a jump, as ``role`` says) rather than played
        /// as comfort noise.
        public var maximumDTXGapMilliseconds: Double = 10_000
        /// The relative-arrival-delay quantile the target follows.
        public var estimator = DelayEstimator.Configuration()
        public var target = Target()
        public var stretching = Stretching()
        public var fecLookAhead = FECLookAhead()
        /// A packet that comes while playout conceals in place waiting for it (a late packet) is played from where
        /// the concealment got to — the part the concealment already covered is skipped, as for a loss — when the
        /// wait was shorter than this (ms) and the playout delay before the wait already met its target. Playing
        /// it whole instead would keep the wait as surplus delay, which the buffer then has to time-compress away:
        /// under jitter that is most of its stretching, and what a listener hears of it. A longer wait (a delay
        /// step, an outage) or a delay below target keeps the packet whole: then the wait is delay the buffer
        /// needed anyway. 0: always play the packet whole.
        ///
        /// 100 ms: a queueing spike on a jittery path holds playout for longer than a packet (device 2 of the noisy
        /// speech set, seed 7: 50 ms for a packet 142 ms over the base transit, four more queued behind it), and
        /// at 40 ms that wait stays as delay and takes four splices inside the speech to shed. Noisy speech under
        /// 30 ms jitter, seeds 1-10 (`voice-engine simulate`, Benchmarks/README.md section 7), PESQ-WB over speexdsp
        /// at 100 against 40: the four clips, 0/5/10 % loss, +0.10 against +0.08 over the 120 draws; the whole noisy
        /// set +0.06 / +0.15 / +0.17 against -0.01 / +0.10 / +0.15; the clean 65 s set +0.03 / +0.11 / +0.08 against
        /// +0.01 / +0.08 / +0.08. Waits over 100 ms did not meet the other conditions in those draws.
        public var skipLateHoldMilliseconds: Double = 100

        public init() {}

        /// The playout-delay target and its bounds.
        public struct Target: Sendable, Hashable {
            /// Bounds (ms) of the target buffer level (estimator target + one packet). The minimum is one tick, the
            /// playout granularity: at 20 ms it held a path without jitter at 10 ms packets (a peer's `ptime` 10) to
            /// two packets before playout started, and the surplus tick stayed for the whole call, below the
            /// accelerate threshold (`simulate --ptime 10`: 56.5 ms acoustic lag instead of 46.5). At 20 ms packets
            /// one packet is 20 ms anyway.
            public var minimumMilliseconds: Double = 10
            public var maximumMilliseconds: Double = 1_000
            /// When the buffer level exceeds the target by more than this (ms), old packets are flushed down to the
            /// target instead of being accelerated away one tick at a time.
            public var flushExcessMilliseconds: Double = 400
            /// Playout delay kept above the estimator's quantile (ms). 0: playout stays on the 10 ms tick grid (see
            /// ``AdaptiveJitterBuffer``), so a packet whose relative delay is at most the playout delay is in time,
            /// exactly.
            public var playoutMarginMilliseconds: Double = 0
            /// A target at or above this (ms, four ticks) marks a jittery path: one whose jitter spans several
            /// ticks, where the delay wobbles by itself. The stretch band widens
            /// (``Stretching/jitteryExtraAccelerateMilliseconds``), late waits are skipped
            /// (``Configuration/skipLateHoldMilliseconds``) and the FEC look-ahead shrinks
            /// (``FECLookAhead/jitteryLookAheadMilliseconds``).
            public var jitteryMilliseconds: Double = 40
            /// The target by explicit cost (``PlayoutTargetCost``): delay, late packets, frames whose FEC comes too
            /// late, and the stretch a move costs, each weighted in ms of delay. It replaces the estimator's fixed
            /// quantile and the FEC look-ahead's threshold and size. nil: the quantile and the look-ahead.
            ///
            /// The weights: a percent of late packets is worth 6 ms (`voice-engine simulate --jitter 30`, seeds 1–3,
            /// 65 s of the speech set, no loss, 5 ms band: 6 / 8 ms gave PESQ-WB 4.28 / 4.32 at 170 / 173 ms
            /// one-way, 4 ms 3.99 at 162 ms (one seed); 3 ms with the 10 ms band 4.12 at 164 ms; the fixed 97 %
            /// quantile 4.22 at 169 ms); a percent of frames lost and not recovered from FEC 20 ms (a whole frame
            /// of PLC: without jitter the look-ahead of a packet is on from 1 % recoverable loss; under 30 ms jitter
            /// with 5 % loss 20 ms against 40 gave 4.05 against 4.04 PESQ-WB at 172.6 against 174.3 ms); a move
            /// 2 ms (4 ms measured the same: 4.30 at 171 ms).
            ///
            /// Not the default: on the heavy-tailed `burst5_pareto40` scenario of `JitterBenchmark` the cheapest
            /// point jumps with every spike (87 k stretched samples a minute against 27 k with the quantile), and on
            /// `outage3s` / `loss2_normal20` it lands 0.3 / 6 ms above speexdsp. ``PlayoutTargetCost/recommended``
            /// holds the weights measured under 30 ms jitter.
            public var cost: PlayoutTargetCost.Weights? = nil

            public init() {}
        }

        /// When and how the delay is moved by time-stretching.
        public struct Stretching: Sendable, Hashable {
            /// Hysteresis around the playout-delay target (ms): slow down below `target − slowDownBelow`,
            /// accelerate at or above `target + accelerateAbove`. Each stretch moves playout by one 10 ms tick, so
            /// accelerating needs the delay one tick lower to still cover the target, with some to spare: 1.7 ms,
            /// the middle of the range (1.6–1.9) that keeps the drift scenarios of `JitterBenchmark` within their
            /// bounds (`JitterBenchmarkTests`); less spare accelerates into more late packets, more stays a tick
            /// too high for longer.
            public var slowDownBelowMilliseconds: Double = 0
            public var accelerateAboveMilliseconds: Double = 11.7
            /// Extra room (ms) above `accelerateAbove` on a jittery path (``Target/jitteryMilliseconds``; the
            /// late-wait skip uses the same test): a stretch costs what a listener hears, and what it buys depends
            /// on the path. On a calm path (drift) a surplus tick stays until removed, so one tick of band is right;
            /// under jitter that spans several ticks the delay rises a tick after a late packet or a swing of the
            /// quantile and falls back by itself, and a one-tick band accelerated after every such wobble (10–25 k
            /// samples a minute under 30 ms jitter, PESQ-WB 0.5 below speexdsp). A second tick cut that to about
            /// 1 k for 3–7 ms more mean delay (`voice-engine simulate --jitter 30`, seeds 1–3, extra 0 / 5 / 10 ms:
            /// PESQ-WB 3.95 / 4.16 / 4.22). With the target by ``Target/cost`` (``PlayoutTargetCost/recommended``,
            /// which sits higher than the 97 % quantile on such a path) 5 ms is enough: 4.28 at 170 ms one-way.
            public var jitteryExtraAccelerateMilliseconds: Double = 10
            /// Time-stretching waits for audio this much quieter (power ratio) than the recent speech level: 0.01,
            /// 20 dB below — pauses and soft unvoiced sounds, where a splice is least audible.
            public var quietRatio: Double = 0.01
            /// ... unless the delay is this much (ms) beyond the stretch thresholds: then it stretches anyway.
            public var urgentMilliseconds: Double = 10
            /// The stretcher's splice settings (``TimeStretcher/spliceCorrelationThreshold``,
            /// ``TimeStretcher/overlapRatio``), so that what a splice costs a listener can be measured end to end.
            public var spliceCorrelationThreshold: Double = 0.4
            public var spliceOverlapRatio: Double = 0.5

            public init() {}
        }

        /// The FEC look-ahead: extra delay so that a lost frame's FEC copy, in the next packet, is there in time.
        public struct FECLookAhead: Sendable, Hashable {
            /// Decided by what a listener gains against what it costs: the target is one packet higher while the
            /// frames that only this extra packet of delay would let FEC recover reach this share (%) of all frames.
            /// That share is the recent rate of sequence gaps (each gap leaves one frame whose FEC is in the packet
            /// after it; averaged over about `lossMemoryPackets`) × the share of packets that arrive too late for
            /// FEC at the plain target (from the delay histogram), while the stream carries FEC at all (a packet
            /// with FEC within the last `lossMemoryPackets`: Opus leaves it out of silent frames, so a share of
            /// packets would switch the look-ahead off in every pause and on again, stretching each time). 0.5 % (a
            /// recoverable loss every 4 s): below it the frames saved do not pay for 20 ms more delay on every
            /// frame, nor for the stretching in and out; random loss of 2 % or more under no or little jitter is
            /// above it, a single outage or loss under jitter that already delivers the FEC in time is below.
            /// nil: never look ahead.
            public var minimumRecoverablePercent: Double? = 0.5
            public var lossMemoryPackets: Double = 500
            /// Once on, the look-ahead stays on until the recoverable share falls below this fraction of
            /// `minimumRecoverablePercent` (hysteresis: each switch moves the target by a packet, which the buffer
            /// must stretch in or out).
            public var releaseRatio: Double = 0.5
            /// The look-ahead (ms) on a jittery path (``Target/jitteryMilliseconds``): one tick instead of a packet.
            /// There the packet after a loss arrives anywhere in a spread of several ticks, so a tick of extra delay
            /// already brings most FEC copies in time, and the second tick costs more delay than it saves: under
            /// 30 ms jitter with 5 / 10 % loss, 10 ms instead of 20 gave PESQ-WB 4.05 / 3.75 against 4.05 / 3.78 at
            /// 174 / 173 ms against 180 / 180 ms one-way (`voice-engine simulate`, seeds 1–3).
            public var jitteryLookAheadMilliseconds: Double = 10
            /// Whether the look-ahead is on from the call's first packet (a call's `MediaStream` sets it when the call
            /// negotiated in-band FEC), as NetEq starts from a cautious delay and lowers it once the call shows it
            /// can: switched on at a call's first loss instead, the concealment played while waiting for that
            /// frame's FEC copy becomes a 20 ms delay step inside the utterance around it, which PESQ-WB scores
            /// (a 4 s clip at 5 % loss: 3.57 against the ideal receiver's 4.14). A loss while it holds keeps it
            /// (the loss rule takes over); a call without loss for ``calmReleaseMilliseconds`` releases it, and
            /// the buffer sheds the packet of delay by accelerating in quiet audio only.
            public var holdsFromCallStart = false
            /// How long (ms of playout) a call must run without a sequence gap before the look-ahead held from its
            /// start is released: 5 s, RFC 3550's minimum RTCP interval. By then the receiver's first loss report
            /// (sent 1.25–3.75 s in) has reached the sender, whose start-up FEC goes off on a clean path
            /// (`LossAdaptationPolicy`), so the look-ahead has nothing left to recover; and at the loss rates FEC
            /// pays at (2 % and more) a call loses a packet in its first 250 with 99 % likelihood, so a lossy call
            /// keeps it. A clean call pays one packet of delay for its first 5 s.
            public var calmReleaseMilliseconds: Double = 5_000

            public init() {}
        }
    }
}
