import VoiceEngine

/// Why a WebRTC offer or answer cannot be used.
public enum WebRTCSDPError: Error, Equatable, Sendable {
    /// The base SDP did not parse or negotiate (no Opus, audio rejected…).
    case sdp(SDPError)
    /// A required WebRTC attribute is missing for the audio section: ice-ufrag, ice-pwd, fingerprint or setup.
    case missingAttribute(String)
    /// An attribute is present but unusable (e.g. a fingerprint hash other than sha-256).
    case badAttribute(String, reason: String)
}

/// `a=setup` (RFC 4145 / RFC 5763 §5): who is the DTLS client.
public enum DTLSSetup: String, Sendable {
    case actpass, active, passive, holdconn
}

/// ICE credentials (`a=ice-ufrag` / `a=ice-pwd`, RFC 8839 §5.4).
public struct ICECredentials: Equatable, Sendable {
    public var ufrag: String
    public var password: String

    public init(ufrag: String, password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    /// Fresh credentials: 8 and 24 characters from the ice-char set (RFC 8839: at least 4 and 22), i.e. 48 and
    /// 144 bits from the system CSPRNG.
    public static func random() -> ICECredentials {
        let chars = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")
        var generator = SystemRandomNumberGenerator()
        func pick(_ n: Int) -> String { String((0..<n).map { _ in chars.randomElement(using: &generator)! }) }
        return ICECredentials(ufrag: pick(8), password: pick(24))
    }
}

/// The WebRTC transport parameters of the audio section (ICE, DTLS, BUNDLE), read from an offer or answer.
/// Session-level values apply where the section has none (Firefox writes fingerprint at session level).
public struct WebRTCTransportParameters: Equatable, Sendable {
    public var ice: ICECredentials
    public var fingerprint: DTLSFingerprint
    public var setup: DTLSSetup
    /// The audio section's `a=mid`, nil when absent (a non-BUNDLE peer).
    public var mid: String?
    /// UDP candidates of component 1 in the SDP (trickle ICE may add more later).
    public var candidates: [ICECandidate]
    public var iceLite: Bool
    public var trickle: Bool
    /// The id of the RFC 6464 client-to-mixer audio level extension, when offered.
    public var audioLevelExtensionID: Int?
}

/// An offer or answer of a WebRTC peer: the base description the engine negotiates Opus and RTP with, plus
/// the WebRTC transport parameters and every m-line's kind and mid (for rejecting video and data channels).
public struct WebRTCSessionDescription: Sendable {
    public var base: SessionDescription
    public var transport: WebRTCTransportParameters
    /// Every m-line in order: media ("audio", "video", "application"), protocol, formats, mid.
    public var sections: [(media: String, proto: String, formats: String, mid: String?)]

    public static let audioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"

    /// Parses the text a browser produced (`RTCSessionDescription.sdp`).
    public init(parsing text: String) throws(WebRTCSDPError) {
        do { base = try SessionDescription(parsing: text) } catch { throw .sdp(error) }
        // The per-section mids and protocols (the base parser keeps only the audio section's attributes).
        var sections: [(String, String, String, String?)] = []
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw[...]
            if line.hasPrefix("m=") {
                let f = line.dropFirst(2).split(separator: " ", maxSplits: 3)
                sections.append(
                    (
                        f.count > 0 ? String(f[0]) : "", f.count > 2 ? String(f[2]) : "",
                        f.count > 3 ? String(f[3]) : "", nil
                    ))
            } else if line.hasPrefix("a=mid:"), !sections.isEmpty {
                sections[sections.count - 1].3 = String(line.dropFirst(6))
            }
        }
        self.sections = sections.map { (media: $0.0, proto: $0.1, formats: $0.2, mid: $0.3) }
        transport = try Self.transportParameters(of: base)
    }

    init(
        base: SessionDescription, transport: WebRTCTransportParameters,
        sections: [(media: String, proto: String, formats: String, mid: String?)]
    ) {
        self.base = base
        self.transport = transport
        self.sections = sections
    }

