// libFuzzer target: WAV decoding (WAVFile(bytes:)) and, for accepted files, the decoded samples' accessors.
import FuzzSupport
import VoiceEngine

@main enum WAVFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    guard let file = try? WAVFile(bytes: bytes) else { return 0 }
    let samples = file.int16Samples
    precondition(samples.count == file.frameCount * file.format.channels, "sample count mismatch")
    _ = file.duration
    _ = file.encoding
    return 0
}
