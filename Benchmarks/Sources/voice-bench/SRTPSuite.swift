import ArgumentParser
import BenchmarkFixtures
import CBaseline
import VoiceEngine

/// `voice-bench srtp`: protect and unprotect of one 20 ms Opus RTP packet per SRTP suite, `SRTPSession` vs C.
///
/// The packet is a real one: the Opus frame of median size from the speech fixture at 16 kHz (the engine's call
/// settings) behind a 12-byte RTP header. Both sides run the engine's libsrtp build (Sources/CSRTP) with the policy
/// `SRTPSession` builds (any-SSRC, replay window 1024), each with its own session:
/// - protect: copy the packet into a buffer, write the next sequence number, `srtp_protect` in place;
/// - unprotect: copy the next of 8 192 packets protected beforehand (consecutive sequence numbers) into a buffer,
///   `srtp_unprotect` in place. A packet authenticates once only, so when the 8 192 are used up each side creates
///   its inbound session anew (Swift: a new `SRTPSession`; C: `srtp_dealloc` + `srtp_create`) — about 0.1 % of
///   the time on both sides.
struct SRTPSuite: SideBySideSuite {
    static let suiteName = "srtp"
    static let configuration = CommandConfiguration(
        commandName: "srtp",
        abstract: "SRTP protect/unprotect of a 20 ms Opus packet per suite: SRTPSession vs a plain C loop.")

    @OptionGroup var options: SideBySideOptions

    /// Packets protected beforehand for the unprotect cases.
    static let unprotectPackets = 8_192

    func makeCases() throws -> [SideBySideCase] {
        let packet = try Fixtures.opusRTPPacket()
        var cases: [SideBySideCase] = []
        for (index, suite) in SRTPCryptoSuite.allCases.enumerated() {
            let key = Fixtures.srtpKey(suite)
            cases.append(try protectCase(suite: suite, suiteIndex: index, key: key, packet: packet))
            cases.append(try unprotectCase(suite: suite, suiteIndex: index, key: key, packet: packet))
        }
        return cases
    }

    private func protectCase(
        suite: SRTPCryptoSuite, suiteIndex: Int, key: SRTPMasterKey, packet: FixedBuffer<UInt8>
    ) throws -> SideBySideCase {
        let session = try SRTPSession(suite: suite, key: key, direction: .outbound)
        let c = CHandle(
            key.withUnsafeBytes { cb_srtp_create(Int32(suiteIndex), $0.baseAddress, Int32($0.count), 1) },
            "cb_srtp_create", destroy: cb_srtp_destroy)
        let swiftStorage = FixedBuffer<UInt8>(count: 1_500, repeating: 0)
        let cBuffer = FixedBuffer<UInt8>(count: 1_500, repeating: 0)
        let template = UnsafeRawBufferPointer(packet.pointer)
        var swiftSequence: UInt16 = 0
        var cSequence: UInt16 = 0
        return SideBySideCase(
            name: "SRTP.protect.\(suite.rawValue)",
            swift: { n in
                let swiftBuffer = UnsafeMutableRawBufferPointer(swiftStorage.pointer)
                var total = 0
                for _ in 0..<n {
                    Fixtures.copyRTPPacket(template, into: swiftBuffer, sequence: swiftSequence)
                    swiftSequence &+= 1
                    do { total &+= try session.protect(swiftBuffer, length: template.count) } catch {
                        fatalError("SRTPSession.protect: \(error)")
                    }
                }
                return total
            },
            c: { n in
                let total = cb_srtp_protect_loop(
                    c.pointer, packet.pointer.baseAddress, Int32(packet.count), &cSequence, Int64(n),
                    cBuffer.pointer.baseAddress, Int32(cBuffer.count))
                precondition(total >= 0, "srtp_protect failed: \(total)")
                return Int(total)
            })
    }