    /// Reads ICE/DTLS attributes: the audio section's first, the session's as fallback.
    static func transportParameters(of sdp: SessionDescription) throws(WebRTCSDPError) -> WebRTCTransportParameters {
        let media = sdp.audio.otherAttributes, session = sdp.sessionAttributes
        func value(_ name: String) -> String? {
            let prefix = name + ":"
            let found = media.first(where: { $0.hasPrefix(prefix) }) ?? session.first(where: { $0.hasPrefix(prefix) })
            return found.map { String($0.dropFirst(prefix.count)).trimmingCharacters(in: " ") }
        }
        guard let ufrag = value("ice-ufrag") else { throw .missingAttribute("ice-ufrag") }
        guard let pwd = value("ice-pwd") else { throw .missingAttribute("ice-pwd") }
        guard let fingerprintText = value("fingerprint") else { throw .missingAttribute("fingerprint") }
        guard let fingerprint = DTLSFingerprint(sdpValue: fingerprintText) else {
            throw .badAttribute("fingerprint", reason: "not '<hash> XX:XX:…'")
        }
        guard fingerprint.algorithm == "sha-256", fingerprint.bytes.count == 32 else {
            throw .badAttribute("fingerprint", reason: "\(fingerprint.algorithm) is not sha-256 (the one hash checked)")
        }
        guard let setupText = value("setup") else { throw .missingAttribute("setup") }
        guard let setup = DTLSSetup(rawValue: setupText) else {
            throw .badAttribute("setup", reason: "'\(setupText)' is not actpass/active/passive/holdconn")
        }
        let options = (value("ice-options") ?? "").split(separator: " ")
        let candidates = media.compactMap { $0.hasPrefix("candidate:") ? ICECandidate(sdpValue: $0) : nil }
            .filter { $0.component == 1 && $0.isUDP }
        let audioLevel = media.first(where: { $0.hasPrefix("extmap:") && $0.hasSuffix(" " + audioLevelURI) })
            .flatMap { Int($0.dropFirst("extmap:".count).prefix(while: { $0.isNumber })) }
        return WebRTCTransportParameters(
            ice: ICECredentials(ufrag: ufrag, password: pwd), fingerprint: fingerprint, setup: setup,
            mid: value("mid"), candidates: candidates,
            iceLite: session.contains("ice-lite") || media.contains("ice-lite"),
            trickle: options.contains("trickle"), audioLevelExtensionID: audioLevel)
    }
}

private extension String {
    func trimmingCharacters(in set: Character) -> String {
        String(drop(while: { $0 == set }).reversed().drop(while: { $0 == set }).reversed())
    }
}

/// What the engine puts in its own WebRTC descriptions.
public struct WebRTCLocalParameters: Sendable {
    public var ice: ICECredentials
    public var fingerprint: DTLSFingerprint
    public var candidates: [ICECandidate]
    /// The engine answers as an ICE-lite agent (RFC 8445 §2.5): it only answers checks, the browser controls.
    public var iceLite: Bool
    /// Trickle ICE (RFC 8840): `a=ice-options:trickle`, and no end-of-candidates — more candidates follow in
    /// signalling messages.
    public var trickle: Bool

    public init(
        ice: ICECredentials, fingerprint: DTLSFingerprint, candidates: [ICECandidate], iceLite: Bool = true,
        trickle: Bool = false
    ) {
        self.ice = ice
        self.fingerprint = fingerprint
        self.candidates = candidates
        self.iceLite = iceLite
        self.trickle = trickle
    }

    /// The ICE attributes after the credentials: trickle's option, the candidates, end-of-candidates unless trickling.
    var candidateAttributes: [String] {
        (trickle ? ["ice-options:trickle"] : []) + candidates.map(\.sdpValue) + (trickle ? [] : ["end-of-candidates"])
    }
}

