/// Sends requests through a `SIPEndpoint` and answers digest challenges (RFC 3261 §22, RFC 8760): a 401 or 407 is
/// retried once with credentials from the delegate, and the challenge is kept so that later requests to the same
/// realm authenticate up front with the same nonce and the next nonce count.
public actor SIPRequestSender {
    public let endpoint: SIPEndpoint
    private let credentials: (any SIPCredentialsDelegate)?
    private var authenticator = SIPDigestAuthenticator()
    /// The last challenge of each realm, and whether it came in Proxy-Authenticate.
    private var challenges: [String: (challenge: SIPDigestChallenge, proxy: Bool)] = [:]

    public init(endpoint: SIPEndpoint, credentials: (any SIPCredentialsDelegate)?) {
        self.endpoint = endpoint
        self.credentials = credentials
    }

    /// Sends `request` to `peer` and returns its final response; on a challenge, once more with credentials (a new
    /// branch and CSeq). The response to the retry is returned whatever it is: a second 401/407 means the
    /// credentials were refused, unless the server said the nonce was stale.
    public func send(_ request: SIPMessage, to peer: SIPPeer, onProvisional: (@Sendable (SIPMessage) -> Void)? = nil)
        async throws -> SIPMessage
    {
        var request = request
        try authorize(&request)
        var staleRetries = 0
        var attempt = 0
        while true {
            let response = try await endpoint.request(request, to: peer, onProvisional: onProvisional).get()
            guard let code = response.statusCode, code == 401 || code == 407, let credentials else { return response }
            let proxy = code == 407
            let offered = response.headers[proxy ? "Proxy-Authenticate" : "WWW-Authenticate"].compactMap {
                try? SIPDigestChallenge(parsing: $0)
            }
            guard !offered.isEmpty else { return response }
            let stale = offered.contains(where: \.stale)
            if attempt > 0 && !(stale && staleRetries == 0) { return response }
            if stale && attempt > 0 { staleRetries += 1 }
            attempt += 1
            for challenge in offered where credentials.credentials(forRealm: challenge.realm) != nil {
                challenges[challenge.realm] = (challenge, proxy)
            }
            guard offered.contains(where: { challenges[$0.realm] != nil }) else { return response }
            request.headers.remove("Via")
            if let cseq = request.cseq {
                request.headers.replace("CSeq", with: SIPCSeq(cseq.sequence &+ 1, cseq.method).description)
            }
            try authorize(&request)
        }
    }

    /// Adds Authorization / Proxy-Authorization for every realm challenged so far.
    private func authorize(_ request: inout SIPMessage) throws {
        guard let credentials, let method = request.requestMethod, let uri = request.requestURI else { return }
        request.headers.remove("Authorization")
        request.headers.remove("Proxy-Authorization")
        for (realm, entry) in challenges.sorted(by: { $0.key < $1.key }) {
            guard let account = credentials.credentials(forRealm: realm) else { continue }
            let value = try authenticator.authorization(
                for: entry.challenge, credentials: account, method: method, uri: uri.description)
            request.headers.add(entry.proxy ? "Proxy-Authorization" : "Authorization", value)
        }
    }
}
