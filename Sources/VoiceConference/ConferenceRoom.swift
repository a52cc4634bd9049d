#if canImport(Glibc)
import Glibc
#endif
import VoiceCodec
import VoiceCore
import VoiceEngine
import VoiceJitter
import Synchronization

/// How a room mixes.
public struct ConferenceRoomConfiguration: Sendable, Hashable {
    /// The room's mixing rate: every Opus participant's stream runs at it (Opus is negotiated per participant but
    /// decoded and encoded here); a G.711 or G.722 participant's stream runs at its codec's rate and resamples to
    /// and from this one. 16 kHz by default.
    public var sampleRate: Int
    /// How many of the loudest active talkers are mixed (N). 3 by default, as Janus AudioBridge and FreeSWITCH
    /// effectively do: more simultaneous voices are unintelligible anyway and each costs an encode.
    public var maximumTalkers: Int
    /// A participant counts as talking when its (peak-following) level is above this (dBFS).
    public var speechThresholdDBFS: Double
    /// Per-tick decay of the peak-following level (0.85 per 20 ms: about −7 dB per 100 ms, a short hangover so
    /// talkers are not dropped between words).
    public var levelDecayPerTick: Double
    /// A talker already mixed ranks as if this many dB louder (hysteresis: the N-th place does not flap).
    public var talkerHysteresisDecibels: Double
    /// A participant quiet for this long, with nothing left in its jitter buffer, becomes dormant: its receive
    /// chain runs only for a few ticks after each packet it sends (a DTX comfort-noise update every 400 ms, or
    /// the start of speech, which wakes it), so DTX costs nearly nothing. Its jitter buffer then resumes on the
    /// new packet (the gap is treated as a DTX pause, see ``dormantJitterGapMilliseconds``).
    public var dormantAfterMilliseconds: Int
    /// The adaptive jitter buffer's `maximumDTXGapMilliseconds` for participants: a gap longer than this (a
    /// dormant participant talking again) jumps playout to the new packet instead of playing the gap out.
    public var dormantJitterGapMilliseconds: Double
    /// Limiter ceiling of every output.
    public var limiterThreshold: Int16
    /// Participants the room is built for (storage reserved up front; more are accepted, with a reallocation).
    public var expectedParticipants: Int
    /// Each participant's stream sends RTCP (SR/RR + SDES on the RFC 3550 schedule; loss and RTT for the report).
    /// On by default; the reports are written in place (no allocation), so the allocation benchmark keeps it on.
    public var sendsRTCP = true
    /// A participant waking from dormancy (a new talk spurt) resumes at its jitter buffer's target playout delay
    /// (`JitterBufferRole.conference(restartsAtTargetDelay:)`). On by default; off plays the spurt's first
    /// packet at once, so each spurt starts at whatever delay that packet had (late packets and stretched speech
    /// under jitter, and talkers drifting against each other in the mix).
    public var restartsTalkSpurtsAtTargetDelay = true

    public init(
        sampleRate: Int = 16_000, maximumTalkers: Int = 3, speechThresholdDBFS: Double = -45,
        levelDecayPerTick: Double = 0.85, talkerHysteresisDecibels: Double = 3, dormantAfterMilliseconds: Int = 200,
        dormantJitterGapMilliseconds: Double = 100, limiterThreshold: Int16 = 30_934, expectedParticipants: Int = 64
    ) {
        self.sampleRate = sampleRate
        self.maximumTalkers = maximumTalkers
        self.speechThresholdDBFS = speechThresholdDBFS
        self.levelDecayPerTick = levelDecayPerTick
        self.talkerHysteresisDecibels = talkerHysteresisDecibels
        self.dormantAfterMilliseconds = dormantAfterMilliseconds
        self.dormantJitterGapMilliseconds = dormantJitterGapMilliseconds
        self.limiterThreshold = limiterThreshold
        self.expectedParticipants = expectedParticipants
    }
}

/// Why a room or participant could not be set up (never thrown from the tick).
public enum ConferenceError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidConfiguration(String)
    case participantRejected(String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let r): "invalid conference room configuration: \(r)"
        case .participantRejected(let r): "participant rejected: \(r)"
        }
    }
}

/// A tone or clip played into the room (join/leave tones, announcements): mono 16-bit PCM at the room's rate,
/// allocated by the caller once and mixed into every participant's output from the next tick.
public final class ConferenceClip: Sendable {
    public let samples: [Int16]
    public init(samples: [Int16]) { self.samples = samples }

