#if canImport(Glibc)
import Glibc
#endif
import VoiceCodec
import VoiceConference
import VoiceCore
import VoiceEngine
import VoiceNetSim
import VoiceSRTP

/// A conference room in fast time: one ``ConferenceRoom`` and, per member, a client ``MediaStream`` (the engine
/// a participant would run) that captures the member's input and plays what the room sends back, joined to the
/// room by a simulated network path each way (or a direct one), with SRTP on every leg.
///
/// Used by the mixer's tests (mix-minus, talker choice, quality through loss and jitter) and by
/// `voice-bench conference` (the room's CPU time per tick, measured on the thread that ticks it).
public final class ConferenceSimulation {
    public struct Member: Sendable {
        public var label: String
        /// What the member says: 16-bit mono at the room's rate, from the start; silence after it ends.
        public var input: [Int16]
        /// Delay the member's input by this much (talk later).
        public var inputOffsetMilliseconds: Int
        /// Network between this member and the room (both directions, independent draws); nil: direct.
        public var network: NetworkConditions?
        /// Which directions `network`'s loss and jitter apply to; the other keeps only its base delay. Both by
        /// default; one alone tells the room's receive side (up) from a one-stream downlink (down).
        public var impaired: Directions = .both
        /// Join and leave times (ms of media time); nil: from the start, until the end.
        public var joinMilliseconds: Int?
        public var leaveMilliseconds: Int?
        /// Muted in the room from the start.
        public var muted: Bool
        /// Overrides the configuration's Opus DTX for this member (both its client and its room stream), e.g. off
        /// for a steady test tone, which Opus's voice activity detection would soon take for noise.
        public var dtx: Bool?

        public init(
            label: String, input: [Int16] = [], inputOffsetMilliseconds: Int = 0, network: NetworkConditions? = nil,
            joinMilliseconds: Int? = nil, leaveMilliseconds: Int? = nil, muted: Bool = false, dtx: Bool? = nil
        ) {
            self.dtx = dtx
            self.label = label
            self.input = input
            self.inputOffsetMilliseconds = inputOffsetMilliseconds
            self.network = network
            self.joinMilliseconds = joinMilliseconds
            self.leaveMilliseconds = leaveMilliseconds
            self.muted = muted
        }
    }

    /// Directions of a member's leg: to the room (up), from it (down).
    public enum Directions: String, Sendable, CaseIterable {
        case both, up, down
    }

    public struct Configuration: Sendable {
        public var members: [Member]
        public var room: ConferenceRoomConfiguration
        /// Every client's and participant's Opus settings (the room's rate is applied). DTX on by default.
        public var opus: OpusEncoderConfiguration
        /// SRTP suite on every leg; nil: plain RTP.
        public var srtp: SRTPCryptoSuite?
        public var durationMilliseconds: Int
        public var seed: UInt64

        public init(
            members: [Member], room: ConferenceRoomConfiguration = ConferenceRoomConfiguration(),
            opus: OpusEncoderConfiguration = ConferenceSimulation.defaultOpus,
            srtp: SRTPCryptoSuite? = .aesCM128HmacSHA1_80, durationMilliseconds: Int, seed: UInt64 = 1
        ) {
            self.members = members
            self.room = room
            self.opus = opus
            self.srtp = srtp
            self.durationMilliseconds = durationMilliseconds
            self.seed = seed
        }
    }

    /// VoIP Opus at 16 kHz, 20 ms, 24 kb/s, complexity 5, DTX on (silent members send nothing), in-band FEC on as
    /// the conference server negotiates it (`useinbandfec=1`): every encoder — clients', talkers' own, the room's
    /// shared one — starts at the policy's initial expected loss and then follows the RTCP reports.
    public static let defaultOpus = OpusEncoderConfiguration(
        sampleRate: 16_000, channels: 1, application: .voip, frameDuration: .ms20, bitrate: 24_000,
        complexity: 5, variableBitrate: true, inbandFEC: true, expectedLossPercent: 0, dtx: true)

    public struct Result: Sendable {
        /// What each member's client played (room rate), from the start of the simulation.
        public var received: [[Int16]]
        public var room: ConferenceRoomStatistics
        /// Each member's participant statistics at the end (or when it left).
        public var participants: [ConferenceParticipantStatistics]
        public var clients: [MediaStreamStatistics]
        /// CPU time of the room's work (receive + tick) on this thread, and the ticks run.
        public var roomCPUNanoseconds: Int64
        public var ticks: Int
    }

