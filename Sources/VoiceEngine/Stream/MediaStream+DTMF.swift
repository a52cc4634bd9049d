import VoiceCodec
import VoiceDSP
import VoiceRTP

/// A stream's RFC 4733 state: the sender that replaces audio frames by event packets, the receiver that tells
/// digits apart, and the digits received and not yet taken (inline storage: nothing allocates on the audio path).
struct MediaStreamDTMF {
    /// Received digits that can wait for ``MediaStream/takeReceivedDTMF()``; more are counted and dropped.
    static let receivedCapacity = 32

    var sender: TelephoneEventSender
    var receiver = TelephoneEventReceiver()
    private var received = InlineArray<32, UInt8>(repeating: 0)
    private var receivedHead = 0
    private var receivedCount = 0
    /// Digits dropped because nobody took the received ones.
    private(set) var receivedOverflows = 0

    /// - Parameters: `ticksPerPacket` of the audio's clock at `audioClockRate`; events at `eventClockRate` (nil:
    ///   the audio's) count their durations in that clock.
    init(ticksPerPacket: UInt32, packetMilliseconds: Int, audioClockRate: Int, eventClockRate: Int?) {
        let eventTicks = UInt64(ticksPerPacket) * UInt64(eventClockRate ?? audioClockRate) / UInt64(audioClockRate)
        sender = TelephoneEventSender(
            ticksPerPacket: UInt32(max(1, eventTicks)), packetMilliseconds: packetMilliseconds)
    }

    mutating func pushReceived(_ digit: DTMFDigit) {
        guard receivedCount < Self.receivedCapacity else {
            receivedOverflows += 1
            return
        }
        received[(receivedHead + receivedCount) % Self.receivedCapacity] = digit.event
        receivedCount += 1
    }

    mutating func popReceived() -> DTMFDigit? {
        guard receivedCount > 0 else { return nil }
        let event = received[receivedHead]
        receivedHead = (receivedHead + 1) % Self.receivedCapacity
        receivedCount -= 1
        return DTMFDigit(event: event)
    }
}

/// Keys sent as tones in the received audio (``MediaStreamConfiguration/detectsInBandDTMF``): each decoded block at
/// the processing rate, brought down to 8 kHz when it is not already, goes through spandsp's DTMF receiver. Its
/// resampler and buffer are made in `init`; ``process(_:)`` never allocates.
final class MediaStreamInBandDTMF {
    let detector = InBandDTMFDetector()
    let resampler: Resampler?
    let scratch: UnsafeMutableBufferPointer<Int16>

    init(processingRate: Int, block: Int) throws(ResamplerError) {
        resampler =
            processingRate == InBandDTMFDetector.sampleRate
            ? nil : try Resampler(inputRate: processingRate, outputRate: InBandDTMFDetector.sampleRate)
        scratch = .allocate(capacity: resampler?.maximumOutputCount(forInput: block) ?? block)
        scratch.initialize(repeating: 0)
    }

    deinit { scratch.deallocate() }

    /// Feeds one decoded block (processing rate) to the receiver.
    func process(_ block: UnsafeBufferPointer<Int16>) throws(ResamplerError) {
        guard let resampler else {
            detector.process(block)
            return
        }
        let produced = try resampler.process(block, into: scratch).produced
        detector.process(UnsafeBufferPointer(rebasing: scratch[0..<produced]))
    }
}

extension MediaStream {
    /// Whether the peer negotiated RFC 4733 telephone-events, so ``sendDTMF(_:)`` can send digits in RTP.
    public var sendsTelephoneEvents: Bool { configuration.telephoneEventPayloadType != nil }

    /// Queues `digit` to be sent as an RFC 4733 event in place of the next audio frames (100 ms tones, 60 ms
    /// apart). False when telephone-events were not negotiated or ``TelephoneEventSender/capacity`` digits
    /// already wait. No allocation.
    @discardableResult
    public func sendDTMF(_ digit: DTMFDigit) -> Bool {
        guard sendsTelephoneEvents else { return false }
        return dtmf.sender.enqueue(digit)
    }

    /// The oldest digit the peer sent that was not taken yet, or nil. No allocation.
    public func takeReceivedDTMF() -> DTMFDigit? { dtmf.popReceived() }

    /// Digits still to be sent (the one sending included).
    public var pendingDTMFCount: Int { dtmf.sender.pendingCount }

    /// In the send step of one packet slot: sends the telephone-event packet due in this slot, if any, in place
    /// of the audio frame (same SSRC and sequence space; the audio timestamp advances by the frame it replaces).
    /// Returns whether it did.
    func sendTelephoneEventIfDue(now: MediaTime) -> Bool {
        guard let payloadType = configuration.telephoneEventPayloadType, dtmf.sender.isActive,
            let event = dtmf.sender.nextPacket(audioTimestamp: packetizer.nextTimestamp)
        else { return false }
        let scratch = UnsafeMutableRawBufferPointer(opusBuffer)
        event.payload.write(into: scratch)
        let buffer = UnsafeMutableRawBufferPointer(sendBuffer)
        let length = packetizer.packetize(
            payload: UnsafeRawBufferPointer(rebasing: scratch[0..<TelephoneEventPayload.length]),
            payloadType: payloadType, timestamp: event.timestamp, marker: event.marker, ticks: frameTicks,
            into: buffer)
        if event.marker { stats.dtmfDigitsSent += 1 }
        stats.telephoneEventPacketsSent += 1
        sendPacket(length: length, now: now)
        return true
    }

    /// In the playout path, on the decoded block (before local tones are mixed in): keys the in-band receiver
    /// completes wait for ``takeReceivedDTMF()`` beside those of telephone-events.
    func detectInBandDTMF(in block: UnsafeBufferPointer<Int16>) {
        guard let inBandDTMF else { return }
        do { try inBandDTMF.process(block) } catch { stats.processingErrors += 1 }
        while let key = inBandDTMF.detector.nextKey() {
            guard let digit = DTMFDigit(Character(Unicode.Scalar(key))) else { continue }
            stats.dtmfDigitsReceived += 1
            stats.inBandDTMFDigitsReceived += 1
            dtmf.pushReceived(digit)
        }
    }

    /// In the receive path, after SRTP, parsing and the RFC 3550 statistics: an event packet goes to the
    /// telephone-event receiver instead of the jitter buffer; a new digit waits for ``takeReceivedDTMF()``.
    func receiveTelephoneEvent(_ packet: RTPPacketView) {
        let payload: TelephoneEventPayload
        do { payload = try TelephoneEventPayload(parsing: packet.payload) } catch {
            stats.drops.malformedTelephoneEvent += 1
            return
        }
        if let digit = dtmf.receiver.receive(payload, timestamp: packet.timestamp, marker: packet.marker) {
            stats.dtmfDigitsReceived += 1
            dtmf.pushReceived(digit)
        }
    }
}

extension MediaStreamConfiguration {
    /// The telephone-event payload type must be a valid RTP type, outside the RTCP range and not the audio's.
    func validateTelephoneEventPayloadType() throws(MediaStreamError) {
        if let rate = telephoneEventClockRate, !(1_000...192_000).contains(rate) {
            throw .invalidConfiguration(field: "telephoneEventClockRate", reason: "\(rate) Hz is not an RTP clock rate")
        }
        guard let type = telephoneEventPayloadType else { return }
        guard type < 128, !(64...95).contains(type), type != payloadType else {
            throw .invalidConfiguration(
                field: "telephoneEventPayloadType",
                reason: "\(type) must be 0...127, outside 64...95 and not the audio's payload type \(payloadType)")
        }
    }
}