    /// A sine tone with 10 ms raised-cosine ramps (join: rising pair, leave: falling pair, in the server).
    public static func tone(
        frequency: Double, milliseconds: Int, sampleRate: Int = 16_000, amplitude: Double = 0.25
    ) -> ConferenceClip {
        let n = milliseconds * sampleRate / 1000
        let ramp = max(1, sampleRate / 100)
        var s = [Int16](repeating: 0, count: n)
        for i in 0..<n {
            var a = amplitude
            if i < ramp { a *= 0.5 - 0.5 * cos(Double.pi * Double(i) / Double(ramp)) }
            if n - 1 - i < ramp { a *= 0.5 - 0.5 * cos(Double.pi * Double(n - 1 - i) / Double(ramp)) }
            s[i] = Int16((a * 32_767 * sin(2 * Double.pi * frequency * Double(i) / Double(sampleRate))).rounded())
        }
        return ConferenceClip(samples: s)
    }
}

/// A conference room: the mixing bridge for its participants, ticked every 20 ms.
///
/// Each tick (``tick(now:)``):
/// 1. receive — datagrams from each participant's ``UDPMediaTransport`` (if it has one) into its stream
///    (SRTP, statistics, jitter buffer);
/// 2. decode — each participant's jitter buffer plays 20 ms (decode, FEC, PLC), except *dormant* ones (quiet for
///    ``ConferenceRoomConfiguration/dormantAfterMilliseconds`` with an empty jitter buffer: a DTX sender), whose
///    chain is skipped until a packet arrives;
/// 3. select — the N loudest unmuted participants above the speech threshold are the talkers;
/// 4. mix — talkers (and a playing clip) are summed into a 32-bit accumulator;
/// 5. send — each talker gets the sum minus its own voice, limited, encoded by its own stream's encoder; every
///    other participant gets the full sum, limited and encoded once per Opus configuration
///    (``MediaStream/sendEncodedFrame(_:dtx:now:)``: per listener only the RTP header and SRTP), or by its own
///    stream when it speaks G.711 or G.722 (resampled to the codec's rate by the stream);
/// 6. RTCP for each stream (``ConferenceRoomConfiguration/sendsRTCP``).
///
/// Cost per tick: decodes = participants that sent a packet recently (the talkers, plus anyone sending
/// non-DTX silence); encodes = talkers + one per Opus configuration that has listeners + each G.711/G.722
/// listener (a cheap encode and a resample); per listener one
/// SRTP protect. Dormant participants cost a counter check.
///
/// Threads: not thread-safe. Every call — adding, removing, receiving, muting, playing, ticking, reading
/// statistics — happens on the one thread that ticks the room (``ConferenceMediaThreads`` runs control-plane
/// requests there through ``ConferenceMediaThreads/perform(on:_:)``). The tick never allocates, locks or logs,
/// RTCP reports included.
public final class ConferenceRoom {
    // Mutable state is `@exclusivity(unchecked)` (so are ConferenceParticipant's and MediaStream's): the room is
    // confined to the thread that ticks it and nothing calls back into it mid-access, so run-time exclusivity
    // checks only cost time in the per-participant loops. Static checking is unchanged.
    public let id: String
    public let configuration: ConferenceRoomConfiguration
    /// The room's participants, in joining order.
    @exclusivity(unchecked) public private(set) var participants: [ConferenceParticipant] = []
    /// `participants` again, unretained, for the loops over every participant each tick (``forEachParticipant(_:)``):
    /// iterating the array retained and released each participant and its stream, about 0.5 % of a 50-participant
    /// tick in `perf` (Benchmarks/README.md section 10). Kept in step by add/remove; `participants` keeps them alive.
    @exclusivity(unchecked) private var roster: [Unmanaged<ConferenceParticipant>] = []
    /// 20 ms: the tick period.
    public static let tickMilliseconds = 20
    /// Told on the room's thread when a participant presses a DTMF key in its media (RFC 4733): keys in a room are
    /// the room's to act on (a PIN, a mute toggle), not passed on to the other participants. Set it through
    /// ``ConferenceMediaThreads/perform(on:_:)``; it runs only when a key arrives (it may allocate or lock then).
    @exclusivity(unchecked) public var onKeyPressed: ((ConferenceParticipant, DTMFDigit) -> Void)?

