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
            try setRemoteRTCP(UDPEndpoint(host: negotiated.remoteAddress, port: negotiated.remoteRTCPPort))
        }
    }
}
