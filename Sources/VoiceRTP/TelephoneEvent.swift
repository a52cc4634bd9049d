/// A DTMF key: one of the sixteen RFC 4733 §3.2 events 0–15 (`0`–`9`, `*`, `#`, `A`–`D`).
public struct DTMFDigit: Sendable, Hashable, CustomStringConvertible {
    /// The RFC 4733 event code, 0...15.
    public let event: UInt8

    /// The keys in event-code order: event n is `keys[n]`.
    static let keys: [Character] = Array("0123456789*#ABCD")

    /// The digit of event code `event`, or nil for a code that is not a DTMF key (flash, modem tones, ...).
    public init?(event: UInt8) {
        guard event < 16 else { return nil }
        self.event = event
    }

    /// The digit of key `character` (`a`–`d` are accepted for `A`–`D`), or nil for any other character.
    public init?(_ character: Character) {
        let upper = Character(character.uppercased())
        guard let index = Self.keys.firstIndex(of: upper) else { return nil }
        event = UInt8(index)
    }

    /// The key as it is written: `0`–`9`, `*`, `#`, `A`–`D`.
    public var character: Character { Self.keys[Int(event)] }

    public var description: String { String(character) }

    /// The digits of `text` in order (`"123#"`), or a typed error naming the first character that is not a key.
    public static func parse(_ text: String) throws(DTMFDigitError) -> [DTMFDigit] {
        guard !text.isEmpty else { throw .empty }
        var digits: [DTMFDigit] = []
        for (offset, character) in text.enumerated() {
            guard let digit = DTMFDigit(character) else { throw .invalidKey(character, offset: offset) }
            digits.append(digit)
        }
        return digits
    }
}

/// Why a string of DTMF keys was refused.
public enum DTMFDigitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No keys at all.
    case empty
    /// `character` at `offset` is not one of `0`–`9`, `*`, `#`, `A`–`D`.
    case invalidKey(Character, offset: Int)

    public var description: String {
        switch self {
        case .empty: "no DTMF keys given"
        case .invalidKey(let character, let offset):
            "\"\(character)\" at position \(offset) is not a DTMF key (0-9, *, #, A-D)"
        }
    }
}

/// Why a telephone-event payload was refused.
public enum TelephoneEventParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer than the 4 bytes of one event.
    case tooShort(length: Int)

    public var description: String {
        switch self {
        case .tooShort(let length): "telephone-event payload of \(length) bytes, an event needs 4"
        }
    }
}

/// The payload of one RFC 4733 telephone-event packet (§2.3): event, end bit, volume, duration.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// |     event     |E|R| volume    |          duration             |
/// ```
public struct TelephoneEventPayload: Sendable, Hashable {
    /// Bytes of one event.
    public static let length = 4

    public var event: UInt8
    /// The E bit: the event has ended (this and its retransmissions are the last packets of the event).
    public var isEnd: Bool
    /// Power level in −dBm0, 0...63 (only the low 6 bits are sent).
    public var volume: UInt8
    /// Ticks of the RTP clock from the event's start (the packet's timestamp) to the end of this packet.
    public var duration: UInt16

    public init(event: UInt8, isEnd: Bool, volume: UInt8, duration: UInt16) {
        self.event = event
        self.isEnd = isEnd
        self.volume = volume & 0x3F
        self.duration = duration
    }

    /// Reads the first event of `payload`. A payload longer than 4 bytes (RFC 2198 redundancy is not negotiated,
    /// so the rest is padding or junk) is read by its first event; the reserved bit is ignored (§2.3.3).
    public init(parsing payload: UnsafeRawBufferPointer) throws(TelephoneEventParseError) {
        guard payload.count >= Self.length else { throw .tooShort(length: payload.count) }
        self.init(
            event: payload[0], isEnd: payload[1] & 0x80 != 0, volume: payload[1] & 0x3F,
            duration: UInt16(payload[2]) << 8 | UInt16(payload[3]))
    }

    /// Array convenience for ``init(parsing:)``.
    public init(parsing bytes: [UInt8]) throws(TelephoneEventParseError) {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(TelephoneEventParseError) in try TelephoneEventPayload(parsing: raw) }
        }
        self = try result.get()
    }

    /// Writes the 4 bytes at the start of `buffer`. - Precondition: `buffer.count >= 4`.
    public func write(into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= Self.length, "telephone-event payload needs 4 bytes")
        buffer[0] = event
        buffer[1] = (isEnd ? 0x80 : 0) | (volume & 0x3F)
        buffer[2] = UInt8(duration >> 8)
        buffer[3] = UInt8(duration & 0xFF)
    }

    /// The 4 bytes (tests and tools).
    public var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.length)
        out.withUnsafeMutableBytes { write(into: $0) }
        return out
    }
}

