import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Media through a TURN relay (RFC 8656 §12) on the media socket itself, as libre's `turnc` hooks its UDP socket:
/// once ICE selected a relayed pair and the TURN server confirmed a channel to the peer, every datagram sent to the
/// peer leaves as ChannelData to the server (a 4-byte header in front, gathered by `sendmsg`: no copy, no
/// allocation), and ChannelData from the server on that channel is unwrapped and handled as if the peer had sent
/// it (queued, latched, handed to the DTLS and STUN hooks with the peer as source). The TURN signalling itself
/// (Allocate, permissions, refreshes, Send/Data indications) is the ICE agent's: it travels as STUN through the
/// STUN hook.
extension UDPMediaTransport {
    /// Relays from now on everything sent to `peer` through `server` on ChannelData `channel` (0x4000…0x4FFF, bound
    /// by the caller), and unwraps that channel's data from `server`; nil stops relaying. Any thread.
    public func relay(to peer: UDPEndpoint, through server: UDPEndpoint, channel: UInt16) {
        precondition((0x4000...0x4FFF).contains(channel), "ChannelData channels are 0x4000…0x4FFF")
        state.relayChannel.store(0, ordering: .releasing)
        state.relayPeer.store(peer, latched: false)
        state.relayServer.store(server, latched: false)
        state.relayChannel.store(Int(channel), ordering: .releasing)
    }

    /// Stops relaying: datagrams go straight to their destination again.
    public func stopRelaying() { state.relayChannel.store(0, ordering: .releasing) }

    /// The peer and channel media is relayed to, while it is.
    public var relayedPeer: (peer: UDPEndpoint, channel: UInt16)? {
        let channel = state.relayChannel.load(ordering: .acquiring)
        guard channel != 0, let peer = state.relayPeer.load()?.endpoint else { return nil }
        return (peer, UInt16(channel))
    }

    /// Datagrams sent and received as ChannelData.
    public var relayedDatagrams: (sent: Int, received: Int) {
        (state.relayedSent.load(ordering: .relaxed), state.relayedReceived.load(ordering: .relaxed))
    }

    /// Handles `datagram` as if `peer` had sent it to this socket: for what the TURN server forwarded in a Data
    /// indication (before a channel is bound), which the STUN hook's owner unwrapped.
    public func deliverRelayed(_ datagram: UnsafeRawBufferPointer, from peer: UDPEndpoint) {
        state.receive(datagram, from: peer, arrival: state.clock.now.nanoseconds)
    }
}

extension TransportState {
    /// The relay's server and channel when `destination` is the relayed peer; nil otherwise (one relaxed load
    /// when not relaying).
    func relayRoute(for destination: UDPEndpoint) -> (server: UDPEndpoint, channel: UInt16)? {
        let channel = relayChannel.load(ordering: .acquiring)
        guard channel != 0, relayPeer.load()?.endpoint == destination, let server = relayServer.load()?.endpoint
        else { return nil }
        return (server, UInt16(channel))
    }

    /// Sends `datagram` as ChannelData on `channel` to `server`: header and payload gathered by one `sendmsg`.
    /// Returns what `sendto` would (bytes sent or -1 with errno).
    func sendChannelData(
        _ datagram: UnsafeRawBufferPointer, channel: UInt16, to address: UnsafePointer<sockaddr>, length: socklen_t
    ) -> Int {
        var header: (UInt8, UInt8, UInt8, UInt8) = (
            UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(datagram.count >> 8 & 0xFF), UInt8(datagram.count & 0xFF)
        )
        return withUnsafeMutableBytes(of: &header) { head in
            var parts = (
                iovec(iov_base: head.baseAddress, iov_len: 4),
                iovec(iov_base: UnsafeMutableRawPointer(mutating: datagram.baseAddress), iov_len: datagram.count)
            )
            return withUnsafeMutablePointer(to: &parts) { vectors in
                vectors.withMemoryRebound(to: iovec.self, capacity: 2) { iov in
                    var message = msghdr()
                    message.msg_name = UnsafeMutableRawPointer(mutating: address)
                    message.msg_namelen = length
                    message.msg_iov = iov
                    message.msg_iovlen = 2
                    let sent = sendmsg(fd, &message, Int32(MSG_DONTWAIT))
                    if sent >= 0 { relayedSent.wrappingAdd(1, ordering: .relaxed) }
                    return sent
                }
            }
        }
    }

    /// ChannelData from the relay server on our channel: the payload, handled as the peer's datagram. False when
    /// `bytes` is not that (the caller goes on with it).
    func receiveChannelData(_ bytes: UnsafeRawBufferPointer, from source: UDPEndpoint, arrival: Int64) -> Bool {
        let channel = relayChannel.load(ordering: .acquiring)
        guard channel != 0, bytes.count >= 4, (0x40...0x4F).contains(bytes[0]),
            Int(bytes[0]) << 8 | Int(bytes[1]) == channel, relayServer.load()?.endpoint == source,
            let peer = relayPeer.load()?.endpoint
        else { return false }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard 4 + length <= bytes.count else {
            counters.droppedTooShort.wrappingAdd(1, ordering: .relaxed)
            return true
        }
        relayedReceived.wrappingAdd(1, ordering: .relaxed)
        receive(UnsafeRawBufferPointer(rebasing: bytes[4..<4 + length]), from: peer, arrival: arrival)
        return true
    }
}
