import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// RTCP on its own port (RFC 3550 §11, RFC 3605) for a peer that did not negotiate `a=rtcp-mux`: such a peer sends
/// its reports to our RTCP port and takes ours only on its own RTCP port (an SRTCP packet on its RTP port fails
/// SRTP there). The second socket is read by whoever reads this transport (``receiveFromSocket()``), its packets
/// come out of ``withNextPacket(_:_:)`` as `.rtcp`, and RTCP sent with ``send(_:kind:)`` leaves from it.
extension UDPMediaTransport {
    /// Binds the RTCP socket on this transport's address at `port` (nil: the RTP port + 1, RFC 3550 §11; 0: any
    /// free port, to be announced with `a=rtcp:`) and returns where it is bound. Read by the consumer at its
    /// tick like a ``ReceiveMode/consumerPolls`` socket. Binding again returns the socket already bound.
    /// - Throws: ``UDPTransportError`` when the port is taken or the address cannot be bound.
    @discardableResult
    public func bindRTCPPort(port: Int? = nil) throws(UDPTransportError) -> UDPEndpoint {
        if let bound = rtcpPort.load() { return bound.localEndpoint }
        var settings = configuration
        settings.receive = .consumerPolls
        settings.capture = nil
        let chosen = port ?? Int(localEndpoint.port) + 1
        guard chosen <= 65_535 else { throw .socketCall("bind", errno: EADDRNOTAVAIL) }
        let (fd, family, local) = try Self.openSocket(host: localEndpoint.host, port: chosen, configuration: settings)
        let state = TransportState(fd: fd, family: family, configuration: settings)
        let separate = UDPMediaTransport(channel: nil, state: state, local: local, configuration: settings)
        return rtcpPort.storeIfNil(separate).localEndpoint
    }

    /// Where this transport's RTCP socket is bound; nil while RTCP shares the RTP port.
    public var rtcpEndpoint: UDPEndpoint? { rtcpPort.load()?.localEndpoint }

    /// The RTCP socket as a transport of its own (nil while RTCP shares the RTP port): for what runs per
    /// component, such as the RTCP component's DTLS-SRTP handshake (its DTLS hook, its sends). Reading it is this
    /// transport's job (``receiveFromSocket()`` reads both sockets).
    public var rtcpTransport: UDPMediaTransport? { rtcpPort.load() }

    /// Sends RTCP to the peer's RTCP port from now on (until latching moves it), from the RTCP socket; binds that
    /// socket at the RTP port + 1 first if none is bound.
    /// - Throws: ``UDPTransportError`` when the RTCP socket cannot be bound.
    public func setRemoteRTCP(_ endpoint: UDPEndpoint) throws(UDPTransportError) {
        try bindRTCPPort()
        rtcpPort.load()?.setRemote(endpoint)
    }

    /// Where RTCP goes when it has a port of its own; nil while it shares the RTP port (or no remote is set).
    public var remoteRTCP: UDPEndpoint? { rtcpPort.load()?.remote }

    /// Sends one datagram without blocking: RTCP from the RTCP socket to the peer's RTCP port once
    /// ``setRemoteRTCP(_:)`` set one, everything else (and RTCP multiplexed) as ``send(_:)``. No allocation, no lock.
    public func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind) -> UDPSendResult {
        if kind == .rtcp, let separate = rtcpPort.load(), separate.remote != nil { return separate.send(datagram) }
        return send(datagram)
    }

    /// The RTCP socket's own counters (what arrived on and left from it); nil without one.
    public var rtcpCounters: UDPTransportCounters? { rtcpPort.load()?.counters }
}
