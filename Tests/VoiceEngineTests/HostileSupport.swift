import Foundation
import VoiceEngine

/// Helpers for the hostile-network, fault and soak tests (HostileNetworkTests, FaultTests, SoakTests).
enum HostileSupport {
    /// Resident set size of this process in MiB, from `VmRSS` in /proc/self/status (nil when unreadable).
    static func residentMegabytes() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let digits = line.split(separator: " ").compactMap { Double($0) }
            if let kB = digits.first { return kB / 1024 }
        }
        return nil
    }

    /// Resident-set samples taken over a window after warm-up and over the last ticks of a run; `growth` compares
    /// the lowest of the last with the highest after warm-up, so another suite's transient allocation does not
    /// count while a leak shows in both.
    struct MemoryWatch {
        let warmUp: Range<Int>
        let endFrom: Int
        private(set) var afterWarmUp: [Double] = []
        private(set) var atEnd: [Double] = []

        init(warmUp: Range<Int>, endFrom: Int) {
            self.warmUp = warmUp
            self.endFrom = endFrom
        }

        /// Samples the RSS when `tick` falls in one of the two windows.
        mutating func sample(tick: Int) {
            if warmUp.contains(tick), let rss = residentMegabytes() { afterWarmUp.append(rss) }
            if tick >= endFrom, let rss = residentMegabytes() { atEnd.append(rss) }
        }

        var growth: Double { (atEnd.min() ?? 0) - (afterWarmUp.max() ?? 0) }
        var summary: String { "\(afterWarmUp.max() ?? -1) → \(atEnd.min() ?? -1) MiB" }
    }

    /// Pearson correlation of two equally long sample runs (1 = identical shape).
    static func correlation(_ a: ArraySlice<Int16>, _ b: ArraySlice<Int16>) -> Double {
        let n = min(a.count, b.count)
        guard n > 0 else { return 0 }
        var sa = 0.0, sb = 0.0, saa = 0.0, sbb = 0.0, sab = 0.0
        var ia = a.startIndex, ib = b.startIndex
        for _ in 0..<n {
            let x = Double(a[ia]), y = Double(b[ib])
            sa += x
            sb += y
            saa += x * x
            sbb += y * y
            sab += x * y
            ia += 1
            ib += 1
        }
        let d = Double(n)
        let cov = sab / d - sa / d * sb / d
        let va = saa / d - sa / d * sa / d
        let vb = sbb / d - sb / d * sb / d
        return va > 0 && vb > 0 ? cov / (va * vb).squareRoot() : 0
    }
}

/// A sender built from the public pieces (Opus encoder, RTP packetizer, SRTP session) rather than a MediaStream,
/// so a test can choose what a stream never would: the initial sequence number (wrap), timestamp jumps, a second
/// SSRC, the wrong key, or SRTCP around a hand-made (lying) RTCP packet.
final class HandmadeRTPSender {
    let encoder: OpusEncoder
    var packetizer: RTPPacketizer
    let srtp: SRTPSession?
    private var opus = [UInt8](repeating: 0, count: 1_500)
    /// RTP ticks per 20 ms frame (48 kHz RTP clock for Opus).
    static let frameTicks: UInt32 = 960
    /// PCM samples per 20 ms frame at 16 kHz.
    static let frameSamples = 320

    init(
        ssrc: UInt32, key: SRTPMasterKey?, suite: SRTPCryptoSuite = .aesCM128HmacSHA1_80, sequence: UInt16,
        timestamp: UInt32
    ) throws {
        encoder = try OpusEncoder(configuration: MediaStreamConfiguration.defaultOpus)
        packetizer = RTPPacketizer(
            payloadType: 111, ssrc: ssrc, initialSequenceNumber: sequence, initialTimestamp: timestamp)
        srtp = try key.map { try SRTPSession(suite: suite, key: $0, direction: .outbound) }
    }

    /// One 20 ms frame of 16 kHz PCM as a datagram (SRTP-protected when the sender has a key).
    func packet(_ pcm: ArraySlice<Int16>) throws -> [UInt8] {
        precondition(pcm.count == Self.frameSamples)
        let n = try encoder.encode(Array(pcm), into: &opus)
        var buffer = [UInt8](repeating: 0, count: 1_600)
        var length = buffer.withUnsafeMutableBytes { out in
            opus.withUnsafeBytes { o in
                packetizer.packetize(
                    payload: UnsafeRawBufferPointer(rebasing: o[0..<n]), ticks: Self.frameTicks, into: out)
            }
        }
        if let srtp {
            length = try buffer.withUnsafeMutableBytes { try srtp.protect($0, length: length) }
        }
        return Array(buffer[0..<length])
    }

    /// `plain` (an RTCP compound, well-formed or not) protected as SRTCP with this sender's key.
    func srtcp(_ plain: [UInt8]) throws -> [UInt8] {
        guard let srtp else { return plain }
        var buffer = plain + [UInt8](repeating: 0, count: srtp.rtcpOverhead + 16)
        let length = try buffer.withUnsafeMutableBytes { try srtp.protectRTCP($0, length: plain.count) }
        return Array(buffer[0..<length])
    }

    /// RTCP packets whose length fields lie (RFC 3550 §6.4.1 header: V=2, RC, PT, length in 32-bit words − 1).
    static func lyingRTCP(ssrc: UInt32, variant: Int) -> [UInt8] {
        let s: [UInt8] = [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)]
        switch variant % 5 {
        case 0: return [0x80, 201, 0, 40] + s  // RR claiming 164 bytes in an 8-byte datagram
        case 1: return [0x81, 201, 0, 1] + s  // RR claiming one report block with room for none
        case 2: return [0x80, 201, 0xFF, 0xFF] + s + [UInt8](repeating: 0, count: 24)  // 65535 words
        case 3:  // valid RR, then an SDES whose length runs past the end
            return [0x80, 201, 0, 1] + s + [0x81, 202, 0, 9] + s + [1, 4, 0x61, 0x62, 0x63, 0x64, 0, 0]
        default:  // valid RR, then a packet claiming length 0 followed by trailing garbage
            return [0x80, 201, 0, 1] + s + [0x80, 203, 0, 0, 0xDE, 0xAD]
        }
    }
}