    /// A direct (lossless, zero-delay) leg: a preallocated queue of datagrams, so the room's sends cost no
    /// allocation and the measured room time is the room's own.
    final class DirectQueue: MediaPacketSink {
        let slots: UnsafeMutableRawBufferPointer
        var lengths: [Int]
        var count = 0
        static let slotBytes = 1_600
        init(capacity: Int) {
            slots = .allocate(byteCount: capacity * Self.slotBytes, alignment: 16)
            lengths = [Int](repeating: 0, count: capacity)
        }
        deinit { slots.deallocate() }
        func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
            guard count < lengths.count, datagram.count <= Self.slotBytes else { return }
            UnsafeMutableRawBufferPointer(rebasing: slots[(count * Self.slotBytes)...]).copyMemory(from: datagram)
            lengths[count] = datagram.count
            count += 1
        }
        func drain(_ body: (UnsafeRawBufferPointer) -> Void) {
            for i in 0..<count {
                body(UnsafeRawBufferPointer(rebasing: slots[(i * Self.slotBytes)..<(i * Self.slotBytes + lengths[i])]))
            }
            count = 0
        }
    }

    /// A simulated leg: VoiceNetSim decides each datagram's fate.
    final class SimulatedQueue: MediaPacketSink {
        var link: SimulatedLink<[UInt8]>
        init(conditions: NetworkConditions) throws(NetworkSimulatorError) {
            link = SimulatedLink(simulator: try NetworkSimulator(conditions: conditions))
        }
        func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
            link.send(Array(datagram), nominalSendTime: now)
        }
    }

    final class Leg {
        let member: Member
        let client: MediaStream
        let up: any MediaPacketSink
        let down: any MediaPacketSink
        let clientConfiguration: MediaStreamConfiguration
        let roomConfiguration: MediaStreamConfiguration
        var participant: ConferenceParticipant?
        var left = false
        var finalStatistics: ConferenceParticipantStatistics?
        init(
            member: Member, client: MediaStream, up: any MediaPacketSink, down: any MediaPacketSink,
            clientConfiguration: MediaStreamConfiguration, roomConfiguration: MediaStreamConfiguration
        ) {
            self.member = member
            self.client = client
            self.up = up
            self.down = down
            self.clientConfiguration = clientConfiguration
            self.roomConfiguration = roomConfiguration
        }
    }

    public let configuration: Configuration
    public let room: ConferenceRoom
    let legs: [Leg]
    let clock = ManualClock()

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        room = try ConferenceRoom(id: "simulated", configuration: configuration.room)
        var random = SeededGenerator(seed: configuration.seed)
        var legs: [Leg] = []
        for (i, m) in configuration.members.enumerated() {
            var srtpClient: MediaStreamSRTP?
            var srtpRoom: MediaStreamSRTP?
            if let suite = configuration.srtp {
                let a = SRTPMasterKey.random(for: suite, using: &random)
                let b = SRTPMasterKey.random(for: suite, using: &random)
                srtpClient = MediaStreamSRTP(suite: suite, localKey: a, remoteKey: b)
                srtpRoom = MediaStreamSRTP(suite: suite, localKey: b, remoteKey: a)
            }
            let format = AudioFormat(sampleRate: configuration.room.sampleRate)
            var opus = configuration.opus
            opus.sampleRate = configuration.room.sampleRate
            if let dtx = m.dtx { opus.dtx = dtx }
            let client = MediaStreamConfiguration(
                opus: opus, processingRate: configuration.room.sampleRate, deviceFormat: format, srtp: srtpClient,
                voiceProcessing: false, seed: configuration.seed &+ UInt64(2 * i + 1))
            let roomSide = MediaStreamConfiguration(
                opus: opus, processingRate: configuration.room.sampleRate, deviceFormat: format, srtp: srtpRoom,
                voiceProcessing: false, seed: configuration.seed &+ UInt64(2 * i + 2))
            let up: any MediaPacketSink
            let down: any MediaPacketSink
            if let network = m.network {
                let clean = NetworkConditions(baseDelayMilliseconds: network.baseDelayMilliseconds)
                var n = m.impaired == .down ? clean : network
                n.seed = configuration.seed &+ UInt64(100 + 2 * i)
                up = try SimulatedQueue(conditions: n)
                n = m.impaired == .up ? clean : network
                n.seed = configuration.seed &+ UInt64(101 + 2 * i)
                down = try SimulatedQueue(conditions: n)
            } else {
                up = DirectQueue(capacity: 16)
                down = DirectQueue(capacity: 16)
            }
            let stream = try MediaStream(configuration: client, sink: up, now: clock.now)
            legs.append(
                Leg(
                    member: m, client: stream, up: up, down: down, clientConfiguration: client,
                    roomConfiguration: roomSide))
        }
        self.legs = legs
    }

    /// Runs the room for the configured duration in fast time.
    public func run() -> Result {
        let c = configuration
        let block = c.room.sampleRate / 100
        let ticks = c.durationMilliseconds / ConferenceRoom.tickMilliseconds
        let perTick = ConferenceRoom.tickMilliseconds / 10
        var received = [[Int16]](repeating: [], count: legs.count)
        for i in received.indices { received[i].reserveCapacity(ticks * perTick * block) }
        var frame = AudioFrame(format: AudioFormat(sampleRate: c.room.sampleRate))
        var roomCPU: Int64 = 0
        let tickTime = MediaTime.milliseconds(Int64(ConferenceRoom.tickMilliseconds))

        for t in 0..<ticks {
            let now = clock.now
            let ms = t * ConferenceRoom.tickMilliseconds
            // Joins and leaves (control plane: not timed).
            for leg in legs {
                let join = leg.member.joinMilliseconds ?? 0
                if leg.participant == nil && !leg.left && ms >= join {
                    leg.participant = try? room.addParticipant(
                        label: leg.member.label, configuration: leg.roomConfiguration, sink: leg.down, now: now)
                    if leg.member.muted, let p = leg.participant { room.setMuted(true, p) }
                }
                if let leave = leg.member.leaveMilliseconds, ms >= leave, let p = leg.participant {
                    leg.finalStatistics = p.statistics
                    room.removeParticipant(p)
                    leg.participant = nil
                    leg.left = true
                }
            }
            // Clients capture 20 ms each (silence once their input ends, or before they join).
            for leg in legs {
                for b in 0..<perTick {
                    let start = (ms + b * 10 - leg.member.inputOffsetMilliseconds) * c.room.sampleRate / 1000
                    frame.withUnsafeMutableSamples { s in
                        for i in 0..<block {
                            let k = start + i
                            s[i] = k >= 0 && k < leg.member.input.count ? leg.member.input[k] : 0
                        }
                    }
                    leg.client.processCapture(frame, now: now)
                }
            }
            // Uplinks into the room, and the room's tick: the timed part.
            let cpu0 = Self.threadCPUNanoseconds()
            for leg in legs {
                guard let p = leg.participant else {
                    discard(leg.up, until: now)
                    continue
                }
                deliver(leg.up, until: now) { room.receive($0, from: p, arrival: $1) }
            }
            room.tick(now: now)
            roomCPU += Self.threadCPUNanoseconds() - cpu0
            // Downlinks to the clients, which play 20 ms.
            for (i, leg) in legs.enumerated() {
                deliver(leg.down, until: now) { leg.client.receiveDatagram($0, arrival: $1) }
                for _ in 0..<perTick {
                    leg.client.renderPlayout(into: &frame, now: now)
                    frame.withUnsafeSamples { received[i].append(contentsOf: $0) }
                }
                _ = leg.client.pollRTCP(now: now)
            }
            clock.advance(by: tickTime)
        }
        let participants = legs.map { leg in
            leg.participant?.statistics ?? leg.finalStatistics
                ?? ConferenceParticipantStatistics(
                    id: 0, label: leg.member.label)
        }
        return Result(
            received: received, room: room.statistics, participants: participants,
            clients: legs.map(\.client.statistics), roomCPUNanoseconds: roomCPU, ticks: ticks)
    }

    private func deliver(
        _ sink: any MediaPacketSink, until now: MediaTime, _ body: (UnsafeRawBufferPointer, MediaTime) -> Void
    ) {
        if let d = sink as? DirectQueue {
            d.drain { body($0, now) }
        } else if let s = sink as? SimulatedQueue {
            s.link.receive(until: now) { bytes, arrival in bytes.withUnsafeBytes { body($0, arrival) } }
        }
    }

    private func discard(_ sink: any MediaPacketSink, until now: MediaTime) {
        deliver(sink, until: now) { _, _ in }
    }

    /// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), for the room's cost.
    public static func threadCPUNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
