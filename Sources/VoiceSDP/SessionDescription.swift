import VoiceCodec
import VoiceSRTP

/// Media direction of a stream (RFC 4566 §6 / RFC 3264 §6.1).
public enum MediaDirection: String, Sendable, CaseIterable {
    case sendrecv, sendonly, recvonly, inactive

    public var sends: Bool { self == .sendrecv || self == .sendonly }
    public var receives: Bool { self == .sendrecv || self == .recvonly }

    init(sends: Bool, receives: Bool) {
        switch (sends, receives) {
        case (true, true): self = .sendrecv
        case (true, false): self = .sendonly
        case (false, true): self = .recvonly
        case (false, false): self = .inactive
        }
    }

    /// The direction as seen from the other end: what one side sends, the other receives.
    public var reversed: MediaDirection { MediaDirection(sends: receives, receives: sends) }
}

/// A `c=` line: `IN IP4 <address>` or `IN IP6 <address>`.
public struct SDPConnection: Equatable, Sendable {
    /// `IP4` or `IP6`.
    public var addressType: String
    /// The unicast address (a TTL or count suffix, `/n`, is dropped when parsing).
    public var address: String

    public init(addressType: String = "IP4", address: String) {
        self.addressType = addressType
        self.address = address
    }

    var line: String { "c=IN \(addressType) \(address)" }
}

/// An `o=` line: `o=<username> <sess-id> <sess-version> IN <addrtype> <address>`.
public struct SDPOrigin: Equatable, Sendable {
    public var username: String
    /// Kept as text: browsers use 19-digit ids beyond what some integer types hold.
    public var sessionID: String
    public var sessionVersion: String
    public var addressType: String
    public var address: String

    public init(
        username: String = "-", sessionID: String, sessionVersion: String = "1", addressType: String = "IP4",
        address: String
    ) {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.addressType = addressType
        self.address = address
    }
}

/// `a=rtpmap:` of one payload type: `<encoding name>/<clock rate>[/<channels>]`.
public struct RTPMap: Equatable, Sendable {
    public var encodingName: String
    public var clockRate: Int
    public var channels: Int?

    public init(encodingName: String, clockRate: Int, channels: Int? = nil) {
        self.encodingName = encodingName
        self.clockRate = clockRate
        self.channels = channels
    }

    /// RFC 7587: Opus is always `opus/48000/2`, whatever is actually coded. Name matching is case-insensitive.
    public var isOpus: Bool { encodingName.lowercased() == "opus" && clockRate == 48_000 }

    var value: String { "\(encodingName)/\(clockRate)" + (channels.map { "/\($0)" } ?? "") }
}

/// One payload type of the audio `m=` line with its `rtpmap` and `fmtp`.
public struct RTPFormat: Equatable, Sendable {
    public var payloadType: UInt8
    public var rtpmap: RTPMap?
    /// Parsed fmtp for Opus payload types (nil when the rtpmap is not Opus).
    public var opusParameters: OpusFormatParameters?
    /// fmtp parameter text for any other payload type (e.g. `0-16` for telephone-event), kept verbatim.
    public var fmtp: String?

    public init(
        payloadType: UInt8, rtpmap: RTPMap? = nil, opusParameters: OpusFormatParameters? = nil, fmtp: String? = nil
    ) {
        self.payloadType = payloadType
        self.rtpmap = rtpmap
        self.opusParameters = opusParameters
        self.fmtp = fmtp
    }

    public var isOpus: Bool { rtpmap?.isOpus ?? false }

    /// The codec this payload type carries, when it is one the engine codes: Opus by its rtpmap, G.711/G.722 by
    /// their rtpmap (`PCMU/8000`, `PCMA/8000`, `G722/8000`, names case-insensitive) or, without one, by their
    /// static payload type (RFC 3551: 0, 8, 9).
    public var codec: AudioCodec? {
        guard let rtpmap else {
            return TelephonyCodec.allCases.first(where: { $0.payloadType == payloadType }).map(AudioCodec.telephony)
        }
        if rtpmap.isOpus { return .opus }
        guard rtpmap.clockRate == 8_000, (rtpmap.channels ?? 1) == 1 else { return nil }
        let name = rtpmap.encodingName.uppercased()
        return TelephonyCodec.allCases.first(where: { $0.encodingName == name }).map(AudioCodec.telephony)
    }

    /// Whether this is RFC 4733 `telephone-event` (DTMF beside a codec, not a codec).
    var isTelephoneEvent: Bool { rtpmap?.encodingName.lowercased() == "telephone-event" }

