import Foundation
import VoiceEngine
import VoiceWebRTC

/// `voice-engine call --webrtc offer|answer`: a call between two engine processes over full ICE (RFC 8445: the
/// offerer controls), DTLS-SRTP and Opus, signalled by pasting SDP: the offering side prints its offer on
/// stdout and reads the answer from stdin; the answering side reads the offer and prints its answer. An SDP block
/// ends with an empty line. Status lines go to stderr, so stdout carries only SDP (pipes and scripts work).
///
/// Devices: `null` and `file:` (48 kHz mono WAV in, WAV out), run by the transport's 10 ms tick, or an ALSA PCM
/// name (`default`, `hw:0,0`, `plughw:1,0`) at 48 kHz mono, whose own thread moves periods through its ring while
/// the tick takes and gives 10 ms blocks (``ALSAMedia``). No echo canceller in this mode: use a headset.
enum WebRTCCallMode {
    struct Plan {
        var offering: Bool
        var host: String
        var microphone: String
        var speaker: String
        var loopMicrophone: Bool
        var duration: Double
        var connectTimeout: Double
        var turn: TURNServer?
    }

    /// "192.0.2.1:3478" or "[2001:db8::1]:3478" (numeric only: the candidates are numeric too).
    static func turnAddress(_ text: String) -> TransportAddress? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port != 0
        else {
            return nil
        }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return TransportAddress(host, port: port)
    }

    static func run(_ plan: Plan) throws {
        let mic: [Int16]?
        if plan.microphone == "null" {
            mic = nil
        } else if plan.microphone.hasPrefix("file:") {
            let wav: WAVFile
            do { wav = try WAVFile.read(path: String(plan.microphone.dropFirst(5))) } catch {
                throw CommandFailure.runtime("--mic \(plan.microphone): \(error)")
            }
            guard wav.format == .mono48k else {
                // Exit 64 without the usage line: the option is right, its file is not.
                throw CommandFailure(
                    "--mic \(plan.microphone): --webrtc takes a 48 kHz mono WAV (this one is \(wav.format))",
                    status: .usage, showsUsage: false)
            }
            mic = wav.int16Samples
        } else {
            mic = nil  // an ALSA microphone, opened below
        }
        // "all": a host candidate on every interface that is up (IPv4 and IPv6, loopback only when alone).
        var plan = plan
        if plan.host == "all" {
            let addresses = HostCandidates.addresses()
            plan.host = (addresses.isEmpty ? HostCandidates.addresses(includeLoopback: true) : addresses)
                .map(\.host).joined(separator: ",")
            say("webrtc: gathering on \(plan.host)")
        }
        let media = FileMedia(
            microphone: mic, loop: plan.loopMicrophone,
            seconds: plan.speaker.hasPrefix("file:") ? plan.duration : 0)
        // ALSA devices for what is neither null nor file: (each opened at 48 kHz mono and started now).
        var alsaMicrophone: ALSAMedia?, alsaSpeaker: ALSAMedia?
        do {
            if case .alsa(let name) = LiveDeviceName(plan.microphone) { alsaMicrophone = try ALSAMedia(name, .capture) }
            if case .alsa(let name) = LiveDeviceName(plan.speaker) { alsaSpeaker = try ALSAMedia(name, .playout) }
        } catch {
            alsaMicrophone?.close()
            throw CommandFailure.runtime("\(error)")
        }
        defer {
            alsaMicrophone?.close()
            alsaSpeaker?.close()
        }
        if alsaMicrophone != nil || alsaSpeaker != nil {
            say("webrtc: microphone \(plan.microphone), speaker \(plan.speaker), 48 kHz mono")
        }
        let capture: (inout AudioFrame) -> Void =
            alsaMicrophone.map { m in { m.take(into: &$0) } } ?? { media.take(into: &$0) }
        let recordsFile = plan.speaker.hasPrefix("file:")
        let playout: (AudioFrame) -> Void =
            alsaSpeaker.map { s in { s.put($0) } } ?? { if recordsFile { media.put($0) } }
        let call: WebRTCAudioCall
        do {
            let certificate = try DTLSCertificate()
            if plan.offering {
                call = try WebRTCAudioCall(
                    offeringWith: certificate, host: plan.host, fullICE: true,
                    turnServer: plan.turn, capture: capture, playout: playout)
                emit(call.localDescription, what: "offer")
                guard let answer = readSDP(what: "answer") else { throw CommandFailure.runtime("no answer on stdin") }
                try call.accept(answer: answer)
            } else {
                guard let offer = readSDP(what: "offer") else { throw CommandFailure.runtime("no offer on stdin") }
                call = try WebRTCAudioCall(
                    answering: offer, certificate: certificate, host: plan.host, fullICE: true,
                    turnServer: plan.turn, capture: capture, playout: playout)
                emit(call.localDescription, what: "answer")
                call.start()
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch let error as TURNError {
            throw CommandFailure.runtime("TURN server \(plan.turn.map { "\($0.address)" } ?? ""): \(error)")
        } catch {
            throw CommandFailure.dataError("\(error)")
        }
        let started = Date()
        while Date().timeIntervalSince(started) < plan.duration {
            Thread.sleep(forTimeInterval: 0.05)
            if call.failure != nil { break }
            if call.connectedAt == nil, Date().timeIntervalSince(started) > plan.connectTimeout { break }
        }
        call.stop()
        let statistics = call.statistics
        let ms = { (t: MediaTime?) in t.map { String(format: "%.0f ms", ($0 - call.startedAt).milliseconds) } ?? "never"
        }
        say(
            "webrtc: ICE \(call.agent.map { "\($0.state)" } ?? "lite"), pair \(call.agent?.selected.map { "\($0.local) → \($0.remote)" } ?? "none"); "
                + "DTLS-SRTP after \(ms(call.connectedAt)), first packet after \(ms(call.firstAudioAt)), "
                + "first decoded audio after \(ms(call.firstDecodedAt)) (from the \(plan.offering ? "offer" : "answer") being made); "
                + "packets sent \(statistics?.packetsSent ?? 0), received \(statistics?.packetsReceived ?? 0)")
        for (side, device) in [("microphone", alsaMicrophone), ("speaker", alsaSpeaker)] {
            if let device {
                say("webrtc: \(side) \(device.name): \(device.shortBlocks) short blocks, \(device.xruns) xruns")
            }
        }
        if plan.speaker.hasPrefix("file:") {
            do { try WAVFile.write(pcm16: media.played, format: .mono48k, to: String(plan.speaker.dropFirst(5))) } catch
            {
                throw CommandFailure.runtime("--speaker \(plan.speaker): \(error)")
            }
        }
        if let failure = call.failure { throw CommandFailure.runtime("\(failure)") }
        guard call.connectedAt != nil, (statistics?.packetsReceived ?? 0) > 0 else {
            if let agent = call.agent {
                for pair in agent.pairs { say("webrtc: pair \(pair.local) → \(pair.remote): \(pair.state)") }
                for c in agent.remoteCandidates { say("webrtc: remote \(c.sdpValue)") }
                say("webrtc: relayed \(call.turn?.relayedAddress.map { "\($0)" } ?? "-"), role \(agent.role)")
                say(
                    "webrtc: \(agent.checksSent) checks sent, \(agent.rejectedRequests) requests refused, "
                        + "received \(call.transport.map { "\($0.received)" } ?? "-")")
            }
            throw CommandFailure.runtime("no media from the peer (ICE \(call.agent.map { "\($0.state)" } ?? "?"))")
        }
    }

    /// Prints an SDP block on stdout, ended by an empty line.
    private static func emit(_ sdp: String, what: String) {
        say("webrtc: our \(what) follows on stdout (paste it into the other side, with the empty line that ends it)")
        print(sdp.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .newlines))
        print("")
        fflush(nil)
    }

    /// Reads an SDP block from stdin up to an empty line (or the end); CRLF line ends as SDP wants them.
    private static func readSDP(what: String) -> String? {
        say("webrtc: waiting for the peer's \(what) on stdin (end it with an empty line)")
        var lines: [String] = []
        while let line = readLine() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { if lines.isEmpty { continue } else { break } }
            lines.append(trimmed)
        }
        return lines.isEmpty ? nil : lines.joined(separator: "\r\n") + "\r\n"
    }
}

