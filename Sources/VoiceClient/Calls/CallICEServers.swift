import VoiceClientWire
import VoiceWebRTC

extension RegistrationGrant {
    /// The grant's TURN servers the client's calls can use: `turn:` URLs over UDP (no `?transport=tcp`, no
    /// `turns:`) with a numeric host (`turn:10.0.0.1:3478`, `turn:[2001:db8::1]`; port 3478 by default) and the
    /// grant's time-limited credentials. A TURN server also answers the STUN Binding that gives the srflx candidate.
    var turnServers: [TURNServer] {
        (iceServers ?? []).flatMap { server -> [TURNServer] in
            guard let username = server.username, let password = server.credential else { return [] }
            return server.urls.compactMap { Self.turnAddress($0) }.map {
                TURNServer(address: $0, credentials: TURNCredentials(username: username, password: password))
            }
        }
    }

    /// The address of a `turn:` URL (RFC 7065) over UDP; nil for another scheme or transport or a name.
    static func turnAddress(_ url: String) -> TransportAddress? {
        guard url.hasPrefix("turn:") else { return nil }
        let parts = url.dropFirst("turn:".count).split(separator: "?", maxSplits: 1)
        guard let hostPort = parts.first else { return nil }
        if parts.count == 2, parts[1].lowercased() != "transport=udp" { return nil }
        var host = Substring(hostPort), port: UInt16 = 3478
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let rest = hostPort[hostPort.index(after: close)...]
            if rest.hasPrefix(":") {
                guard let p = UInt16(rest.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            guard let p = UInt16(hostPort[hostPort.index(after: colon)...]) else { return nil }
            (host, port) = (hostPort[..<colon], p)
        }
        return TransportAddress(host, port: port)
    }
}

/// Why the client could not use the service's TURN server for a call: what the server answered.
public struct TURNRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server (`host:port`).
    public var server: String
    /// The STUN error code (401: the credentials are wrong or expired, 403: forbidden, 486: allocation quota).
    public var code: Int
    public var reason: String

    public var description: String { "the TURN server \(server) refused the allocation: \(code) \(reason)" }
}