extension WebRTCSessionDescription {
    /// Answers a browser's offer: one audio m-line (Opus, rtcp-mux, BUNDLE'd under its mid, `setup:active` so the
    /// engine is the DTLS client as RFC 8842 §5.3 recommends for an answerer, our ICE credentials, candidates and
    /// fingerprint, the audio-level extension echoed when offered); every other m-line (video, data channels)
    /// rejected with port 0 and its mid kept, as JSEP requires.
    ///
    /// - Returns: the answer text, what was negotiated for the media stream (its SRTP comes from DTLS, so
    ///   `negotiated.srtp` is nil), and the DTLS role the engine takes.
    public static func answer(
        to offer: WebRTCSessionDescription, localCapabilities: AudioCapabilities, local: WebRTCLocalParameters,
        sessionID: UInt64 = .random(in: 1...(1 << 62))
    ) throws(WebRTCSDPError) -> (text: String, negotiated: NegotiatedAudio, role: DTLSSRTPAssociation.Role) {
        // Keys come from DTLS, not SDES: the SDES negotiation sees a plain profile and no crypto lines.
        var plainOffer = offer.base
        plainOffer.audio.transportProtocol = "RTP/AVPF"
        var capabilities = localCapabilities
        capabilities.srtp = .disabled
        capabilities.rtcpMux = true
        let answer: SessionDescription, negotiated: NegotiatedAudio
        do {
            (answer, negotiated) = try SessionDescription.makeAnswer(
                to: plainOffer, localCapabilities: capabilities, sessionID: sessionID)
        } catch { throw .sdp(error) }
        let role: DTLSSRTPAssociation.Role
        var setup: DTLSSetup
        switch offer.transport.setup {
        case .actpass, .passive: (role, setup) = (.client, .active)
        case .active: (role, setup) = (.server, .passive)
        case .holdconn: throw .badAttribute("setup", reason: "holdconn: the offerer does not want a connection")
        }
        if offer.transport.setup == .actpass { setup = .active }

        var audio = answer.audio
        audio.transportProtocol = offer.base.audio.transportProtocol
        // The engine decodes 10 ms packets too; say so as browsers do (`minptime=10`).
        if !audio.formats.isEmpty { audio.formats[0].opusParameters?.minptime = 10 }
        audio.otherAttributes = []
        if let mid = offer.transport.mid { audio.otherAttributes.append("mid:\(mid)") }
        audio.otherAttributes += [
            "ice-ufrag:\(local.ice.ufrag)", "ice-pwd:\(local.ice.password)",
            "fingerprint:\(local.fingerprint.sdpValue)", "setup:\(setup.rawValue)"
        ]
        if let id = offer.transport.audioLevelExtensionID {
            audio.otherAttributes.append("extmap:\(id) \(audioLevelURI)")
        }
        audio.otherAttributes += local.candidateAttributes
        var audioOnly = answer
        audioOnly.audio = audio
        audioOnly.otherMedia = []
        audioOnly.audioIndex = 0
        audioOnly.sessionAttributes =
            (offer.transport.mid.map { ["group:BUNDLE \($0)"] } ?? [])
            + (local.iceLite ? ["ice-lite"] : []) + ["msid-semantic: WMS"]
        // Stitch the rejected m-lines back in, in the offer's order (port 0, mid kept, JSEP §5.3.1).
        let text = audioOnly.serialize()
        guard let audioStart = text.range(of: "m=audio ") else { throw .missingAttribute("m=audio") }
        let head = String(text[..<audioStart.lowerBound]), audioText = String(text[audioStart.lowerBound...])
        var out = head
        for (index, section) in offer.sections.enumerated() {
            if index == offer.base.audioIndex {
                out += audioText
            } else {
                out += "m=\(section.media) 0 \(section.proto) \(section.formats)\r\nc=IN IP4 0.0.0.0\r\n"
                if let mid = section.mid { out += "a=mid:\(mid)\r\n" }
            }
        }
        return (out, negotiated, role)
    }
}

extension WebRTCSessionDescription {
    /// The engine's offer to a browser: one Opus audio m-line (`UDP/TLS/RTP/SAVPF`, mid 0 BUNDLE'd, rtcp-mux,
    /// `setup:actpass`, our ICE credentials, candidates and fingerprint, ICE-lite).
    ///
    /// - Returns: the text and the base description ``negotiate(offer:answer:localCapabilities:)`` needs.
    public static func offer(
        localCapabilities: AudioCapabilities, local: WebRTCLocalParameters,
        sessionID: UInt64 = .random(in: 1...(1 << 62))
    ) -> (text: String, base: SessionDescription) {
        var capabilities = localCapabilities
        capabilities.srtp = .disabled
        capabilities.rtcpMux = true
        var base = SessionDescription.makeOffer(capabilities, sessionID: sessionID)
        base.audio.transportProtocol = "UDP/TLS/RTP/SAVPF"
        if !base.audio.formats.isEmpty { base.audio.formats[0].opusParameters?.minptime = 10 }
        base.audio.otherAttributes =
            [
                "mid:0", "ice-ufrag:\(local.ice.ufrag)", "ice-pwd:\(local.ice.password)",
                "fingerprint:\(local.fingerprint.sdpValue)", "setup:actpass"
            ] + local.candidateAttributes
        base.sessionAttributes = ["group:BUNDLE 0"] + (local.iceLite ? ["ice-lite"] : []) + ["msid-semantic: WMS"]
        return (base.serialize(), base)
    }

    /// The offerer's side: what the browser's answer agreed, its transport parameters, and our DTLS role
    /// (`setup:active` in the answer makes us the DTLS server, `passive` the client).
    public static func negotiate(offer: SessionDescription, answer text: String, localCapabilities: AudioCapabilities)
        throws(WebRTCSDPError) -> (
            negotiated: NegotiatedAudio, remote: WebRTCTransportParameters, role: DTLSSRTPAssociation.Role
        )
    {
        let answer = try WebRTCSessionDescription(parsing: text)
        var capabilities = localCapabilities
        capabilities.srtp = .disabled
        let negotiated: NegotiatedAudio
        do { negotiated = try offer.negotiate(answer: answer.base, localCapabilities: capabilities) } catch {
            throw .sdp(error)
        }
        let role: DTLSSRTPAssociation.Role
        switch answer.transport.setup {
        case .active: role = .server
        case .passive: role = .client
        case .actpass, .holdconn:
            throw .badAttribute(
                "setup", reason: "an answer must say active or passive, not \(answer.transport.setup.rawValue)")
        }
        return (negotiated, answer.transport, role)
    }
}
