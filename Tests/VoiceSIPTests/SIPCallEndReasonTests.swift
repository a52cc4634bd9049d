import Testing
import VoiceSIP

/// The SIP cause read from a CANCEL's Reason header (RFC 3326), which tells a forked call's "answered elsewhere"
/// from a caller's cancel.
@Suite("SIPCallEnd cancel Reason")
struct SIPCallEndReasonTests {
    func cause(_ reason: String?) -> Int? {
        SIPCallEnd(.cancelled, statusCode: 487, reasonPhrase: "", cancelReason: reason).cancelReasonSIPCause
    }

    @Test func theSIPCauseIsReadFromTheReasonHeader() {
        #expect(cause(#"SIP;cause=200;text="Call completed elsewhere""#) == 200)
        #expect(cause(#" sip ; cause = 200 ; text="x""#) == 200)
        #expect(cause(#"Q.850;cause=16;text="Terminated", SIP;cause=200;text="a, b""#) == 200)
        #expect(cause(#"SIP;text="Call completed, elsewhere";cause=487"#) == 487)
    }

    @Test func noSIPCauseOrAMalformedOneIsNil() {
        #expect(cause(nil) == nil)
        #expect(cause("") == nil)
        #expect(cause("Q.850;cause=16") == nil)
        #expect(cause("SIP;cause=abc") == nil)
        #expect(cause("SIP;cause=99999999999999999999999") == nil)
        #expect(cause("SIP;cause=") == nil)
        #expect(cause(#"SIP;text="unterminated, cause=200"#) == nil)
        #expect(cause(";;;,,,\"") == nil)
    }
}
