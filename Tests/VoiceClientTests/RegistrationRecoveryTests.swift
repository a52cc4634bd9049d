import Testing

@testable import VoiceClient

/// The decisions after a lost flow: report once, the first attempt at once on the same host, failover through
/// the other hosts without waiting, then backoff with jitter between rounds; a network change cuts the wait short.
@Suite("Registration recovery")
struct RegistrationRecoveryTests {
    let backoff = RegistrationRecovery.Backoff(
        firstAttemptJitter: .milliseconds(200), base: .seconds(1), cap: .seconds(8))

    @Test func aLostFlowIsReportedOnceAndRetriedOnTheSameHostAtOnce() {
        var recovery = RegistrationRecovery(hostCount: 1, backoff: backoff)
        #expect(recovery.handle(.registered(host: 0), now: .zero, fraction: 0).isEmpty)
        let lost = recovery.handle(.flowFailed("closed"), now: .seconds(10), fraction: 0.5)
        #expect(lost == [.reportLost("closed"), .wakeUp(after: .milliseconds(100))])
        // Another symptom of the same loss changes nothing.
        #expect(recovery.handle(.flowFailed("keepalive"), now: .seconds(10), fraction: 0.5).isEmpty)
        #expect(
            recovery.handle(.tick, now: .seconds(10) + .milliseconds(50), fraction: 0) == [
                .wakeUp(after: .milliseconds(50))
            ])
        #expect(
            recovery.handle(.tick, now: .seconds(10) + .milliseconds(100), fraction: 0) == [
                .register(host: 0, sameHost: true)
            ])
        #expect(recovery.handle(.attemptSucceeded, now: .seconds(11), fraction: 0) == [.reportRegistered(host: 0)])
        #expect(recovery.state == .registered(host: 0))
        #expect(!recovery.isRecovering)
    }

    @Test func failedRoundsBackOffExponentiallyWithJitterUpToTheCap() {
        var recovery = RegistrationRecovery(hostCount: 1, backoff: backoff)
        _ = recovery.handle(.registered(host: 0), now: .zero, fraction: 0)
        _ = recovery.handle(.flowFailed("closed"), now: .zero, fraction: 0)
        var now = Duration.zero
        var waits: [Duration] = []
        for _ in 0..<6 {
            #expect(recovery.handle(.tick, now: now, fraction: 0) == [.register(host: 0, sameHost: true)])
            let actions = recovery.handle(.attemptFailed("refused"), now: now, fraction: 1)
            guard case .wakeUp(let wait) = actions.first, actions.count == 1 else {
                Issue.record("\(actions)")
                return
            }
            waits.append(wait)
            now += wait
        }
        #expect(waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8)])
        // Half of each wait is random: the smallest fraction halves it.
        #expect(backoff.delay(beforeRound: 3, fraction: 0) == .seconds(2))
        #expect(backoff.delay(beforeRound: 0, fraction: 1) == .milliseconds(200))
    }

    @Test func aNodeThatDoesNotAnswerFailsOverToTheNextInOrderWithoutWaiting() {
        var recovery = RegistrationRecovery(hostCount: 3, backoff: backoff)
        _ = recovery.handle(.registered(host: 1), now: .zero, fraction: 0)
        _ = recovery.handle(.flowFailed("closed"), now: .zero, fraction: 0)
        #expect(recovery.handle(.tick, now: .zero, fraction: 0) == [.register(host: 1, sameHost: true)])
        #expect(
            recovery.handle(.attemptFailed("refused"), now: .zero, fraction: 0) == [
                .register(host: 0, sameHost: false)
            ])
        #expect(
            recovery.handle(.attemptFailed("refused"), now: .zero, fraction: 0) == [
                .register(host: 2, sameHost: false)
            ])
        #expect(recovery.handle(.attemptSucceeded, now: .zero, fraction: 0) == [.reportRegistered(host: 2)])
        // The next loss starts on the host the client moved to.
        _ = recovery.handle(.flowFailed("closed"), now: .seconds(1), fraction: 0)
        #expect(recovery.handle(.tick, now: .seconds(1), fraction: 0) == [.register(host: 2, sameHost: true)])
    }

    @Test func aNetworkChangeWhileWaitingTriesAtOnceAndStopEndsRecovery() {
        var recovery = RegistrationRecovery(hostCount: 1, backoff: backoff)
        _ = recovery.handle(.registered(host: 0), now: .zero, fraction: 0)
        #expect(
            recovery.handle(.networkChanged("10.42.1.2 removed"), now: .zero, fraction: 0) == [
                .reportLost("10.42.1.2 removed"), .wakeUp(after: .zero)
            ])
        _ = recovery.handle(.tick, now: .zero, fraction: 0)
        _ = recovery.handle(.attemptFailed("no route"), now: .zero, fraction: 0)
        _ = recovery.handle(.tick, now: .seconds(1), fraction: 0)
        _ = recovery.handle(.attemptFailed("no route"), now: .seconds(1), fraction: 1)
        #expect(recovery.state == .waiting(host: 0, round: 2, due: .seconds(3)))
        #expect(
            recovery.handle(.networkChanged("10.42.2.2 added"), now: .seconds(2), fraction: 0) == [
                .wakeUp(after: .zero)
            ])
        _ = recovery.handle(.stopped, now: .seconds(2), fraction: 0)
        #expect(recovery.handle(.tick, now: .seconds(2), fraction: 0).isEmpty)
        #expect(recovery.handle(.flowFailed("closed"), now: .seconds(2), fraction: 0).isEmpty)
    }
}

