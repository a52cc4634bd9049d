import Foundation
import Synchronization
import Testing
import VoiceEngine
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// IPv6 and dual stack on real sockets: `::1`, and `::` carrying IPv4 peers. Skipped where the kernel has no IPv6
/// loopback.
@Suite(.tags(.live), .scheduledByTags, .enabled(if: IPv6Loopback.available, "no IPv6 loopback (::1) on this host"))
struct TransportIPv6Tests {

    @Test func endpointsParseAndPrintBothFamiliesAndFoldIPv4MappedAddresses() throws {
        let v6 = try UDPEndpoint(host: "[2001:DB8::1]", port: 5004)
        #expect(v6.isIPv6 && v6.description == "[2001:db8::1]:5004" && v6.host == "2001:db8::1")
        #expect(try UDPEndpoint(host: "::1", port: 9) == UDPEndpoint(address: .v6(high: 0, low: 1), port: 9))
        // One peer, one endpoint: ::ffff:127.0.0.1 (how a dual-stack socket sees an IPv4 peer) is 127.0.0.1.
        let mapped = try UDPEndpoint(host: "::ffff:127.0.0.1", port: 9)
        #expect(mapped == UDPEndpoint(address: 0x7F00_0001, port: 9) && !mapped.isIPv6)
        #expect(mapped.description == "127.0.0.1:9")
        for bad in ["localhost", "::1::2", "[::1", "1.2.3", ""] {
            #expect(throws: UDPTransportError.self, "\(bad)") { try UDPEndpoint(host: bad, port: 9) }
        }
    }

    @Test func twoIPv6TransportsExchangeRTPAndLatchOntoAnIPv6Source() async throws {
        let a = try await UDPMediaTransport.bind(host: "::1")
        let b = try await UDPMediaTransport.bind(host: "::1", configuration: .init(latchPolicy: .firstPacket))
        #expect(a.localEndpoint.isIPv6 && a.localEndpoint.host == "::1" && a.localEndpoint.port != 0)
        a.setRemote(b.localEndpoint)
        for i in 0..<10 { #expect(TransportTests.send(TransportTests.rtp(sequence: UInt16(i)), from: a) == .sent) }
        #expect(await TransportTests.eventually { b.counters.receivedRTP == 10 })
        let received = TransportTests.drain(.rtp, b)
        #expect(received.count == 10 && received.allSatisfy { $0.1 == a.localEndpoint })
        #expect(b.isLatched && b.remote == a.localEndpoint)
        #expect(TransportTests.send(TransportTests.rtp(sequence: 99), from: b) == .sent)
        #expect(await TransportTests.eventually { a.counters.receivedRTP == 1 })
        await a.close()
        await b.close()
    }

    @Test func aDualStackSocketTalksToAnIPv4PeerAsPlainIPv4() async throws {
        let dual = try await UDPMediaTransport.bind(host: "::", configuration: .init(latchPolicy: .firstPacket))
        let v4 = try await UDPMediaTransport.bind(host: "127.0.0.1")
        #expect(dual.localEndpoint.isIPv6 && dual.localEndpoint.address.isUnspecified)
        _ = TransportTests.send(
            TransportTests.rtp(sequence: 1), from: v4,
            to: UDPEndpoint(address: 0x7F00_0001, port: dual.localEndpoint.port))
        #expect(await TransportTests.eventually { dual.counters.receivedRTP == 1 })
        #expect(TransportTests.drain(.rtp, dual).first?.1 == v4.localEndpoint)
        #expect(dual.remote == v4.localEndpoint && dual.remote?.isIPv6 == false)
        // Back to the IPv4 peer from the IPv6 socket (sent to ::ffff:127.0.0.1 underneath).
        #expect(TransportTests.send(TransportTests.rtp(sequence: 2), from: dual) == .sent)
        #expect(await TransportTests.eventually { v4.counters.receivedRTP == 1 })
        await dual.close()
        await v4.close()
    }

    @Test func anIPv4SocketCountsSendsToAnIPv6PeerAsFailedInsteadOfCrashing() async throws {
        let v4 = try await UDPMediaTransport.bind(host: "127.0.0.1")
        v4.setRemote(try UDPEndpoint(host: "::1", port: 9))
        #expect(TransportTests.send(TransportTests.rtp(sequence: 1), from: v4) == .failed(errno: EAFNOSUPPORT))
        #expect(v4.counters.sendFailed == 1 && v4.counters.sent == 0)
        await v4.close()
    }

    /// The remote is three words behind a sequence counter; readers racing a writer that flips it between an IPv6
    /// and an IPv4 endpoint must only ever see one of the two whole values, never a mix of their words.
    @Test func theRemoteIsNeverSeenTornWhileAnotherThreadChangesIt() async throws {
        let transport = try await UDPMediaTransport.bind(host: "::1")
        let first = try UDPEndpoint(host: "2001:db8::1:2:3:4", port: 1111)
        let second = UDPEndpoint(address: 0x0A00_0001, port: 2222)
        transport.setRemote(first)
        final class Race: Sendable {
            let torn = Atomic(0), reads = Atomic(0), stop = Atomic(false)
            let finished = DispatchSemaphore(value: 0)
        }
        let race = Race()
        for _ in 0..<2 {
            Thread.detachNewThread {
                while !race.stop.load(ordering: .relaxed) {
                    let seen = transport.remote
                    if seen != first && seen != second { race.torn.add(1, ordering: .relaxed) }
                    race.reads.add(1, ordering: .relaxed)
                }
                race.finished.signal()
            }
        }
        for i in 0..<200_000 {
            if i % 2 == 0 { transport.setRemote(second) } else { _ = transport.latchRemote(to: first) }
        }
        race.stop.store(true, ordering: .relaxed)
        for _ in 0..<2 { race.finished.wait() }
        let (torn, reads) = (race.torn.load(ordering: .relaxed), race.reads.load(ordering: .relaxed))
        #expect(torn == 0, "\(torn) torn reads of \(reads)")
        #expect(reads > 0)
        await transport.close()
    }
}
