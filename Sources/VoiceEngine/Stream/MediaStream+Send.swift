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
        defer {
            anchorTimestamp = packetizer.nextTimestamp
            anchorTime = now
        }
        if isOnHold {
            packetizer.skip(ticks: frameTicks)
            stats.framesSuppressed += 1
            return
        }
        let length: Int
        do {
            length = try encoder.encode(UnsafeBufferPointer(frameBuffer), into: opusBuffer)
        } catch {
            stats.processingErrors += 1
            packetizer.skip(ticks: frameTicks)
            return
        }
        if encoder.configuration.dtx && length <= 2 {
            // DTX: nothing worth sending; the timestamp advances and the next packet carries the marker.
            packetizer.skip(ticks: frameTicks)
            stats.framesSuppressed += 1
            return
        }
        let buffer = UnsafeMutableRawBufferPointer(sendBuffer)
        var packetLength = packetizer.packetize(
            payload: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(opusBuffer)[0..<length]),
            ticks: frameTicks,
            into: buffer)
        switchOutboundKeyIfDue(now: now)
        if let srtp = srtpOut {
            do {
                packetLength = try srtp.protect(buffer, length: packetLength)
            } catch {
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
    /// - Precondition: `frame.format == configuration.deviceFormat`.
    public func renderPlayout(into frame: inout AudioFrame, now: MediaTime) {
        precondition(
            frame.format == configuration.deviceFormat,
            "playout frame \(frame.format) is not the device format")
        stats.playoutBlocks += 1
        guard let resampler = playoutResampler else {
            frame.withUnsafeMutableSamples { out in playoutTick(into: out, now: now) }
            return
        }
        var guardTicks = 0
        while playRing.availableToRead < deviceBlock && guardTicks < 4 {
            guardTicks += 1
            playoutTick(into: playBlock, now: now)
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
    func playoutTick(into block: UnsafeMutableBufferPointer<Int16>, now: MediaTime) {
        jitterBuffer.playoutTick(into: block)
        mixer?.mix(into: block, sampleRate: configuration.processingRate, now: now)
        if let echo = echoCanceller {
            do { try echo.addFarEnd(UnsafeBufferPointer(block)) } catch { stats.processingErrors += 1 }
        }
    }
}