    /// How an offer names this payload type's codec in a refusal: its rtpmap, else the payload type.
    var displayName: String { rtpmap?.value ?? "\(payloadType)" }
}

/// The audio `m=` section of an SDP: everything offer/answer needs for one Opus stream.
public struct AudioMediaDescription: Equatable, Sendable {
    /// RTP port; 0 means the section is rejected or disabled.
    public var port: Int
    /// `RTP/AVP`, `RTP/SAVP`, `RTP/SAVPF`, `UDP/TLS/RTP/SAVPF`…
    public var transportProtocol: String
    /// Payload types in the order of the `m=` line (the sender's preference).
    public var formats: [RTPFormat]
    /// The section's own `c=` line, overriding the session-level one.
    public var connection: SDPConnection?
    public var direction: MediaDirection
    /// `a=ptime`: packet time in ms the sender of this description wants to receive.
    public var ptime: Int?
    /// `a=maxptime`: longest packet time in ms the sender of this description can receive.
    public var maxptime: Int?
    /// `a=crypto` lines with suites this engine supports, in order (the offerer's preference).
    public var crypto: [SDESCryptoAttribute]
    /// `a=crypto` lines with suites this engine does not know, kept verbatim (without `a=`) for the record.
    public var unsupportedCrypto: [String]
    /// `a=rtcp-mux` (RFC 5761): RTP and RTCP on one port.
    public var rtcpMux: Bool
    /// `a=rtcp:<port>` (RFC 3605) when present.
    public var rtcpPort: Int?
    /// Every other attribute of the section, verbatim without `a=` (ICE, ssrc, extmap…), re-emitted as is.
    public var otherAttributes: [String]

    public init(
        port: Int, transportProtocol: String = "RTP/SAVP", formats: [RTPFormat], connection: SDPConnection? = nil,
        direction: MediaDirection = .sendrecv, ptime: Int? = nil, maxptime: Int? = nil,
        crypto: [SDESCryptoAttribute] = [], unsupportedCrypto: [String] = [], rtcpMux: Bool = false,
        rtcpPort: Int? = nil, otherAttributes: [String] = []
    ) {
        self.port = port
        self.transportProtocol = transportProtocol
        self.formats = formats
        self.connection = connection
        self.direction = direction
        self.ptime = ptime
        self.maxptime = maxptime
        self.crypto = crypto
        self.unsupportedCrypto = unsupportedCrypto
        self.rtcpMux = rtcpMux
        self.rtcpPort = rtcpPort
        self.otherAttributes = otherAttributes
    }

    /// The first Opus payload type in preference order, if any.
    public var opus: RTPFormat? { formats.first(where: \.isOpus) }

    /// Whether the profile itself is secure (`SAVP`/`SAVPF`): such a peer will not accept plain RTP.
    public var isSecureProfile: Bool { transportProtocol.uppercased().contains("SAVP") }
}

/// A media section other than the first audio one, kept so an answer can reject it in place (RFC 3264 §6: the
/// answer has as many `m=` lines as the offer, in the same order).
public struct SDPOtherMedia: Equatable, Sendable {
    /// Position among all `m=` lines, 0-based.
    public var index: Int
    public var media: String
    public var port: Int
    public var transportProtocol: String
    public var formats: [String]

    public init(index: Int, media: String, port: Int, transportProtocol: String, formats: [String]) {
        self.index = index
        self.media = media
        self.port = port
        self.transportProtocol = transportProtocol
        self.formats = formats
    }
}

/// A whole session description (RFC 4566) reduced to what a voice call needs: the session lines and the first
/// audio section. Other media sections and attributes are tolerated and kept.
///
/// Parse with ``init(parsing:)``; produce text with ``serialize()`` (CRLF line ends). The text contains SRTP keys
/// when the audio section has crypto lines: never log it.
public struct SessionDescription: Equatable, Sendable {
    public var origin: SDPOrigin
    public var sessionName: String
    /// Session-level `c=` line, used by every section that has none of its own.
    public var connection: SDPConnection?
    /// `t=` value, `0 0` for a session without fixed times.
    public var timing: String
    /// Session-level attributes, verbatim without `a=`.
    public var sessionAttributes: [String]
    public var audio: AudioMediaDescription
    /// Position of the audio section among all `m=` lines.
    public var audioIndex: Int
    public var otherMedia: [SDPOtherMedia]