/// The network watch's verdicts: the kernel's route to the service against the address in use.
@Suite("Network watch")
struct NetworkWatchTests {
    @Test func aNewRouteIsAChangeAndAVanishedAddressWithoutRouteIsALoss() {
        var watch = NetworkWatch(inUse: "10.42.1.2")
        #expect(watch.observe(route: "10.42.1.2", addresses: ["10.42.1.2", "127.0.0.1"]) == .unchanged)
        // The old address is removed before the new one is up: no route for a moment.
        #expect(watch.observe(route: nil, addresses: ["127.0.0.1"]) == .lost("10.42.1.2"))
        #expect(watch.observe(route: nil, addresses: ["127.0.0.1"]) == .unchanged)
        #expect(watch.observe(route: "10.42.2.2", addresses: ["10.42.2.2"]) == .changed(from: nil, to: "10.42.2.2"))
        // A preferred address appears while the old one stays: the kernel's choice wins.
        #expect(
            watch.observe(route: "192.168.43.2", addresses: ["10.42.2.2", "192.168.43.2"])
                == .changed(from: "10.42.2.2", to: "192.168.43.2"))
        // No route while the address is still there (a route flap): not a loss of the address.
        #expect(watch.observe(route: nil, addresses: ["10.42.2.2", "192.168.43.2"]) == .unchanged)
    }

    @Test func theInterfacesListLoopback() {
        #expect(InterfaceAddresses.current().contains("127.0.0.1"))
    }
}

/// Running calls across a lost address: reconnecting at once, reconnected when it comes back in time, ended with
/// cause network when not; nothing without calls.
@Suite("Calls across a lost address")
struct CallNetworkLossTests {
    @Test func anAddressThatComesBackReconnectsAndOneThatDoesNotEndsTheCalls() {
        var loss = CallNetworkLoss(timeout: .seconds(10))
        let both: Set<String> = ["10.42.1.2", "127.0.0.1"]
        #expect(loss.observe(addresses: both, callAddress: "10.42.1.2", now: .zero).isEmpty)
        #expect(loss.observe(addresses: ["127.0.0.1"], callAddress: "10.42.1.2", now: .seconds(1)) == [.reconnecting])
        #expect(loss.observe(addresses: ["127.0.0.1"], callAddress: "10.42.1.2", now: .seconds(5)).isEmpty)
        #expect(loss.observe(addresses: both, callAddress: "10.42.1.2", now: .seconds(6)) == [.reconnected])
        // Lost again, and this time it stays away.
        #expect(loss.observe(addresses: ["10.42.2.2"], callAddress: "10.42.1.2", now: .seconds(7)) == [.reconnecting])
        #expect(loss.observe(addresses: ["10.42.2.2"], callAddress: "10.42.1.2", now: .seconds(16)).isEmpty)
        let ended = loss.observe(addresses: ["10.42.2.2"], callAddress: "10.42.1.2", now: .seconds(17))
        guard case .endCalls(let reason) = ended.first, ended.count == 1 else {
            Issue.record("\(ended)")
            return
        }
        #expect(reason.contains("10.42.1.2"))
        #expect(loss.lostAddress == nil)
    }

    @Test func callsMovedToANewAddressAreReconnectedAndNotEnded() {
        var loss = CallNetworkLoss(timeout: .seconds(10))
        let moved: Set<String> = ["10.42.1.3"]
        #expect(loss.observe(addresses: moved, callAddress: "10.42.1.2", now: .zero) == [.reconnecting])
        // The client registered from the new address; the ICE restart has not selected a pair yet.
        #expect(loss.observe(addresses: moved, callAddress: "10.42.1.2", now: .seconds(2)).isEmpty)
        // The restart selected a pair there: the calls' media runs from the new address.
        #expect(loss.observe(addresses: moved, callAddress: "10.42.1.3", now: .seconds(3)) == [.reconnected])
        #expect(loss.lostAddress == nil)
        #expect(loss.observe(addresses: moved, callAddress: "10.42.1.3", now: .seconds(20)).isEmpty)
        // A move to an address the host no longer has is no reconnection.
        #expect(loss.observe(addresses: [], callAddress: "10.42.1.3", now: .seconds(21)) == [.reconnecting])
        #expect(loss.observe(addresses: ["10.42.1.2"], callAddress: "10.42.1.4", now: .seconds(22)).isEmpty)
    }

    @Test func withoutCallsALossIsForgotten() {
        var loss = CallNetworkLoss(timeout: .seconds(10))
        #expect(loss.observe(addresses: [], callAddress: nil, now: .zero).isEmpty)
        #expect(loss.observe(addresses: [], callAddress: "10.42.1.2", now: .zero) == [.reconnecting])
        #expect(loss.observe(addresses: [], callAddress: nil, now: .seconds(1)).isEmpty)
        #expect(loss.lostAddress == nil)
        #expect(loss.observe(addresses: [], callAddress: nil, now: .seconds(30)).isEmpty)
    }
}
