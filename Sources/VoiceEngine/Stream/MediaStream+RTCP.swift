import VoiceCore
import VoiceRTP
import VoiceSRTP

extension MediaStream {
    /// The peer's reported loss (%), smoothed as ``LossAdaptationPolicy`` does (from its RTCP report blocks about
    /// our stream); nil before the first report. A cheap read, for a mixer steering a shared encoder by it.
    public var remoteLossPercent: Double? { haveRemoteLoss ? stats.smoothedRemoteLossPercent : nil }

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
    /// Written in place by ``RTCPReportWriter`` into the stream's RTCP buffer: no allocation, as on the rest of the
    /// audio path (a conference room calls this for every participant on its media thread).
    private func sendReport(now: MediaTime, bye: Bool) -> Int {
        var block: RTCPReportBlock?
        if let remote = remoteSSRC, receiveStatistics.isValid {
            block = receiveStatistics.makeReportBlock(ssrc: remote, now: now)
        }
        switchOutboundKeyIfDue(now: now)
        let buffer = UnsafeMutableRawBufferPointer(rtcpBuffer)
        let trailer = (srtcpOut ?? srtpOut)?.rtcpOverhead ?? 0
        let space = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<max(0, buffer.count - trailer)])
        var writer = RTCPReportWriter(space)
        var written: Bool
        if sentSinceLastReport {
            let elapsed = max(0, (now - anchorTime).nanoseconds)
            let rtp =
                anchorTimestamp
                &+ UInt32(truncatingIfNeeded: elapsed * Int64(configuration.codec.rtpClockRate) / 1_000_000_000)
            written = writer.senderReport(
                ssrc: ssrc, ntpTimestamp: ntp(at: now), rtpTimestamp: rtp, packetCount: packetizer.packetCount,
                octetCount: packetizer.octetCount, block: block)
        } else {
            written = writer.receiverReport(ssrc: ssrc, block: block)
        }
        // The CNAME is made contiguous UTF-8 at init, so this reads it in place.
        let sdes = cname.utf8.withContiguousStorageIfAvailable {
            writer.sourceDescription(ssrc: ssrc, cname: UnsafeRawBufferPointer($0))
        }
        written = written && sdes == true
        if bye { written = written && writer.bye(ssrc: ssrc) }
        guard written else {
            stats.processingErrors += 1
            return 0
        }
        var length = writer.length
        if let srtp = srtcpOut ?? srtpOut {
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
