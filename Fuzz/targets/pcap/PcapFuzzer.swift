// libFuzzer target: pcap / pcapng reading (PcapReader(bytes:) then next() until the end or an error).
import FuzzSupport
import VoiceEngine
import VoiceLab

@main enum PcapFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    guard var reader = try? PcapReader(bytes: bytes) else { return 0 }
    var packets = 0
    while true {
        // `try?` flattens: nil for the end of the file and for an error alike.
        guard let packet = try? reader.next() else { break }
        packets += 1
        precondition(packets <= size, "more packets than bytes: the reader is not advancing")
        precondition(packet.payload.count <= size && packet.nanoseconds < 1_000_000_000)
    }
    return 0
}
