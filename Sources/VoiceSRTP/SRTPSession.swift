internal import CSRTP

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Library initialisation and the one status check

/// `srtp_init()` runs exactly once per process, on first use: a global `let` is initialised lazily and
/// thread-safely (swift_once). The raw status is kept so every session creation can report a failed init.
/// Right after it, before any session exists, the engine's own per-packet AES-ICM and HMAC-SHA1 replace libsrtp's
/// (Sources/CSRTP/README.md, "Per-packet crypto"); libsrtp runs its known answers on them first and keeps its own
/// for whatever fails them, so a failure there costs speed, not correctness.
private let libsrtpInitStatus: UInt32 = {
    let status = srtp_init()
    if status == srtp_err_status_ok { _ = voiceengine_srtp_install_crypto() }
    return status.rawValue
}()

extension SRTPSession {
    /// Which of the engine's per-packet crypto libsrtp runs: its HMAC-SHA1 (always, unless a self-test failed) and
    /// its AES-NI AES-ICM (on CPUs with AES-NI). Initialises libsrtp if no session did yet.
    package static var engineCrypto: (hmacSHA1: Bool, aesNI: Bool) {
        guard libsrtpInitStatus == srtp_err_status_ok.rawValue else { return (false, false) }
        let installed = voiceengine_srtp_installed_crypto()
        return (
            installed > 0 && installed & VOICEENGINE_SRTP_HMAC_SHA1 != 0,
            installed > 0 && installed & VOICEENGINE_SRTP_AESNI_ICM != 0
        )
    }

    /// Runs `rounds` random keys, IVs, lengths and split points through libsrtp's own AES-ICM (OpenSSL) and
    /// HMAC-SHA1 and through the engine's; returns how many outputs differed (tests).
    package static func engineCryptoMismatches(rounds: Int, seed: UInt32) -> Int {
        Int(voiceengine_srtp_crosscheck(Int32(rounds), seed))
    }
}

/// The one place a libsrtp status becomes a Swift error. `call` names the C function that returned it.
@inline(__always)
func srtpCheck(_ status: srtp_err_status_t, _ call: StaticString) throws(SRTPError) {
    if status == srtp_err_status_ok { return }
    throw SRTPError(status: status, call: call)
}

extension SRTPError {
    /// Takes a StaticString so the per-packet failures (authentication, replay) build no String at all.
    init(status: srtp_err_status_t, call: StaticString) {
        switch status {
        case srtp_err_status_auth_fail: self = .authenticationFailed
        case srtp_err_status_replay_old: self = .replayOld
        case srtp_err_status_replay_fail: self = .replayFail
        case srtp_err_status_bad_param, srtp_err_status_parse_err: self = .badParameter(call: call.description)
        default: self = .other(code: Int32(bitPattern: status.rawValue), call: call.description)
        }
    }
}

// MARK: - Session

/// One direction of an SRTP/SRTCP session over libsrtp2: the sole owner of one `srtp_t`.
///
/// An outbound session protects RTP and RTCP; an inbound one unprotects them, keeps the replay window and
/// tracks each sender's rollover counter (ROC). Packets are transformed in place in a caller buffer, so the per
/// packet path allocates nothing.
///
/// Not thread-safe: one thread at a time (the network loop) uses a session; create it elsewhere and hand it over.
///
/// Rollover counter: libsrtp estimates the ROC of every packet from the highest index seen (RFC 3711 §3.3.1), which
/// handles packets reordered around the 65535→0 wrap. One case it cannot estimate is a receiver whose *first*
/// packet from a sender comes after that sender's wrap (the packets just before it were lost or reordered, or the
/// sender started near 65535): libsrtp guesses ROC 0 and every packet of that stream would then fail to
/// authenticate (libsrtp #567 / #725, pjproject #5269). An inbound session therefore retries a not yet
/// authenticated stream's low-numbered packet once with ROC 1 before reporting ``SRTPError/authenticationFailed``.
public final class SRTPSession {
    /// Whether this session protects (what we send) or unprotects (what we receive).
    public enum Direction: Sendable, Equatable {
        case outbound
        case inbound
    }

    /// Which SSRCs the session applies to.
    public enum SSRC: Sendable, Equatable {
        /// Every SSRC in the session's direction (key sharing; the usual SDES case).
        case any
        /// Only this SSRC.
        case specific(UInt32)
    }