    let block: Int
    let tickSamples: Int
    let speechThreshold: Double
    let hysteresis: Double
    let dormantTicks: Int
    @exclusivity(unchecked) var groups: [ConferenceEncoderGroup] = []
    @exclusivity(unchecked) var talkers: UnsafeMutableBufferPointer<Int>
    @exclusivity(unchecked) var talkerCount = 0
    let accumulator: UnsafeMutableBufferPointer<Int32>
    let output: UnsafeMutableBufferPointer<Int16>
    @exclusivity(unchecked) var frame: AudioFrame
    @exclusivity(unchecked) var clip: ConferenceClip?
    @exclusivity(unchecked) var clipPosition = 0
    @exclusivity(unchecked) var clipGain: Int32 = 256
    static let nextParticipantID = Atomic<Int>(0)
    /// Ticks a dormant participant's chain runs after one of its packets arrives (to decode it and judge it).
    static let wakeTicks = 1

    // Counters.
    @exclusivity(unchecked) var ticks = 0
    @exclusivity(unchecked) var ownEncodes = 0
    @exclusivity(unchecked) var sharedSends = 0
    @exclusivity(unchecked) var decodedTicks = 0
    @exclusivity(unchecked) var dormantTickCount = 0
    @exclusivity(unchecked) var talkerTickSum = 0
    @exclusivity(unchecked) var datagramsReceived = 0

    /// Creates a room; nothing is allocated per tick after this (apart from participants joining).
    public init(id: String, configuration: ConferenceRoomConfiguration = ConferenceRoomConfiguration())
        throws(ConferenceError)
    {
        guard [8_000, 12_000, 16_000, 24_000, 48_000].contains(configuration.sampleRate) else {
            throw .invalidConfiguration("sampleRate \(configuration.sampleRate) is not an Opus rate")
        }
        guard (1...16).contains(configuration.maximumTalkers) else {
            throw .invalidConfiguration("maximumTalkers must be 1...16, got \(configuration.maximumTalkers)")
        }
        guard configuration.levelDecayPerTick > 0 && configuration.levelDecayPerTick < 1 else {
            throw .invalidConfiguration("levelDecayPerTick must be in (0, 1)")
        }
        self.id = id
        self.configuration = configuration
        block = configuration.sampleRate / 100
        tickSamples = block * Self.tickMilliseconds / 10
        speechThreshold = ConferenceMixing.meanSquare(dBFS: configuration.speechThresholdDBFS)
        hysteresis = pow(10, configuration.talkerHysteresisDecibels / 10)
        dormantTicks = max(1, configuration.dormantAfterMilliseconds / Self.tickMilliseconds)
        talkers = .allocate(capacity: configuration.maximumTalkers)
        talkers.initialize(repeating: -1)
        accumulator = .allocate(capacity: tickSamples)
        accumulator.initialize(repeating: 0)
        output = .allocate(capacity: tickSamples)
        output.initialize(repeating: 0)
        frame = AudioFrame(format: AudioFormat(sampleRate: configuration.sampleRate))
        participants.reserveCapacity(configuration.expectedParticipants)
        roster.reserveCapacity(configuration.expectedParticipants)
    }

    deinit {
        talkers.deallocate()
        accumulator.deallocate()
        output.deallocate()
    }

    /// The stream configuration a participant actually gets: `negotiated` (from
    /// `MediaStreamConfiguration(negotiated:)`: codec, ptime, payload type, SRTP keys) with the room's rate as
    /// processing and "device" rate, no voice processing (the server has no echo to cancel), and the adaptive
    /// jitter buffer set to jump over a dormant participant's silence (starting clean, without a cross-fade from
    /// concealment that nobody heard).
    public func participantConfiguration(_ negotiated: MediaStreamConfiguration) -> MediaStreamConfiguration {
        var c = negotiated
        // A telephony codec processes at its own rate (8 kHz G.711, 16 kHz G.722); its stream's resamplers
        // convert to and from the room's rate, which is the stream's "device" rate.
        c.processingRate = c.codec.fixedSampleRate ?? configuration.sampleRate
        c.deviceFormat = AudioFormat(sampleRate: configuration.sampleRate)
        c.voiceProcessing = false
        if case .adaptive(var j) = c.jitterBuffer {
            j.maximumDTXGapMilliseconds = min(j.maximumDTXGapMilliseconds, configuration.dormantJitterGapMilliseconds)
            // A dormant participant's concealment was never mixed: nothing to cross-fade from when it wakes; each
            // talk spurt after dormancy starts at the buffer's target delay, not at the first packet's.
            j.role = .conference(restartsAtTargetDelay: configuration.restartsTalkSpurtsAtTargetDelay)
            c.jitterBuffer = .adaptive(j)
        }
        return c
    }

