/// The Opus RTP payload format (RFC 7587): what differs from a generic audio payload.
///
/// The RTP clock is always 48 kHz (RFC 7587 4.1) whatever rate the encoder runs at, so a 20 ms packet advances the
/// timestamp by 960 even when the codec works at 16 kHz. These helpers convert between samples at the coding rate
/// and RTP ticks.
public enum OpusRTP {
    /// The RTP clock rate for Opus: 48 000 Hz.
    public static let clockRate = 48_000
    /// Coding rates Opus supports.
    public static let codingRates: [Int] = [8_000, 12_000, 16_000, 24_000, 48_000]

    /// Whether Opus can code at `rate` (a switch, so hot callers pay no hashing).
    @inlinable
    public static func isCodingRate(_ rate: Int) -> Bool {
        switch rate {
        case 8_000, 12_000, 16_000, 24_000, 48_000: true
        default: false
        }
    }

    /// RTP ticks covered by `samples` samples (per channel) at `codingRate`.
    /// - Precondition: `codingRate` is an Opus rate.
    @inlinable
    public static func ticks(samples: Int, codingRate: Int) -> UInt32 {
        precondition(isCodingRate(codingRate), "Opus coding rate \(codingRate) not supported")
        return UInt32(truncatingIfNeeded: samples * (clockRate / codingRate))
    }

    /// Samples (per channel) at `codingRate` covered by `ticks` RTP ticks.
    /// - Precondition: `codingRate` is an Opus rate.
    @inlinable
    public static func samples(ticks: Int64, codingRate: Int) -> Int64 {
        precondition(isCodingRate(codingRate), "Opus coding rate \(codingRate) not supported")
        return ticks / Int64(clockRate / codingRate)
    }

    /// RTP ticks for a frame duration given in microseconds (2.5 ms = 2500 → 120 ticks).
    @inlinable
    public static func ticks(microseconds: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: microseconds * clockRate / 1_000_000)
    }
}

/// Stamps outgoing RTP packets: sequence number, timestamp, SSRC and marker (RFC 3550 5.1, RFC 3551 4.1).
///
/// The initial sequence number and timestamp are random (RFC 3550 5.1) from an injected generator, so tests can
/// seed them. The marker is set on the first packet and on the first packet after a gap in transmission
/// (silence suppression / DTX): call ``skip(ticks:)`` for each frame that is not sent.
public struct RTPPacketizer: Sendable {
    public var payloadType: UInt8
    /// The synchronization source; change it with ``changeSSRC(_:)`` after a collision.
    public private(set) var ssrc: UInt32
    /// The sequence number the next packet will carry.
    public private(set) var nextSequenceNumber: UInt16
    /// The timestamp the next packet will carry.
    public private(set) var nextTimestamp: UInt32
    /// Whether the next packet starts a talkspurt.
    public private(set) var markerPending = true
    /// Packets and payload octets sent: the SR sender info (RFC 3550 6.4.1).
    public private(set) var packetCount: UInt32 = 0
    public private(set) var octetCount: UInt32 = 0

    /// A packetizer with explicit initial values (tests, or a restart that must continue a stream).
    public init(payloadType: UInt8, ssrc: UInt32, initialSequenceNumber: UInt16, initialTimestamp: UInt32) {
        precondition(payloadType < 128, "payload type \(payloadType) not in 0...127")
        self.payloadType = payloadType
        self.ssrc = ssrc
        self.nextSequenceNumber = initialSequenceNumber
        self.nextTimestamp = initialTimestamp
    }

    /// A packetizer with random SSRC, initial sequence number and timestamp from `generator`.
    public init(payloadType: UInt8, using generator: inout some RandomNumberGenerator) {
        self.init(
            payloadType: payloadType, ssrc: UInt32.random(in: .min ... .max, using: &generator),
            initialSequenceNumber: UInt16.random(in: .min ... .max, using: &generator),
            initialTimestamp: UInt32.random(in: .min ... .max, using: &generator))
    }

    /// Writes the next packet (header then `payload`) into `buffer` and returns its length.
    /// - Complexity: O(packet size); no allocation.
    public mutating func packetize(
        payload: UnsafeRawBufferPointer, ticks: UInt32, into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        let marker = markerPending
        markerPending = false
        return write(
            payload: payload, payloadType: payloadType, timestamp: nextTimestamp, marker: marker, ticks: ticks,
            into: buffer)
    }

    /// Writes a packet of another payload type in this stream's SSRC and sequence space — an RFC 4733 event in
    /// place of an audio frame, whose `timestamp` is the event's start — and advances the audio timestamp by
    /// `ticks` as the frame it replaces would have. The pending marker is left for the next audio packet.
    /// - Complexity: O(packet size); no allocation.
    public mutating func packetize(
        payload: UnsafeRawBufferPointer, payloadType otherType: UInt8, timestamp: UInt32, marker: Bool,
        ticks: UInt32, into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        write(
            payload: payload, payloadType: otherType, timestamp: timestamp, marker: marker, ticks: ticks, into: buffer)
    }

    /// The fixed header written in place (no CSRCs, no extension, no padding) — building an `RTPHeader` value per
    /// packet cost retains of its CSRC array and extension in a conference room's per-listener loop — then the
    /// payload; advances the sequence number and the audio timestamp and counts the packet for the sender report.
    private mutating func write(
        payload: UnsafeRawBufferPointer, payloadType type: UInt8, timestamp: UInt32, marker: Bool, ticks: UInt32,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition(type < 128, "payload type \(type) not in 0...127")
        let total = 12 + payload.count
        precondition(buffer.count >= total, "buffer of \(buffer.count) bytes too small for a \(total)-byte packet")
        RTPHeader.writeFixedHeader(
            flags: 0, marker: marker, payloadType: type, sequenceNumber: nextSequenceNumber, timestamp: timestamp,
            ssrc: ssrc, into: buffer)
        let end = buffer.put(payload, at: 12)
        nextSequenceNumber &+= 1
        nextTimestamp &+= ticks
        packetCount &+= 1
        octetCount &+= UInt32(truncatingIfNeeded: payload.count)
        return end
    }

    /// Accounts for `ticks` of media that are not sent (DTX, muted): the timestamp advances, the sequence number
    /// does not, and the next packet carries the marker.
    public mutating func skip(ticks: UInt32) {
        nextTimestamp &+= ticks
        markerPending = true
    }

    /// Forces the marker on the next packet (e.g. the application knows a talkspurt starts).
    public mutating func markNextPacket() { markerPending = true }

    /// Switches to a new SSRC (after a collision, RFC 3550 8.2); counts restart, as they are per source.
    public mutating func changeSSRC(_ newSSRC: UInt32) {
        ssrc = newSSRC
        packetCount = 0
        octetCount = 0
    }
}
