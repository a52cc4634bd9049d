/// A UDP transport is where a live stream's packets go: the stream hands each SRTP-protected datagram to the
/// transport's non-blocking send (failures are counted in the transport's counters, never thrown on the audio path),
/// RTCP to the peer's RTCP port when it has one of its own.
extension UDPMediaTransport: MediaPacketSink {
    public func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
        _ = send(datagram, kind: kind)
    }
}