/// File devices for the transport's tick (one thread): the microphone's samples block by block, and what was
/// played, in storage reserved for the whole call.
private final class FileMedia: @unchecked Sendable {
    private let microphone: [Int16]?
    private let loop: Bool
    private var position = 0
    private(set) var played: [Int16] = []

    init(microphone: [Int16]?, loop: Bool, seconds: Double) {
        self.microphone = microphone
        self.loop = loop
        played.reserveCapacity(Int(seconds * 48_000) + 48_000)
    }

    func take(into frame: inout AudioFrame) {
        guard let microphone, !microphone.isEmpty else {
            frame.silence()
            return
        }
        frame.withUnsafeMutableSamples { out in
            for i in 0..<out.count {
                if position >= microphone.count, loop { position = 0 }
                out[i] = position < microphone.count ? microphone[position] : 0
                position += 1
            }
        }
    }

    func put(_ frame: AudioFrame) { frame.withUnsafeSamples { played.append(contentsOf: $0) } }
}

/// An ALSA microphone or speaker for the transport's tick (one thread): the device's own thread moves periods
/// through its ring; the tick reads or writes one 10 ms block. The microphone side starts reading once the ring
/// holds a device period plus a block (the device delivers whole periods, often 20 ms, while the tick takes 10 ms:
/// without that cushion every other tick would find the ring empty whenever the period came a little late), and
/// trims it back to that level when it grew by more than three blocks (the tick fell behind), so delay does not
/// build up. A microphone block the ring cannot fill after that is padded with silence, a speaker block the ring
/// cannot take is cut; both are counted (``shortBlocks``).
final class ALSAMedia: @unchecked Sendable {
    let name: String
    private let device: ALSADevice
    private(set) var shortBlocks = 0
    private var primed = false

