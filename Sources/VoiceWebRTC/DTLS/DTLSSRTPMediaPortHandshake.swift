import Foundation
import VoiceEngine

/// A DTLS-SRTP handshake (RFC 5763/5764) on a SIP call's media port, after offer/answer agreed on it
/// (``NegotiatedDTLS``): the records arrive through the transport's DTLS hook
/// (``UDPMediaTransport/setDTLSRecordHandler(_:)``), the association answers them, and the exported keys become the
/// stream's SRTP keys (``DTLSSRTPKeys/mediaStreamKeys``). The conference server runs one per DTLS-SRTP participant;
/// a SIP client offering DTLS-SRTP runs one before starting its call's media.
///
/// The transport must read with ``UDPMediaTransport/ReceiveMode/consumerPolls``: ``run(timeout:)`` polls it until
/// the handshake ends, and the media thread that polls it afterwards still hands a late record (the peer
/// retransmitting its last flight because ours was lost, or its close_notify) to the association through the hook,
/// which ``stop()`` removes. RTP that arrives meanwhile stays queued for the media thread.
public final class DTLSSRTPMediaPortHandshake: @unchecked Sendable {
    private let association: DTLSSRTPAssociation
    private let transport: UDPMediaTransport
    private let lock = NSLock()
    /// Where the peer's records came from (its media address may differ from its SDP's behind a NAT).
    private var peer: UDPEndpoint?
    /// Records that arrived after ``listen()`` and before ``run(timeout:)`` (a few; the peer retransmits the rest).
    private var early: [(record: [UInt8], source: UDPEndpoint)] = []
    private var running = false

    /// - Throws: ``DTLSError/handshakeFailed(reason:)`` for a fingerprint that is not sha-256 hex, or OpenSSL's
    ///   refusal to set the association up.
    public init(certificate: DTLSCertificate, negotiated: NegotiatedDTLS, transport: UDPMediaTransport)
        throws(DTLSError)
    {
        guard let fingerprint = DTLSFingerprint(sdpValue: negotiated.remoteFingerprint),
            fingerprint.algorithm == "sha-256"
        else {
            throw .handshakeFailed(reason: "unusable a=fingerprint \(negotiated.remoteFingerprint) (sha-256 needed)")
        }
        association = try DTLSSRTPAssociation(
            certificate: certificate, role: negotiated.isClient ? .client : .server, remoteFingerprint: fingerprint)
        self.transport = transport
    }

    /// Drives the handshake until the keys are there, it failed (fingerprint mismatch, alert, no common
    /// profile), or `timeout` passed without it (``DTLSError/timedOut``).
    public func run(timeout: Duration) async -> Result<DTLSSRTPKeys, DTLSError> {
        listen()
        lock.withLock {
            running = true
            send(association.start())
            for (record, source) in early {
                peer = source
                record.withUnsafeBytes { send(association.receive($0)) }
            }
            early = []
        }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            _ = transport.receiveFromSocket()
            let state: DTLSSRTPAssociation.State = lock.withLock {
                if let left = association.timeUntilRetransmission, left <= .zero { send(association.handleTimeout()) }
                return association.state
            }
            switch state {
            case .connected(let keys): return .success(keys)
            case .failed(let error): return .failure(error)
            case .handshaking: try? await Task.sleep(for: .milliseconds(5))
            }
        }
        return .failure(.timedOut)
    }

    /// Keeps the peer's records from now on until ``run(timeout:)`` answers them: for a call whose ICE checks are
    /// still running when the peer, done with its own, sends its first flight (its ClientHello would otherwise be
    /// lost, and the handshake wait a second for its retransmission).
    public func listen() {
        transport.setDTLSRecordHandler { [weak self] record, source in self?.receive(record, from: source) }
    }

    /// Takes the hook off the transport (the call ended).
    public func stop() { transport.setDTLSRecordHandler(nil) }

    private func receive(_ record: UnsafeRawBufferPointer, from source: UDPEndpoint) {
        lock.withLock {
            guard running else {
                if early.count < 8 { early.append((Array(record), source)) }
                return
            }
            peer = source
            send(association.receive(record))
        }
    }

    /// Under the lock.
    private func send(_ datagrams: [[UInt8]]) {
        guard let destination = peer ?? transport.remote else { return }
        for datagram in datagrams { _ = datagram.withUnsafeBytes { transport.send($0, to: destination) } }
    }
}

extension DTLSSRTPKeys {
    /// The keys as a media stream takes them (`MediaStreamConfiguration.srtp`).
    public var mediaStreamKeys: MediaStreamSRTP {
        MediaStreamSRTP(suite: suite, localKey: localKey, remoteKey: remoteKey)
    }
}