    /// Adds a participant (it is heard and hears the room from the next tick).
    /// - Parameters:
    ///   - label: the server's name for it (SIP URI, call ID) for reports.
    ///   - configuration: what was negotiated, typically `MediaStreamConfiguration(negotiated:)`; adjusted by
    ///     ``participantConfiguration(_:)``. Opus ptime must be 10 or 20 ms.
    ///   - sink: where its outgoing RTP/RTCP goes (its ``UDPMediaTransport`` is one).
    ///   - transport: if given, the room drains its received RTP/RTCP every tick and latches its remote to the
    ///     source of authenticated packets (symmetric RTP); if nil, the server calls ``receive(_:from:arrival:)``.
    ///   - now: media time on the ticking thread's clock.
    /// - Throws: ``ConferenceError/participantRejected(_:)`` for an unusable configuration.
    @discardableResult
    public func addParticipant(
        label: String, configuration negotiated: MediaStreamConfiguration, sink: any MediaPacketSink,
        transport: UDPMediaTransport? = nil, now: MediaTime
    ) throws(ConferenceError) -> ConferenceParticipant {
        let c = participantConfiguration(negotiated)
        guard c.packetTimeMilliseconds == 10 || c.packetTimeMilliseconds == 20 else {
            throw .participantRejected("ptime \(c.packetTimeMilliseconds) ms: the mixer supports 10 and 20 ms")
        }
        let stream: MediaStream
        do { stream = try MediaStream(configuration: c, sink: sink, now: now) } catch {
            throw .participantRejected("\(error)")
        }
        let group = c.codec == .opus ? try sharedEncoderGroup(for: c) : nil
        group?.members += 1
        let p = ConferenceParticipant(
            id: Self.nextParticipantID.wrappingAdd(1, ordering: .relaxed).newValue, label: label, stream: stream,
            transport: transport,
            tickSamples: tickSamples, limiter: ConferenceLimiter(threshold: configuration.limiterThreshold),
            group: group)
        participants.append(p)
        roster.append(Unmanaged.passUnretained(p))
        return p
    }

    /// The shared encoder of `c`'s Opus configuration, opened for its first listener.
    private func sharedEncoderGroup(for c: MediaStreamConfiguration) throws(ConferenceError) -> ConferenceEncoderGroup {
        let opus = c.effectiveOpus
        if let g = groups.first(where: { $0.opus == opus }) { return g }
        let group: ConferenceEncoderGroup
        do {
            group = try ConferenceEncoderGroup(
                opus: opus, lossAdaptation: c.lossAdaptation, limiterThreshold: configuration.limiterThreshold)
        } catch {
            throw .participantRejected("shared encoder: \(error)")
        }
        groups.append(group)
        return group
    }

    /// Removes a participant: nothing is sent to it from now on and its voice leaves the mix at once.
    public func removeParticipant(_ participant: ConferenceParticipant) {
        guard let i = participants.firstIndex(where: { $0 === participant }) else { return }
        participants.remove(at: i)
        roster.remove(at: i)
        if let group = participant.group {
            group.members -= 1
            if group.members == 0 {
                retiredSharedEncodes += group.encodedFrames
                groups.removeAll { $0 === group }
            }
        }
        talkerCount = 0  // indices changed: reselect from levels on the next tick
        for p in participants { p.isTalker = false }
    }

    /// The participant with this label, if present.
    public func participant(labelled label: String) -> ConferenceParticipant? {
        participants.first { $0.label == label }
    }

    /// Hands a participant one datagram from the network (RTP or RTCP), for servers that read sockets
    /// themselves. Bad datagrams are counted by its stream and dropped.
    public func receive(_ datagram: UnsafeRawBufferPointer, from participant: ConferenceParticipant, arrival: MediaTime)
    {
        datagramsReceived += 1
        participant.stream.receiveDatagram(datagram, arrival: arrival)
    }

    /// Mutes or unmutes a participant (server side: a re-INVITE with `sendonly`, or a moderator).
    public func setMuted(_ muted: Bool, _ participant: ConferenceParticipant) { participant.isMuted = muted }

