import Foundation
import VoiceCodec
import VoiceCore
import VoiceDSP
import VoiceJitter
import VoiceRTP
import VoiceSRTP

/// One call's audio: the send chain and the receive chain of ARCHITECTURE.md §2, with RTCP beside them.
///
/// Synchronous and tick-driven: nothing here reads the wall clock; every entry point takes the current media time.
/// - send: ``processCapture(_:now:)`` with each 10 ms microphone block at the device rate → resample to the
///   processing rate → echo canceller (its reference is what ``renderPlayout(into:now:)`` actually played) and
///   preprocessor when voice processing is on → every ptime: the negotiated codec (Opus, G.722, G.711) → RTP → SRTP → ``sink``.
/// - receive: ``receiveDatagram(_:arrival:)-(UnsafeRawBufferPointer,_)`` for every datagram from the network → RFC 5761 demux → SRTP/SRTCP
///   unprotect → RTP parse → RFC 3550 statistics → jitter buffer. Anything wrong is counted by reason in
///   ``MediaStreamStatistics/drops`` and dropped; this method never traps on input and never throws.
/// - playout: ``renderPlayout(into:now:)`` once per 10 ms device block → jitter-buffer tick (decode, FEC, PLC,
///   time-stretch) → ``mixer`` (tones) → far-end reference of the echo canceller → resample to the device rate.
/// - RTCP: ``pollRTCP(now:)`` sends SR/RR + SDES CNAME on the RFC 3550 schedule; report blocks about us give RTT
///   and the peer's loss, which drives the encoder's FEC (``LossAdaptationPolicy``).
///
/// Threads: not thread-safe. All calls must be serialised by the caller (one audio thread, or a fast-time loop);
/// a real-time host hands packets from the network thread through an SPSC queue.
///
/// Allocation: every buffer, codec, resampler, canceller and SRTP context is created in `init`. The per-block and
/// per-packet paths (capture, encode, packetize, protect, receive, unprotect, parse, jitter buffer, playout) do
/// not allocate. What still allocates: RTCP (building and parsing compound packets uses arrays of report values,
/// a few times per 5 s), the speexdsp jitter buffer (`malloc` per packet inside speexdsp), the echo
/// canceller's first drift correction (a filter table inside speexdsp, once). SRTP does not: the engine builds
/// libsrtp itself (Sources/CSRTP) because Debian's NSS-based build allocated 14 times per packet. A full-duplex
/// leg with SRTP makes 0 allocations per step (Benchmarks/PipelineBenchmarks).
public final class MediaStream {
    // Mutable state is `@exclusivity(unchecked)`: the stream is confined to one thread (above) and never calls back
    // into itself while mutating a property, so the run-time exclusivity checks only cost time per packet (about
    // 0.3 % of a 50-participant conference tick, most of it in the per-listener send; Benchmarks/README.md
    // section 10). Static exclusivity checking is unchanged.
    public let configuration: MediaStreamConfiguration
    /// Where produced datagrams go.
    @exclusivity(unchecked) public var sink: any MediaPacketSink
    /// Tone/ringtone mixing on the playout path (the audio controller), or nil.
    @exclusivity(unchecked) public var mixer: (any MediaStreamPlayoutMixer)?
    /// Our SSRC.
    public let ssrc: UInt32
    /// The peer's SSRC: from the configuration, or latched from the first packet that passed SRTP and parsing.
    @exclusivity(unchecked) public internal(set) var remoteSSRC: UInt32?
    /// The CNAME sent in SDES.
    public let cname: String

    /// Mute: the send chain encodes silence (DTX when negotiated), RTP timing continues.
    @exclusivity(unchecked) public var isMuted = false
    /// Hold: no media is sent (timestamps keep advancing, the first packet after hold carries the marker); RTCP
    /// continues, and the receive chain keeps running.
    @exclusivity(unchecked) public var isOnHold = false