    /// The suite the session was created with.
    public let suite: SRTPCryptoSuite
    /// Protect or unprotect.
    public let direction: Direction
    /// The SSRCs it applies to.
    public let ssrc: SSRC
    /// Packets of replay window (libsrtp accepts 64 ..< 32768).
    public let replayWindow: Int

    /// Bytes `protect` appends to each RTP packet; a caller buffer needs this much room after the packet.
    public var rtpOverhead: Int { suite.rtpTrailerLength }
    /// Bytes `protectRTCP` appends to each RTCP packet.
    public var rtcpOverhead: Int { suite.rtcpTrailerLength }

    private let context: OpaquePointer
    /// A copy of the key material, needed to add per-SSRC streams for the ROC retry; zeroed in deinit.
    private let keyStorage: UnsafeMutableRawBufferPointer
    /// Holds a packet's original bytes while an unauthenticated stream's first packet is tried (inbound only).
    private let scratch: UnsafeMutableRawBufferPointer
    private let allowRetransmission: Bool
    /// For `.specific` inbound sessions: whether a packet has authenticated yet.
    private var specificStreamEstablished = false
    /// The SSRC of the last packet that authenticated: its libsrtp stream exists for good, so the per-packet
    /// "is this stream established?" lookup (and the scratch copy for the wrap retry) is skipped for it.
    private var lastAuthenticatedSSRC: UInt32?

    /// Largest RTP packet the ROC retry can handle; larger first packets are simply not retried.
    private static let scratchCapacity = 2048

