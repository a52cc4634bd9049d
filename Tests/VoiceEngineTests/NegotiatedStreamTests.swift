import Foundation
import Testing
import VoiceEngine
import VoiceLab

/// The getting-started flow of the documentation, end to end: offer, answer, two streams, audio across.
@Suite("Negotiated streams")
struct NegotiatedStreamTests {
    @Test func offerAnswerGivesStreamsThatHearEachOther() throws {
        // 1. Negotiate (the signalling layer carries these texts between the two clients).
        let alice = AudioCapabilities(address: "127.0.0.1", port: 40_000)
        let bob = AudioCapabilities(address: "127.0.0.1", port: 40_002)
        let offer = SessionDescription.makeOffer(alice)
        let received = try SessionDescription(parsing: offer.serialize())
        let (answer, bobNegotiated) = try SessionDescription.makeAnswer(to: received, localCapabilities: bob)
        let aliceNegotiated = try offer.negotiate(
            answer: try SessionDescription(parsing: answer.serialize()), localCapabilities: alice)
        #expect(aliceNegotiated.srtp?.suite == bobNegotiated.srtp?.suite)
        #expect(aliceNegotiated.srtp?.localKey == bobNegotiated.srtp?.remoteKey)

        // 2. One stream per side, configured from the negotiation; packets go straight across.
        let format = AudioFormat.mono16k
        var inboxForBob: [[UInt8]] = []
        let aliceStream = try MediaStream(
            configuration: MediaStreamConfiguration(negotiated: aliceNegotiated, deviceFormat: format),
            sink: ClosurePacketSink { datagram, _, _ in inboxForBob.append(Array(datagram)) }, now: .zero)
        let bobStream = try MediaStream(
            configuration: MediaStreamConfiguration(negotiated: bobNegotiated, deviceFormat: format),
            sink: NullPacketSink(), now: .zero)

        // 3. Ten-millisecond ticks: capture on Alice's side, playout on Bob's.
        let speech = SignalGenerator.toInt16(SignalGenerator.speechLike(sampleRate: 16_000, seconds: 3, seed: 3))
        var played: [Int16] = []
        var output = AudioFrame(format: format)
        for block in 0..<(speech.count / 160) {
            let now = MediaTime.milliseconds(Int64(block * 10))
            aliceStream.processCapture(
                AudioFrame(format: format, samples: Array(speech[block * 160..<(block + 1) * 160])), now: now)
            for datagram in inboxForBob { datagram.withUnsafeBytes { bobStream.receiveDatagram($0, arrival: now) } }
            inboxForBob.removeAll()
            bobStream.renderPlayout(into: &output, now: now)
            played.append(contentsOf: output.samples)
        }
        let stats = bobStream.statistics
        #expect(stats.drops.total == 0)
        #expect(stats.packetsReceived > 100)
        #expect(
            SignalMetrics.rmsDBFS(SignalGenerator.toFloat(played)) > SignalMetrics.rmsDBFS(
                SignalGenerator.toFloat(speech)) - 10)
    }
}
