import NIOCore

/// The address of a socket as a Via host or URI host: IPv6 in brackets.
func hostText(_ address: SocketAddress) -> String {
    guard let ip = address.ipAddress else { return "127.0.0.1" }
    if case .v6 = address { return "[\(ip)]" }
    return ip
}

/// Random branch and tag material.
enum SIPRandomToken {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36)
    }
}

extension SIPMessage {
    /// Names `address` as the sent-by of the top Via when that Via is ours (its branch starts with `prefix`).
    mutating func setTopViaSentBy(_ address: SocketAddress, ifBranchStartsWith prefix: String) {
        guard let index = headers.fields.firstIndex(where: { $0.name == "Via" }),
            var values = try? splitHeaderList(headers.fields[index].value, header: "Via"),
            var via = try? SIPVia(parsing: values[0]), via.branch?.hasPrefix(prefix) == true
        else { return }
        via.host = hostText(address)
        via.port = address.port
        values[0] = via.description
        headers.setValue(values.joined(separator: ", "), at: index)
    }

    /// RFC 3261 §18.2.1 and RFC 3581 §4: the receiver records in the top Via where the request really came from.
    mutating func stampTopVia(receivedFrom address: SocketAddress) {
        guard let index = headers.fields.firstIndex(where: { $0.name == "Via" }),
            var values = try? splitHeaderList(headers.fields[index].value, header: "Via"),
            var via = try? SIPVia(parsing: values[0]), let ip = address.ipAddress
        else { return }
        let sentHost = via.host.hasPrefix("[") ? String(via.host.dropFirst().dropLast()) : via.host
        if sentHost != ip { via.received = ip }
        if via.requestsRport, let port = address.port {
            via.parameters.set("rport", "\(port)")
            via.received = ip
        }
        values[0] = via.description
        headers.setValue(values.joined(separator: ", "), at: index)
    }
}