    // Components.
    /// The Opus encoder, or nil when the stream was negotiated to a telephony codec (``telephonyEncoder``).
    let encoder: OpusEncoder?
    let telephonyEncoder: TelephonyEncoder?
    /// What received RTP timestamps are multiplied by for the jitter buffer: 2 for G.722, whose 16 kHz audio is
    /// stamped on an 8 kHz clock (the buffer needs a clock that is a multiple of the audio rate), else 1.
    let jitterTimestampScale: UInt32
    let jitterBuffer: any JitterBufferStrategy
    let captureResampler: Resampler?
    let playoutResampler: Resampler?
    let echoCanceller: EchoCanceller?
    /// Handling-noise suppression after the canceller (nil when voice processing or it is off).
    @exclusivity(unchecked) var transientSuppressor: TransientSuppressor?
    @exclusivity(unchecked) var packetizer: RTPPacketizer
    /// Replaced by `rekey(_:)`; until the peer's first packet under its new key passes, its old key is
    /// `retiringSRTPIn` and `rekeyBuffer`'s scratch keeps a copy of each packet for a second try with it.
    var srtpOut: SRTPSession? {
        didSet { unretainedSRTPOut = srtpOut.map { Unmanaged.passUnretained($0) } }
    }
    /// `srtpOut` for the per-packet send without a retain/release pair: a conference room sends every listener's
    /// packet through here every tick, and `perf` on `voice-bench conference --profile-room` showed the retains in
    /// `sendPayload` as the largest runtime cost of that loop. Valid while `srtpOut` holds the same session (kept in
    /// step by its `didSet`, and set in `init`).
    @exclusivity(unchecked) var unretainedSRTPOut: Unmanaged<SRTPSession>?
    @exclusivity(unchecked) var srtpIn: SRTPSession?
    /// SRTCP's own sessions when the RTCP component was keyed apart (``MediaStreamSRTP/rtcp``); nil: RTCP uses
    /// `srtpOut`/`srtpIn`.
    let srtcpOut: SRTPSession?
    let srtcpIn: SRTPSession?
    @exclusivity(unchecked) var retiringSRTPIn: SRTPSession?
    /// Our next outbound key and when it takes over at the latest (`rekey(_:now:)`).
    @exclusivity(unchecked) var pendingSRTPOut: (session: SRTPSession, deadline: Int64)?
    /// The last re-key (its scratch buffer) while its old inbound key is still accepted.
    @exclusivity(unchecked) var rekeyBuffer: MediaStreamRekey?
    @exclusivity(unchecked) var receiveStatistics: ReceiveStatistics
    @exclusivity(unchecked) var scheduler: RTCPScheduler
    @exclusivity(unchecked) var random: SeededGenerator
    let ntpBase: NTPTimeBase

    // Sizes.
    let processingBlock: Int
    let deviceBlock: Int
    let frameSamples: Int
    let frameTicks: UInt32

    // Preallocated storage (freed in deinit).
    let captureScratch: UnsafeMutableBufferPointer<Int16>
    let captureRing: SampleRing
    let micBlock: UnsafeMutableBufferPointer<Int16>
    let processedBlock: UnsafeMutableBufferPointer<Int16>
    let frameBuffer: UnsafeMutableBufferPointer<Int16>
    @exclusivity(unchecked) var frameFill = 0
    let opusBuffer: UnsafeMutableBufferPointer<UInt8>
    let sendBuffer: UnsafeMutableBufferPointer<UInt8>
    let receiveBuffer: UnsafeMutableBufferPointer<UInt8>
    let rtcpBuffer: UnsafeMutableBufferPointer<UInt8>
    let playBlock: UnsafeMutableBufferPointer<Int16>
    let playScratch: UnsafeMutableBufferPointer<Int16>
    let playRing: SampleRing

    // State.
    @exclusivity(unchecked) var stats = MediaStreamStatistics()
    @exclusivity(unchecked) var sentSinceLastReport = false
    @exclusivity(unchecked) var remoteSentSinceLastReport = false
    /// RTP timestamp of the sample captured at `anchorTime` (end of the last frame), for SR timestamps.
    @exclusivity(unchecked) var anchorTimestamp: UInt32 = 0
    @exclusivity(unchecked) var anchorTime = MediaTime.zero
    @exclusivity(unchecked) var haveRemoteLoss = false
    @exclusivity(unchecked) var erleMic = 0.0
    @exclusivity(unchecked) var erleOut = 0.0
    /// RFC 4733 events to send and received (``sendDTMF(_:)``, ``takeReceivedDTMF()``).
    @exclusivity(unchecked) var dtmf: MediaStreamDTMF
    /// The receiver of keys sent as tones in the audio, when ``MediaStreamConfiguration/detectsInBandDTMF``.
    let inBandDTMF: MediaStreamInBandDTMF?

