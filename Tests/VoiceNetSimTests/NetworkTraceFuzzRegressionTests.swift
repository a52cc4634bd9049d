import Testing
import VoiceCore
import VoiceNetSim

/// Inputs the trace fuzzer (Fuzz/run.sh trace) showed to trap, kept as regression tests: each must be rejected
/// with a `malformedTrace` error naming the line, never converted into an out-of-range `MediaTime`.
@Suite struct NetworkTraceFuzzRegressionTests {
    /// Converting 1e300 ms to Int64 nanoseconds trapped ("Double value cannot be converted to Int64").
    @Test(arguments: [
        ("send_ms,arrival_ms\n0,1e300\n", 2, "arrival_ms"),
        ("send_ms,arrival_ms\n1e300,\n", 2, "send_ms"),
        ("send_ms,arrival_ms\n0,1\n9223372036854.775807,9223372036854.775808\n", 3, "send_ms"),
        ("send_ms,arrival_ms\n0,1000000000.000001\n", 2, "arrival_ms")
    ])
    func hugeTimesAreRejectedNotTrapped(csv: String, line: Int, field: String) {
        #expect {
            try NetworkTrace(csv: csv)
        } throws: { error in
            guard case NetworkSimulatorError.malformedTrace(let l, let reason) = error else { return false }
            return l == line && reason.contains(field) && reason.contains("exceeds")
        }
    }

    @Test func largestAcceptedTimeRoundTripsExactly() throws {
        let csv = "send_ms,arrival_ms\n999999999.999999,1000000000\n"
        let trace = try NetworkTrace(csv: csv)
        #expect(trace.records[0].send == MediaTime(nanoseconds: 999_999_999_999_999))
        #expect(trace.records[0].arrival == MediaTime(nanoseconds: 1_000_000_000_000_000))
        #expect(try NetworkTrace(csv: trace.csv) == trace)
    }
}
