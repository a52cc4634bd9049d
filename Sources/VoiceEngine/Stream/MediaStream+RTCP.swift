import VoiceCore
import VoiceRTP
import VoiceSRTP

extension MediaStream {
    /// Sends an RTCP compound packet when the RFC 3550 timer (with reconsideration) says so: an SR if we sent RTP
    /// since the last report, else an RR, with a report block about the peer once its stream is valid, and an
    /// SDES CNAME. Call it regularly (every tick is fine: it returns at once until the scheduled time).
    /// - Returns: whether a report was sent.
    @discardableResult
    public func pollRTCP(now: MediaTime) -> Bool {
        guard now >= scheduler.nextScheduled else { return false }
        scheduler.weSent = sentSinceLastReport
        scheduler.senders = (sentSinceLastReport ? 1 : 0) + (remoteSentSinceLastReport ? 1 : 0)
        switch scheduler.timerExpired(now: now, using: &random) {
        case .wait: return false
        case .send: break
        }
        let length = sendReport(now: now, bye: false)
        scheduler.sent(size: length, now: now, using: &random)
        sentSinceLastReport = false
        remoteSentSinceLastReport = false
        return true
    }

    /// Sends a final report with an RTCP BYE (RFC 3550 §6.6), at the end of the call.
    public func sendBye(now: MediaTime) {
        _ = sendReport(now: now, bye: true)
    }

    /// Builds, protects and sends one compound packet; returns its length on the wire (0 if it could not be sent).
    private func sendReport(now: MediaTime, bye: Bool) -> Int {
        var blocks: [RTCPReportBlock] = []
        if let remote = remoteSSRC, receiveStatistics.isValid {
            blocks.append(receiveStatistics.makeReportBlock(ssrc: remote, now: now))
        }
        var packets: [RTCPPacket] = []
        if sentSinceLastReport {
            let elapsed = max(0, (now - anchorTime).nanoseconds)
            let rtp =
                anchorTimestamp
                &+ UInt32(truncatingIfNeeded: elapsed * Int64(OpusRTP.clockRate) / 1_000_000_000)
            packets.append(
                .senderReport(
                    RTCPSenderReport(
                        ssrc: ssrc, ntpTimestamp: ntp(at: now), rtpTimestamp: rtp,
                        packetCount: packetizer.packetCount,
                        octetCount: packetizer.octetCount, reportBlocks: blocks)))
        } else {
            packets.append(.receiverReport(RTCPReceiverReport(ssrc: ssrc, reportBlocks: blocks)))
        }
        packets.append(.sourceDescription(RTCPSourceDescription(ssrc: ssrc, cname: cname)))
        if bye { packets.append(.bye(RTCPBye(ssrcs: [ssrc]))) }
        switchOutboundKeyIfDue(now: now)
        let buffer = UnsafeMutableRawBufferPointer(rtcpBuffer)
        let size = packets.reduce(0) { $0 + $1.serializedLength }
        let trailer = srtpOut?.rtcpOverhead ?? 0
        guard size + trailer <= buffer.count else {
            stats.processingErrors += 1
            return 0
        }
        var length = RTCPPacket.serialize(compound: packets, into: buffer)
        if let srtp = srtpOut {
            do { length = try srtp.protectRTCP(buffer, length: length) } catch {
                stats.processingErrors += 1
                return 0
            }
        }
        sink.send(
            UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<length]), kind: .rtcp,
            now: now)
        stats.rtcpSent += 1
        stats.rtcpBytesSent += length
        return length
    }
}
