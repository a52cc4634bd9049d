import Foundation
import NIOCore
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// INVITEs the conference server cannot take — unreadable SDP, no SDP, no audio, no common codec (GSM only), plain
/// RTP where SRTP is required — are refused with 488 and the reason in the status line, and the server goes on serving: the room
/// still opens for a good INVITE afterwards, on a media range of two ports (so the refused INVITEs' ports were
/// given back). SIP on an ephemeral port, media on 28730–28731.
@Suite("Bad INVITEs to the conference server", .tags(.live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)))
struct ConferenceBadInviteTests {
    static func sdp(_ media: String) -> String {
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" + media
    }

    static let key = "inline:" + Data(repeating: 0x41, count: 30).base64EncodedString()

    /// (name, body, Content-Type, what the reason must mention)
    static let cases: [(String, String, String?, String)] = [
        ("unreadable SDP", "v=0\r\nthis is not a session description\r\n", "application/sdp", "SDP"),
        ("no SDP", "", nil, "SDP"),
        ("no audio", sdp("m=video 28790 RTP/SAVP 96\r\na=rtpmap:96 VP8/90000\r\n"), "application/sdp", ""),
        (
            "no common codec",
            sdp("m=audio 28790 RTP/SAVP 3\r\na=rtpmap:3 GSM/8000\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 \(key)\r\n"),
            "application/sdp", ""
        ),
        ("plain RTP", sdp("m=audio 28790 RTP/AVP 111\r\na=rtpmap:111 opus/48000/2\r\n"), "application/sdp", "")
    ]

    @Test func refusedWithAReasonAndTheServerKeepsServing() async throws {
        try await withEventLoop { loop in
            let (server, port) = try await startLoopbackServer(rtpPorts: 28_730...28_731, on: loop)
            let caller = try await makeParticipant("mallory", on: loop)
            let room = roomURI("bad", host: "127.0.0.1", port: port)
            let to = try SocketAddress(ipAddress: "127.0.0.1", port: port)
            let callerPort = try #require(await caller.endpoint.localAddress(.udp)?.port)
            for (index, (name, body, contentType, mention)) in Self.cases.enumerated() {
                var headers = SIPHeaders()
                headers.add("From", "<sip:mallory@participants.test>;tag=bad\(index)")
                headers.add("To", "<\(room)>")
                headers.add("Call-ID", "bad-invite-\(index)")
                headers.add("CSeq", "1 INVITE")
                headers.add("Contact", "<sip:mallory@127.0.0.1:\(callerPort)>")
                if let contentType { headers.add("Content-Type", contentType) }
                let response = try await caller.endpoint.request(
                    .request(.invite, room, headers: headers, body: Array(body.utf8)), to: SIPPeer(.udp, to)
                ).get()
                let reason = response.reasonPhrase ?? ""
                print("\(name): \(response.statusCode ?? 0) \(reason)")
                #expect(response.statusCode == 488, "\(name): \(response.statusCode ?? 0) \(reason)")
                // A reason beyond the bare phrase: what was wrong.
                #expect(reason.count > "Not Acceptable Here".count, "\(name): no reason in \(reason)")
                if !mention.isEmpty { #expect(reason.contains(mention), "\(name): \(reason)") }
            }
            #expect(server.roomOccupancy().isEmpty)
            // Still serving, with both media ports free again.
            for _ in 0..<2 {
                // The server gives a call's pair back just after its 488 or BYE: the next call waits for that.
                #expect(await eventually { server.mediaPortPairsInUse == 0 }, "the media pair was not given back")
                let call = try await caller.call(room, offering: AudioCapabilities(address: "127.0.0.1", port: 28_792))
                guard case .success = await outcome(of: call) else {
                    throw SIPCallError("a good INVITE was refused after the bad ones")
                }
                #expect(await eventually { server.roomOccupancy() == ["bad": 1] })
                await call.hangUp()
                #expect(await eventually { server.roomOccupancy().isEmpty })
            }
            await server.close()
            try await caller.endpoint.close()
        }
    }
}
