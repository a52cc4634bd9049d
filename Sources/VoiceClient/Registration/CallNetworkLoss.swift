/// What running calls go through when the address their media is bound to leaves the host: they are
/// *reconnecting* at once, *reconnected* if the address comes back within `timeout` or the calls moved to another
/// address of the host (an ICE restart selected a pair there), and end with cause *network* when neither happens. Pure: the host's addresses and the time in, the actions for the calls out; the client polls
/// (``InterfaceAddresses``) and acts on its established calls.
package struct CallNetworkLoss: Equatable, Sendable {
    package enum Action: Equatable, Sendable {
        case reconnecting
        case reconnected
        /// End the calls with cause *network*, with why.
        case endCalls(String)
    }

    package let timeout: Duration
    /// The address the calls' media was bound to, while it is gone.
    package private(set) var lostAddress: String?
    private var deadline: Duration?

    package init(timeout: Duration) { self.timeout = timeout }

    /// - Parameters:
    ///   - addresses: every address on the host's interfaces now.
    ///   - callAddress: the address the established calls' media runs from (after a move, the new one); nil when
    ///     there are none (a loss in progress is forgotten then).
    ///   - now: time since any fixed origin.
    package mutating func observe(addresses: Set<String>, callAddress: String?, now: Duration) -> [Action] {
        guard callAddress != nil else {
            (lostAddress, deadline) = (nil, nil)
            return []
        }
        if let lost = lostAddress, let deadline, let address = callAddress {
            if addresses.contains(lost) || address != lost && addresses.contains(address) {
                (lostAddress, self.deadline) = (nil, nil)
                return [.reconnected]
            }
            guard now >= deadline else { return [] }
            (lostAddress, self.deadline) = (nil, nil)
            return [.endCalls("\(lost) left the host and did not come back within \(timeout)")]
        }
        guard let address = callAddress, !addresses.contains(address) else { return [] }
        (lostAddress, deadline) = (address, now + timeout)
        return [.reconnecting]
    }
}