/// One telephone-event packet to send in place of an audio frame.
public struct TelephoneEventPacket: Sendable, Hashable {
    public var payload: TelephoneEventPayload
    /// The RTP timestamp: the event's start, the same in every packet of the event (RFC 4733 §2.5.1.2).
    public var timestamp: UInt32
    /// Set on the event's first packet only (§2.5.1.1).
    public var marker: Bool
}

/// Turns queued DTMF digits into RFC 4733 packets, one per packet time, in place of the audio frames.
///
/// Pure and allocation-free (the queue is inline storage). For each audio packet slot the sender calls
/// ``nextPacket(audioTimestamp:)``: nil means send audio; a packet means send it instead of the frame (sharing
/// the audio's SSRC and sequence numbers). An event starts at the slot's audio timestamp and keeps it as its
/// timestamp; its duration grows by one packet time per packet; its last packet carries the E bit and is sent
/// three times (§2.5.1.4); then audio flows for at least ``gapTicks`` before the next digit.
public struct TelephoneEventSender: Sendable {
    /// Digits that can wait at once; ``enqueue(_:)`` refuses more.
    public static let capacity = 32
    /// Times the final (E bit) packet is sent.
    public static let endPacketCount = 3

    /// RTP ticks per packet time (the audio's ptime on the event's clock).
    public let ticksPerPacket: UInt32
    /// Length of each tone, in RTP ticks (a multiple of the packet time, at most 65535: one segment).
    public let toneTicks: UInt32
    /// Audio between two tones, in RTP ticks.
    public let gapTicks: UInt32
    /// Power level of the tones in −dBm0.
    public let volume: UInt8

    private var queue = InlineArray<32, UInt8>(repeating: 0)
    private var queueHead = 0
    private var queueCount = 0
    /// The event being sent: its code, start timestamp and packets so far.
    private var current: (event: UInt8, timestamp: UInt32, packets: UInt32, endsSent: Int)?
    private var gapRemaining: UInt32 = 0

    /// - Parameters:
    ///   - clockRate: the telephone-event clock (the audio codec's RTP clock: 8000 for G.711, 48000 for Opus).
    ///   - packetMilliseconds: the audio's packet time.
    ///   - toneMilliseconds: each tone's length (100 ms by default; at least one packet time, and cut to what fits
    ///     one 16-bit duration).
    ///   - gapMilliseconds: the pause between tones (at least 40 ms, the ITU Q.24 minimum, is sensible).
    public init(
        clockRate: Int, packetMilliseconds: Int, toneMilliseconds: Int = 100, gapMilliseconds: Int = 60,
        volume: UInt8 = 10
    ) {
        precondition(clockRate >= 1000 && packetMilliseconds > 0, "telephone-event clock and ptime must be positive")
        self.init(
            ticksPerPacket: UInt32(clockRate / 1000 * packetMilliseconds), packetMilliseconds: packetMilliseconds,
            toneMilliseconds: toneMilliseconds, gapMilliseconds: gapMilliseconds, volume: volume)
    }

    /// The same with the packet time given in RTP ticks as well (what a stream already knows).
    public init(
        ticksPerPacket: UInt32, packetMilliseconds: Int, toneMilliseconds: Int = 100, gapMilliseconds: Int = 60,
        volume: UInt8 = 10
    ) {
        precondition(ticksPerPacket > 0 && packetMilliseconds > 0, "telephone-event packet time must be positive")
        self.ticksPerPacket = ticksPerPacket
        let packets = max(1, (toneMilliseconds + packetMilliseconds - 1) / packetMilliseconds)
        let maxPackets = max(1, Int(UInt32(UInt16.max) / ticksPerPacket))
        toneTicks = UInt32(min(packets, maxPackets)) * ticksPerPacket
        let ticksPerMillisecond = Int(ticksPerPacket) / packetMilliseconds
        gapTicks = UInt32(ticksPerMillisecond * max(0, gapMilliseconds))
        self.volume = volume & 0x3F
    }

