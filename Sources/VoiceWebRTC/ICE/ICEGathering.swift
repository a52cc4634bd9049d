extension ICEAgent {
    /// Gathers candidates (RFC 8445 §5.1.1) before the transport starts: a host candidate for each socket (one
    /// per interface address, see ``HostCandidates``), and with `turn` (a TURN server reached from one of the
    /// sockets) a server-reflexive candidate from a Binding request (when it differs from the host address, i.e.
    /// behind a NAT) and a relayed candidate from an Allocate. Blocks for the server's answers (a round trip
    /// each); a refused allocation (wrong credentials) throws a typed ``TURNError``.
    ///
    /// Returns the candidates to signal (in the SDP or trickled), in gathering order.
    @discardableResult
    public func gather(sockets: [DatagramSocket], turn: TURNClient? = nil) throws(TURNError) -> [ICECandidate] {
        var gathered = sockets.map { addLocalCandidate(kind: .host, address: $0.localAddress, base: $0.localAddress) }
        guard let turn else { return gathered }
        let base = turn.socket.localAddress
        let server = turn.server.description
        let mapped = try turn.bindingAddress()
        if mapped != base {
            gathered.append(addLocalCandidate(kind: .srflx, address: mapped, base: base, related: base, server: server))
        }
        let relayed = try turn.allocate()
        gathered.append(
            addLocalCandidate(kind: .relay, address: relayed, base: relayed, related: mapped, server: server))
        return gathered
    }
}