    public init(
        origin: SDPOrigin, sessionName: String = "-", connection: SDPConnection? = nil, timing: String = "0 0",
        sessionAttributes: [String] = [], audio: AudioMediaDescription, audioIndex: Int = 0,
        otherMedia: [SDPOtherMedia] = []
    ) {
        self.origin = origin
        self.sessionName = sessionName
        self.connection = connection
        self.timing = timing
        self.sessionAttributes = sessionAttributes
        self.audio = audio
        self.audioIndex = audioIndex
        self.otherMedia = otherMedia
    }

    /// Where the peer wants audio sent: the audio section's `c=` or else the session's.
    public var audioConnection: SDPConnection? { audio.connection ?? connection }

    // MARK: Serializing

    /// The SDP text with CRLF line ends. Contains SRTP keys when crypto lines are present.
    public func serialize() -> String {
        var lines = [
            "v=0",
            "o=\(origin.username) \(origin.sessionID) \(origin.sessionVersion) IN \(origin.addressType) \(origin.address)",
            "s=\(sessionName.isEmpty ? "-" : sessionName)"
        ]
        if let connection { lines.append(connection.line) }
        lines.append("t=\(timing)")
        lines += sessionAttributes.map { "a=" + $0 }
        let sectionCount = otherMedia.count + 1
        for index in 0..<sectionCount {
            if index == audioIndex {
                lines += audioLines()
            } else if let other = otherMedia.first(where: { $0.index == index }) {
                let formats = other.formats.isEmpty ? "" : " " + other.formats.joined(separator: " ")
                lines.append("m=\(other.media) \(other.port) \(other.transportProtocol)\(formats)")
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private func audioLines() -> [String] {
        let a = audio
        var lines = [
            "m=audio \(a.port) \(a.transportProtocol) " + a.formats.map { "\($0.payloadType)" }.joined(separator: " ")
        ]
        if let connection = a.connection { lines.append(connection.line) }
        if a.port == 0 { return lines }
        for format in a.formats {
            if let rtpmap = format.rtpmap { lines.append("a=rtpmap:\(format.payloadType) \(rtpmap.value)") }
            if let params = format.opusParameters, !params.fmtpValue.isEmpty {
                lines.append("a=fmtp:\(format.payloadType) \(params.fmtpValue)")
            } else if let fmtp = format.fmtp {
                lines.append("a=fmtp:\(format.payloadType) \(fmtp)")
            }
        }
        if let ptime = a.ptime { lines.append("a=ptime:\(ptime)") }
        if let maxptime = a.maxptime { lines.append("a=maxptime:\(maxptime)") }
        lines.append("a=\(a.direction.rawValue)")
        if a.rtcpMux { lines.append("a=rtcp-mux") }
        if let rtcpPort = a.rtcpPort { lines.append("a=rtcp:\(rtcpPort)") }
        lines += a.crypto.map(\.attributeLine)
        lines += a.unsupportedCrypto.map { "a=" + $0 }
        lines += a.otherAttributes.map { "a=" + $0 }
        return lines
    }

    // MARK: Parsing

    /// Parses a whole SDP. Lines end in LF or CRLF; blank lines are skipped. Media sections other than the first
    /// `m=audio` are kept only as ``otherMedia``; unknown attributes are kept verbatim.
    ///
    /// - Throws: ``SDPError`` naming the line (1-based) and what is wrong with it, or the missing line.
    public init(parsing text: String) throws(SDPError) {
        var origin: SDPOrigin?
        var sessionName: String?
        var sessionConnection: SDPConnection?
        var timing: String?
        var sessionAttributes: [String] = []
        var sessionDirection: MediaDirection?
        var sawVersion = false

        var audio: AudioMediaDescription?
        var audioIndex = -1
        var audioDirection: MediaDirection?
        var otherMedia: [SDPOtherMedia] = []
        var mediaCount = 0
        // Where we are: session level, inside the audio section we use, or inside a section we skip.
        enum Section { case session, audio, skipped }
        var section = Section.session
        // rtpmap / fmtp lines may come in any order relative to each other: collect, resolve at the end.
        var rtpmaps: [UInt8: (RTPMap, Int)] = [:]
        var fmtps: [UInt8: (Substring, Int)] = [:]

        var lineNumber = 0
        // "\r\n" is one Character in Swift, so split on both forms explicitly.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            var line = Substring(rawLine)
            if line.last == "\r" { line = line.dropLast() }
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            let chars = line.utf8
            guard chars.count >= 2, let type = line.first, type.isASCII, type.isLetter,
                line[line.index(after: line.startIndex)] == "="
            else { throw .malformedLine(line: lineNumber, reason: "not a <letter>=<value> line") }
            let value = line.dropFirst(2)
            if !sawVersion {
                guard type == "v" else { throw .malformedLine(line: lineNumber, reason: "an SDP must start with v=0") }
                guard value == "0" else {
                    throw .malformedLine(line: lineNumber, reason: "unsupported version v=\(value)")
                }
                sawVersion = true
                continue
            }
            switch (type, section) {
            case ("v", _):
                throw .malformedLine(line: lineNumber, reason: "a second v= line")
            case ("o", .session):
                let f = value.split(separator: " ")
                guard f.count == 6, f[3] == "IN" else {
                    throw .malformedLine(line: lineNumber, reason: "o= needs <user> <id> <version> IN <type> <address>")
                }
                origin = SDPOrigin(
                    username: String(f[0]), sessionID: String(f[1]), sessionVersion: String(f[2]),
                    addressType: String(f[4]), address: String(f[5]))
            case ("s", .session):
                sessionName = String(value)
            case ("t", .session):
                timing = String(value)
            case ("c", .session):
                sessionConnection = try Self.parseConnection(value, line: lineNumber)
            case ("c", .audio):
                audio?.connection = try Self.parseConnection(value, line: lineNumber)
            case ("m", _):
                let f = value.split(separator: " ")
                guard f.count >= 3 else {
                    throw .malformedLine(line: lineNumber, reason: "m= needs <media> <port> <proto> <fmt>…")
                }
                // Keep empty pieces: "/" alone must be a bad port, not an empty split indexed at 0.
                let portText = f[1].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)[0]
                guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portText), port <= 65535 else {
                    throw .malformedLine(line: lineNumber, reason: "bad port '\(f[1])'")
                }
                let proto = String(f[2])
                if f[0] == "audio" && audio == nil {
                    var formats: [RTPFormat] = []
                    for fmt in f.dropFirst(3) {
                        guard let pt = UInt8(fmt), pt <= 127 else {
                            throw .malformedLine(line: lineNumber, reason: "bad payload type '\(fmt)'")
                        }
                        formats.append(RTPFormat(payloadType: pt))
                    }
                    guard f.count >= 4 else {
                        throw .malformedLine(line: lineNumber, reason: "m=audio lists no payload type")
                    }
                    audio = AudioMediaDescription(port: port, transportProtocol: proto, formats: formats)
                    audioIndex = mediaCount
                    section = .audio
                } else {
                    otherMedia.append(
                        SDPOtherMedia(
                            index: mediaCount, media: String(f[0]), port: port, transportProtocol: proto,
                            formats: f.dropFirst(3).map(String.init)))
                    section = .skipped
                }
                mediaCount += 1
            case ("a", .session):
                if let direction = MediaDirection(rawValue: String(value)) {
                    sessionDirection = direction
                } else {
                    sessionAttributes.append(String(value))
                }
            case ("a", .audio):
                try Self.parseAudioAttribute(
                    value, line: lineNumber, audio: &audio!, direction: &audioDirection, rtpmaps: &rtpmaps,
                    fmtps: &fmtps)
            case (_, .skipped), ("b", _), ("i", _), ("u", _), ("e", _), ("p", _), ("z", _), ("k", _), ("r", _):
                continue  // lines of skipped sections, and informational lines we do not use
            case (_, .audio):
                continue  // other per-media lines (b=, i=, k=) carry nothing we negotiate
            default:
                throw .malformedLine(line: lineNumber, reason: "unexpected \(type)= line at session level")
            }
        }
        guard sawVersion else { throw .missingLine("v=") }
        guard let origin else { throw .missingLine("o=") }
        guard let sessionName else { throw .missingLine("s=") }
        guard var audio else { throw .missingLine("m=audio") }
        for index in audio.formats.indices {
            let pt = audio.formats[index].payloadType
            if let (rtpmap, _) = rtpmaps[pt] { audio.formats[index].rtpmap = rtpmap }
            if let (fmtp, line) = fmtps[pt] {
                if audio.formats[index].isOpus {
                    do {
                        audio.formats[index].opusParameters = try OpusFormatParameters(parsing: fmtp)
                    } catch {
                        throw .malformedLine(line: line, reason: "Opus fmtp: \(error.reason)")
                    }
                } else {
                    audio.formats[index].fmtp = String(fmtp)
                }
            } else if audio.formats[index].isOpus {
                audio.formats[index].opusParameters = OpusFormatParameters()
            }
        }
        audio.direction = audioDirection ?? sessionDirection ?? .sendrecv
        if audio.port != 0, audio.connection == nil, sessionConnection == nil { throw .missingLine("c=") }
        self.init(
            origin: origin, sessionName: sessionName, connection: sessionConnection, timing: timing ?? "0 0",
            sessionAttributes: sessionAttributes, audio: audio, audioIndex: audioIndex, otherMedia: otherMedia)
    }