    private func unprotectCase(
        suite: SRTPCryptoSuite, suiteIndex: Int, key: SRTPMasterKey, packet: FixedBuffer<UInt8>
    ) throws -> SideBySideCase {
        // The packets, protected once by an outbound session, stored at a fixed stride.
        let stride = 1_500
        let count = Self.unprotectPackets
        let protected = FixedBuffer<UInt8>(count: stride * count, repeating: 0)
        let lengths = FixedBuffer<Int32>(count: count, repeating: 0)
        let sender = try SRTPSession(suite: suite, key: key, direction: .outbound)
        for index in 0..<count {
            let slot = UnsafeMutableRawBufferPointer(
                rebasing: UnsafeMutableRawBufferPointer(protected.pointer)[
                    (index * stride)..<((index + 1) * stride)])
            Fixtures.copyRTPPacket(UnsafeRawBufferPointer(packet.pointer), into: slot, sequence: UInt16(index))
            lengths.pointer[index] = Int32(try sender.protect(slot, length: packet.count))
        }
        let feed = try InboundFeed(suite: suite, key: key, packets: protected, stride: stride, lengths: lengths)
        let c = CHandle(
            key.withUnsafeBytes { cb_srtp_create(Int32(suiteIndex), $0.baseAddress, Int32($0.count), 0) },
            "cb_srtp_create", destroy: cb_srtp_destroy)
        let swiftStorage = FixedBuffer<UInt8>(count: stride, repeating: 0)
        let cBuffer = FixedBuffer<UInt8>(count: stride, repeating: 0)
        var cNext: Int64 = 0
        return SideBySideCase(
            name: "SRTP.unprotect.\(suite.rawValue)",
            swift: { n in feed.unprotect(n, into: UnsafeMutableRawBufferPointer(swiftStorage.pointer)) },
            c: { n in
                let total = cb_srtp_unprotect_loop(
                    c.pointer, protected.pointer.baseAddress, Int32(stride), lengths.pointer.baseAddress, Int32(count),
                    &cNext, Int64(n), cBuffer.pointer.baseAddress, Int32(cBuffer.count))
                precondition(total >= 0, "srtp_unprotect failed: \(total)")
                return Int(total)
            })
    }
}

/// The Swift side of the unprotect cases: packets protected beforehand, unprotected in turn by an inbound
/// `SRTPSession`, which is created anew when they are used up (each authenticates once only).
final class InboundFeed {
    let suite: SRTPCryptoSuite
    let key: SRTPMasterKey
    let packets: FixedBuffer<UInt8>
    let stride: Int
    let lengths: FixedBuffer<Int32>
    private var session: SRTPSession
    private var next = 0

    init(
        suite: SRTPCryptoSuite, key: SRTPMasterKey, packets: FixedBuffer<UInt8>, stride: Int,
        lengths: FixedBuffer<Int32>
    ) throws {
        (self.suite, self.key, self.packets, self.stride, self.lengths) = (suite, key, packets, stride, lengths)
        session = try SRTPSession(suite: suite, key: key, direction: .inbound)
    }

    /// Unprotects the next `iterations` packets, each copied into `buffer` first; returns the bytes unprotected.
    func unprotect(_ iterations: Int, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        // Locals in the timed loop, as the C loop keeps its position in a local: the stored properties of this
        // class would each cost a dynamic exclusivity check per access, which is the harness, not the wrapper.
        let source = UnsafeRawBufferPointer(packets.pointer)
        let count = lengths.count, lengthOf = lengths.pointer
        var session = self.session, position = next
        defer { (self.session, next) = (session, position) }
        var total = 0
        for _ in 0..<iterations {
            if position == count {
                do { session = try SRTPSession(suite: suite, key: key, direction: .inbound) } catch {
                    fatalError("SRTPSession: \(error)")
                }
                position = 0
            }
            let length = Int(lengthOf[position])
            // A plain copy, as the C loop's memcpy (no slice bounds checks in the timed loop).
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + position * stride, byteCount: length)
            position += 1
            do { total &+= try session.unprotect(buffer, length: length) } catch {
                fatalError("SRTPSession.unprotect: \(error)")
            }
        }
        return total
    }
}
