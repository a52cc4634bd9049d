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
///
/// Receiving does not wait for sending: once the server confirmed a channel it sends that peer's data only as
/// ChannelData for the channel's lifetime (§12), so a channel is accepted (``acceptChannel(_:from:through:)``) as
/// soon as the confirmation is read — the peer's next datagram may sit right behind it in the socket — and stays
/// accepted when media is no longer relayed on it.
extension UDPMediaTransport {
    /// Relays from now on everything sent to `peer` through `server` on ChannelData `channel` (0x4000…0x4FFF, bound
    /// by the caller), and unwraps that channel's data from `server`; nil stops relaying. Any thread.
    public func relay(to peer: UDPEndpoint, through server: UDPEndpoint, channel: UInt16) {
        precondition((0x4000...0x4FFF).contains(channel), "ChannelData channels are 0x4000…0x4FFF")
        acceptChannel(channel, from: peer, through: server)
        state.relayChannel.store(0, ordering: .releasing)
        state.relayPeer.store(peer, latched: false)
        state.relayChannel.store(Int(channel), ordering: .releasing)
    }

    /// Takes ChannelData on `channel` (0x4000…0x4FFF) from `server` as `peer`'s datagram from now on, whether or
    /// not media is relayed on it: for a channel the server has just confirmed. At most
    /// ``AcceptedChannels/capacity`` channels; a further one replaces the oldest. Any thread (one writer at a time).
    public func acceptChannel(_ channel: UInt16, from peer: UDPEndpoint, through server: UDPEndpoint) {
        precondition((0x4000...0x4FFF).contains(channel), "ChannelData channels are 0x4000…0x4FFF")
        if state.relayServer.load()?.endpoint != server {
            state.acceptedChannels.removeAll()
            state.relayServer.store(server, latched: false)
        }
        state.acceptedChannels.set(channel, peer: peer)
    }

    /// Stops relaying: datagrams go straight to their destination again. ChannelData of accepted channels is
    /// still taken (the server goes on sending it until the channels expire).
    public func stopRelaying() { state.relayChannel.store(0, ordering: .releasing) }

    /// Stops relaying and taking ChannelData (the allocation is gone).
    public func forgetChannels() {
        stopRelaying()
        state.acceptedChannels.removeAll()
    }

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
        guard bytes.count >= 4, (0x40...0x4F).contains(bytes[0]), relayServer.load()?.endpoint == source,
            let peer = acceptedChannels.peer(of: Int(bytes[0]) << 8 | Int(bytes[1]))
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

/// The channels a transport takes ChannelData on, each with its peer: a few fixed slots read lock-free by the thread
/// that reads the socket (the audio path), written by the ICE port when the TURN server confirms a channel.
final class AcceptedChannels: Sendable {
    /// Channels bound at once: the selected pair's, plus those of pairs selected before it (a renomination, the pair
    /// of an ICE restart), which the server keeps for their 10-minute lifetime.
    static let capacity = 4

    private final class Slot: Sendable {
        /// 0: free.
        let channel = Atomic<Int>(0)
        let peer = AtomicEndpoint()
    }
    private let slots = (0..<AcceptedChannels.capacity).map { _ in Slot() }
    private let next = Atomic<Int>(0)

    /// The peer of `channel`, or nil when it is not accepted.
    func peer(of channel: Int) -> UDPEndpoint? {
        for slot in slots where slot.channel.load(ordering: .acquiring) == channel {
            let peer = slot.peer.load()?.endpoint
            // Read again: a writer that took the slot meanwhile may have stored another peer.
            if slot.channel.load(ordering: .acquiring) == channel { return peer }
        }
        return nil
    }

    /// Accepts `channel` from `peer`, in its slot if it has one, else in the next one round the ring.
    func set(_ channel: UInt16, peer: UDPEndpoint) {
        // Unchanged: left as it is, so a reader never finds the slot empty in between.
        if self.peer(of: Int(channel)) == peer { return }
        let slot =
            slots.first { $0.channel.load(ordering: .relaxed) == Int(channel) }
            ?? slots[next.wrappingAdd(1, ordering: .relaxed).oldValue % Self.capacity]
        slot.channel.store(0, ordering: .releasing)
        slot.peer.store(peer, latched: false)
        slot.channel.store(Int(channel), ordering: .releasing)
    }

    func removeAll() { for slot in slots { slot.channel.store(0, ordering: .releasing) } }
}