    private static func parseConnection(_ value: Substring, line: Int) throws(SDPError) -> SDPConnection {
        let f = value.split(separator: " ")
        guard f.count == 3, f[0] == "IN", f[1] == "IP4" || f[1] == "IP6" else {
            throw .malformedLine(line: line, reason: "c= needs IN IP4|IP6 <address>")
        }
        let address = f[2].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard !address.isEmpty else { throw .malformedLine(line: line, reason: "c= has an empty address") }
        return SDPConnection(addressType: String(f[1]), address: String(address))
    }

    private static func parseAudioAttribute(
        _ value: Substring, line: Int, audio: inout AudioMediaDescription, direction: inout MediaDirection?,
        rtpmaps: inout [UInt8: (RTPMap, Int)], fmtps: inout [UInt8: (Substring, Int)]
    ) throws(SDPError) {
        let colon = value.firstIndex(of: ":")
        let name = colon.map { value[..<$0] } ?? value
        let argument = colon.map { value[value.index(after: $0)...] } ?? ""
        func number(_ text: Substring, _ what: String) throws(SDPError) -> Int {
            // Some peers write ptime as a decimal (20.0): accept, round.
            guard let d = Double(text.trimmingSpaces), d.isFinite, d >= 0, d <= 65535 else {
                throw .malformedLine(line: line, reason: "\(what) '\(text)' is not a number")
            }
            return Int(d.rounded())
        }
        switch name {
        case "rtpmap":
            let f = argument.split(separator: " ", maxSplits: 1)
            guard f.count == 2, let pt = UInt8(f[0]), pt <= 127 else {
                throw .malformedLine(line: line, reason: "rtpmap needs <pt> <encoding>/<clock rate>[/<channels>]")
            }
            let enc = f[1].trimmingSpaces.split(separator: "/", omittingEmptySubsequences: false)
            guard (2...3).contains(enc.count), !enc[0].isEmpty, let clock = Int(enc[1]), clock > 0 else {
                throw .malformedLine(line: line, reason: "rtpmap needs <encoding>/<clock rate>[/<channels>]")
            }
            var channels: Int?
            if enc.count == 3 {
                guard let c = Int(enc[2]), c > 0 else {
                    throw .malformedLine(line: line, reason: "rtpmap channels '\(enc[2])' is not a number")
                }
                channels = c
            }
            rtpmaps[pt] = (RTPMap(encodingName: String(enc[0]), clockRate: clock, channels: channels), line)
        case "fmtp":
            let f = argument.split(separator: " ", maxSplits: 1)
            guard !f.isEmpty, let pt = UInt8(f[0]), pt <= 127 else {
                throw .malformedLine(line: line, reason: "fmtp needs <pt> <parameters>")
            }
            fmtps[pt] = (f.count > 1 ? f[1] : "", line)
        case "ptime":
            audio.ptime = try number(argument, "ptime")
        case "maxptime":
            audio.maxptime = try number(argument, "maxptime")
        case "rtcp-mux":
            audio.rtcpMux = true
        case "rtcp":
            let port = argument.split(separator: " ", maxSplits: 1).first ?? ""
            guard let p = Int(port), (0...65535).contains(p) else {
                throw .malformedLine(line: line, reason: "rtcp port '\(port)' is not a port number")
            }
            audio.rtcpPort = p
        case "crypto":
            do {
                audio.crypto.append(try SDESCryptoAttribute(parsing: value))
            } catch {
                if case .unknownSuite = error {
                    audio.unsupportedCrypto.append(String(value))
                } else {
                    throw .badCrypto(line: line, error)
                }
            }
        case "sendrecv", "sendonly", "recvonly", "inactive":
            direction = MediaDirection(rawValue: String(name))
        default:
            audio.otherAttributes.append(String(value))
        }
    }
}
