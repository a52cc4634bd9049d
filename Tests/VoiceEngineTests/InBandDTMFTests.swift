import Foundation
import Testing
import VoiceEngine
import VoiceRTP
import VoiceTestSupport

/// Keys sent as tones in the audio (``MediaStreamConfiguration/detectsInBandDTMF``): the engine's tone generator
/// makes them on one stream's microphone, the codec carries them as audio (no telephone-events negotiated), and the
/// other stream's spandsp receiver reports them as keys, in order, once each — at 8 kHz (G.711, no resampling) and
/// at 16 kHz (Opus, brought down to 8 kHz for the receiver). Off by default; speech is not taken for keys.
@Suite struct InBandDTMFTests {
    static let keys = "159#0*AD"

    /// A → B in fast time: `audio` (at 16 kHz) into A's microphone, B's playout rendered every 10 ms; the keys B
    /// reports.
    static func keysHeard(codec: AudioCodec, detects: Bool, audio: [Int16]) throws -> (String, MediaStreamStatistics) {
        let rate = codec.fixedSampleRate ?? 16_000
        var configuration = MediaStreamConfiguration(
            codec: codec, processingRate: rate, deviceFormat: .mono16k, voiceProcessing: false,
            payloadType: codec.staticPayloadType, seed: 5)
        let sink = CollectingSink()
        let a = try MediaStream(configuration: configuration, sink: sink)
        configuration.seed = 6
        configuration.detectsInBandDTMF = detects
        let b = try MediaStream(configuration: configuration, sink: NullPacketSink())
        var now = MediaTime.zero
        var out = AudioFrame(format: .mono16k)
        var heard = ""
        for tick in 0..<(audio.count / 160) {
            a.processCapture(
                AudioFrame(format: .mono16k, samples: Array(audio[(tick * 160)..<(tick * 160 + 160)])), now: now)
            for packet in sink.packets where packet.kind == .rtp { b.receiveDatagram(packet.bytes, arrival: now) }
            sink.packets.removeAll()
            b.renderPlayout(into: &out, now: now)
            while let digit = b.takeReceivedDTMF() { heard.append(digit.character) }
            now += .milliseconds(10)
        }
        return (heard, b.statistics)
    }

    /// The keys' tones with half a second of silence around them, at 16 kHz.
    static var tones: [Int16] {
        let silence = [Int16](repeating: 0, count: 8_000)
        return silence + ToneSpec.dtmfSamples(keys, sampleRate: 16_000)! + silence
    }

    @Test(arguments: [AudioCodec.pcmu, .pcma, .opus])
    func tonesOfTheToneGeneratorAreReportedAsKeys(codec: AudioCodec) throws {
        let (heard, statistics) = try Self.keysHeard(codec: codec, detects: true, audio: Self.tones)
        #expect(heard == Self.keys, "\(codec)")
        #expect(statistics.inBandDTMFDigitsReceived == Self.keys.count)
        #expect(statistics.dtmfDigitsReceived == Self.keys.count)
        #expect(statistics.processingErrors == 0)
    }

    @Test func offByDefault() throws {
        #expect(MediaStreamConfiguration().detectsInBandDTMF == false)
        let (heard, statistics) = try Self.keysHeard(codec: .pcmu, detects: false, audio: Self.tones)
        #expect(heard.isEmpty && statistics.inBandDTMFDigitsReceived == 0)
    }

    /// Speech through G.711 with the receiver on yields no key: real speech when the shared recordings are
    /// present, else the repository's speech-like signal.
    @Test func speechIsNotTakenForKeys() throws {
        var speech = StreamTestSupport.speech(seconds: 12, seed: 3)
        if SharedTestData.isPresent {
            speech =
                try WAVFile.read(path: SharedTestData.speech + "/jfk_16k_mono.wav").int16Samples
                + WAVFile.read(path: SharedTestData.speech + "/pjsip_input_16k.wav").int16Samples
        }
        let (heard, statistics) = try Self.keysHeard(codec: .pcmu, detects: true, audio: speech)
        #expect(heard.isEmpty, "speech was taken for keys: \(heard)")
        #expect(statistics.packetsReceived > speech.count / 160 / 2 - 10)
    }

    @Test func keyTonesAreTheQ23Pairs() throws {
        #expect(ToneSpec.dtmf("5")?.frequencies == [770, 1336])
        #expect(ToneSpec.dtmf("d")?.frequencies == [941, 1633])
        #expect(ToneSpec.dtmf("x") == nil)
        #expect(ToneSpec.dtmfSamples("1x", sampleRate: 8_000) == nil)
        #expect(ToneSpec.dtmfSamples("12", sampleRate: 8_000)?.count == 2 * 1_600)
    }
}
