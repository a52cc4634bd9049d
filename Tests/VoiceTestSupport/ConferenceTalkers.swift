import Foundation
import VoiceCore

/// The talkers of the conference tests (a room through Kamailio, DTLS-SRTP participants, the calling client in a
/// room): real speech from ../shared when it is there; without it (a fresh CI machine) the repository's speech-like
/// vectors (`TestVectors/speech_like_16k.wav`, `speech_like_16k_b.wav`) and further talkers of the same kind that
/// the caller generates (VoiceLab's `SignalGenerator.speechLike`, which this target cannot link), so that the rooms
/// run everywhere. `CONFERENCE_SYNTHETIC_SPEECH=1` uses the synthetic material even when ../shared is present.
public enum ConferenceTalkers {
    public static let files = ["jfk_16k_mono.wav", "pjsip_input_16k.wav", "pystoi_clean_16k.wav"]
    /// Speech that nobody in the room played: the control each measure must reject.
    public static let unrelatedFile = "mediastreamer2_hello_16k.wav"

    /// Whether the talkers are real speech from ../shared (else the repository's speech-like signals).
    public static var usesRealSpeech: Bool {
        SharedTestData.isPresent && ProcessInfo.processInfo.environment["CONFERENCE_SYNTHETIC_SPEECH"] == nil
    }

    /// The three talkers and the control, as 16 kHz samples (not yet normalised). `speechLike(seed)`: 10 s of
    /// speech-like signal for seeds 41 (third talker) and 59 (control).
    public static func material(speechLike: (UInt64) -> [Int16]) throws -> (talkers: [[Int16]], unrelated: [Int16]) {
        if usesRealSpeech {
            let talkers = try files.map { try WAVFile.read(path: SharedTestData.speech + "/" + $0).int16Samples }
            return (talkers, try WAVFile.read(path: SharedTestData.speech + "/" + unrelatedFile).int16Samples)
        }
        let vectors = SharedTestData.repository.appendingPathComponent("TestVectors")
        let talkers = [
            try WAVFile.read(path: vectors.appendingPathComponent("speech_like_16k.wav").path).int16Samples,
            try WAVFile.read(path: vectors.appendingPathComponent("speech_like_16k_b.wav").path).int16Samples,
            speechLike(41)
        ]
        return (talkers, speechLike(59))
    }

    /// `samples` scaled to an RMS of 3000 (−21 dBFS): the recordings differ by 15 dB, a client's AGC would even
    /// them out.
    public static func normalised(_ samples: [Int16]) -> [Int16] {
        let rms = (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))).squareRoot()
        let gain = rms > 0 ? 3_000 / rms : 1
        return samples.map { Int16(max(-32_768, min(32_767, (Double($0) * gain).rounded()))) }
    }

    /// `samples` normalised and repeated to last at least `seconds`.
    public static func looped(_ samples: [Int16], seconds: Double) -> [Int16] {
        let normal = normalised(samples)
        return Array(repeatElement(normal, count: Int(seconds * 16_000) / max(normal.count, 1) + 1).joined())
    }
}
