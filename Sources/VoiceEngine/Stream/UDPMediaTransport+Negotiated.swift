import Synchronization

/// Points a transport at the peer the offer/answer described, so every caller follows the same RTCP rule.
extension UDPMediaTransport {
    /// Sends RTP to the peer's `c=` address and `m=` port; without `a=rtcp-mux` on both sides, also binds the RTCP
    /// socket (RTP port + 1 unless ``bindRTCPPort(port:)`` bound the one our `a=rtcp:` announced) and sends RTCP
    /// to the peer's RTCP port (its `a=rtcp:`, else its RTP port + 1), because such a peer rejects SRTCP that
    /// arrives on its RTP port and sends its own reports to our RTCP port.
    /// - Throws: ``UDPTransportError`` for an address that is not an IP address or an RTCP port that cannot be bound.
    public func setRemote(negotiated: NegotiatedAudio) throws(UDPTransportError) {
        setRemote(try UDPEndpoint(host: negotiated.remoteAddress, port: negotiated.remotePort))
        if !negotiated.rtcpMux {
            let endpoint = try UDPEndpoint(host: negotiated.remoteAddress, port: negotiated.remoteRTCPPort)
            try setRemoteRTCP(endpoint)
            negotiatedRemoteRTCP.withLock { $0 = endpoint }
        }
    }

    /// Follows a re-negotiation (a re-INVITE, either side's) of a running call: when the peer's RTCP port or
    /// address changed (its new `a=rtcp:`, or its new RTP port + 1) RTCP goes there from now on; otherwise the
    /// destination stays, latched or not. RTP keeps its destination (latching or ICE moves it).
    /// - Throws: ``UDPTransportError`` for an address that is not an IP address or an RTCP port that cannot be bound.
    public func followRenegotiation(_ negotiated: NegotiatedAudio) throws(UDPTransportError) {
        guard !negotiated.rtcpMux else { return }
        let endpoint = try UDPEndpoint(host: negotiated.remoteAddress, port: negotiated.remoteRTCPPort)
        guard negotiatedRemoteRTCP.withLock({ $0 }) != endpoint else { return }
        try setRemoteRTCP(endpoint)
        negotiatedRemoteRTCP.withLock { $0 = endpoint }
    }
}
