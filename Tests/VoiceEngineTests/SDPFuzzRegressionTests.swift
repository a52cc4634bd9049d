import Testing
import VoiceEngine

/// Inputs libFuzzer found (Fuzz/run.sh sdp), kept as regression tests: each must be rejected with an `SDPError`
/// naming the line, never trap.
@Suite struct SDPFuzzRegressionTests {
    /// fuzz-sdp crash b4add3b7: `m=video / RTP/AVP 95`. Splitting the port "/" on "/" gave no pieces and indexing
    /// the first one trapped ("Index out of range").
    @Test(arguments: [
        ("m=video / RTP/AVP 95", "bad port"),
        ("m=audio / RTP/AVP 96", "bad port"),
        ("m=audio /2 RTP/AVP 96", "bad port")
    ])
    func mediaLineWithAnEmptyPortIsRejected(mediaLine: String, reason: String) {
        let text = "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\n\(mediaLine)\r\n"
        expectMalformed(text, line: 6, reason: reason)
    }

    /// The same split on a connection address ("c=IN IP4 /") trapped the same way.
    @Test(arguments: ["c=IN IP4 /", "c=IN IP6 /64"])
    func connectionWithAnEmptyAddressIsRejected(connectionLine: String) {
        let text = "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\n\(connectionLine)\r\nt=0 0\r\nm=audio 4000 RTP/AVP 96\r\n"
        expectMalformed(text, line: 4, reason: "empty address")
    }

    @Test func multicastStyleSuffixesStillParse() throws {
        let text = """
            v=0\r
            o=- 1 1 IN IP4 192.0.2.1\r
            s=-\r
            c=IN IP4 233.252.0.1/127\r
            t=0 0\r
            m=audio 4000/2 RTP/AVP 96\r
            a=rtpmap:96 opus/48000/2\r

            """
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.connection?.address == "233.252.0.1")
        #expect(sdp.audio.port == 4000)
    }

    private func expectMalformed(_ text: String, line: Int, reason: String) {
        #expect {
            try SessionDescription(parsing: text)
        } throws: { error in
            guard case SDPError.malformedLine(let l, let r) = error else { return false }
            return l == line && r.contains(reason)
        }
    }
}
