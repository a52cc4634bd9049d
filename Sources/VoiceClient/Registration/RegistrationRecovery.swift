/// Decides when and where the client registers again after its flow to the service failed: the connection closed
/// (the service restarted, a reset), a keepalive or a refresh went unanswered, or the address the flow used went
/// away. Pure: inputs with the time since an origin and a random fraction in, actions out; the client does the I/O.
///
/// The loss is reported once; the first attempt goes out at once (within `firstAttemptJitter`, so that clients
/// that lost the same service do not all come back in the same millisecond), to the host the client was on (it
/// may just have restarted), then to each other host in the configured order without waiting (failover). When a
/// whole round failed, the next one waits an exponential backoff (`base` doubling up to `cap`) with equal jitter
/// (half fixed, half random), the retry scheme of pjsip's `reg_retry_interval` / `reg_retry_random_interval` and
/// of RFC 5626 §4.5, with shorter defaults for an app in the foreground.
package struct RegistrationRecovery: Equatable, Sendable {
    package struct Backoff: Equatable, Sendable {
        /// Spread of the first attempt after a loss.
        package var firstAttemptJitter: Duration
        /// The wait after the first failed round; doubled after each further one.
        package var base: Duration
        /// The longest wait between rounds.
        package var cap: Duration

        package init(
            firstAttemptJitter: Duration = .milliseconds(250), base: Duration = .milliseconds(500),
            cap: Duration = .seconds(30)
        ) {
            self.firstAttemptJitter = firstAttemptJitter
            self.base = base
            self.cap = cap
        }

        /// The wait before round `round` (0: the first round after a loss), `fraction` random in 0..<1.
        package func delay(beforeRound round: Int, fraction: Double) -> Duration {
            let fraction = min(max(fraction, 0), 1)
            guard round > 0 else { return firstAttemptJitter * fraction }
            let doubled = base * Double(1 << min(round - 1, 20))
            let limit = min(doubled, cap)
            return limit * (0.5 + 0.5 * fraction)
        }
    }

    package enum Input: Equatable, Sendable {
        /// Registered on `host` (an index into the service hosts) by `start()`.
        case registered(host: Int)
        /// The flow to the service failed, with why.
        case flowFailed(String)
        /// The address the flow used went away or a better one appeared: register again on a new connection.
        case networkChanged(String)
        /// The attempt the last ``Action/register(host:sameHost:)`` started succeeded or failed.
        case attemptSucceeded
        case attemptFailed(String)
        /// A wake-up asked for with ``Action/wakeUp(after:)`` is due.
        case tick
        /// `stop()`: nothing more to recover.
        case stopped
    }

    package enum Action: Equatable, Sendable {
        /// Tell the app the registration is lost (``VoiceClientEvent/registrationLost(_:)``).
        case reportLost(String)
        /// Register again now on `host`: on a new connection to the same host when `sameHost`, else on a new
        /// endpoint towards another host.
        case register(host: Int, sameHost: Bool)
        /// Feed ``Input/tick`` after this long.
        case wakeUp(after: Duration)
        /// Registered again on `host` (``VoiceClientEvent/reregistered``).
        case reportRegistered(host: Int)
    }

    package enum State: Equatable, Sendable {
        case idle
        case registered(host: Int)
        /// Waiting until `due` for round `round`, whose first host is `host`.
        case waiting(host: Int, round: Int, due: Duration)
        /// An attempt on `order[tried]` is running in round `round`.
        case attempting(order: [Int], tried: Int, round: Int)
    }

    package let hostCount: Int
    package let backoff: Backoff
    package private(set) var state: State = .idle
    /// The host the client was registered on last: each round starts there.
    package private(set) var currentHost = 0

    package init(hostCount: Int, backoff: Backoff = Backoff()) {
        self.hostCount = max(1, hostCount)
        self.backoff = backoff
    }

    /// Whether the flow is down and the client is working on it.
    package var isRecovering: Bool {
        switch state {
        case .waiting, .attempting: true
        case .idle, .registered: false
        }
    }

    /// The actions for `input` at `now` (time since any fixed origin); `fraction` is random in 0..<1.
    package mutating func handle(_ input: Input, now: Duration, fraction: Double) -> [Action] {
        switch (input, state) {
        case (.registered(let host), _):
            currentHost = min(max(host, 0), hostCount - 1)
            state = .registered(host: currentHost)
            return []
        case (.stopped, _):
            state = .idle
            return []
        case (.flowFailed(let reason), .registered), (.networkChanged(let reason), .registered):
            return [.reportLost(reason)] + scheduleRound(0, now: now, fraction: fraction)
        case (.networkChanged, .waiting(_, _, _)):
            // The network is back or another one came: try at once rather than at the end of the backoff.
            return scheduleRound(0, now: now, fraction: fraction)
        case (.tick, .waiting(_, let round, let due)):
            guard now >= due else { return [.wakeUp(after: due - now)] }
            let order = roundOrder()
            state = .attempting(order: order, tried: 0, round: round)
            return [.register(host: order[0], sameHost: order[0] == currentHost)]
        case (.attemptSucceeded, .attempting(let order, let tried, _)):
            currentHost = order[tried]
            state = .registered(host: currentHost)
            return [.reportRegistered(host: currentHost)]
        case (.attemptFailed, .attempting(let order, let tried, let round)):
            if tried + 1 < order.count {
                state = .attempting(order: order, tried: tried + 1, round: round)
                return [.register(host: order[tried + 1], sameHost: order[tried + 1] == currentHost)]
            }
            return scheduleRound(round + 1, now: now, fraction: fraction)
        case (.networkChanged, .attempting(let order, let tried, let round)):
            // The running attempt may use the old address: let it end, and retry at once after it if it fails.
            state = .attempting(order: order, tried: tried, round: min(round, 0))
            return []
        default:
            // A loss while already recovering, a late tick or result, or anything while idle: nothing new.
            return []
        }
    }

    private mutating func scheduleRound(_ round: Int, now: Duration, fraction: Double) -> [Action] {
        let delay = backoff.delay(beforeRound: round, fraction: fraction)
        state = .waiting(host: currentHost, round: round, due: now + delay)
        return [.wakeUp(after: delay)]
    }

    /// The current host first, then the others in configured order.
    private func roundOrder() -> [Int] {
        [currentHost] + (0..<hostCount).filter { $0 != currentHost }
    }
}
