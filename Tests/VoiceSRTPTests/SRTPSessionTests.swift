import Testing
import VoiceSRTP

@Suite struct SRTPSessionTests {
    @Test func debianLibsrtpProvidesEverySuiteIncludingGCM() {
        for suite in SRTPCryptoSuite.allCases { #expect(SRTPSession.isAvailable(suite), "\(suite)") }
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func protectThenUnprotectRestoresEachPacket(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try sessionPair(suite)
        for seq in UInt16(1000)..<1100 {
            let packet = rtpPacket(sequence: seq)
            let protected = try sender.protected(packet)
            #expect(protected.count == packet.count + suite.rtpTrailerLength)
            #expect(Array(protected[0..<12]) == Array(packet[0..<12]), "the RTP header stays in the clear")
            #expect(Array(protected[12..<packet.count]) != Array(packet[12...]), "the payload is encrypted")
            #expect(try receiver.unprotected(protected) == packet)
        }
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func tamperedPacketFailsAuthentication(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try sessionPair(suite)
        #expect(try receiver.unprotected(try sender.protected(rtpPacket(sequence: 1))) == rtpPacket(sequence: 1))
        for position in [1, 3, 7, 11, 12, 30, 51] {  // header, payload and tag bytes
            var protected = try sender.protected(rtpPacket(sequence: UInt16(2 + position)))
            protected[position] ^= 0x01
            #expect(srtpError { _ = try receiver.unprotected(protected) } == .authenticationFailed, "byte \(position)")
        }
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func wrongKeyFailsAuthentication(suite: SRTPCryptoSuite) throws {
        let sender = try SRTPSession(suite: suite, key: .random(for: suite), direction: .outbound)
        let receiver = try SRTPSession(suite: suite, key: .random(for: suite), direction: .inbound)
        let protected = try sender.protected(rtpPacket(sequence: 7))
        #expect(srtpError { _ = try receiver.unprotected(protected) } == .authenticationFailed)
        let rtcp = try sender.protectedRTCP(rtcpReceiverReport())
        #expect(srtpError { _ = try receiver.unprotectedRTCP(rtcp) } == .authenticationFailed)
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func replayedPacketIsRejected(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try sessionPair(suite)
        let protected = try sender.protected(rtpPacket(sequence: 500))
        _ = try receiver.unprotected(protected)
        #expect(srtpError { _ = try receiver.unprotected(protected) } == .replayFail)
    }

    @Test func packetOlderThanTheReplayWindowIsRejectedAsOld() throws {
        let (sender, receiver) = try sessionPair(.aesCM128HmacSHA1_80, replayWindow: 64)
        let first = try sender.protected(rtpPacket(sequence: 100))
        for seq in UInt16(101)...300 { _ = try receiver.unprotected(try sender.protected(rtpPacket(sequence: seq))) }
        #expect(srtpError { _ = try receiver.unprotected(first) } == .replayOld)
    }

    @Test func largeReplayWindowAcceptsHeavilyReorderedPackets() throws {
        let (sender, receiver) = try sessionPair(.aesCM128HmacSHA1_80)  // default window 1024
        let late = try sender.protected(rtpPacket(sequence: 100))
        for seq in UInt16(101)...900 { _ = try receiver.unprotected(try sender.protected(rtpPacket(sequence: seq))) }
        #expect(try receiver.unprotected(late) == rtpPacket(sequence: 100))
    }

    @Test func outboundSequenceNumberReuseIsRefusedUnlessRetransmissionIsAllowed() throws {
        let key = SRTPMasterKey.random(for: .aesCM128HmacSHA1_80)
        let strict = try SRTPSession(suite: .aesCM128HmacSHA1_80, key: key, direction: .outbound)
        _ = try strict.protected(rtpPacket(sequence: 9))
        #expect(srtpError { _ = try strict.protected(rtpPacket(sequence: 9)) } == .replayFail)
        let lenient = try SRTPSession(
            suite: .aesCM128HmacSHA1_80, key: key, direction: .outbound, allowRetransmission: true)
        let a = try lenient.protected(rtpPacket(sequence: 9))
        #expect(try lenient.protected(rtpPacket(sequence: 9)) == a)
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func srtcpRoundTripAndReplay(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try sessionPair(suite)
        let report = rtcpReceiverReport()
        var previous: [UInt8] = []
        for _ in 0..<5 {
            let protected = try sender.protectedRTCP(report)
            #expect(protected.count == report.count + suite.rtcpTrailerLength)
            #expect(protected != previous, "each SRTCP packet has a new index")
            #expect(try receiver.unprotectedRTCP(protected) == report)
            #expect(srtpError { _ = try receiver.unprotectedRTCP(protected) } == .replayFail)
            var tampered = try sender.protectedRTCP(report)
            tampered[10] ^= 0x80
            #expect(srtpError { _ = try receiver.unprotectedRTCP(tampered) } == .authenticationFailed)
            previous = protected
        }
    }

    @Test func shortBufferAndWrongKeyLengthAndBadWindowAreTypedErrors() throws {
        let suite = SRTPCryptoSuite.aesCM128HmacSHA1_80
        let (sender, receiver) = try sessionPair(suite)
        var packet = rtpPacket(sequence: 1)
        let tooSmall = packet.withUnsafeMutableBytes { b in srtpError { _ = try sender.protect(b, length: b.count) } }
        #expect(tooSmall == .bufferTooSmall(needed: packet.count + 10, capacity: packet.count))
        var rtcp = rtcpReceiverReport()
        let rtcpSmall = rtcp.withUnsafeMutableBytes { b in srtpError { _ = try sender.protectRTCP(b, length: b.count) }
        }
        #expect(rtcpSmall == .bufferTooSmall(needed: rtcp.count + 14, capacity: rtcp.count))
        #expect(srtpError { _ = try receiver.unprotected([0x80, 0, 0]) } == .badParameter(call: "srtp_unprotect"))
        #expect(
            srtpError { _ = try receiver.unprotected([0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 9]) }
                == .badParameter(call: "srtp_unprotect"), "shorter than a tag")
        #expect(
            srtpError { _ = try SRTPSession(suite: suite, key: SRTPMasterKey(bytes: [1, 2, 3]), direction: .inbound) }
                == .badKey(expectedLength: 30, actualLength: 3))
        #expect(
            srtpError { _ = try SRTPSession(suite: .aeadAES256GCM, key: .random(for: suite), direction: .inbound) }
                == .badKey(expectedLength: 44, actualLength: 30))
        #expect(
            srtpError {
                _ = try SRTPSession(suite: suite, key: .random(for: suite), direction: .inbound, replayWindow: 16)
            }
                == .badParameter(call: "srtp_create"))
    }

    @Test func keyMaterialIsRedactedInDescriptions() {
        let key = SRTPMasterKey(bytes: Array(repeating: 0xAB, count: 30))
        for text in [
            "\(key)", String(reflecting: key),
            {
                var s = ""
                dump(key, to: &s)
                return s
            }()
        ] {
            #expect(!text.lowercased().contains("ab, ") && !text.contains("171") && !text.lowercased().contains("abab"))
            #expect(text.contains("redacted") || text.contains("SRTPMasterKey"))
        }
    }

    @Test func randomKeysHaveTheSuiteLengthAndDiffer() {
        for suite in SRTPCryptoSuite.allCases {
            let a = SRTPMasterKey.random(for: suite), b = SRTPMasterKey.random(for: suite)
            #expect(a.count == suite.keyMaterialLength)
            #expect(a != b)
        }
    }
}
