/// How often the client pings its flow to the service (RFC 5626 §4.4.1: CRLF CRLF over TLS or TCP, and over UDP),
/// so that NATs and the service keep the connection or binding that incoming requests come back through. Pure: the
/// registrar's answer and a random fraction in, the delay out.
package struct KeepaliveSchedule: Equatable, Sendable {
    /// The registrar's `Flow-Timer` when it named one (RFC 5626 §5.4), else the configured interval.
    package let interval: Duration

    package init(flowTimer: UInt32?, configured: Duration) {
        interval = flowTimer.map { .seconds(Int64($0)) } ?? configured
    }

    /// The wait before the next keepalive: between 80 % and 100 % of the interval (RFC 5626 §4.4.1), so that many
    /// clients behind one NAT do not ping in step; `fraction` is a random number in 0..<1.
    package func delay(fraction: Double) -> Duration {
        interval * (0.8 + 0.2 * min(max(fraction, 0), 1))
    }
}
