// libFuzzer target: network trace CSV parsing (NetworkTrace(csv:)) and its CSV round trip.
import FuzzSupport
import VoiceLab

@main enum TraceFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: size > 0 ? data : nil, count: size), as: UTF8.self)
    for csv in [text, "send_ms,arrival_ms\n" + text] {
        guard let trace = try? NetworkTrace(csv: csv) else { continue }
        _ = trace.oracleDelayMilliseconds(lateLoss: 0.01)
        _ = trace.lossRate
        // The written CSV is documented as lossless: it must parse back to the same records.
        guard let again = try? NetworkTrace(csv: trace.csv) else { preconditionFailure("written trace does not parse") }
        precondition(again == trace, "trace changed in a CSV round trip")
    }
    return 0
}
