import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// The package folder, found from this file's location so tests run from any directory.
private let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
private let speechA = packageRoot.appendingPathComponent(DemoCall.defaultInputA).path
private let speechB = packageRoot.appendingPathComponent(DemoCall.defaultInputB).path
private let haveSpeech =
    FileManager.default.fileExists(atPath: speechA) && FileManager.default.fileExists(atPath: speechB)

/// `voice-engine demo`: the UDP-backed packet path, the demo call through the library, and the command's flags.
@Suite(.tags(.slow), .scheduledByTags) struct DemoTests {
    /// A minimal RTP-looking datagram (version 2, payload type 111) carrying `index` so it can be told apart.
    private static func datagram(_ index: Int, rtcp: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = [0x80, rtcp ? 201 : 111, UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF)]
        bytes += [UInt8](repeating: 0, count: 4) + [0, 0, 0, 7]
        bytes += (0..<20).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) }
        return bytes
    }

    private static func index(of bytes: UnsafeRawBufferPointer) -> Int { Int(bytes[2]) << 8 | Int(bytes[3]) }

    @Test func udpPathDeliversEveryNonLostPacketExactlyOnceInSimulatedOrder() async throws {
        // Lossy, jittery and reordering, so the schedule has real work: order must follow the simulated arrivals.
        let conditions = NetworkConditions(
            baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 20, standardDeviationMilliseconds: 20),
            loss: .gilbertElliott(goodToBad: 0.05, badToGood: 0.4), preservesOrder: false,
            reorderProbability: 0.1, reorderDelayMilliseconds: 45, duplicateProbability: 0.02, seed: 42)
        let path = try await UDPCallPacketPath.open(
            aToB: .conditions(conditions), bToA: .conditions(NetworkConditions(baseDelayMilliseconds: 10, seed: 3)))
        var deliveredToB: [(index: Int, arrival: MediaTime, at: MediaTime)] = []
        var deliveredToA: [Int] = []
        let count = 400
        var now = MediaTime.zero
        for tick in 0..<(count * 2 + 100) {
            path.deliver(to: .b, until: now) { bytes, arrival in
                deliveredToB.append((Self.index(of: bytes), arrival, now))
            }
            path.deliver(to: .a, until: now) { bytes, _ in deliveredToA.append(Self.index(of: bytes)) }
            if tick % 2 == 0, tick / 2 < count {
                Self.datagram(tick / 2).withUnsafeBytes { path.send($0, kind: .rtp, from: .a, now: now) }
            }
            if tick % 50 == 0 {
                Self.datagram(tick, rtcp: true).withUnsafeBytes { path.send($0, kind: .rtcp, from: .b, now: now) }
            }
            now += .milliseconds(10)
        }
        await path.close()

        let fates = path.fates(from: .a)
        #expect(fates.count == count)
        var expected: [(index: Int, arrival: MediaTime, order: Int)] = []
        for (i, fate) in fates.enumerated() {
            if let a = fate.arrival { expected.append((i, a, 2 * i)) }
            if let d = fate.duplicateArrival { expected.append((i, d, 2 * i + 1)) }
        }
        expected.sort { $0.arrival < $1.arrival || ($0.arrival == $1.arrival && $0.order < $1.order) }
        let lost = fates.filter(\.isLost).count
        #expect(lost > 10 && lost < count / 2, "the conditions should lose some packets, lost \(lost)")
        #expect(deliveredToB.map(\.index) == expected.map(\.index))
        #expect(deliveredToB.map(\.arrival) == expected.map(\.arrival))
        // Each is handed over at the first tick at or after its simulated arrival.
        #expect(deliveredToB.allSatisfy { $0.arrival <= $0.at && $0.at - $0.arrival < .milliseconds(10) })
        let reordered = zip(deliveredToB, deliveredToB.dropFirst()).contains { $0.index > $1.index }
        #expect(reordered, "the reordering conditions should reorder something")

        let aToB = path.counters(from: .a)
        #expect(aToB.sent == count && aToB.sendFailures == 0)
        #expect(aToB.arrived == count, "every datagram, lost ones included, goes over UDP")
        #expect(aToB.droppedBySimulator == lost)
        #expect(aToB.delivered == expected.count)
        #expect(aToB.transportLost == 0 && aToB.stray == 0)
        #expect(path.inFlight(to: .b) == 0)
        // RTCP is never lost by the simulator.
        let rtcpSent = (0..<(count * 2 + 100)).filter { $0 % 50 == 0 }.count
        #expect(deliveredToA.count == rtcpSent && path.counters(from: .b).droppedBySimulator == 0)
    }

    @Test func profilesHaveTheirNamedFiguresAndOverridesValidate() throws {
        #expect(DemoNetworkProfile.all.map(\.name) == ["clean", "wifi", "lte", "congested"])
        #expect(DemoNetworkProfile.wifi.lossPercent == 3 && DemoNetworkProfile.wifi.jitterMilliseconds == 30)
        #expect(DemoNetworkProfile.named("wifi") == .wifi && DemoNetworkProfile.named("moon") == nil)
        if case .gilbertElliott(let gb, let bg, _, _) = DemoNetworkProfile.wifi.conditions(seed: 1).loss {
            let stationary = gb / (gb + bg)
            #expect(abs(stationary - 0.03) < 1e-9)
            #expect(abs(1 / bg - 3) < 1e-9)
        } else {
            Issue.record("wifi loss should be bursty (Gilbert–Elliott)")
        }
        #expect(DemoNetworkProfile.clean.conditions(seed: 1).loss == .none)
        var bad = DemoNetworkProfile.wifi
        bad.lossPercent = 150
        #expect(throws: DemoError.invalidOption("--loss", "150.0 must be within 0...100 (percent)")) {
            try bad.validate()
        }
        bad = .wifi
        bad.jitterMilliseconds = -5
        #expect(throws: DemoError.self) { try bad.validate() }
        #expect(throws: DemoError.self) { try DemoCall.Options(durationSeconds: 0).validate() }
        #expect(throws: DemoError.self) { try DemoCall.Options(durationSeconds: .nan).validate() }
        try DemoCall.Options(durationSeconds: 3).validate()
    }

    @Test func missingInputIsAClearError() async {
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("nope.wav").path
        await #expect(throws: DemoError.self) {
            _ = try await DemoCall.run(DemoCall.Options(inputA: missing, outputDirectory: dir.path))
        }
        do {
            _ = try await DemoCall.run(DemoCall.Options(inputA: missing, outputDirectory: dir.path))
        } catch {
            #expect(error.description.contains(missing) && error.description.contains("no such file"))
        }
    }

    @Test(.enabled(if: haveSpeech, "TestVectors speech vectors missing (run `make vectors`)"))
    func shortDemoWritesEveryFileWithBalancedCountersAndCharts() async throws {
        let dir = StreamTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("demo").path
        let outcome = try await DemoCall.run(
            DemoCall.Options(
                inputA: speechA, inputB: speechB, durationSeconds: 2.5, outputDirectory: out, seed: 5))
        let files = outcome.files
        for file in files.all { #expect(FileManager.default.fileExists(atPath: file), "\(file) missing") }
        for wavPath in [files.aReceived, files.bReceived, files.bMicrophone] {
            let wav = try WAVFile.read(path: wavPath)
            #expect(wav.format == AudioFormat(sampleRate: 16_000))
            #expect(wav.frameCount == 40_000)
        }
        let bMic = try WAVFile.read(path: files.bMicrophone).int16Samples
        let bSpeech = Array(try WAVFile.read(path: speechB).int16Samples.prefix(bMic.count))
        #expect(bMic != bSpeech, "B's microphone carries the echo of what B played")

        let json = try Data(contentsOf: URL(fileURLWithPath: files.json))
        let report = try DemoCall.Report.decode(json)
        #expect(report.configuration.network == .wifi)
        #expect(report.configuration.srtpSuite == "AES_CM_128_HMAC_SHA1_80")
        #expect(report.a.stream.srtpSuite == "AES_CM_128_HMAC_SHA1_80")
        #expect(report.configuration.endpointA.hasPrefix("127.0.0.1:"))
        #expect(abs(report.configuration.durationSeconds - 2.5) < 1e-9)
        #expect(report.directions.map(\.direction) == ["A → B", "B → A"])
        for (d, r) in zip(report.directions, [report.b, report.a]) {
            #expect(d.expected > 100, "\(d.direction): 2.5 s of 20 ms packets")
            #expect(d.received + d.lost == d.expected, "\(d.direction) counters balance")
            #expect(r.rtp.received + r.rtp.lost == r.rtp.expected)
            #expect(d.expected <= d.sent)
            #expect(r.drops.total == 0, "\(d.direction): SRTP authenticated every packet")
            #expect(d.mos >= 1 && d.mos <= 4.5 && d.rFactor > 20, "\(d.direction) MOS \(d.mos)")
            #expect(
                d.meanBufferDelayMilliseconds > 0 && d.p95BufferDelayMilliseconds >= d.meanBufferDelayMilliseconds * 0.5
            )
        }
        for t in [report.transport.aToB, report.transport.bToA] {
            #expect(t.arrived == t.sent && t.transportLost == 0 && t.stray == 0)
        }
        let totalLoss = report.transport.aToB.droppedBySimulator + report.transport.bToA.droppedBySimulator
        let reportedLoss = report.directions.map(\.lost).reduce(0, +)
        #expect(totalLoss >= reportedLoss, "the receivers cannot see more loss than the network made")
        #expect(report.timeline.count == 2 * 25 && report.intervals.count == 2 * 25)
        #expect(report.directions[0].erleDecibels == nil, "A has no echo path")
        // 2.5 s is A's first turn: B only listens, so its microphone is pure echo and its canceller must remove
        // some of it (a canceller doing nothing gives about 0 dB).
        #expect(report.configuration.conversation == "turns of 2.5 s")
        let erle = try #require(report.directions[1].erleDecibels)
        #expect(erle > 2, "B's echo canceller at work, ERLE \(erle) dB")

        let html = try String(contentsOfFile: files.html, encoding: .utf8)
        #expect(html.components(separatedBy: "<svg").count - 1 >= 5)
        for title in [
            "Jitter buffer A → B", "Jitter buffer B → A", "Network loss and concealment", "Levels", "Call quality"
        ] {
            #expect(html.contains(SVGChart.escape(title)), "HTML lacks \(title)")
        }
        // Keys never reach the reports.
        let text = String(decoding: json, as: UTF8.self) + html
        #expect(!text.contains("inline:"))
        #expect(outcome.summaryTable.contains("A → B") && outcome.summaryTable.contains("B → A"))
    }
}
