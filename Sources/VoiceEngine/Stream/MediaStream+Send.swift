import VoiceCodec
import VoiceCore
import VoiceDSP
import VoiceRTP
import VoiceSRTP

extension MediaStream {
    /// Far-end level (mean square, 16-bit units²) above which a capture block counts towards the ERLE estimate:
    /// −50 dBFS.
    static let erleReferenceThreshold = 10_700.0

    /// Hands the stream one captured 10 ms block at the device rate. Every ptime worth of audio becomes one
    /// packet through ``sink``. Never throws: component failures are counted in `processingErrors`.
    /// - Precondition: `frame.format == configuration.deviceFormat`.
    public func processCapture(_ frame: AudioFrame, now: MediaTime) {
        precondition(
            frame.format == configuration.deviceFormat,
            "capture frame \(frame.format) is not the device format")
        stats.captureBlocks += 1
        frame.withUnsafeSamples { input in
            if let resampler = captureResampler {
                do {
                    let produced = try resampler.process(input, into: captureScratch).produced
                    _ = captureRing.write(UnsafeBufferPointer(rebasing: captureScratch[0..<produced]))
                } catch {
                    stats.processingErrors += 1
                }
            } else {
                _ = captureRing.write(input)
            }
        }
        while captureRing.availableToRead >= processingBlock {
            _ = captureRing.read(into: micBlock)
            processBlock(now: now)
        }
    }

    /// Echo cancellation and preprocessing of one processing-rate block, then into the encoder's frame.
    func processBlock(now: MediaTime) {
        if let echo = echoCanceller {
            do {
                if try echo.processCapture(UnsafeBufferPointer(micBlock), into: processedBlock) {
                    stats.voiceActiveBlocks += 1
                }
                transientSuppressor?.process(processedBlock, farEndMeanSquare: echo.lastReferenceMeanSquare)
                if echo.lastReferenceMeanSquare > Self.erleReferenceThreshold {
                    erleMic += meanSquare(micBlock)
                    erleOut += meanSquare(processedBlock)
                }
            } catch {
                stats.processingErrors += 1
                _ = processedBlock.update(fromContentsOf: micBlock)
            }
        } else {
            _ = processedBlock.update(fromContentsOf: micBlock)
        }
        if isMuted { processedBlock.update(repeating: 0) }
        _ = UnsafeMutableBufferPointer(rebasing: frameBuffer[frameFill..<(frameFill + processingBlock)])
            .update(fromContentsOf: processedBlock)
        frameFill += processingBlock
        if frameFill == frameSamples {
            frameFill = 0
            sendFrame(now: now)
        }
    }

    private func meanSquare(_ b: UnsafeMutableBufferPointer<Int16>) -> Double {
        var sum = 0.0
        for s in b { sum += Double(s) * Double(s) }
        return sum / Double(b.count)
    }