    /// Plays `clip` into the room from the next tick (replacing any clip still playing), heard by everyone.
    /// - Parameter gain: linear, 1 = as recorded.
    public func play(_ clip: ConferenceClip, gain: Double = 1) {
        self.clip = clip
        clipPosition = 0
        clipGain = Int32((max(0, min(gain, 4)) * 256).rounded())
    }

    /// Whether a clip is still playing.
    public var isPlayingClip: Bool { clip != nil }

    /// The participants currently mixed as talkers.
    public var currentTalkers: [ConferenceParticipant] { participants.filter(\.isTalker) }

    /// `body` for each participant in joining order, without retaining it (see `roster`). Only within a tick:
    /// nothing there adds or removes participants.
    @inline(__always)
    private func forEachParticipant(_ body: (ConferenceParticipant) -> Void) {
        for u in roster { u._withUnsafeGuaranteedRef(body) }
    }

    /// One 20 ms mixing tick (see the type's notes). Call every 20 ms of media time; `now` is the tick's time
    /// on the clock the participants' packets are stamped with. No allocation, no lock.
    public func tick(now: MediaTime) {
        ticks += 1
        receiveAndDecode(now: now)
        selectTalkers()
        mix()
        sendTalkerMixes(now: now)
        sendSharedMix(now: now)
        if configuration.sendsRTCP {
            forEachParticipant { p in _ = p.stream.pollRTCP(now: now) }
        }
        adaptSharedEncoders()
    }

    /// Each shared encoder follows the worst loss its members report (RTCP receiver reports, smoothed per stream
    /// by `MediaStream`): one packet goes to every listener, so it carries the FEC the lossiest one needs (the
    /// others only pay some bits of the primary encoding for it). A talker's own encoder already follows its own
    /// listener's reports inside its stream. Cheap per tick: a comparison per participant; the encoder is touched
    /// only when the setting changes.
    private func adaptSharedEncoders() {
        for g in groups {
            var worst = -1.0
            forEachParticipant { p in
                if p.group === g, let loss = p.stream.remoteLossPercent, loss > worst { worst = loss }
            }
            if worst >= 0 { g.adapt(toLossPercent: worst) }
        }
    }

    private func receiveAndDecode(now: MediaTime) {
        forEachParticipant { p in
            if let t = p.transport { drain(t, into: p) }
            while let key = p.stream.takeReceivedDTMF() { onKeyPressed?(p, key) }
            let accepted = p.stream.acceptedPacketCount
            let gotPacket = accepted != p.lastAccepted
            p.lastAccepted = accepted
            if p.isDormant {
                guard gotPacket else {
                    p.dormantTicks += 1
                    dormantTickCount += 1
                    return
                }
                // A packet from a dormant participant: a DTX comfort-noise update (every 400 ms from Opus) or the
                // start of speech. Run its chain for a few ticks to decode it and look at the level.
                p.isDormant = false
                p.quietTicks = max(0, dormantTicks - Self.wakeTicks)
            }
            var offset = 0
            while offset < tickSamples {
                p.stream.renderPlayout(into: &frame, now: now)
                frame.withUnsafeSamples { s -> Void in
                    _ = UnsafeMutableBufferPointer(rebasing: p.decoded[offset..<(offset + block)]).update(
                        fromContentsOf: s)
                }
                offset += block
            }
            p.decodedTicks += 1
            decodedTicks += 1
            let ms = ConferenceMixing.meanSquare(UnsafeBufferPointer(p.decoded))
            p.lastLevel = ms
            p.level = max(ms, p.level * configuration.levelDecayPerTick)
            p.quietTicks = p.level < speechThreshold ? p.quietTicks + 1 : 0
            // Dormant once quiet long enough and its jitter buffer has nothing left to play (a statistics copy,
            // only at this rare transition).
            if p.quietTicks >= dormantTicks && p.stream.statistics.jitterBuffer.currentDelayMilliseconds < 10 {
                p.isDormant = true
                p.level = 0
                p.lastLevel = 0
            }
        }
    }

    private func drain(_ transport: UDPMediaTransport, into p: ConferenceParticipant) {
        _ = transport.receiveFromSocket()
        drain(.rtp, of: transport, into: p)
        drain(.rtcp, of: transport, into: p)
    }