    /// Creates the stream and everything it will need during the call.
    /// - Parameters:
    ///   - configuration: validated first.
    ///   - sink: where datagrams go (can be replaced later through ``sink``).
    ///   - now: the media time the stream starts at (RTCP scheduling starts here).
    /// - Throws: ``MediaStreamError`` for a bad configuration or a component that failed to start.
    public init(
        configuration: MediaStreamConfiguration, sink: any MediaPacketSink = NullPacketSink(),
        now: MediaTime = .zero
    )
        throws(MediaStreamError)
    {
        try configuration.validate()
        self.configuration = configuration
        self.sink = sink
        let rate = configuration.processingRate
        let deviceRate = configuration.deviceFormat.sampleRate
        var random = SeededGenerator(seed: configuration.seed ?? UInt64.random(in: .min ... .max))
        let opus = configuration.startingOpus

        func component<T>(_ name: String, _ make: () throws -> T) throws(MediaStreamError) -> T {
            do { return try make() } catch { throw .componentFailed(component: name, reason: "\(error)") }
        }
        let codec = configuration.codec
        switch codec {
        case .opus:
            encoder = try component("Opus encoder") { try OpusEncoder(configuration: opus) }
            telephonyEncoder = nil
        case .telephony(let telephony):
            encoder = nil
            telephonyEncoder = TelephonyEncoder(codec: telephony)
        }
        receiveStatistics = ReceiveStatistics(clockRate: codec.rtpClockRate)
        let jitterClockRate = max(codec.rtpClockRate, rate)
        jitterTimestampScale = UInt32(jitterClockRate / codec.rtpClockRate)
        switch configuration.jitterBuffer {
        case .adaptive(var c):
            c.sampleRate = rate
            c.rtpClockRate = jitterClockRate
            c.codec = codec
            // In-band FEC negotiated: the peer's packets carry it from the start, so the look-ahead holds from the
            // first packet until the call shows itself calm (``AdaptiveJitterBuffer/Configuration/FECLookAhead``).
            if case .opus = codec, configuration.opus.inbandFEC { c.fecLookAhead.holdsFromCallStart = true }
            c.maxPayloadBytes = max(c.maxPayloadBytes, configuration.maximumDatagramBytes)
            jitterBuffer = try component("jitter buffer") { try AdaptiveJitterBuffer(configuration: c) }
        case .speexdsp:
            jitterBuffer = try component("jitter buffer") {
                try SpeexJitterBuffer(
                    sampleRate: rate, rtpClockRate: jitterClockRate,
                    frameMilliseconds: opus.frameDuration.milliseconds, codec: codec)
            }
        }
        captureResampler =
            deviceRate == rate
            ? nil
            : try component("capture resampler") {
                try Resampler(inputRate: deviceRate, outputRate: rate)
            }
        playoutResampler =
            deviceRate == rate
            ? nil
            : try component("playout resampler") {
                try Resampler(inputRate: rate, outputRate: deviceRate)
            }
        if configuration.voiceProcessing {
            var e = configuration.echoCanceller
            e.sampleRate = rate
            e.preprocessor.sampleRate = rate
            echoCanceller = try component("echo canceller") { try EchoCanceller(configuration: e) }
            transientSuppressor = try component("transient suppressor") {
                try TransientSuppressor.forCapture(configuration.transientSuppression, sampleRate: rate)
            }
        } else {
            echoCanceller = nil
            transientSuppressor = nil
        }
        if let s = configuration.srtp {
            srtpOut = try component("SRTP (outbound)") {
                try SRTPSession(suite: s.suite, key: s.localKey, direction: .outbound)
            }
            srtpIn = try component("SRTP (inbound)") {
                try SRTPSession(suite: s.suite, key: s.remoteKey, direction: .inbound)
            }
        } else {
            srtpOut = nil
            srtpIn = nil
        }
        if let keys = configuration.srtp?.rtcp {
            srtcpOut = try component("SRTCP (outbound)") {
                try SRTPSession(suite: keys.suite, key: keys.localKey, direction: .outbound)
            }
            srtcpIn = try component("SRTCP (inbound)") {
                try SRTPSession(suite: keys.suite, key: keys.remoteKey, direction: .inbound)
            }
        } else {
            srtcpOut = nil
            srtcpIn = nil
        }
        unretainedSRTPOut = srtpOut.map { Unmanaged.passUnretained($0) }

        ssrc = configuration.ssrc ?? UInt32.random(in: 1 ... .max, using: &random)
        remoteSSRC = configuration.remoteSSRC
        packetizer = RTPPacketizer(
            payloadType: configuration.payloadType, ssrc: ssrc,
            initialSequenceNumber: UInt16.random(in: .min ... .max, using: &random),
            initialTimestamp: UInt32.random(in: .min ... .max, using: &random))
        anchorTimestamp = packetizer.nextTimestamp
        anchorTime = now
        var cname =
            configuration.rtcp.cname ?? "voice-engine-"
            + String(UInt32.random(in: .min ... .max, using: &random), radix: 16)
        cname.makeContiguousUTF8()  // RTCP reports read it in place (no copy on the audio thread)
        self.cname = cname
        let packetsPerSecond = 1000.0 / Double(opus.frameDuration.milliseconds)
        let bandwidth =
            configuration.rtcp.sessionBandwidth ?? Double(encoder == nil ? 64_000 : opus.bitrate) + 40 * 8
            * packetsPerSecond
        scheduler = RTCPScheduler(
            sessionBandwidth: bandwidth, firstPacketSize: 60 + cname.utf8.count, now: now,
            useReducedMinimum: configuration.rtcp.useReducedMinimum, using: &random)
        scheduler.members = 2
        self.random = random
        ntpBase = NTPTimeBase(mediaTime: .zero, ntp: configuration.ntpAtZero)

        processingBlock = rate / 100
        deviceBlock = deviceRate / 100
        frameSamples = opus.samplesPerChannelPerFrame
        frameTicks = UInt32(frameSamples * codec.rtpClockRate / rate)
        dtmf = MediaStreamDTMF(
            ticksPerPacket: frameTicks, packetMilliseconds: configuration.packetTimeMilliseconds,
            audioClockRate: codec.rtpClockRate, eventClockRate: configuration.telephoneEventClockRate)
        inBandDTMF =
            configuration.detectsInBandDTMF
            ? try component("in-band DTMF receiver") {
                try MediaStreamInBandDTMF(processingRate: rate, block: rate / 100)
            } : nil
        func samples(_ n: Int) -> UnsafeMutableBufferPointer<Int16> {
            let b = UnsafeMutableBufferPointer<Int16>.allocate(capacity: n)
            b.initialize(repeating: 0)
            return b
        }
        func bytes(_ n: Int) -> UnsafeMutableBufferPointer<UInt8> {
            let b = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: n)
            b.initialize(repeating: 0)
            return b
        }
        captureScratch = samples(
            captureResampler?.maximumOutputCount(forInput: deviceBlock) ?? deviceBlock)
        captureRing = SampleRing(capacity: 4 * processingBlock + 64)
        micBlock = samples(processingBlock)
        processedBlock = samples(processingBlock)
        frameBuffer = samples(frameSamples)
        opusBuffer = bytes(min(OpusEncoder.maxPacketBytes, configuration.maximumDatagramBytes))
        let packetCapacity = configuration.maximumDatagramBytes + 64
        sendBuffer = bytes(packetCapacity)
        receiveBuffer = bytes(packetCapacity)
        rtcpBuffer = bytes(packetCapacity)
        playBlock = samples(processingBlock)
        playScratch = samples(
            playoutResampler?.maximumOutputCount(forInput: processingBlock) ?? processingBlock)
        playRing = SampleRing(capacity: 4 * deviceBlock + 64)
        stats.encoderFECEnabled = encoder != nil && opus.inbandFEC
        stats.encoderExpectedLossPercent = encoder == nil ? 0 : opus.expectedLossPercent
    }

    deinit {
        for b in [captureScratch, micBlock, processedBlock, frameBuffer, playBlock, playScratch] {
            b.deallocate()
        }
        for b in [opusBuffer, sendBuffer, receiveBuffer, rtcpBuffer] { b.deallocate() }
    }

    /// The stream's figures now.
    public var statistics: MediaStreamStatistics {
        var s = stats
        s.jitterBuffer = jitterBuffer.statistics
        let r = receiveStatistics
        s.expectedPackets = Int(r.expected)
        s.receivedPackets = r.isValid ? Int(r.received) : 0
        s.lostPackets = s.expectedPackets - s.receivedPackets
        s.duplicatePackets = Int(r.duplicates)
        s.jitterMilliseconds = r.jitter * 1000 / Double(r.clockRate)
        s.muted = isMuted
        s.onHold = isOnHold
        if erleOut > 0 && erleMic > 0 { s.erleDecibels = 10 * log10Safe(erleMic / erleOut) }
        return s
    }

    /// RTP packets accepted so far (authenticated, parsed, in sequence): ``statistics`` without the copy, for a
    /// loop that polls many streams every tick (the conference mixer's "did this participant send?").
    public var acceptedPacketCount: Int { stats.packetsReceived }

    /// The Opus encoder's current settings (FEC and expected loss change with the peer's reports); for a
    /// telephony codec the configured Opus settings, unused.
    public var encoderConfiguration: OpusEncoderConfiguration {
        encoder?.configuration ?? configuration.startingOpus
    }

    /// The echo canceller's view of the echo path, when voice processing is on.
    public var echoCancellerStatistics: EchoCancellerStatistics? { echoCanceller?.statistics }

    /// Encoder lookahead in milliseconds (part of the mouth-to-ear delay).
    public var codecLookaheadMilliseconds: Double {
        guard let samples = try? encoder?.lookaheadSamples else { return 0 }
        return Double(samples) * 1000 / Double(configuration.processingRate)
    }

    /// The NTP time of media time `time` (SR timestamps, RTT).
    func ntp(at time: MediaTime) -> NTPTimestamp { ntpBase.ntp(at: time) }
}

func log10Safe(_ x: Double) -> Double { x > 0 ? log10(x) : -200 }
