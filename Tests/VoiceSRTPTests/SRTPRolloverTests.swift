import Testing
import VoiceSRTP

/// The rollover counter (ROC) across the 65535→0 wrap: the failure most often reported in the field
/// (libsrtp #567, pjproject #5269, sipsorcery #1498). A receiver that gets the ROC wrong fails to authenticate
/// every later packet, so the call goes silent.
@Suite struct SRTPRolloverTests {
    /// Sequence numbers 65530…65535, 0…10, as a sender protects them.
    static let wrapSequence: [UInt16] = Array(65530...65535) + Array(0...10)

    private func protectAll(_ sender: SRTPSession, _ seqs: [UInt16]) throws -> [UInt16: [UInt8]] {
        var out: [UInt16: [UInt8]] = [:]
        for seq in seqs { out[seq] = try sender.protected(rtpPacket(sequence: seq)) }
        return out
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func packetsReorderedAroundTheWrapAllAuthenticate(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try sessionPair(suite)
        let protected = try protectAll(sender, Self.wrapSequence)
        #expect(sender.rolloverCounter(ssrc: 0x1234_5678) == 1, "the sender wrapped once")
        let delivery: [UInt16] = [65530, 65531, 65532, 65533, 65534, 1, 65535, 0, 2, 4, 3, 5, 6, 8, 7, 9, 10]
        #expect(delivery.sorted() == Self.wrapSequence.sorted())
        for seq in delivery {
            #expect(try receiver.unprotected(protected[seq]!) == rtpPacket(sequence: seq), "seq \(seq)")
        }
        #expect(receiver.rolloverCounter(ssrc: 0x1234_5678) == 1)
        // A duplicate from before the wrap is still recognised as a replay, not mistaken for ROC 1.
        #expect(srtpError { _ = try receiver.unprotected(protected[65534]!) } == .replayFail)
    }

    @Test func wrapPacketArrivingLateAfterManyPostWrapPacketsAuthenticates() throws {
        let (sender, receiver) = try sessionPair(.aesCM128HmacSHA1_80)
        let protected = try protectAll(sender, Array(65500...65535) + Array(0...300))
        for seq in UInt16(65500)...65534 { _ = try receiver.unprotected(protected[seq]!) }
        for seq in UInt16(0)...300 { _ = try receiver.unprotected(protected[seq]!) }
        #expect(try receiver.unprotected(protected[65535]!) == rtpPacket(sequence: 65535))
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func streamStartingJustBeforeTheWrapDecryptsInOrder(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try sessionPair(suite)
        let seqs: [UInt16] = [65533, 65534, 65535, 0, 1, 2, 3]
        let protected = try protectAll(sender, seqs)
        for seq in seqs { #expect(try receiver.unprotected(protected[seq]!) == rtpPacket(sequence: seq), "seq \(seq)") }
    }

    /// The receiver's first packet is from after the sender's wrap (the pre-wrap packets were lost or are late):
    /// libsrtp alone would guess ROC 0 for this new stream and fail every packet (libsrtp #725).
    @Test(arguments: SRTPCryptoSuite.allCases)
    func receiverWhoseFirstPacketFollowsTheSendersWrapStillDecrypts(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try sessionPair(suite)
        let seqs: [UInt16] = [65534, 65535, 0, 1, 2, 3, 4]
        let protected = try protectAll(sender, seqs)
        for seq in [UInt16(1), 2, 0, 65535, 3, 65534, 4] {
            #expect(try receiver.unprotected(protected[seq]!) == rtpPacket(sequence: seq), "seq \(seq)")
        }
        #expect(receiver.rolloverCounter(ssrc: 0x1234_5678) == 1)
    }

    @Test func sessionForOneSSRCAlsoRecoversAFirstPacketAfterTheWrap() throws {
        let suite = SRTPCryptoSuite.aesCM128HmacSHA1_80
        let key = SRTPMasterKey.random(for: suite)
        let sender = try SRTPSession(suite: suite, key: key, direction: .outbound, ssrc: .specific(0x1234_5678))
        let receiver = try SRTPSession(suite: suite, key: key, direction: .inbound, ssrc: .specific(0x1234_5678))
        let protected = try protectAll(sender, [65535, 0, 1, 2])
        for seq in [UInt16(1), 2, 65535, 0] {
            #expect(try receiver.unprotected(protected[seq]!) == rtpPacket(sequence: seq))
        }
    }

    @Test func failedFirstPacketLeavesTheBufferAndTheSessionUntouched() throws {
        let (sender, receiver) = try sessionPair(.aesCM128HmacSHA1_80)
        let other = try SRTPSession(
            suite: .aesCM128HmacSHA1_80, key: .random(for: .aesCM128HmacSHA1_80), direction: .outbound)
        let forged = try other.protected(rtpPacket(sequence: 5))
        var buffer = forged
        let error = buffer.withUnsafeMutableBytes { b in srtpError { _ = try receiver.unprotect(b, length: b.count) } }
        #expect(error == .authenticationFailed)
        #expect(buffer == forged)
        #expect(receiver.rolloverCounter(ssrc: 0x1234_5678) == nil, "no stream was left behind")
        // The genuine stream, starting at ROC 0, still decrypts afterwards.
        #expect(try receiver.unprotected(try sender.protected(rtpPacket(sequence: 5))) == rtpPacket(sequence: 5))
        #expect(receiver.rolloverCounter(ssrc: 0x1234_5678) == 0)
    }

    @Test func receiverGivenTheRolloverCounterOutOfBandJoinsAStreamMidway() throws {
        let (sender, receiver) = try sessionPair(.aesCM128HmacSHA1_80)
        // Fast-forward the sender's ROC instead of protecting 200k packets.
        try sender.setRolloverCounter(3, ssrc: 0x1234_5678)
        let protected = try sender.protected(rtpPacket(sequence: 40_000))
        #expect(srtpError { _ = try receiver.unprotected(protected) } == .authenticationFailed)
        try receiver.setRolloverCounter(3, ssrc: 0x1234_5678)
        #expect(try receiver.unprotected(protected) == rtpPacket(sequence: 40_000))
        #expect(receiver.rolloverCounter(ssrc: 0x1234_5678) == 3)
    }
}
