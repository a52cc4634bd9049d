import Foundation
import Testing
import VoiceCore
import VoiceNetSim

@Test func traceRoundTripsThroughCSVAndReplaysExactly() throws {
    var sim = try NetworkSimulator(
        conditions: NetworkConditions(
            jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 15),
            loss: .bernoulli(probability: 0.05), seed: 12))
    let fates = sim.fates(count: 300, interval: .milliseconds(20))
    let trace = NetworkTrace(fates: fates)
    let parsed = try NetworkTrace(csv: trace.csv)
    #expect(parsed == trace)
    var replay = NetworkSimulator(trace: parsed)
    let replayed = (0..<300).map { replay.nextFate(nominalSendTime: .milliseconds(Int64($0) * 20)) }
    #expect(replayed.map(\.arrival) == fates.map(\.arrival))
    #expect(replay.nextFate(nominalSendTime: .seconds(10)).isLost)  // past the end of the trace
}

@Test func traceParsesLossesBlankLinesAndFractions() throws {
    let trace = try NetworkTrace(csv: "send_ms,arrival_ms\n0,30\n20,\n\n40,61.5\n")
    #expect(trace.records.count == 3)
    #expect(trace.records[1].arrival == nil)
    #expect(trace.records[2].arrival == .microseconds(61_500))
    #expect(abs(trace.lossRate - 1.0 / 3) < 1e-9)
}

@Test(arguments: [
    ("", 1, "no header"),
    ("send,arrival\n0,1\n", 1, "expected header"),
    ("send_ms,arrival_ms\n", 1, "no packets"),
    ("send_ms,arrival_ms\n0,30\n20\n", 3, "expected 2 fields"),
    ("send_ms,arrival_ms\n0,30\nabc,40\n", 3, "send_ms 'abc'"),
    ("send_ms,arrival_ms\n0,30\n20,x\n", 3, "arrival_ms 'x'"),
    ("send_ms,arrival_ms\n40,60\n20,50\n", 3, "goes backwards"),
    ("send_ms,arrival_ms\n0,30\n20,10\n", 3, "before send_ms"),
    ("send_ms,arrival_ms\n-5,30\n", 2, "non-negative")
])
func malformedTracesAreRejectedWithLineAndReason(csv: String, line: Int, reason: String) {
    do {
        _ = try NetworkTrace(csv: csv)
        Issue.record("accepted a malformed trace")
    } catch {
        guard case .malformedTrace(let l, let r) = error else {
            Issue.record("wrong error \(error)")
            return
        }
        #expect(l == line)
        #expect(r.contains(reason), "\(r)")
    }
}

@Test func unreadableTraceFilesAreRejectedWithTheReasonNotAsALineError() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "trace-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let binary = directory.appendingPathComponent("binary.csv")
    try Data([0x73, 0x65, 0xFF, 0xFE, 0x00, 0xC3]).write(to: binary)
    let cases: [(URL, String)] = [
        (directory.appendingPathComponent("absent.csv"), "no such file"),
        (directory, "it is a directory"),
        (binary, "not UTF-8 text (6 bytes)")
    ]
    for (url, reason) in cases {
        #expect(throws: NetworkSimulatorError.unreadableTrace(path: url.path, reason: reason)) {
            try NetworkTrace(contentsOf: url)
        }
    }
    let error = NetworkSimulatorError.unreadableTrace(path: "/x.csv", reason: "no such file")
    #expect(error.description == "cannot read trace /x.csv: no such file")
}

@Test func oracleDelayIsTheSmallestFixedDelayMeetingTheLateLoss() throws {
    // Transits 10, 20, ..., 100 ms; one packet lost.
    var csv = "send_ms,arrival_ms\n"
    for i in 0..<10 { csv += "\(i * 20),\(i * 20 + (i + 1) * 10)\n" }
    csv += "200,\n"
    let trace = try NetworkTrace(csv: csv)
    #expect(trace.oracleDelayMilliseconds(lateLoss: 0) == 100)
    #expect(trace.oracleDelayMilliseconds(lateLoss: 0.1) == 90)
    #expect(trace.oracleDelayMilliseconds(lateLoss: 0.25) == 80)
}
