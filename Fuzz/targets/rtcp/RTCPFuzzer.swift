// libFuzzer target: RTCP compound validation (RTCPCompoundView), decoding (RTCPPacket.parseCompound) and the
// decoded packets' serialize/parse round trip. Any trap is a finding.
import FuzzSupport
import VoiceEngine

@main enum RTCPFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size)
    for validation in [RTCPValidation.rfc3550, .reducedSize] {
        if let compound = try? RTCPCompoundView(bytes, validation: validation) {
            var seen = 0
            var sink = 0
            for view in compound {
                seen += 1
                sink &+= view.count + Int(view.packetType) + view.offset + view.body.count + Int(view.body.last ?? 0)
                sink &+= view.hasPadding ? 1 : 0
            }
            precondition(seen == compound.packetCount, "iterated \(seen) of \(compound.packetCount) packets")
            precondition(sink != Int.min)
        }
        guard let packets = try? RTCPPacket.parseCompound(bytes, validation: validation) else { continue }
        // What we decoded must serialize (no precondition trips) and decode again to the same packets.
        let wire = RTCPPacket.serializedCompound(packets)
        guard let again = try? RTCPPacket.parseCompound(wire, validation: .reducedSize) else {
            preconditionFailure("re-serialized RTCP compound does not parse")
        }
        precondition(again == packets, "RTCP packets changed in a serialize/parse round trip")
    }
    return 0
}
