import Foundation
import VoiceEngine

/// A DTLS-SRTP handshake (RFC 5763/5764) on a SIP call's media port, after offer/answer agreed on it
/// (``NegotiatedDTLS``): the records arrive through the transport's DTLS hook
/// (``UDPMediaTransport/setDTLSRecordHandler(_:)``), the association answers them, and the exported keys become the
/// stream's SRTP keys (``DTLSSRTPKeys/mediaStreamKeys``). The conference server runs one per DTLS-SRTP participant;
/// a SIP client offering DTLS-SRTP runs one before starting its call's media.
///
/// Without `a=rtcp-mux` (the transport's RTCP has a port of its own, ``UDPMediaTransport/remoteRTCP`` set) each
/// component runs its own association (RFC 5764 §4.1), as baresip/libre's `dtls_srtp` and pjmedia do: the second
/// one, same certificate, fingerprint and role, on the RTCP socket with the peer's RTCP port, and its keys protect
/// SRTCP (``DTLSSRTPKeys/rtcp``). Both are driven together and ``run(timeout:)`` succeeds when both are connected.
///
/// The transport must read with ``UDPMediaTransport/ReceiveMode/consumerPolls``: ``run(timeout:)`` polls it until
/// the handshake ends, and the media thread that polls it afterwards still hands a late record (the peer
/// retransmitting its last flight because ours was lost, or its close_notify) to the association through the hook,
/// which ``stop()`` removes. RTP that arrives meanwhile stays queued for the media thread.
public final class DTLSSRTPMediaPortHandshake: @unchecked Sendable {
    private let rtp: Component
    /// The RTCP component's association when RTCP is not multiplexed.
    private let rtcp: Component?
    private let transport: UDPMediaTransport

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
        let role: DTLSSRTPAssociation.Role = negotiated.isClient ? .client : .server
        rtp = Component(
            association: try DTLSSRTPAssociation(
                certificate: certificate, role: role, remoteFingerprint: fingerprint),
            transport: transport)
        if transport.remoteRTCP != nil, let rtcpTransport = transport.rtcpTransport {
            rtcp = Component(
                association: try DTLSSRTPAssociation(
                    certificate: certificate, role: role, remoteFingerprint: fingerprint),
                transport: rtcpTransport)
        } else {
            rtcp = nil
        }
        self.transport = transport
    }

    /// Drives the handshake (both components' without rtcp-mux) until the keys are there, one failed (fingerprint
    /// mismatch, alert, no common profile), or `timeout` passed without it (``DTLSError/timedOut``).
    public func run(timeout: Duration) async -> Result<DTLSSRTPKeys, DTLSError> {
        let components = [rtp] + (rtcp.map { [$0] } ?? [])
        for component in components { component.start() }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            // Reads the RTCP socket too.
            _ = transport.receiveFromSocket()
            let states = components.map { $0.step() }
            if let failed = states.lazy.compactMap({ if case .failed(let error) = $0 { error } else { nil } }).first {
                return .failure(failed)
            }
            let keys = states.compactMap { if case .connected(let keys) = $0 { keys } else { nil } }
            if keys.count == components.count {
                var combined = keys[0]
                if keys.count == 2 {
                    combined.rtcp = MediaStreamSRTCPKeys(
                        suite: keys[1].suite, localKey: keys[1].localKey, remoteKey: keys[1].remoteKey)
                }
                return .success(combined)
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return .failure(.timedOut)
    }

    /// Takes the hooks off the transport (the call ended).
    public func stop() {
        rtp.stop()
        rtcp?.stop()
    }

    /// One component's association on its socket.
    private final class Component: @unchecked Sendable {
        private let association: DTLSSRTPAssociation
        private let transport: UDPMediaTransport
        private let lock = NSLock()
        /// Where the peer's records came from (its media address may differ from its SDP's behind a NAT).
        private var peer: UDPEndpoint?

        init(association: DTLSSRTPAssociation, transport: UDPMediaTransport) {
            self.association = association
            self.transport = transport
        }

        func start() {
            transport.setDTLSRecordHandler { [weak self] record, source in self?.receive(record, from: source) }
            lock.withLock { send(association.start()) }
        }

        /// Retransmits when its timer ran out and returns the state.
        func step() -> DTLSSRTPAssociation.State {
            lock.withLock {
                if let left = association.timeUntilRetransmission, left <= .zero { send(association.handleTimeout()) }
                return association.state
            }
        }

        func stop() { transport.setDTLSRecordHandler(nil) }

        private func receive(_ record: UnsafeRawBufferPointer, from source: UDPEndpoint) {
            lock.withLock {
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
}

extension DTLSSRTPKeys {
    /// The keys as a media stream takes them (`MediaStreamConfiguration.srtp`).
    public var mediaStreamKeys: MediaStreamSRTP {
        MediaStreamSRTP(suite: suite, localKey: localKey, remoteKey: remoteKey, rtcp: rtcp)
    }
}
