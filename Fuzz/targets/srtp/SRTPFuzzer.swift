// libFuzzer target: SRTP/SRTCP unprotect (libsrtp2 through SRTPSession) on arbitrary bytes, in a buffer with spare
// capacity after the packet, for every crypto suite. Random bytes almost never authenticate, so half the inputs are
// first protected with the same fixed key and then damaged by the input's own bytes, reaching the decrypt path and
// the ROC-retry path with packets that do authenticate. Any trap or sanitizer report is a finding.
import FuzzSupport
import VoiceEngine

@main enum SRTPFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

/// Fixed key material (64 bytes covers every suite's key || salt).
private let keyBytes: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
private let suites = SRTPCryptoSuite.allCases.filter { SRTPSession.isAvailable($0) }
private let spareCapacity = 64

private func key(for suite: SRTPCryptoSuite) -> SRTPMasterKey {
    SRTPMasterKey(bytes: Array(keyBytes.prefix(suite.keyMaterialLength)))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 2, let data else { return 0 }
    let control = data[0]
    let suite = suites[Int(control & 0x07) % suites.count]
    let rtcp = control & 0x08 != 0
    let protectFirst = control & 0x10 != 0
    let specific = control & 0x20 != 0
    let input = UnsafeRawBufferPointer(start: data + 1, count: size - 1)

    let ssrc: SRTPSession.SSRC = specific ? .specific(input.count >= 12 ? readSSRC(input) : 0) : .any
    guard let inbound = try? SRTPSession(suite: suite, key: key(for: suite), direction: .inbound, ssrc: ssrc) else {
        preconditionFailure("inbound SRTP session with a valid key failed")
    }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: input.count + spareCapacity + 64, alignment: 16)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0xA5)

    var length = input.count
    buffer.copyMemory(from: input)
    if protectFirst {
        // Protect the input as a packet, then flip the bits named by its last byte (0xFF: leave it intact).
        guard let outbound = try? SRTPSession(suite: suite, key: key(for: suite), direction: .outbound) else {
            preconditionFailure("outbound SRTP session with a valid key failed")
        }
        let protected: Int?
        if rtcp {
            protected = try? outbound.protectRTCP(buffer, length: length)
        } else {
            protected = try? outbound.protect(buffer, length: length)
        }
        guard let protected else { return 0 }
        length = protected
        let damage = Int(input[input.count - 1])
        if damage != 0xFF, length > 0 {
            let at = (damage * 7) % length
            buffer[at] ^= UInt8(truncatingIfNeeded: damage | 1)
        }
    }
    // Twice: the second time exercises replay detection (or the ROC retry's restored state).
    for _ in 0..<2 {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count, alignment: 16)
        defer { scratch.deallocate() }
        scratch.copyMemory(from: UnsafeRawBufferPointer(buffer))
        let result: Int?
        if rtcp {
            result = try? inbound.unprotectRTCP(scratch, length: length)
        } else {
            result = try? inbound.unprotect(scratch, length: length)
        }
        if let result { precondition(result >= 0 && result <= length, "unprotect grew the packet to \(result)") }
    }
    return 0
}

private func readSSRC(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8 | UInt32(bytes[11])
}
