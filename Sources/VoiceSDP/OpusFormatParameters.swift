import VoiceCodec

/// The Opus `a=fmtp:` parameters of RFC 7587 §6.1.
///
/// Each parameter describes the party whose SDP carries it: `maxplaybackrate`, `maxaveragebitrate`, `stereo`,
/// `cbr`, `useinbandfec` and `usedtx` say what that party prefers to **receive**; `sprop-maxcapturerate` and
/// `sprop-stereo` say what it is likely to **send**. A nil field is absent from the line and takes the RFC
/// default (see the `effective…` accessors).
public struct OpusFormatParameters: Equatable, Sendable {
    /// Highest audio bandwidth, as a sample rate, the receiver can play (8000…48000). Default 48000.
    public var maxPlaybackRate: Int?
    /// Highest sample rate the sender captures (8000…48000). Default 48000.
    public var spropMaxCaptureRate: Int?
    /// Highest average bitrate, bits per second, the receiver wants (6000…510000). Default: no limit.
    public var maxAverageBitrate: Int?
    /// The receiver prefers stereo. Default false.
    public var stereo: Bool?
    /// The sender is likely to send stereo. Default false.
    public var spropStereo: Bool?
    /// The receiver prefers constant bitrate. Default false.
    public var cbr: Bool?
    /// The receiver can decode in-band FEC and wants it. Default false.
    public var useInbandFEC: Bool?
    /// The receiver accepts discontinuous transmission. Default false.
    public var useDTX: Bool?
    /// Shortest packet time, ms, the receiver accepts (a WebRTC extension, e.g. `minptime=10`).
    public var minptime: Int?
    /// Packet time, ms, when a peer puts it in the fmtp line rather than `a=ptime` (seen in the wild).
    public var ptime: Int?
    /// Parameters this engine does not interpret, kept in order as `name=value` (or `name`) to be re-emitted.
    public var other: [String]

    public init(
        maxPlaybackRate: Int? = nil, spropMaxCaptureRate: Int? = nil, maxAverageBitrate: Int? = nil,
        stereo: Bool? = nil, spropStereo: Bool? = nil, cbr: Bool? = nil, useInbandFEC: Bool? = nil,
        useDTX: Bool? = nil, minptime: Int? = nil, ptime: Int? = nil, other: [String] = []
    ) {
        self.maxPlaybackRate = maxPlaybackRate
        self.spropMaxCaptureRate = spropMaxCaptureRate
        self.maxAverageBitrate = maxAverageBitrate
        self.stereo = stereo
        self.spropStereo = spropStereo
        self.cbr = cbr
        self.useInbandFEC = useInbandFEC
        self.useDTX = useDTX
        self.minptime = minptime
        self.ptime = ptime
        self.other = other
    }

    public var effectiveMaxPlaybackRate: Int { maxPlaybackRate ?? 48_000 }
    public var effectiveStereo: Bool { stereo ?? false }
    public var effectiveSpropStereo: Bool { spropStereo ?? false }
    public var effectiveCBR: Bool { cbr ?? false }
    public var effectiveUseInbandFEC: Bool { useInbandFEC ?? false }
    public var effectiveUseDTX: Bool { useDTX ?? false }

    /// Parses the parameter list of an fmtp line (the text after `a=fmtp:<pt> `): `name=value` pairs separated by
    /// `;`, with optional spaces. Names are case-insensitive. Unknown names are kept in ``other``.
    ///
    /// - Throws: a reason string naming the parameter whose value is out of range or not a number / 0 / 1.
    public init(parsing text: Substring) throws(OpusFormatParameterError) {
        self.init()
        for rawParam in text.split(separator: ";") {
            let param = rawParam.trimmingSpaces
            if param.isEmpty { continue }
            let parts = param.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].trimmingSpaces.lowercased()
            let value = parts.count > 1 ? parts[1].trimmingSpaces : nil
            func int(_ range: ClosedRange<Int>) throws(OpusFormatParameterError) -> Int {
                guard let value, !value.isEmpty, value.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(value),
                    range.contains(n)
                else { throw OpusFormatParameterError(reason: "\(name)=\(value ?? "") is not a number in \(range)") }
                return n
            }
            func flag() throws(OpusFormatParameterError) -> Bool {
                switch value {
                case "1": return true
                case "0": return false
                default: throw OpusFormatParameterError(reason: "\(name)=\(value ?? "") is not 0 or 1")
                }
            }
            switch name {
            case "maxplaybackrate": maxPlaybackRate = try int(8_000...48_000)
            case "sprop-maxcapturerate": spropMaxCaptureRate = try int(8_000...48_000)
            case "maxaveragebitrate": maxAverageBitrate = try int(6_000...510_000)
            case "stereo": stereo = try flag()
            case "sprop-stereo": spropStereo = try flag()
            case "cbr": cbr = try flag()
            case "useinbandfec": useInbandFEC = try flag()
            case "usedtx": useDTX = try flag()
            case "minptime": minptime = try int(3...120)
            case "ptime": ptime = try int(3...120)
            default: other.append(String(param))
            }
        }
    }

    /// The parameter list for an fmtp line, in RFC order, `;`-separated; empty when every field is absent.
    public var fmtpValue: String {
        var parts: [String] = []
        func bit(_ b: Bool) -> String { b ? "1" : "0" }
        if let minptime { parts.append("minptime=\(minptime)") }
        if let ptime { parts.append("ptime=\(ptime)") }
        if let maxPlaybackRate { parts.append("maxplaybackrate=\(maxPlaybackRate)") }
        if let spropMaxCaptureRate { parts.append("sprop-maxcapturerate=\(spropMaxCaptureRate)") }
        if let maxAverageBitrate { parts.append("maxaveragebitrate=\(maxAverageBitrate)") }
        if let stereo { parts.append("stereo=\(bit(stereo))") }
        if let spropStereo { parts.append("sprop-stereo=\(bit(spropStereo))") }
        if let cbr { parts.append("cbr=\(bit(cbr))") }
        if let useInbandFEC { parts.append("useinbandfec=\(bit(useInbandFEC))") }
        if let useDTX { parts.append("usedtx=\(bit(useDTX))") }
        parts += other
        return parts.joined(separator: ";")
    }
}

/// Why an Opus fmtp parameter list was rejected; ``SessionDescription`` wraps it into ``SDPError`` with the line.
public struct OpusFormatParameterError: Error, Equatable, Sendable {
    public var reason: String
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