    private func drain(_ kind: MediaPacketKind, of transport: UDPMediaTransport, into p: ConferenceParticipant) {
        while transport.withNextPacket(
            kind,
            { (packet: ReceivedPacket) -> Void in
                datagramsReceived += 1
                let before = p.stream.acceptedPacketCount
                let rtcpBefore = kind == .rtcp ? p.stream.statistics.rtcpReceived : 0
                p.stream.receiveDatagram(packet.bytes, arrival: packet.arrival)
                let authenticated =
                    kind == .rtp
                    ? p.stream.acceptedPacketCount != before : p.stream.statistics.rtcpReceived != rtcpBefore
                if authenticated && packet.source != p.latched {
                    p.latched = packet.source
                    _ = transport.latchRemote(to: packet.source, for: kind)
                }
            }) != nil
        {}
    }

    /// The N loudest unmuted, non-dormant participants above the threshold (current talkers get the hysteresis
    /// bonus). Insertion into a fixed array of N: no allocation.
    private func selectTalkers() {
        let n = configuration.maximumTalkers
        talkerCount = 0
        for i in 0..<roster.count {
            roster[i]._withUnsafeGuaranteedRef { p in selectionStep(p, index: i, limit: n) }
        }
        for k in 0..<talkerCount {
            let p = participants[talkers[k]]
            p.isTalker = true
            p.talkerTicks += 1
        }
        talkerTickSum += talkerCount
    }

    /// One participant's turn in ``selectTalkers()``: ranked into `talkers` if it may talk.
    @inline(__always)
    private func selectionStep(_ p: ConferenceParticipant, index i: Int, limit n: Int) {
        let wasTalker = p.isTalker
        p.isTalker = false
        guard !p.isMuted, !p.isDormant, p.level > speechThreshold else { return }
        let score = wasTalker ? p.level * hysteresis : p.level
        p.score = score
        var slot = talkerCount
        while slot > 0 && score > rank(talkers[slot - 1]) {
            if slot < n { talkers[slot] = talkers[slot - 1] }
            slot -= 1
        }
        if slot < n {
            talkers[slot] = i
            talkerCount = min(talkerCount + 1, n)
        }
    }

    /// The selection score of participant `i` this tick (set in `selectTalkers`).
    private func rank(_ i: Int) -> Double { participants[i].score }

    private func mix() {
        accumulator.update(repeating: 0)
        for k in 0..<talkerCount {
            ConferenceMixing.accumulate(UnsafeBufferPointer(participants[talkers[k]].decoded), into: accumulator)
        }
        if let c = clip {
            let remaining = c.samples.count - clipPosition
            let n = min(remaining, tickSamples)
            let g = clipGain
            c.samples.withUnsafeBufferPointer { s in
                for i in 0..<n { accumulator[i] &+= (Int32(s[clipPosition + i]) * g) >> 8 }
            }
            clipPosition += n
            if clipPosition >= c.samples.count { clip = nil }
        }
    }

    /// Each talker: the mix without its own voice, limited, through its own stream's encoder.
    private func sendTalkerMixes(now: MediaTime) {
        for k in 0..<talkerCount {
            let p = participants[talkers[k]]
            p.limiter.process(UnsafeBufferPointer(accumulator), minus: UnsafeBufferPointer(p.decoded), into: output)
            sendOutputThroughOwnEncoder(p, now: now)
        }
    }

    /// `output` (one tick at the room's rate) through `p`'s own stream: resampled to its codec's rate when that
    /// differs, encoded, packetized and sent.
    private func sendOutputThroughOwnEncoder(_ p: ConferenceParticipant, now: MediaTime) {
        var offset = 0
        while offset < tickSamples {
            frame.withUnsafeMutableSamples { s -> Void in
                _ = s.update(fromContentsOf: UnsafeMutableBufferPointer(rebasing: output[offset..<(offset + block)]))
            }
            p.stream.processCapture(frame, now: now)
            offset += block
        }
        let frames = tickSamples / (block * p.stream.configuration.packetTimeMilliseconds / 10)
        p.ownEncodedFrames += frames
        ownEncodes += frames
    }

