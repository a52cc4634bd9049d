import Foundation
import Testing
import VoiceSIP
import VoiceTestSupport
import VoiceWebRTC

@testable import VoiceClient

/// How a client call keys its SRTP: DTLS-SRTP always offered, SDES keys only next to it over encrypted signalling,
/// an SDES-only offer refused over unencrypted signalling, and a failed DTLS-SRTP handshake failing the call's media
/// with a typed error before any device opens. Real sockets on loopback and OpenSSL's DTLS.
@Suite("VoiceClient call media keying", .tags(.live), .scheduledByTags)
struct CallMediaKeyingTests {
    @Test func overUnencryptedSignallingTheOfferCarriesAFingerprintAndNoSDESKey() async throws {
        let media = try await CallLink.bindMedia(host: "127.0.0.1", signallingEncrypted: false, iceRole: .controlling)
        defer { Task { await media.transport.close() } }
        let offer = SessionDescription.makeOffer(media.capabilities).serialize()
        #expect(!offer.contains("a=crypto"), "an SDES key in an offer over unencrypted signalling:\n\(offer)")
        #expect(offer.contains("UDP/TLS/RTP/SAVP") && offer.contains("a=setup:actpass"))
        #expect(offer.contains("a=fingerprint:\(media.certificate.fingerprint.sdpValue)"))
        #expect(media.transport.configuration.receive == .consumerPolls, "the handshake polls the media socket")
    }

    @Test func overTLSTheOfferAddsSDESKeysForPeersWithoutDTLS() async throws {
        let media = try await CallLink.bindMedia(host: "127.0.0.1", signallingEncrypted: true, iceRole: .controlling)
        defer { Task { await media.transport.close() } }
        let offer = SessionDescription.makeOffer(media.capabilities).serialize()
        #expect(offer.contains("a=crypto:1 AES_CM_128_HMAC_SHA1_80") && offer.contains("RTP/SAVP"))
        #expect(offer.contains("a=fingerprint:\(media.certificate.fingerprint.sdpValue)"))
    }

    @Test func anSDESOnlyOfferOverUnencryptedSignallingIsRefusedAndFailsTheCallWithAnEncryptionError() async throws {
        let media = try await CallLink.bindMedia(host: "127.0.0.1", signallingEncrypted: false, iceRole: .controlling)
        defer { Task { await media.transport.close() } }
        let sdesOnly = SessionDescription.makeOffer(AudioCapabilities(address: "127.0.0.1", port: 40_000))
        #expect(throws: SDPError.sdesRefused) {
            try SessionDescription.makeAnswer(
                to: try SessionDescription(parsing: sdesOnly.serialize()), localCapabilities: media.capabilities)
        }
        // SIPCall answers 488 with the refusal as its end's reason; the call fails in the encryption domain.
        let end = SIPCallEnd(
            .failed, statusCode: 488, reasonPhrase: "offer not acceptable: \(SDPError.sdesRefused)")
        #expect(
            CallLink.callEvent(for: end, direction: .incoming, heardFromNetwork: true)
                == .failed(.encryption(SDPError.sdesRefused.description)))
    }

    /// Our side offers with its certificate; the peer answers announcing `announced`'s fingerprint but handshakes
    /// with `actual`. Returns our negotiated stream and the peer's running handshake.
    static func negotiate(
        ours: DTLSCertificate, ourTransport: UDPMediaTransport, peerTransport: UDPMediaTransport,
        announced: DTLSCertificate, actual: DTLSCertificate
    ) throws -> (NegotiatedAudio, DTLSSRTPMediaPortHandshake) {
        let offerer = AudioCapabilities(
            address: "127.0.0.1", port: Int(ourTransport.localEndpoint.port), srtp: .required([]),
            dtlsFingerprint: ours.fingerprint.sdpValue)
        let offer = SessionDescription.makeOffer(offerer)
        let (answer, answered) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: offer.serialize()),
            localCapabilities: AudioCapabilities(
                address: "127.0.0.1", port: Int(peerTransport.localEndpoint.port), srtp: .required([]),
                dtlsFingerprint: announced.fingerprint.sdpValue))
        let negotiated = try offer.negotiate(
            answer: try SessionDescription(parsing: answer.serialize()), localCapabilities: offerer)
        try peerTransport.setRemote(negotiated: answered)
        let peer = try DTLSSRTPMediaPortHandshake(
            certificate: actual, negotiated: try #require(answered.dtls), transport: peerTransport)
        return (negotiated, peer)
    }

    static func bindPolled() async throws -> UDPMediaTransport {
        try await UDPMediaTransport.bind(
            host: "127.0.0.1", port: 0, configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
    }

    @Test func aPeerWhoseCertificateIsNotItsFingerprintFailsTheMediaWithATypedError() async throws {
        let ours = try await Self.bindPolled(), theirs = try await Self.bindPolled()
        let ourCertificate = try DTLSCertificate()
        let (negotiated, peer) = try Self.negotiate(
            ours: ourCertificate, ourTransport: ours, peerTransport: theirs, announced: try DTLSCertificate(),
            actual: try DTLSCertificate())
        #expect(negotiated.dtls?.isClient == true)
        let peerOutcome = Task { await peer.run(timeout: .seconds(5)) }
        do {
            _ = try await SIPCallMedia.start(
                negotiated: negotiated, callID: CallID("mismatch"), transport: ours, certificate: ourCertificate,
                devices: CallAudioDevices(microphone: "file:/nonexistent.wav", speaker: "file:/nonexistent-out.wav"),
                handshakeTimeout: .seconds(5))
            Issue.record("the media started with a peer whose certificate does not match its fingerprint")
        } catch let error as SIPCallMediaError {
            guard case .dtlsHandshakeFailed(.fingerprintMismatch) = error else {
                Issue.record("expected a fingerprint mismatch, got \(error)")
                return
            }
            #expect(error.description.hasPrefix("DTLS-SRTP handshake failed"))
        }
        if case .success = await peerOutcome.value { Issue.record("the peer got keys from a refused handshake") }
        peer.stop()
        await ours.close()
        await theirs.close()
    }

    @Test func aSilentPeerFailsTheMediaWhenTheHandshakeTimesOut() async throws {
        let ours = try await Self.bindPolled(), theirs = try await Self.bindPolled()
        let ourCertificate = try DTLSCertificate(), peerCertificate = try DTLSCertificate()
        let (negotiated, _) = try Self.negotiate(
            ours: ourCertificate, ourTransport: ours, peerTransport: theirs, announced: peerCertificate,
            actual: peerCertificate)
        let started = ContinuousClock.now
        await #expect(throws: SIPCallMediaError.dtlsHandshakeFailed(.timedOut)) {
            _ = try await SIPCallMedia.start(
                negotiated: negotiated, callID: CallID("silent"), transport: ours, certificate: ourCertificate,
                devices: CallAudioDevices(microphone: "file:/nonexistent.wav", speaker: "file:/nonexistent-out.wav"),
                handshakeTimeout: .milliseconds(800))
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        await ours.close()
        await theirs.close()
    }
}
