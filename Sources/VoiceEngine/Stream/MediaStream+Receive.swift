import VoiceCore
import VoiceRTP
import VoiceSRTP

extension MediaStream {
    /// Whether a datagram is RTCP rather than RTP when both share one port (RFC 5761 §4): the second byte (marker
    /// bit + payload type) of RTCP is a packet type 192...223, which RTP payload types outside 64...95 never give.
    @inlinable
    public static func isRTCP(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= 2 && (192...223).contains(datagram[1])
    }

    /// Hands the stream one datagram from the network, with its arrival time on the stream's media clock.
    ///
    /// RTP goes through SRTP, parsing and statistics into the jitter buffer; RTCP updates RTT, the peer's loss
    /// and the encoder's FEC. Anything malformed, unauthenticated, replayed, from another SSRC, of another payload
    /// type or too large is counted by reason in ``MediaStreamStatistics/drops`` and dropped. Never throws, never
    /// traps on any input. No allocation for RTP.
    public func receiveDatagram(_ bytes: UnsafeRawBufferPointer, arrival: MediaTime) {
        let n = bytes.count
        if n == 0 {
            stats.drops.empty += 1
            return
        }
        if n > configuration.maximumDatagramBytes {
            stats.drops.tooLarge += 1
            return
        }
        if bytes[0] >> 6 != 2 {
            stats.drops.notRTP += 1
            return
        }
        // SRTP works in place; the caller's bytes are read-only.
        let buffer = UnsafeMutableRawBufferPointer(receiveBuffer)
        UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]).copyMemory(from: bytes)
        if Self.isRTCP(bytes) {
            receiveRTCP(length: n, arrival: arrival)
        } else {
            receiveRTP(length: n, arrival: arrival)
        }
    }

    /// Array convenience for ``receiveDatagram(_:arrival:)``.
    public func receiveDatagram(_ bytes: [UInt8], arrival: MediaTime) {
        bytes.withUnsafeBytes { receiveDatagram($0, arrival: arrival) }
    }

    private func receiveRTP(length n: Int, arrival: MediaTime) {
        let buffer = UnsafeMutableRawBufferPointer(receiveBuffer)
        guard n >= 12 else {
            stats.drops.malformedRTP += 1
            return
        }
        // The header is in the clear under SRTP: reject other sources and payload types before spending crypto.
        let packetSSRC =
            UInt32(buffer[8]) << 24 | UInt32(buffer[9]) << 16 | UInt32(buffer[10]) << 8
            | UInt32(buffer[11])
        if let remote = remoteSSRC, packetSSRC != remote {
            stats.drops.unknownSSRC += 1
            return
        }
        let packetType = buffer[1] & 0x7F
        if !configuration.acceptAnyPayloadType && packetType != configuration.payloadType
            && packetType != configuration.telephoneEventPayloadType
        {
            stats.drops.wrongPayloadType += 1
            return
        }
        var length = n
        if let srtp = srtpIn {
            do {
                length = try unprotectAcrossRekey(srtp, buffer, length: n)
            } catch {
                switch error {
                case .authenticationFailed: stats.drops.authenticationFailed += 1
                case .replayFail, .replayOld: stats.drops.replayed += 1
                default: stats.drops.malformedRTP += 1
                }
                return
            }
        }
        let packet: RTPPacketView
        do {
            packet = try RTPPacketView(
                UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<length]))
        } catch {
            stats.drops.malformedRTP += 1
            return
        }
        if remoteSSRC == nil { remoteSSRC = packetSSRC }
        let highestBefore = receiveStatistics.isValid ? receiveStatistics.extendedHighestSequence : nil
        let update = receiveStatistics.update(
            sequenceNumber: packet.sequenceNumber, rtpTimestamp: packet.timestamp, arrival: arrival)
        switch update {
        case .badSequence:
            stats.drops.badSequence += 1
            return
        case .accepted, .duplicate, .probation, .restarted:
            break
        }
        if let before = highestBefore, update == .accepted,
            receiveStatistics.extendedHighestSequence &- before > 1,
            receiveStatistics.extendedHighestSequence &- before < 3000
        {
            stats.lossRuns += 1
        }
        stats.packetsReceived += 1
        stats.bytesReceived += n
        remoteSentSinceLastReport = true
        if packetType == configuration.telephoneEventPayloadType {
            receiveTelephoneEvent(packet)
            return
        }
        let payload = packet.payload
        jitterBuffer.insert(
            payload: UnsafeBufferPointer(
                start: payload.baseAddress?.assumingMemoryBound(to: UInt8.self), count: payload.count),
            sequenceNumber: packet.sequenceNumber, rtpTimestamp: packet.timestamp &* jitterTimestampScale,
            arrival: arrival)
    }

    private func receiveRTCP(length n: Int, arrival: MediaTime) {
        let buffer = UnsafeMutableRawBufferPointer(receiveBuffer)
        var length = n
        if let srtp = srtcpIn ?? srtpIn {
            do {
                length =
                    srtcpIn != nil
                    ? try srtp.unprotectRTCP(buffer, length: n)
                    : try unprotectAcrossRekey(srtp, buffer, length: n, rtcp: true)
            } catch {
                switch error {
                case .authenticationFailed, .replayFail, .replayOld:
                    stats.drops.rtcpAuthenticationFailed += 1
                default: stats.drops.malformedRTCP += 1
                }
                return
            }
        }
        let packets: [RTCPPacket]
        do {
            packets = try RTCPPacket.parseCompound(
                UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<length]),
                validation: .reducedSize)
        } catch {
            stats.drops.malformedRTCP += 1
            return
        }
        stats.rtcpReceived += 1
        scheduler.receivedPacket(size: length)
        for packet in packets {
            switch packet {
            case .senderReport(let sr):
                if remoteSSRC == nil || sr.ssrc == remoteSSRC {
                    receiveStatistics.receivedSenderReport(ntp: sr.ntpTimestamp, arrival: arrival)
                }
                for block in sr.reportBlocks { handleReportBlock(block, arrival: arrival) }
            case .receiverReport(let rr):
                for block in rr.reportBlocks { handleReportBlock(block, arrival: arrival) }
            case .bye(let bye):
                // Only the peer we are listening to can end the call (a stale or foreign SSRC cannot).
                if let remote = remoteSSRC, bye.ssrcs.contains(remote) { stats.remoteSentBye = true }
            default:
                break
            }
        }
    }

    /// A report block about our stream: RTT (RFC 3550 §6.4.1), the peer's loss and jitter, and loss adaptation.
    func handleReportBlock(_ block: RTCPReportBlock, arrival: MediaTime) {
        guard block.ssrc == ssrc else { return }
        if block.lastSenderReport != 0 { stats.senderReportsAnswered += 1 }
        if let rtt = block.roundTripTime(arrival: ntp(at: arrival)) {
            let ms = rtt.milliseconds
            stats.roundTripMilliseconds = ms
            stats.roundTripSamples += 1
            stats.roundTripSumMilliseconds += ms
            stats.roundTripMinMilliseconds = min(stats.roundTripMinMilliseconds, ms)
            stats.roundTripMaxMilliseconds = max(stats.roundTripMaxMilliseconds, ms)
        }
        let fraction = Double(block.fractionLost) / 256
        stats.remoteFractionLost = fraction
        stats.remoteCumulativeLost = Int(block.cumulativeLost)
        stats.remoteJitterMilliseconds = Double(block.jitter) * 1000 / Double(configuration.codec.rtpClockRate)
        adaptToLoss(percent: fraction * 100)
    }

    /// ``LossAdaptationPolicy``: smoothed loss → FEC on/off with hysteresis and the expected-loss setting; the
    /// first report also ends the raised bitrate FEC started with.
    func adaptToLoss(percent x: Double) {
        let policy = configuration.lossAdaptation
        let firstReport = !haveRemoteLoss
        if haveRemoteLoss {
            stats.smoothedRemoteLossPercent += policy.smoothing * (x - stats.smoothedRemoteLossPercent)
        } else {
            stats.smoothedRemoteLossPercent = x
            haveRemoteLoss = true
        }
        guard policy.enabled, let encoder else { return }
        if firstReport && encoder.configuration.bitrate != configuration.opus.bitrate {
            do { try encoder.setBitrate(configuration.opus.bitrate) } catch { stats.processingErrors += 1 }
        }
        let s = stats.smoothedRemoteLossPercent
        let (wantFEC, expected) = policy.setting(forLossPercent: s, fecOn: encoder.configuration.inbandFEC)
        let fecOn = encoder.configuration.inbandFEC
        guard wantFEC != fecOn || expected != encoder.configuration.expectedLossPercent else { return }
        do {
            try encoder.setInbandFEC(wantFEC)
            try encoder.setExpectedLossPercent(expected)
            stats.fecAdaptations += 1
        } catch {
            stats.processingErrors += 1
        }
        stats.encoderFECEnabled = encoder.configuration.inbandFEC
        stats.encoderExpectedLossPercent = encoder.configuration.expectedLossPercent
    }
}
