import NIOCore

/// How a message travels: each has its own channel handler and framing (RFC 3261 §18).
public enum SIPTransportKind: String, Hashable, Sendable, CaseIterable {
    case udp = "UDP"
    case tcp = "TCP"
    /// TCP with TLS (RFC 3261 §26.2): framed and reused like TCP; `sips:` URIs and `transport=tls` select it.
    case tls = "TLS"

    /// Over TCP (and TLS) nothing is retransmitted and the absorbing timers are zero.
    public var isReliable: Bool { self != .udp }
    /// TCP and TLS carry a byte stream that `SIPStreamFramer` cuts into messages.
    public var isStream: Bool { self != .udp }
}

/// A peer as the transport addresses it: the transport and the remote socket address.
public struct SIPPeer: Hashable, Sendable, CustomStringConvertible {
    public var transport: SIPTransportKind
    public var address: SocketAddress
    /// For TLS: the host name the server's certificate must carry (RFC 5922 §7.2: the domain of the SIP or SIPS
    /// URI), sent as SNI. Nil (or an IP literal): the certificate must name the IP address connected to.
    public var serverName: String?

    public init(_ transport: SIPTransportKind, _ address: SocketAddress, serverName: String? = nil) {
        self.transport = transport
        self.address = address
        self.serverName = serverName
    }

    public var description: String { "\(transport.rawValue.lowercased()):\(address)" }
}

/// Where the transport handlers hand what they read. Called on the channel's event loop.
protocol SIPTransportSink: AnyObject {
    func transport(received message: SIPMessage, from peer: SIPPeer, channel: any Channel)
    func transport(dropped error: SIPError, from peer: SIPPeer?)
    func transport(keepalivePongFrom peer: SIPPeer)
    func transport(closed channel: any Channel, peer: SIPPeer)
}

/// UDP: one datagram is one message (RFC 3261 §18.3). A malformed datagram is counted and dropped; the socket
/// stays open (also through ICMP errors reported as read errors).
final class SIPDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private weak var sink: (any SIPTransportSink)?

    init(sink: any SIPTransportSink) { self.sink = sink }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        let peer = SIPPeer(.udp, envelope.remoteAddress)
        let bytes = Array(envelope.data.readableBytesView)
        // A CRLF keepalive (RFC 5626 §3.5.1 on datagrams) is not a message.
        if bytes.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            if !bytes.isEmpty { sink?.transport(keepalivePongFrom: peer) }
            return
        }
        do {
            let message = try SIPMessageParser.parse(datagram: bytes)
            sink?.transport(received: message, from: peer, channel: context.channel)
        } catch let error as SIPError {
            sink?.transport(dropped: error, from: peer)
        } catch {
            sink?.transport(dropped: SIPError(.transport, "\(error)"), from: peer)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        sink?.transport(dropped: SIPError(.transport, "UDP read error: \(error)"), from: nil)
    }
}

/// TCP and TLS (under the TLS handler): messages delimited by Content-Length (`SIPStreamFramer`); on an accepted connection a CRLF CRLF ping is
/// answered with a CRLF pong (RFC 5626 §4.4.1). On a connection we opened only pongs come back, and two pongs read
/// together look like a ping, so there every CRLF pair counts as a pong. A framing error loses the stream's
/// synchronization, so the connection is closed.
final class SIPStreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private weak var sink: (any SIPTransportSink)?
    private var framer: SIPStreamFramer
    private var peer: SIPPeer?
    private let answersPings: Bool
    private let transport: SIPTransportKind

    init(sink: any SIPTransportSink, maximumMessageBytes: Int, accepted: Bool, transport: SIPTransportKind = .tcp) {
        self.sink = sink
        self.framer = SIPStreamFramer(maximumMessageBytes: maximumMessageBytes)
        self.answersPings = accepted
        self.transport = transport
    }

    func channelActive(context: ChannelHandlerContext) {
        if let remote = context.channel.remoteAddress { peer = SIPPeer(transport, remote) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let peer { sink?.transport(closed: context.channel, peer: peer) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        framer.append(buffer.readableBytesView)
        guard let peer = peer ?? context.channel.remoteAddress.map({ SIPPeer(transport, $0) }) else { return }
        do {
            while let frame = try framer.next() {
                switch frame {
                case .message(let message):
                    sink?.transport(received: message, from: peer, channel: context.channel)
                case .keepalivePing where answersPings:
                    context.writeAndFlush(Self.wrapOutboundOut(ByteBuffer(bytes: [0x0D, 0x0A])), promise: nil)
                case .keepalivePing:
                    sink?.transport(keepalivePongFrom: peer)
                    sink?.transport(keepalivePongFrom: peer)
                case .keepalivePong:
                    sink?.transport(keepalivePongFrom: peer)
                }
            }
        } catch let error as SIPError {
            sink?.transport(dropped: error, from: peer)
            context.close(promise: nil)
        } catch {
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        sink?.transport(
            dropped: SIPError(transport == .tls ? .tls : .transport, "\(transport.rawValue) error: \(error)"),
            from: peer)
        context.close(promise: nil)
    }
}
