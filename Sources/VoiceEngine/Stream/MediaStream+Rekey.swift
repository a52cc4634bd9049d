import VoiceSRTP

/// New SRTP keys for a running stream: a re-INVITE that re-keys (RFC 4568 §7.1.4). Made off the media thread
/// (creating libsrtp contexts allocates) and handed to ``MediaStream/rekey(_:)`` between two steps.
public final class MediaStreamRekey: @unchecked Sendable {
    // @unchecked Sendable: made on one thread, then used only by the stream's thread after the hand-over.
    public let keys: MediaStreamSRTP
    let outbound: SRTPSession
    let inbound: SRTPSession
    let scratch: UnsafeMutableRawBufferPointer

    /// - Parameter packetCapacity: the largest datagram the stream receives (its `maximumDatagramBytes`).
    public init(_ keys: MediaStreamSRTP, packetCapacity: Int = 2048) throws {
        self.keys = keys
        outbound = try SRTPSession(suite: keys.suite, key: keys.localKey, direction: .outbound)
        inbound = try SRTPSession(suite: keys.suite, key: keys.remoteKey, direction: .inbound)
        scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(packetCapacity, 64), alignment: 16)
    }

    deinit { scratch.deallocate() }
}

extension MediaStream {
    /// How long our outbound key waits for a sign that the peer has the new keys too.
    public static let rekeyGraceNanoseconds: Int64 = 200_000_000

    /// Takes new keys, so that no packet is lost in either direction although the two sides apply the exchange at
    /// different moments (SIP: the offerer on the 2xx, the answerer on the ACK). From now on the peer's packets
    /// are accepted under its new key and its old one (until the first under the new key passes; the old
    /// context is then released). Our own packets switch to the new local key when the peer shows it has the new
    /// keys (a packet under its new key), or `rekeyGraceNanoseconds` after `now` at the latest. A stream without
    /// SRTP ignores this (keys cannot be added mid-call).
    public func rekey(_ rekey: MediaStreamRekey, now: MediaTime) {
        guard srtpIn != nil else { return }
        pendingSRTPOut = (rekey.outbound, now.nanoseconds + Self.rekeyGraceNanoseconds)
        retiringSRTPIn = srtpIn
        srtpIn = rekey.inbound
        rekeyBuffer = rekey
    }

    /// Switches our outbound key once its time has come (see `rekey(_:now:)`); one comparison otherwise.
    func switchOutboundKeyIfDue(now: MediaTime) {
        guard let pending = pendingSRTPOut, retiringSRTPIn == nil || now.nanoseconds >= pending.deadline else { return }
        srtpOut = pending.session
        pendingSRTPOut = nil
    }

    /// `unprotect`/`unprotectRTCP` with the current inbound key, falling back to the retiring one during a
    /// re-key. A failed AEAD attempt may have overwritten the packet, so the retry works on the copy taken first.
    func unprotectAcrossRekey(
        _ current: SRTPSession, _ buffer: UnsafeMutableRawBufferPointer, length: Int, rtcp: Bool = false
    ) throws(SRTPError) -> Int {
        guard let retiring = retiringSRTPIn, let scratch = rekeyBuffer?.scratch, length <= scratch.count else {
            return rtcp
                ? try current.unprotectRTCP(buffer, length: length) : try current.unprotect(buffer, length: length)
        }
        scratch.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: length)
        do {
            let plain =
                rtcp ? try current.unprotectRTCP(buffer, length: length) : try current.unprotect(buffer, length: length)
            if !rtcp {
                // The peer has switched: its old key is done, and it can read our new one.
                retiringSRTPIn = nil
                rekeyBuffer = nil
            }
            return plain
        } catch {
            guard error == .authenticationFailed else { throw error }
            buffer.baseAddress!.copyMemory(from: scratch.baseAddress!, byteCount: length)
            return rtcp
                ? try retiring.unprotectRTCP(buffer, length: length) : try retiring.unprotect(buffer, length: length)
        }
    }
}
