import VoiceEngine
import VoiceCore
import VoiceRTP

#if canImport(Glibc)
import Glibc
#endif

/// A ``CallPacketPath`` that also writes every datagram it delivers into a pcapng capture, for `demo --capture`
/// and `simulate --capture`: each datagram at its (simulated) arrival time, from the sender's endpoint to the
/// receiver's, SRTP as sent.
///
/// This is what a capture on each receiving host would show: datagrams the simulated network lost are not in it,
/// duplicates are (twice), and arrival times carry the network's delay and jitter, so `rtp-dump` finds the
/// receivers' own RFC 3550 figures and `replay` plays a direction as its receiver did. Times are the simulation's
/// media time on the wall clock as read when the path was made.
///
/// Runs on the thread that drives the simulation, which allocates per datagram anyway (a harness, not an audio
/// path); the file is written in 64 KiB chunks.
public final class CapturingPacketPath: CallPacketPath {
    public let inner: any CallPacketPath
    private let file: PcapFileWriter
    private let endpoints: [CallSide: PcapEndpoint]
    private let wallAtZero: Int64

    /// - Parameters:
    ///   - inner: the path that carries the datagrams.
    ///   - file: the open capture.
    ///   - endpointA, endpointB: the addresses the capture shows for A and B (IPv4 or IPv6, both the same family).
    public init(
        wrapping inner: any CallPacketPath, file: PcapFileWriter, endpointA: PcapEndpoint, endpointB: PcapEndpoint
    ) {
        self.inner = inner
        self.file = file
        endpoints = [.a: endpointA, .b: endpointB]
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        wallAtZero = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// Datagrams written so far.
    public var packetCount: Int { file.packetCount }

    public func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, from side: CallSide, now: MediaTime) {
        inner.send(datagram, kind: kind, from: side, now: now)
    }

    public func deliver(to side: CallSide, until now: MediaTime, _ body: (UnsafeRawBufferPointer, MediaTime) -> Void) {
        inner.deliver(to: side, until: now) { bytes, arrival in
            let wall = max(0, wallAtZero + arrival.nanoseconds)
            file.write(
                PcapUDPPacket(
                    seconds: wall / 1_000_000_000, nanoseconds: UInt32(wall % 1_000_000_000),
                    source: endpoints[side.peer]!, destination: endpoints[side]!, payload: Array(bytes)))
            body(bytes, arrival)
        }
    }
}
