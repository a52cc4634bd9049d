import Testing
@testable import VoiceSIP

@Suite("SIP digest authentication")
struct SIPDigestTests {
    /// RFC 7616 §3.9.1: the same request answered with MD5 and with SHA-256 (qop=auth, nc=00000001).
    @Test(
        "RFC 7616 example responses",
        arguments: [
            ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
            ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
        ])
    func rfc7616Example(algorithm: String, expected: String) throws {
        let challenge = try SIPDigestChallenge(
            parsing: """
                Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=\(algorithm), \
                nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
                """)
        #expect(challenge.qop == ["auth", "auth-int"])
        var authenticator = SIPDigestAuthenticator(cnonce: { "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ" })
        let value = try authenticator.authorization(
            for: challenge, credentials: SIPCredentials(username: "Mufasa", password: "Circle of Life"), method: "GET",
            uri: "/dir/index.html")
        #expect(value.contains("response=\"\(expected)\""), "\(value)")
        #expect(value.contains("nc=00000001"))
        #expect(value.contains("algorithm=\(algorithm)"))
        #expect(value.contains("opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\""))
    }

    /// RFC 2617 §3.5: MD5 with qop=auth.
    @Test func rfc2617Example() throws {
        let challenge = try SIPDigestChallenge(
            parsing:
                "Digest realm=\"testrealm@host.com\", qop=\"auth,auth-int\", nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""
        )
        var authenticator = SIPDigestAuthenticator(cnonce: { "0a4f113b" })
        let value = try authenticator.authorization(
            for: challenge, credentials: SIPCredentials(username: "Mufasa", password: "Circle Of Life"), method: "GET",
            uri: "/dir/index.html")
        #expect(value.contains("response=\"6629fae49393a05397450978507c4ef1\""), "\(value)")
        // The same nonce again: the count goes up and the response changes.
        let second = try authenticator.authorization(
            for: challenge, credentials: SIPCredentials(username: "Mufasa", password: "Circle Of Life"), method: "GET",
            uri: "/dir/index.html")
        #expect(second.contains("nc=00000002"))
        #expect(!second.contains("6629fae49393a05397450978507c4ef1"))
    }

    @Test func challengesVoiceSIPCannotAnswerAreErrors() {
        #expect(throws: SIPError.self) { try SIPDigestChallenge(parsing: "Basic realm=\"x\"") }
        #expect(throws: SIPError.self) {
            try SIPDigestChallenge(parsing: "Digest realm=\"x\", nonce=\"n\", algorithm=SHA-512-256")
        }
        #expect(throws: SIPError.self) { try SIPDigestChallenge(parsing: "Digest nonce=\"n\"") }
        #expect(throws: SIPError.self) {
            var authenticator = SIPDigestAuthenticator()
            _ = try authenticator.authorization(
                for: try SIPDigestChallenge(parsing: "Digest realm=\"x\", nonce=\"n\", qop=\"auth-int\""),
                credentials: SIPCredentials(username: "u", password: "p"), method: .register, uri: "sip:x")
        }
        let stale = try? SIPDigestChallenge(parsing: "Digest realm=\"x\", nonce=\"n\", stale=TRUE, algorithm=sha-256")
        #expect(stale?.stale == true)
        #expect(stale?.algorithm == .sha256)
    }
}
