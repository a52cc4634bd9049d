import Foundation
import Testing
import VoiceEngine

/// ChannelData from the TURN server on the media socket (UDPMediaTransport+Relay.swift), with a plain socket on
/// loopback standing in for the server: once a channel is accepted its data is the peer's datagram, whether media
/// is relayed on that channel yet, on another one, or not at all; other channels and other sources are dropped.
@Suite("ChannelData taken on accepted channels")
struct RelayedChannelReceiveTests {
    static let peer = UDPEndpoint(address: UInt32(0xC000_0207), port: 5_000)  // 192.0.2.7
    static let otherPeer = UDPEndpoint(address: UInt32(0xC000_0208), port: 5_002)

    static func channelData(_ channel: UInt16, _ payload: [UInt8]) -> [UInt8] {
        [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    }

    /// Sends `datagram` from `server` to `transport`, reads the socket and returns the source of the RTP packet
    /// that arrived (nil: dropped).
    static func deliver(_ datagram: [UInt8], from server: UDPMediaTransport, to transport: UDPMediaTransport)
        async throws -> UDPEndpoint?
    {
        #expect(datagram.withUnsafeBytes { server.send($0, to: transport.localEndpoint) } == .sent)
        let deadline = ContinuousClock.now + .milliseconds(500)
        var read = 0
        while ContinuousClock.now < deadline, read == 0 {
            read = transport.receiveFromSocket()
            if read == 0 { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(read == 1, "the datagram did not arrive")
        return transport.withNextPacket(.rtp) { $0.source }
    }

    /// The server confirmed the channel (ChannelBind success) and the peer's DTLS flight is right behind it in the
    /// socket: it must not wait until media is pointed at the channel.
    @Test func dataOfAnAcceptedChannelIsThePeersBeforeMediaIsRelayedOnIt() async throws {
        let transport = try await ICEMediaPortTests.bindPolled(), server = try await ICEMediaPortTests.bindPolled()
        let data = Self.channelData(0x4000, ICEMediaPortTests.rtp)
        #expect(try await Self.deliver(data, from: server, to: transport) == nil, "taken before any channel")
        transport.acceptChannel(0x4000, from: Self.peer, through: server.localEndpoint)
        #expect(transport.relayedPeer == nil)
        #expect(try await Self.deliver(data, from: server, to: transport) == Self.peer)
        #expect(transport.relayedDatagrams.received == 1)
        await transport.close()
        await server.close()
    }

    /// Media moved to another channel (a renomination) or off the relay: the server still sends the old peer's
    /// data on the old channel until it expires, and it is still that peer's.
    @Test func channelsStayAcceptedWhenMediaMovesToAnotherOrOffTheRelay() async throws {
        let transport = try await ICEMediaPortTests.bindPolled(), server = try await ICEMediaPortTests.bindPolled()
        let rtp = ICEMediaPortTests.rtp
        transport.relay(to: Self.peer, through: server.localEndpoint, channel: 0x4000)
        transport.relay(to: Self.otherPeer, through: server.localEndpoint, channel: 0x4001)
        #expect(transport.relayedPeer?.peer == Self.otherPeer)
        #expect(try await Self.deliver(Self.channelData(0x4000, rtp), from: server, to: transport) == Self.peer)
        #expect(try await Self.deliver(Self.channelData(0x4001, rtp), from: server, to: transport) == Self.otherPeer)
        transport.stopRelaying()
        #expect(transport.relayedPeer == nil)
        #expect(try await Self.deliver(Self.channelData(0x4000, rtp), from: server, to: transport) == Self.peer)
        // A channel never accepted, and an accepted one from another source than the server, are dropped.
        #expect(try await Self.deliver(Self.channelData(0x4002, rtp), from: server, to: transport) == nil)
        let stranger = try await ICEMediaPortTests.bindPolled()
        #expect(try await Self.deliver(Self.channelData(0x4000, rtp), from: stranger, to: transport) == nil)
        // The allocation is gone: nothing is taken any more.
        transport.forgetChannels()
        #expect(try await Self.deliver(Self.channelData(0x4001, rtp), from: server, to: transport) == nil)
        #expect(transport.counters.droppedNotRTP == 3)
        for socket in [transport, server, stranger] { await socket.close() }
    }
}
