internal import CALSA

#if canImport(Glibc)
import Glibc
#endif

/// A PCM name ALSA offers (from its configuration's hints): what `voice-engine devices` lists and what
/// ``ALSADevice`` opens.
public struct ALSAPCMInfo: Sendable, Hashable {
    /// The name to open (`"null"`, `"default"`, `"hw:CARD=PCH,DEV=0"`, `"pulse"`, …).
    public var name: String
    /// ALSA's description (may span lines).
    public var description: String
    /// Directions the PCM supports.
    public var directions: Set<AudioDirection>
}

/// One PCM device of a sound card (`hw:card,device`).
public struct ALSACardPCM: Sendable, Hashable {
    public var device: Int
    public var id: String
    public var name: String
    public var directions: Set<AudioDirection>
    /// The hardware name to open it (`"hw:0,3"`; prefix `plug` for format conversion).
    public var hardwareName: String
}

/// A sound card as the kernel reports it.
public struct ALSACard: Sendable, Hashable {
    public var index: Int
    public var id: String
    public var name: String
    public var longName: String
    public var pcms: [ALSACardPCM]
}

/// The cards and PCM names on this machine, as values.
public struct ALSADeviceList: Sendable, Hashable {
    public var cards: [ALSACard]
    public var pcms: [ALSAPCMInfo]
    /// Problems met while listing (a card whose control device could not be opened); the rest is still listed.
    public var problems: [String]

    /// Reads the sound cards (`snd_card_next`, `snd_ctl_*`) and the configured PCM names
    /// (`snd_device_name_hint` for `"pcm"`). Never throws: what cannot be read is reported in ``problems``.
    public static func current() -> ALSADeviceList {
        var list = ALSADeviceList(cards: [], pcms: [], problems: [])
        var card: Int32 = -1
        while true {
            let rc = snd_card_next(&card)
            if rc < 0 {
                list.problems.append("snd_card_next: \(alsaMessage(rc))")
                break
            }
            if card < 0 { break }
            do { list.cards.append(try readCard(card)) } catch { list.problems.append(error.description) }
        }
        do { list.pcms = try readHints() } catch { list.problems.append(error.description) }
        return list
    }

    /// Human-readable listing for `voice-engine devices`.
    public var printable: String {
        var lines: [String] = []
        lines.append("Sound cards: \(cards.isEmpty ? "none" : "\(cards.count)")")
        for card in cards {
            lines.append("  card \(card.index) [\(card.id)]: \(card.name) — \(card.longName)")
            for pcm in card.pcms {
                lines.append(
                    "    \(pcm.hardwareName) [\(pcm.id)] \(pcm.name) (\(ALSADeviceList.label(pcm.directions)))")
            }
        }
        lines.append("PCM names: \(pcms.isEmpty ? "none" : "\(pcms.count)")")
        for pcm in pcms {
            let summary = pcm.description.split(separator: "\n").map(String.init).joined(separator: " — ")
            lines.append(
                "  \(pcm.name) (\(ALSADeviceList.label(pcm.directions)))\(summary.isEmpty ? "" : ": \(summary)")")
        }
        for problem in problems { lines.append("problem: \(problem)") }
        return lines.joined(separator: "\n")
    }

    static func label(_ directions: Set<AudioDirection>) -> String {
        switch (directions.contains(.capture), directions.contains(.playout)) {
        case (true, true): "capture, playout"
        case (true, false): "capture"
        case (false, true): "playout"
        case (false, false): "no direction"
        }
    }

    private static func readCard(_ index: Int32) throws(ALSAError) -> ALSACard {
        let device = "hw:\(index)"
        var ctl: OpaquePointer?
        try alsaCheck(snd_ctl_open(&ctl, device, 0), "snd_ctl_open", device: device)
        defer { snd_ctl_close(ctl) }
        var info: OpaquePointer?
        try alsaCheck(snd_ctl_card_info_malloc(&info), "snd_ctl_card_info_malloc", device: device)
        defer { snd_ctl_card_info_free(info) }
        try alsaCheck(snd_ctl_card_info(ctl, info), "snd_ctl_card_info", device: device)
        var card = ALSACard(
            index: Int(index), id: String(cString: snd_ctl_card_info_get_id(info)),
            name: String(cString: snd_ctl_card_info_get_name(info)),
            longName: String(cString: snd_ctl_card_info_get_longname(info)), pcms: [])
        var pcmInfo: OpaquePointer?
        try alsaCheck(snd_pcm_info_malloc(&pcmInfo), "snd_pcm_info_malloc", device: device)
        defer { snd_pcm_info_free(pcmInfo) }
        var number: Int32 = -1
        while true {
            try alsaCheck(snd_ctl_pcm_next_device(ctl, &number), "snd_ctl_pcm_next_device", device: device)
            if number < 0 { break }
            var entry = ALSACardPCM(
                device: Int(number), id: "", name: "", directions: [], hardwareName: "hw:\(index),\(number)")
            for (direction, stream) in [
                (AudioDirection.playout, SND_PCM_STREAM_PLAYBACK), (.capture, SND_PCM_STREAM_CAPTURE)
            ] {
                snd_pcm_info_set_device(pcmInfo, UInt32(number))
                snd_pcm_info_set_subdevice(pcmInfo, 0)
                snd_pcm_info_set_stream(pcmInfo, stream)
                // -ENOENT: the device has no such stream; anything else also means "not usable that way".
                guard snd_ctl_pcm_info(ctl, pcmInfo) >= 0 else { continue }
                entry.directions.insert(direction)
                entry.id = String(cString: snd_pcm_info_get_id(pcmInfo))
                entry.name = String(cString: snd_pcm_info_get_name(pcmInfo))
            }
            card.pcms.append(entry)
        }
        return card
    }

    private static func readHints() throws(ALSAError) -> [ALSAPCMInfo] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        try alsaCheck(snd_device_name_hint(-1, "pcm", &hints), "snd_device_name_hint", device: "pcm")
        defer { snd_device_name_free_hint(hints) }
        var result: [ALSAPCMInfo] = []
        var cursor = hints
        while let hint = cursor?.pointee {
            func value(_ id: String) -> String? {
                guard let raw = snd_device_name_get_hint(hint, id) else { return nil }
                defer { free(raw) }
                return String(cString: raw)
            }
            if let name = value("NAME") {
                let directions: Set<AudioDirection> =
                    switch value("IOID") {
                    case "Input": [.capture]
                    case "Output": [.playout]
                    default: [.capture, .playout]
                    }
                result.append(ALSAPCMInfo(name: name, description: value("DESC") ?? "", directions: directions))
            }
            cursor = cursor! + 1
        }
        return result
    }
}
