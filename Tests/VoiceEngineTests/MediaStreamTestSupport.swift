import Foundation
import VoiceTestSupport
import VoiceEngine
import VoiceLab

/// Helpers for the MediaStream, simulation, replay and report tests.
enum StreamTestSupport {
    /// A speech-like signal (syllables and pauses) as 16-bit PCM.
    static func speech(sampleRate: Int = 16_000, seconds: Double, seed: UInt64) -> [Int16] {
        SignalGenerator.toInt16(
            SignalGenerator.speechLike(sampleRate: sampleRate, seconds: seconds, seed: seed))
    }

    /// Plain-RTP stream configuration for fast tests: 16 kHz device and processing, no voice processing.
    static func configuration(
        seed: UInt64, srtp: MediaStreamSRTP? = nil, deviceRate: Int = 16_000,
        voiceProcessing: Bool = false,
        fec: Bool = false, expectedLoss: Int = 0
    ) -> MediaStreamConfiguration {
        var opus = MediaStreamConfiguration.defaultOpus
        opus.inbandFEC = fec
        opus.expectedLossPercent = expectedLoss
        return MediaStreamConfiguration(
            opus: opus, deviceFormat: AudioFormat(sampleRate: deviceRate), srtp: srtp,
            voiceProcessing: voiceProcessing,
            seed: seed)
    }

    /// A matching pair of SRTP settings: A's local key is B's remote key and vice versa.
    static func srtpPair(suite: SRTPCryptoSuite = .aesCM128HmacSHA1_80, seed: UInt64 = 99) -> (
        MediaStreamSRTP, MediaStreamSRTP
    ) {
        var g = SeededGenerator(seed: seed)
        let ka = SRTPMasterKey.random(for: suite, using: &g)
        let kb = SRTPMasterKey.random(for: suite, using: &g)
        return (
            MediaStreamSRTP(suite: suite, localKey: ka, remoteKey: kb),
            MediaStreamSRTP(suite: suite, localKey: kb, remoteKey: ka)
        )
    }

    /// The lag (samples, 0...maxLag) by which `test` trails `reference`: coarse search on 4× decimated signals,
    /// then refined at full rate.
    static func lag(reference: [Int16], test: [Int16], maxLag: Int) -> Int {
        func decimate(_ x: [Int16]) -> [Float] {
            stride(from: 0, to: x.count - 3, by: 4).map { i in
                (Float(x[i]) + Float(x[i + 1]) + Float(x[i + 2]) + Float(x[i + 3])) / 4
            }
        }
        let r4 = decimate(reference)
        let t4 = decimate(test)
        let coarse = SignalMetrics.bestLag(reference: r4, test: t4, maxLag: maxLag / 4) * 4
        let r = SignalGenerator.toFloat(reference)
        let t = SignalGenerator.toFloat(test)
        var best = coarse
        var bestScore = -Double.infinity
        for lag in max(0, coarse - 8)...(coarse + 8) {
            var score = 0.0
            var i = 0
            while i + lag < t.count && i < r.count {
                score += Double(r[i]) * Double(t[i + lag])
                i += 1
            }
            if score > bestScore {
                bestScore = score
                best = lag
            }
        }
        return best
    }

    /// Segmental SNR (dB, 20 ms frames) of `test` against `reference` after alignment, over `range` of the reference.
    static func alignedSegmentalSNR(
        reference: [Int16], test: [Int16], sampleRate: Int, maxLagSeconds: Double = 0.4
    )
        -> (snr: Double, lag: Int)
    {
        let lag = lag(reference: reference, test: test, maxLag: Int(maxLagSeconds * Double(sampleRate)))
        let aligned = Array(test.dropFirst(lag))
        let n = min(reference.count, aligned.count)
        let snr = SignalMetrics.segmentalSNR(
            reference: SignalGenerator.toFloat(Array(reference[0..<n])),
            test: SignalGenerator.toFloat(Array(aligned[0..<n])),
            frameLength: sampleRate / 50, silenceThresholdDBFS: -40)
        return (snr, lag)
    }

    /// RMS level in dBFS of a slice.
    static func level(_ x: ArraySlice<Int16>) -> Double {
        SignalMetrics.rmsDBFS(SignalGenerator.toFloat(Array(x)))
    }

    /// A temporary directory for files written by a test.
    static func temporaryDirectory() -> URL { TestFiles.temporaryDirectory() }
}

/// A sink that keeps every datagram a stream sends, for tests that feed them to another stream by hand.
final class CollectingSink: MediaPacketSink {
    var packets: [(bytes: [UInt8], kind: MediaPacketKind, time: MediaTime)] = []
    func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
        packets.append((Array(datagram), kind, now))
    }
}
