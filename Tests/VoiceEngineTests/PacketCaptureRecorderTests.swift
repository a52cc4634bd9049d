import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// `PacketCaptureRecorder` on real loopback sockets: what it writes is what went over the wire, with the arrival
/// times the consumer saw, and it never blocks a sender.
@Suite(.tags(.live), .scheduledByTags) struct PacketCaptureRecorderTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString).pcapng").path
    }

    @Test func everyDatagramSentAndReceivedIsWrittenWithAddressesAndTheConsumersArrivalTimes() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = ManualClock(start: .milliseconds(1_000))
        let recorder = try PacketCaptureRecorder(path: path, clock: clock)
        let a = try await TransportTests.bound(.init(clock: clock, capture: recorder))
        let b = try await TransportTests.bound()
        a.setRemote(b.localEndpoint)
        b.setRemote(a.localEndpoint)
        for i in 0..<30 {
            #expect(TransportTests.send(TransportTests.rtp(sequence: UInt16(i)), from: a) == .sent)
            #expect(TransportTests.send(TransportTests.rtp(sequence: UInt16(500 + i)), from: b) == .sent)
            #expect(await TransportTests.eventually { a.pendingPackets(.rtp) == i + 1 })
            clock.advance(by: .milliseconds(20))
        }
        _ = TransportTests.send([1, 2, 3], from: b)  // not RTP: the transport drops it, the capture shows it
        #expect(await TransportTests.eventually { a.counters.droppedNotRTP == 1 })
        var arrivals: [MediaTime] = []
        while let t = a.withNextPacket(.rtp, { $0.arrival }) { arrivals.append(t) }
        await a.close()
        await b.close()
        let summary = try recorder.close()
        #expect(summary.packets == 61 && summary.notRecorded == 0)

        let packets = try PcapReader.readAll(bytes: try PcapReader.readFile(path))
        #expect(packets.count == 61)
        let local = PcapEndpoint(address: a.localEndpoint.address, port: a.localEndpoint.port)
        let peer = PcapEndpoint(address: b.localEndpoint.address, port: b.localEndpoint.port)
        let sent = packets.filter { $0.source == local && $0.destination == peer }
        let received = packets.filter { $0.source == peer && $0.destination == local }
        #expect(sent.map { UInt16($0.payload[2]) << 8 | UInt16($0.payload[3]) } == (0..<30).map { UInt16($0) })
        #expect(received.count == 31 && received.last?.payload == [1, 2, 3])
        // Times are the transport clock's, shifted by one constant to the wall clock: the received RTP's spacing
        // is exactly the arrival spacing the consumer was given.
        let offset = received[0].timestamp - arrivals[0]
        #expect(zip(received.dropLast(), arrivals).allSatisfy { $0.timestamp - $1 == offset })
        #expect(packets.map(\.timestamp) == packets.map(\.timestamp).sorted(), "written in time order")
        #expect(try recorder.close() == summary, "idempotent")
    }

    @Test func sendersOnSeveralThreadsAreNeverBlockedAndEveryDatagramIsWrittenOrCounted() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = try PacketCaptureRecorder(path: path)
        let a = try await TransportTests.bound(.init(capture: recorder))
        let sink = try await TransportTests.bound()
        a.setRemote(sink.localEndpoint)
        let perThread = 400
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    for i in 0..<perThread {
                        _ = TransportTests.send(TransportTests.rtp(sequence: UInt16(t * 1000 + i)), from: a)
                    }
                }
            }
        }
        let sent = a.counters.sent
        await a.close()
        await sink.close()
        let summary = try recorder.close()
        #expect(sent > 0 && summary.packets + summary.notRecorded == sent)
        #expect(try PcapReader.readAll(bytes: try PcapReader.readFile(path)).count == summary.packets)
    }

    @Test func anUnwritablePathIsAnErrorBeforeAnythingStarts() {
        #expect(throws: PcapError.self) { _ = try PacketCaptureRecorder(path: "/nonexistent-\(UUID())/x.pcapng") }
    }
}
