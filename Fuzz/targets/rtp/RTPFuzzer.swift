// libFuzzer target: RTP packet parsing (RTPPacketView), header-extension iteration, and the owned RTPHeader's
// serialize/parse round trip. Any trap (overflow, out-of-bounds, force unwrap, precondition) is a finding.
import FuzzSupport
import VoiceEngine

@main enum RTPFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size)
    for options in [RTPParseOptions(), RTPParseOptions(rejectReservedExtensionID: true)] {
        guard let view = try? RTPPacketView(bytes, options: options) else { continue }
        // Touch every accessor: they promise not to read out of bounds once init has validated the packet.
        var sink = Int(view.version) + Int(view.payloadType) + Int(view.sequenceNumber) + Int(view.timestamp & 0xFF)
        sink &+= Int(view.ssrc & 0xFF) + view.headerLength + view.payload.count + view.paddingLength
        sink &+= view.hasPadding ? 1 : 0
        sink &+= view.marker ? 1 : 0
        for i in 0..<view.csrcCount { sink &+= Int(view.csrc(at: i) & 0xFF) }
        if let ext = view.headerExtension {
            sink &+= Int(ext.profile) + ext.data.count
            for element in ext.elements { sink &+= Int(element.id) + element.data.count + Int(element.data.last ?? 0) }
            for id in UInt8(0)...UInt8(255) { sink &+= ext.element(id: id)?.count ?? 0 }
        }
        precondition(sink != Int.min)

        // The owned copy must serialize to a packet that parses back to the same header and payload.
        let header = RTPHeader(view)
        let payload = Array(view.payload)
        let packet = header.serializedPacket(payload: payload)
        packet.withUnsafeBytes { raw in
            guard let again = try? RTPPacketView(raw, options: options) else {
                preconditionFailure("re-serialized RTP packet does not parse")
            }
            precondition(RTPHeader(again) == header, "RTP header changed in a serialize/parse round trip")
            precondition(Array(again.payload) == payload, "RTP payload changed in a serialize/parse round trip")
        }
    }
    return 0
}