    struct OpenError: Error, CustomStringConvertible {
        var description: String
    }

    init(_ name: String, _ direction: AudioDirection) throws {
        self.name = name
        let option = direction == .capture ? "--mic" : "--speaker"
        do {
            device = try ALSADevice(name: name, direction: direction, format: .mono48k)
        } catch {
            throw OpenError(description: "\(option) \(name): \(error)")
        }
        guard device.format == .mono48k else {
            device.close()
            throw OpenError(description: "\(option) \(name) settled on \(device.format); --webrtc needs 48 kHz mono")
        }
        do { try device.start() } catch {
            device.close()
            throw OpenError(description: "\(option) \(name): \(error)")
        }
    }

    var xruns: Int { device.statistics.xruns }

    func take(into frame: inout AudioFrame) {
        let block = frame.samplesPerChannel
        let cushion = device.periodFrames + block
        let waiting = device.ring.availableToRead
        if !primed {
            guard waiting >= cushion else {
                frame.silence()
                return
            }
            primed = true
        }
        if waiting > cushion + 3 * block { device.ring.discard(upTo: waiting - cushion) }
        let read = frame.withUnsafeMutableSamples { device.ring.read(into: $0) }
        if read < block {
            shortBlocks += 1
            frame.withUnsafeMutableSamples { UnsafeMutableBufferPointer(rebasing: $0[read...]).update(repeating: 0) }
        }
    }

    func put(_ frame: AudioFrame) {
        if frame.withUnsafeSamples({ device.ring.write($0) }) < frame.samplesPerChannel { shortBlocks += 1 }
    }

    func close() { device.close() }
}