    /// Digits waiting, the one being sent included.
    public var pendingCount: Int { queueCount + (current == nil ? 0 : 1) }

    /// Whether an event or a pending digit will take the next slots (audio is replaced while an event runs).
    public var isActive: Bool { current != nil || queueCount > 0 }

    /// Queues `digit`; false (nothing queued) when ``capacity`` digits already wait.
    @discardableResult
    public mutating func enqueue(_ digit: DTMFDigit) -> Bool {
        guard queueCount < Self.capacity else { return false }
        queue[(queueHead + queueCount) % Self.capacity] = digit.event
        queueCount += 1
        return true
    }

    /// Drops every queued digit and the event in progress (a call on hold, a stream that stops sending). An
    /// event cut short this way has no end packet; the receiver reported it at its start.
    public mutating func cancel() {
        queueCount = 0
        current = nil
        gapRemaining = 0
    }

    /// What to send in the packet slot whose audio timestamp is `audioTimestamp`: nil for audio, or the event
    /// packet to send instead.
    public mutating func nextPacket(audioTimestamp: UInt32) -> TelephoneEventPacket? {
        if current == nil {
            if gapRemaining > 0 {
                gapRemaining -= min(gapRemaining, ticksPerPacket)
                return nil
            }
            guard queueCount > 0 else { return nil }
            let event = queue[queueHead]
            queueHead = (queueHead + 1) % Self.capacity
            queueCount -= 1
            current = (event, audioTimestamp, 0, 0)
        }
        guard var event = current else { return nil }
        let first = event.packets == 0
        if event.packets * ticksPerPacket < toneTicks { event.packets += 1 }
        let duration = event.packets * ticksPerPacket
        let isEnd = duration >= toneTicks
        if isEnd { event.endsSent += 1 }
        let packet = TelephoneEventPacket(
            payload: TelephoneEventPayload(
                event: event.event, isEnd: isEnd, volume: volume, duration: UInt16(truncatingIfNeeded: duration)),
            timestamp: event.timestamp, marker: first)
        if event.endsSent >= Self.endPacketCount {
            current = nil
            gapRemaining = gapTicks
        } else {
            current = event
        }
        return packet
    }
}

/// Turns received RFC 4733 packets into digits, each reported once.
///
/// A digit is reported at its first packet (so a lost end packet loses nothing, and the app hears the key when
/// it is pressed); later packets of the same event — growing durations, the E-bit retransmissions, packets
/// reordered behind a newer event — report nothing. An event is told apart by its timestamp (§2.5.1.2). A long
/// event is sent as segments (§2.5.1.3), each with a new timestamp but no marker, and is one digit: a packet
/// without the marker, of the same event, with the previous not ended, within one segment of its start after a
/// segment long enough to have been split (half of the 16-bit duration or more) continues it.
/// Pure and allocation-free.
public struct TelephoneEventReceiver: Sendable {
    private var current: (event: UInt8, timestamp: UInt32, duration: UInt16, ended: Bool)?

    /// Events seen (new starts, DTMF or not).
    public private(set) var eventsStarted = 0
    /// Packets that belonged to an event already reported (durations, end retransmissions, segments).
    public private(set) var packetsOfKnownEvents = 0
    /// Packets older than the current event (reordered or late), ignored.
    public private(set) var stalePackets = 0

    public init() {}

    /// Feeds one packet's payload with its RTP timestamp and marker bit; returns the digit when this packet
    /// starts a new DTMF event.
    public mutating func receive(_ payload: TelephoneEventPayload, timestamp: UInt32, marker: Bool) -> DTMFDigit? {
        if var event = current {
            if timestamp == event.timestamp {
                packetsOfKnownEvents += 1
                if payload.event == event.event {
                    event.duration = max(event.duration, payload.duration)
                    event.ended = event.ended || payload.isEnd
                    current = event
                }
                return nil
            }
            if isNewer(event.timestamp, than: timestamp) {
                stalePackets += 1
                return nil
            }
            let distance = timestamp &- event.timestamp
            if !marker, payload.event == event.event, !event.ended, event.duration >= 0x8000,
                distance <= UInt32(UInt16.max)
            {
                packetsOfKnownEvents += 1
                current = (event.event, timestamp, payload.duration, payload.isEnd)
                return nil
            }
        }
        current = (payload.event, timestamp, payload.duration, payload.isEnd)
        eventsStarted += 1
        return DTMFDigit(event: payload.event)
    }
}
