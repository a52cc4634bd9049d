import Foundation
import Synchronization
import Testing
import VoiceEngine
import VoiceTestSupport
import VoiceWebRTC

/// Renomination on media ports over loopback: between the two ports' sockets sits a forwarder (a third socket
/// that passes datagrams from one to the other) that drops everything until the test opens it, as a NAT whose hole
/// opens late. Each side knows the forwarder as a host candidate of the other's of the highest priority, so the
/// pair through it is the best on both sides; the direct pair answers first and is selected, then the pair through
/// the forwarder answers, is nominated in turn, and both ports move the media there.
@Suite("ICE renomination on a media port", .tags(.live), .scheduledByTags)
struct ICEMediaPortRenominationTests {
    /// Passes each datagram from `a` to `b` and from `b` to `a` once ``open()`` was called; drops them before.
    final class LateForwarder: Sendable {
        let transport: UDPMediaTransport
        private let task: Task<Void, Never>
        private let gate = Gate()

        final class Gate: Sendable {
            let isOpen = Atomic<Bool>(false)
        }

        init(between a: UDPEndpoint, and b: UDPEndpoint) async throws {
            let transport = try await ICEMediaPortTests.bindPolled()
            self.transport = transport
            let gate = gate
            @Sendable func forward(_ bytes: UnsafeRawBufferPointer, from source: UDPEndpoint) {
                guard gate.isOpen.load(ordering: .acquiring) else { return }
                if source == a {
                    _ = transport.send(bytes, to: b)
                } else if source == b {
                    _ = transport.send(bytes, to: a)
                }
            }
            transport.setSTUNHandler { forward($0, from: $1) }
            task = Task.detached {
                while !Task.isCancelled {
                    _ = transport.receiveFromSocket()
                    while transport.withNextPacket(.rtp, { forward($0.bytes, from: $0.source) }) != nil {}
                    try? await Task.sleep(for: .milliseconds(2))
                }
            }
        }

        func open() { gate.isOpen.store(true, ordering: .releasing) }

        func stop() async {
            task.cancel()
            await transport.close()
        }
    }

    /// `sdp` with one more host candidate, of the highest priority, at `endpoint`.
    static func adding(_ endpoint: UDPEndpoint, to sdp: SDPICEParameters) -> SDPICEParameters {
        var sdp = sdp
        sdp.candidates.insert("99 1 udp 2130706431 127.0.0.1 \(endpoint.port) typ host", at: 0)
        return sdp
    }

    @Test func aBetterPairThatAnswersLaterIsRenominatedAndTheMediaOfBothPortsMovesToIt() async throws {
        let a = try await ICEMediaPortTests.bindPolled(), b = try await ICEMediaPortTests.bindPolled()
        let forwarder = try await LateForwarder(between: a.localEndpoint, and: b.localEndpoint)
        let through = forwarder.transport.localEndpoint
        let controlling = ICEMediaPort(transport: a, role: .controlling)
        let controlled = ICEMediaPort(transport: b, role: .controlled)
        async let fromA = controlling.connect(to: Self.adding(through, to: controlled.sdp), timeout: .seconds(5))
        async let fromB = controlled.connect(to: Self.adding(through, to: controlling.sdp), timeout: .seconds(5))
        let (selectedByA, selectedByB) = await (fromA, fromB)
        // The direct pair answered first and was selected; the transports send there.
        #expect(selectedByA == .success(b.localEndpoint), "\(selectedByA)")
        #expect(selectedByB == .success(a.localEndpoint), "\(selectedByB)")
        #expect(a.remote == b.localEndpoint && b.remote == a.localEndpoint)
        // The better path opens; the retransmissions of its checks get through.
        forwarder.open()
        let polling = Task {
            while !Task.isCancelled {
                _ = a.receiveFromSocket()
                _ = b.receiveFromSocket()
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, a.remote != through || b.remote != through {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(a.remote == through && b.remote == through, "media did not move: \(String(describing: a.remote))")
        #expect(controlling.selectedPair?.remote == TransportAddress(through))
        #expect(controlled.selectedPair?.remote == TransportAddress(through))
        #expect(controlling.selectionChanges == 1 && controlled.selectionChanges == 1)
        polling.cancel()
        // Media sent now (to the transport's remote) crosses the forwarder and arrives from it.
        #expect(ICEMediaPortTests.rtp.withUnsafeBytes { a.send($0) } == .sent)
        let arrived = try await ICEMediaPortTests.sourceOfRTP(arrivingAt: b)
        #expect(arrived == through, "the RTP arrived from \(arrived.map { "\($0)" } ?? "nowhere")")
        controlling.stop()
        controlled.stop()
        await forwarder.stop()
        await a.close()
        await b.close()
    }
}
