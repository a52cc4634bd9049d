/// SIP messages for `SIPBenchmarks` and `voice-bench sip`.
public enum SIPFixtures {
    /// A typical INVITE with an SDP offer (Opus, SDES-SRTP), as a softphone behind a proxy sends it: two Vias, a
    /// Record-Route, Contact with parameters, Allow/Supported lists, a custom header, ~1 kB in all.
    static let sdp = """
        v=0\r
        o=- 4858282765423 1 IN IP4 198.51.100.7\r
        s=-\r
        c=IN IP4 198.51.100.7\r
        t=0 0\r
        m=audio 40000 RTP/SAVP 111\r
        a=rtpmap:111 opus/48000/2\r
        a=fmtp:111 maxplaybackrate=48000;sprop-maxcapturerate=48000;useinbandfec=1\r
        a=ptime:20\r
        a=maxptime:120\r
        a=sendrecv\r
        a=rtcp-mux\r
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz\r
        a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:NzB4d1BINUAvLEw6UzF3WSJ+PSdFcGdUJShpX1Zj\r

        """
    public static let invite: [UInt8] =
        Array(
            """
            INVITE sip:bob@voiceengine.test SIP/2.0\r
            Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK-proxy-7d3a91;rport\r
            Via: SIP/2.0/UDP 198.51.100.7:49152;received=198.51.100.7;rport=49152;branch=z9hG4bK-uac-44a7c2\r
            Record-Route: <sip:192.0.2.1;lr;ftag=9fxced76sl>\r
            Max-Forwards: 69\r
            From: "Alice" <sip:alice@voiceengine.test>;tag=9fxced76sl\r
            To: <sip:bob@voiceengine.test>\r
            Call-ID: 3848276298220188511@198.51.100.7\r
            CSeq: 2 INVITE\r
            Contact: <sip:alice@198.51.100.7:49152;transport=udp>;+sip.instance="<urn:uuid:00000000-0000-1000-8000-AABBCCDDEEFF>"\r
            Allow: INVITE, ACK, CANCEL, BYE, OPTIONS, MESSAGE\r
            Supported: replaces, outbound\r
            User-Agent: VoiceEngine\r
            X-Account: 42\r
            Content-Type: application/sdp\r
            Content-Length: \(sdp.utf8.count)\r
            \r

            """.utf8) + Array(sdp.utf8)
}