    /// Everyone else: the full mix, limited and encoded once per Opus configuration, the same packet to each; a
    /// telephony codec's listener through its own encoder.
    private func sendSharedMix(now: MediaTime) {
        for g in groups {
            let listeners = g.members - talkersIn(g)
            guard listeners > 0 else { continue }
            g.limiter.process(UnsafeBufferPointer(accumulator), minus: nil, into: output)
            let frameSamples = g.opus.samplesPerChannelPerFrame
            var offset = 0
            while offset < tickSamples {
                let length: Int
                do {
                    length = try g.encoder.encode(
                        UnsafeBufferPointer(rebasing: output[offset..<(offset + frameSamples)]), into: g.packet)
                } catch {
                    g.encodeErrors += 1
                    offset += frameSamples
                    continue
                }
                g.encodedFrames += 1
                let payload = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(g.packet)[0..<length])
                let dtx = g.opus.dtx
                forEachParticipant { p in
                    guard p.group === g && !p.isTalker else { return }
                    p.stream.sendEncodedFrame(payload, dtx: dtx, now: now)
                    p.sharedFramesSent += 1
                    sharedSends += 1
                }
                offset += frameSamples
            }
        }
        // Listeners with a telephony codec: the full mix, limited by their own limiter, through their own encoder.
        forEachParticipant { p in
            guard p.group == nil && !p.isTalker else { return }
            p.limiter.process(UnsafeBufferPointer(accumulator), minus: nil, into: output)
            sendOutputThroughOwnEncoder(p, now: now)
        }
    }

    private func talkersIn(_ g: ConferenceEncoderGroup) -> Int {
        var n = 0
        for k in 0..<talkerCount where participants[talkers[k]].group === g { n += 1 }
        return n
    }

    /// The room's figures now (allocates the participant list: for reports, not every tick).
    public var statistics: ConferenceRoomStatistics {
        var s = ConferenceRoomStatistics(id: id)
        s.ticks = ticks
        s.participants = participants.map(\.statistics)
        s.talkers = talkerCount
        s.meanTalkers = ticks == 0 ? 0 : Double(talkerTickSum) / Double(ticks)
        s.decodedTicks = decodedTicks
        s.dormantTicks = dormantTickCount
        s.ownEncodedFrames = ownEncodes
        s.sharedEncodedFrames = groups.reduce(0) { $0 + $1.encodedFrames } + retiredSharedEncodes
        s.sharedFramesSent = sharedSends
        s.encoderGroups = groups.count
        s.sharedEncoderFEC = groups.contains { $0.encoder.configuration.inbandFEC }
        s.sharedExpectedLossPercent = groups.map(\.encoder.configuration.expectedLossPercent).max() ?? 0
        s.sharedFECAdaptations = groups.reduce(0) { $0 + $1.fecAdaptations }
        s.limitedBlocks =
            participants.reduce(0) { $0 + $1.limiter.limitedBlocks }
            + groups.reduce(0) { $0 + $1.limiter.limitedBlocks }
        s.clippedSamples =
            participants.reduce(0) { $0 + $1.limiter.clippedSamples }
            + groups.reduce(0) { $0 + $1.limiter.clippedSamples }
        s.datagramsReceived = datagramsReceived
        return s
    }
    @exclusivity(unchecked) var retiredSharedEncodes = 0
}

/// A room's figures (``ConferenceRoom/statistics``): the per-tick cost counters the cost model is checked
/// against, and each participant's.
public struct ConferenceRoomStatistics: Sendable, Hashable {
    public var id: String
    public var ticks = 0
    public var participants: [ConferenceParticipantStatistics] = []
    /// Talkers mixed in the last tick, and on average.
    public var talkers = 0
    public var meanTalkers = 0.0
    /// Participant-ticks whose receive chain ran (decode/PLC/FEC), and that were skipped as dormant.
    public var decodedTicks = 0
    public var dormantTicks = 0
    /// Frames encoded by talkers' own encoders (mix-minus), and by the shared encoders (once per configuration).
    public var ownEncodedFrames = 0
    public var sharedEncodedFrames = 0
    /// Shared frames handed to listeners (one RTP header + SRTP protect each, no encode).
    public var sharedFramesSent = 0
    /// Codec configurations with a shared encoder.
    public var encoderGroups = 0
    /// Whether any shared encoder has in-band FEC on now, the highest expected loss (%) one is set to, and how
    /// often their setting changed (they follow the worst loss their listeners report).
    public var sharedEncoderFEC = false
    public var sharedExpectedLossPercent = 0
    public var sharedFECAdaptations = 0
    /// Blocks any limiter reduced the gain in, and samples one had to clamp (must be 0).
    public var limitedBlocks = 0
    public var clippedSamples = 0
    public var datagramsReceived = 0

    public init(id: String) { self.id = id }
}