    /// Creates a session.
    ///
    /// - Parameters:
    ///   - suite: the negotiated crypto suite.
    ///   - key: master key || master salt, exactly `suite.keyMaterialLength` bytes.
    ///   - direction: `.outbound` to protect, `.inbound` to unprotect.
    ///   - ssrc: `.any` (default) or one SSRC.
    ///   - replayWindow: replay-protection window in packets, 64 ..< 32768; 1024 by default so voice packets
    ///     reordered by a jittery network are still accepted.
    ///   - allowRetransmission: let an outbound session protect the same sequence number twice (RTP
    ///     retransmission of identical payload); off by default because it weakens counter-mode security.
    /// - Throws: ``SRTPError/badKey(expectedLength:actualLength:)`` for key material of the wrong length,
    ///   ``SRTPError/unsupportedSuite(_:)`` when libsrtp lacks the suite, or the libsrtp error from `srtp_create`.
    public init(
        suite: SRTPCryptoSuite, key: SRTPMasterKey, direction: Direction, ssrc: SSRC = .any,
        replayWindow: Int = 1024, allowRetransmission: Bool = false
    ) throws(SRTPError) {
        try srtpCheck(srtp_err_status_t(rawValue: libsrtpInitStatus), "srtp_init")
        guard key.count == suite.keyMaterialLength else {
            throw .badKey(expectedLength: suite.keyMaterialLength, actualLength: key.count)
        }
        self.suite = suite
        self.direction = direction
        self.ssrc = ssrc
        self.replayWindow = replayWindow
        self.allowRetransmission = allowRetransmission

        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: key.count, alignment: 16)
        key.withUnsafeBytes { storage.copyMemory(from: $0) }
        var policy = Self.makePolicy(
            suite: suite, key: storage, direction: direction, ssrc: ssrc, replayWindow: replayWindow,
            allowRetransmission: allowRetransmission)
        var created: OpaquePointer?
        let status = srtp_create(&created, &policy)
        guard status == srtp_err_status_ok, let created else {
            explicit_bzero(storage.baseAddress!, storage.count)
            storage.deallocate()
            if suite.isAEAD && status != srtp_err_status_alloc_fail { throw .unsupportedSuite(suite) }
            throw SRTPError(status: status, call: "srtp_create")
        }
        self.context = created
        self.keyStorage = storage
        self.scratch = UnsafeMutableRawBufferPointer.allocate(
            byteCount: direction == .inbound ? Self.scratchCapacity : 0, alignment: 16)
    }

    deinit {
        _ = srtp_dealloc(context)
        explicit_bzero(keyStorage.baseAddress!, keyStorage.count)
        keyStorage.deallocate()
        if scratch.count > 0 { explicit_bzero(scratch.baseAddress!, scratch.count) }
        scratch.deallocate()
    }

    /// Whether this build of libsrtp can run `suite` (GCM needs libsrtp built with a crypto library;
    /// the engine's own build, Sources/CSRTP, uses OpenSSL, so every suite is available).
    public static func isAvailable(_ suite: SRTPCryptoSuite) -> Bool {
        let key = SRTPMasterKey(bytes: [UInt8](repeating: 0, count: suite.keyMaterialLength))
        return (try? SRTPSession(suite: suite, key: key, direction: .outbound)) != nil
    }

    private static func makePolicy(
        suite: SRTPCryptoSuite, key: UnsafeMutableRawBufferPointer, direction: Direction, ssrc: SSRC,
        replayWindow: Int, allowRetransmission: Bool
    ) -> srtp_policy_t {
        var policy = srtp_policy_t()
        switch suite {
        case .aesCM128HmacSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)  // = aes_cm_128_hmac_sha1_80 (a C macro)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aesCM128HmacSHA1_32:
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)  // RFC 4568 §6.2.2: SRTCP keeps 80 bits
        case .aes256CMHmacSHA1_80:
            srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&policy.rtp)
            srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&policy.rtcp)
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aeadAES256GCM:
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp)
        }
        switch ssrc {
        case .any:
            policy.ssrc.type = direction == .outbound ? ssrc_any_outbound : ssrc_any_inbound
        case .specific(let value):
            policy.ssrc.type = ssrc_specific
            policy.ssrc.value = value
        }
        policy.key = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        policy.window_size = UInt(replayWindow)
        policy.allow_repeat_tx = allowRetransmission ? 1 : 0
        policy.next = nil
        return policy
    }

    // MARK: RTP

    /// Protects the RTP packet in `buffer[0..<length]` in place and returns the SRTP packet's length.
    ///
    /// - Parameters:
    ///   - buffer: holds the packet and has at least ``rtpOverhead`` bytes of room after it for the tag.
    ///   - length: bytes of RTP packet at the start of `buffer`.
    /// - Throws: ``SRTPError/bufferTooSmall(needed:capacity:)``; ``SRTPError/replayFail`` when a sequence number
    ///   repeats; ``SRTPError/badParameter(call:)`` for a malformed RTP header.
    /// - Complexity: O(length), no allocation.
    public func protect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .outbound, "protect needs an outbound SRTPSession")
        precondition(length >= 0 && length <= buffer.count, "length exceeds the buffer")
        let needed = length + suite.rtpTrailerLength
        guard needed <= buffer.count, let base = buffer.baseAddress else {
            throw .bufferTooSmall(needed: needed, capacity: buffer.count)
        }
        var len = Int32(length)
        try srtpCheck(srtp_protect(context, base, &len), "srtp_protect")
        return Int(len)
    }

    /// Authenticates, replay-checks and decrypts the SRTP packet in `buffer[0..<length]` in place and returns the
    /// RTP packet's length. On failure the packet must be dropped.
    ///
    /// - Throws: ``SRTPError/authenticationFailed``, ``SRTPError/replayFail``, ``SRTPError/replayOld``, or
    ///   ``SRTPError/badParameter(call:)`` for a packet too short or malformed to be SRTP.
    /// - Complexity: O(length), no allocation.
    public func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .inbound, "unprotect needs an inbound SRTPSession")
        precondition(length >= 0 && length <= buffer.count, "length exceeds the buffer")
        guard length >= 12, let base = buffer.baseAddress else { throw .badParameter(call: "srtp_unprotect") }
        let packetSSRC = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        // The steady state (the stream that authenticated last) skips all of this: one compare per packet.
        let known = packetSSRC == lastAuthenticatedSSRC
        var mayRetry = false
        if !known {
            let sequence = UInt16(bigEndian: base.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            mayRetry = sequence < 0x8000 && length <= scratch.count && !isEstablished(packetSSRC)
            if mayRetry { scratch.baseAddress!.copyMemory(from: base, byteCount: length) }
        }

        var len = Int32(length)
        let status = srtp_unprotect(context, base, &len)
        if status == srtp_err_status_ok {
            if !known {
                if case .specific = ssrc { specificStreamEstablished = true }
                lastAuthenticatedSSRC = packetSSRC
            }
            return Int(len)
        }
        if status == srtp_err_status_auth_fail && mayRetry {
            if let recovered = retryAfterSenderWrap(base, length: length, ssrc: packetSSRC) {
                lastAuthenticatedSSRC = packetSSRC
                return recovered
            }
        }
        throw SRTPError(status: status, call: "srtp_unprotect")
    }

    private func isEstablished(_ packetSSRC: UInt32) -> Bool {
        switch ssrc {
        case .specific: return specificStreamEstablished
        case .any:
            var roc: UInt32 = 0
            return srtp_get_stream_roc(context, packetSSRC, &roc) == srtp_err_status_ok
        }
    }

    /// Tries the packet again as if its sender had already wrapped once (ROC 1); restores the packet and the
    /// session's state if that fails too.
    private func retryAfterSenderWrap(_ base: UnsafeMutableRawPointer, length: Int, ssrc packetSSRC: UInt32) -> Int? {
        var addedStream = false
        if case .any = ssrc {
            var policy = Self.makePolicy(
                suite: suite, key: keyStorage, direction: direction, ssrc: .specific(packetSSRC),
                replayWindow: replayWindow, allowRetransmission: allowRetransmission)
            guard srtp_add_stream(context, &policy) == srtp_err_status_ok else { return nil }
            addedStream = true
        }
        guard srtp_set_stream_roc(context, packetSSRC, 1) == srtp_err_status_ok else {
            if addedStream { _ = srtp_remove_stream(context, packetSSRC.bigEndian) }
            return nil
        }
        base.copyMemory(from: scratch.baseAddress!, byteCount: length)
        var len = Int32(length)
        if srtp_unprotect(context, base, &len) == srtp_err_status_ok {
            if case .specific = ssrc { specificStreamEstablished = true }
            return Int(len)
        }
        if addedStream {
            _ = srtp_remove_stream(context, packetSSRC.bigEndian)
        } else {
            _ = srtp_set_stream_roc(context, packetSSRC, 0)  // 0 clears libsrtp's pending ROC
        }
        base.copyMemory(from: scratch.baseAddress!, byteCount: length)
        return nil
    }

    // MARK: RTCP

    /// Protects the RTCP (compound) packet in `buffer[0..<length]` in place, appending the E flag, SRTCP index and
    /// tag, and returns the SRTCP packet's length.
    ///
    /// - Throws: ``SRTPError/bufferTooSmall(needed:capacity:)`` when there are fewer than ``rtcpOverhead`` bytes
    ///   of room; ``SRTPError/badParameter(call:)`` for a malformed packet.
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .outbound, "protectRTCP needs an outbound SRTPSession")
        precondition(length >= 0 && length <= buffer.count, "length exceeds the buffer")
        let needed = length + suite.rtcpTrailerLength
        guard needed <= buffer.count, let base = buffer.baseAddress else {
            throw .bufferTooSmall(needed: needed, capacity: buffer.count)
        }
        guard length >= 8 else { throw .badParameter(call: "srtp_protect_rtcp") }
        var len = Int32(length)
        try srtpCheck(srtp_protect_rtcp(context, base, &len), "srtp_protect_rtcp")
        return Int(len)
    }

    /// Authenticates, replay-checks and decrypts the SRTCP packet in `buffer[0..<length]` in place and returns
    /// the RTCP packet's length.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .inbound, "unprotectRTCP needs an inbound SRTPSession")
        precondition(length >= 0 && length <= buffer.count, "length exceeds the buffer")
        guard length >= 8 + suite.rtcpTrailerLength, let base = buffer.baseAddress else {
            throw .badParameter(call: "srtp_unprotect_rtcp")
        }
        var len = Int32(length)
        try srtpCheck(srtp_unprotect_rtcp(context, base, &len), "srtp_unprotect_rtcp")
        return Int(len)
    }

    // MARK: Rollover counter

    /// The rollover counter libsrtp holds for `ssrc`'s stream, or nil when it has no stream for it yet.
    public func rolloverCounter(ssrc packetSSRC: UInt32) -> UInt32? {
        var roc: UInt32 = 0
        return srtp_get_stream_roc(context, packetSSRC, &roc) == srtp_err_status_ok ? roc : nil
    }

    /// Sets the rollover counter for `ssrc` (for a receiver joining a stream whose ROC it learnt out of band, such
    /// as from `a=rollover` or a previous session). Creates the stream in an `.any` session if needed.
    public func setRolloverCounter(_ roc: UInt32, ssrc packetSSRC: UInt32) throws(SRTPError) {
        if case .any = ssrc, rolloverCounter(ssrc: packetSSRC) == nil {
            var policy = Self.makePolicy(
                suite: suite, key: keyStorage, direction: direction, ssrc: .specific(packetSSRC),
                replayWindow: replayWindow, allowRetransmission: allowRetransmission)
            try srtpCheck(srtp_add_stream(context, &policy), "srtp_add_stream")
        }
        try srtpCheck(srtp_set_stream_roc(context, packetSSRC, roc), "srtp_set_stream_roc")
    }
}