    /// Encodes the full frame and sends it, unless on hold or DTX says it is not worth sending.
    func sendFrame(now: MediaTime) {
        sendOneFrame(dtx: encoder?.configuration.dtx ?? false, now: now) {
            do {
                let length =
                    if let encoder {
                        try encoder.encode(UnsafeBufferPointer(frameBuffer), into: opusBuffer)
                    } else {
                        try telephonyEncoder!.encode(UnsafeBufferPointer(frameBuffer), into: opusBuffer)
                    }
                return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(opusBuffer)[0..<length])
            } catch {
                stats.processingErrors += 1
                return nil
            }
        }
    }

    /// Sends one frame that was encoded elsewhere — a conference mixer encodes the mix once and hands the same
    /// Opus packet to every listener's stream — through this stream's RTP packetizer, SRTP and ``sink``, so only
    /// the RTP header and the protection are per stream. Call it once per ptime in place of
    /// ``processCapture(_:now:)`` (never both for the same frame). A 1–2 byte packet with `dtx` set is not sent
    /// (the timestamp advances, as for the stream's own DTX); on hold nothing is sent. No allocation.
    /// - Precondition: `payload` is one ptime of Opus at this stream's processing rate and fits
    ///   ``MediaStreamConfiguration/maximumDatagramBytes``.
    public func sendEncodedFrame(_ payload: UnsafeRawBufferPointer, dtx: Bool, now: MediaTime) {
        precondition(frameFill == 0, "sendEncodedFrame between capture blocks of a partly filled frame")
        sendOneFrame(dtx: dtx, now: now) { payload }
    }

    /// One ptime's send step: nothing on hold, otherwise the payload `encode` gives (nil: encoding failed, the
    /// timestamp still advances) through ``sendPayload(_:dtx:now:)``; the SR anchor moves either way.
    private func sendOneFrame(dtx: Bool, now: MediaTime, _ encode: () -> UnsafeRawBufferPointer?) {
        defer {
            anchorTimestamp = packetizer.nextTimestamp
            anchorTime = now
        }
        if isOnHold {
            packetizer.skip(ticks: frameTicks)
            stats.framesSuppressed += 1
            return
        }
        if sendTelephoneEventIfDue(now: now) { return }
        guard let payload = encode() else {
            packetizer.skip(ticks: frameTicks)
            return
        }
        sendPayload(payload, dtx: dtx, now: now)
    }

    /// RTP → SRTP → sink for one encoded frame (the stream's own or one encoded elsewhere).
    private func sendPayload(_ payload: UnsafeRawBufferPointer, dtx: Bool, now: MediaTime) {
        if dtx && payload.count <= 2 {
            // DTX: nothing worth sending; the timestamp advances and the next packet carries the marker.
            packetizer.skip(ticks: frameTicks)
            stats.framesSuppressed += 1
            return
        }
        let length = packetizer.packetize(
            payload: payload, ticks: frameTicks, into: UnsafeMutableRawBufferPointer(sendBuffer))
        sendPacket(length: length, now: now)
    }

    /// SRTP → sink for the RTP packet of `packetLength` bytes at the start of `sendBuffer`.
    func sendPacket(length packetLength: Int, now: MediaTime) {
        let buffer = UnsafeMutableRawBufferPointer(sendBuffer)
        var packetLength = packetLength
        switchOutboundKeyIfDue(now: now)
        if let srtp = unretainedSRTPOut {
            // -1: protect failed (counted below); the session is held by `srtpOut` (no retain here).
            packetLength = srtp._withUnsafeGuaranteedRef { session in
                do { return try session.protect(buffer, length: packetLength) } catch { return -1 }
            }
            if packetLength < 0 {
                stats.processingErrors += 1
                return
            }
        }
        sink.send(
            UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<packetLength]),
            kind: .rtp, now: now)
        stats.packetsSent += 1
        stats.bytesSent += packetLength
        sentSinceLastReport = true
    }

    /// Produces the next 10 ms block for the loudspeaker, at the device rate: jitter-buffer tick(s) at the
    /// processing rate → mixer → echo-canceller reference → resampler.
    /// - Parameter scheduled: the time this tick was due at, on the clock packet arrivals are on (a real-time
    ///   caller's deadline, which a late tick does not move): the jitter buffer measures its playout delay from
    ///   it. nil: the buffer infers its tick clock from arrivals, which assumes every tick ran on time.
    /// - Precondition: `frame.format == configuration.deviceFormat`.
    public func renderPlayout(into frame: inout AudioFrame, now: MediaTime, scheduledAt scheduled: MediaTime? = nil) {
        precondition(
            frame.format == configuration.deviceFormat,
            "playout frame \(frame.format) is not the device format")
        stats.playoutBlocks += 1
        guard let resampler = playoutResampler else {
            frame.withUnsafeMutableSamples { out in playoutTick(into: out, now: now, scheduled: scheduled) }
            return
        }
        var guardTicks = 0
        while playRing.availableToRead < deviceBlock && guardTicks < 4 {
            // A second jitter-buffer tick in one device block plays the next 10 ms.
            let due = scheduled.map { MediaTime(nanoseconds: $0.nanoseconds + Int64(guardTicks) * 10_000_000) }
            guardTicks += 1
            playoutTick(into: playBlock, now: now, scheduled: due)
            do {
                let produced = try resampler.process(UnsafeBufferPointer(playBlock), into: playScratch)
                    .produced
                _ = playRing.write(UnsafeBufferPointer(rebasing: playScratch[0..<produced]))
            } catch {
                stats.processingErrors += 1
            }
        }
        frame.withUnsafeMutableSamples { out in
            let got = playRing.read(into: out)
            if got < out.count { UnsafeMutableBufferPointer(rebasing: out[got...]).update(repeating: 0) }
        }
    }

    /// One jitter-buffer tick into `block` (processing rate), mixed, and recorded as the echo reference.
    func playoutTick(into block: UnsafeMutableBufferPointer<Int16>, now: MediaTime, scheduled: MediaTime?) {
        if let scheduled {
            jitterBuffer.playoutTick(into: block, scheduledAt: scheduled)
        } else {
            jitterBuffer.playoutTick(into: block)
        }
        detectInBandDTMF(in: UnsafeBufferPointer(block))
        mixer?.mix(into: block, sampleRate: configuration.processingRate, now: now)
        if let echo = echoCanceller {
            do { try echo.addFarEnd(UnsafeBufferPointer(block)) } catch { stats.processingErrors += 1 }
        }
    }
}
