import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-bench aec --realistic DIR [--real DIR]`: the engine against WebRTC on realistic echo, per clip.
///
/// The realistic set is what `Benchmarks/scripts/aec-realistic.py` writes (real speech, image-source rooms,
/// loudspeaker nonlinearity, noise, far-end single talk, near-end single talk, double talk, a moving device; its
/// manifest lists each clip's seed and parameters); the real recordings are the AEC-Challenge files described in
/// ``RealisticAECClip/realRecordings(in:)``. Every clip is scored on the same blocks for both cancellers:
/// - ERLE over far-end single talk (the far end, delayed by the device delay the generator drew, within 35 dB of its
///   loudest block; the clean near end below -50 dBFS in the block and its neighbours), whole clip;
/// - ERLE over the same blocks in the first 2 s after the echo's onset (what a user hears first);
/// - after a device move, ERLE over the 2 s after it;
/// - PESQ-WB (P.862.2, `Benchmarks/scripts/pesq-wb.py`) of the output over the double talk and over near-end single
///   talk, against two references (and the microphone's own score against each): the near talker as it is in the
///   microphone without noise (the AEC-Challenge's target; the noise caps every score against it) and the
///   microphone without the echo, near talker plus noise (what a perfect echo canceller that leaves the noise
///   alone would output; in near-end single talk that is the microphone itself, so the score shows what the
///   processing changed, noise suppression included);
/// - near-end single talk after the far end has spoken (the `hand` clips: far end for 4 s, the near talker alone
///   from 4.3 s): PESQ-WB of the output against the same canceller's output when its microphone holds no echo (the
///   far end still fed): what the echo and its removal did to a lone near talker, noise suppression and AGC counted
///   identically on both sides (`nst°`);
/// - the background in far-end single talk (`bg 2s`, `bg later`): the median over blocks of the output's level
///   against the same canceller's output with a silent far end on the microphone without echo (the background as
///   the listener hears it when nobody speaks), dB, over the first 2 s of echo and from 4 s on; 0 = the background
///   kept, negative = it drops out (comfort noise too low), positive = residual echo above it;
/// - echo-only ERLE (`echo`), whole clip / first 2 s of echo, over the same far-end single-talk blocks: the echo in
///   the microphone (microphone minus the generator's near talker plus noise, sample by sample) against the residual
///   echo in the output, estimated per block as the output's energy minus the energy of the same canceller's output
///   with a silent far end on the microphone without echo (the background as heard with nobody speaking), floored at
///   zero. Unlike `ERLE` it does not count background the canceller removes, nor comfort noise it adds at the
///   background's level; blocks where the output lies under that background count as no residual echo.
struct RealisticAECClip {
    var name: String
    var group: String
    var parameters: String
    var far: URL
    var mic: URL
    /// The near talker as it is in the microphone, without echo and without noise (nil when none is known).
    var near: URL?
    /// The microphone without the echo: the near talker plus the background noise (nil when not known).
    var nearWithNoise: URL?
    /// Background SNR the generator drew (nil for recordings).
    var snr: Double?
    /// Samples from the far end to its echo (the generator's device delay; 0 for recordings).
    var echoDelay: Int
    /// Sample where the far end first speaks (nil: silent far end).
    var farOnset: Int?
    /// Double talk starts here (PESQ over the rest of the clip).
    var doubleTalkFrom: Int?
    /// The whole clip is near-end single talk: PESQ over all of it.
    var nearSingleTalk: Bool
    /// The near talker speaks alone from here, after the far end has played (PESQ over the rest of the clip).
    var nearAloneFrom: Int? = nil
    var moveAt: Int?
    /// Far-end single talk only before this sample (recordings without a clean near end).
    var singleTalkUntil: Int?
    /// The microphone stands in for the clean near end (a recording of near-end single talk).
    var nearIsMicrophone = false

    /// Clips of the generator's manifest.
    static func realistic(in folder: URL) throws -> [RealisticAECClip] {
        let data = try Data(contentsOf: folder.appendingPathComponent("manifest.json"))
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let clips = root["clips"] as? [[String: Any]]
        else { throw Failure(description: "\(folder.path)/manifest.json: no \"clips\" list") }
        return try clips.map { c in
            guard let name = c["name"] as? String, let group = c["group"] as? String, let far = c["far"] as? String,
                let mic = c["mic"] as? String, let near = c["near"] as? String,
                let delayMS = c["device_delay_ms"] as? Double
            else { throw Failure(description: "manifest.json: a clip without name/group/far/mic/near/device_delay_ms") }
            let t60 = c["t60_s"] as? Double ?? 0
            let ser = c["ser_db"] as? Double ?? 0
            let snr = c["snr_db"] as? Double ?? 0
            return RealisticAECClip(
                name: name, group: group,
                parameters: String(format: "T60 %.2f SER %+.0f SNR %.0f", t60, ser, snr),
                far: folder.appendingPathComponent(far), mic: folder.appendingPathComponent(mic),
                near: folder.appendingPathComponent(near),
                nearWithNoise: (c["near_with_noise"] as? String).map { folder.appendingPathComponent($0) },
                snr: c["snr_db"] as? Double, echoDelay: Int(delayMS * 16),
                farOnset: c["far_onset_sample"] as? Int, doubleTalkFrom: c["double_talk_from_sample"] as? Int,
                nearSingleTalk: group == "nst", nearAloneFrom: c["near_alone_from_sample"] as? Int,
                moveAt: c["move_at_sample"] as? Int)
        }
    }

    /// The AEC-Challenge recordings (folder layout of the project's shared test data; their README): the synthetic
    /// double-talk clip (microphone = echo + near end, written to `scratch`), a real device's near-end single talk
    /// (scored against its own microphone: it should pass untouched) and a real device's double talk (far-end
    /// single talk in its first 3.5 s, before the near talker enters; no clean near end).
    static func realRecordings(in folder: URL, scratch: URL) throws -> [RealisticAECClip] {
        func read(_ name: String) throws -> [Int16] {
            try WAVFile.read(path: folder.appendingPathComponent(name).path).int16Samples
        }
        // Far and microphone cut to the same whole number of blocks (the device pairs differ in length by a few
        // blocks), so every canceller gets the same samples.
        func trimmed(_ name: String, far: [Int16], mic: [Int16]) throws -> (far: URL, mic: URL) {
            let count = min(far.count, mic.count) / 160 * 160
            let urls = (
                scratch.appendingPathComponent("\(name)_far.wav"), scratch.appendingPathComponent("\(name)_mic.wav")
            )
            let format = AudioFormat(sampleRate: 16_000, channels: 1)
            try WAVFile.write(pcm16: Array(far[..<count]), format: format, to: urls.0.path)
            try WAVFile.write(pcm16: Array(mic[..<count]), format: format, to: urls.1.path)
            return urls
        }
        let near = try read("nearend_double_talk.wav")
        let mixed = zip(try read("echo_double_talk.wav"), near).map { Int16(clamping: Int($0) + Int($1)) }
        let challenge = try trimmed("real_challenge", far: try read("farend_double_talk.wav"), mic: mixed)
        let device1 = "DLhjtuwiEkS-68TsUVvW5g_nearend_singletalk"
        let device2 = "DMTgmZwtgUilp4omPK7-OQ_doubletalk"
        let pair1 = try trimmed(
            "real_device1", far: try read("\(device1)_lpb.wav"), mic: try read("\(device1)_mic.wav"))
        let pair2 = try trimmed(
            "real_device2", far: try read("\(device2)_lpb.wav"), mic: try read("\(device2)_mic.wav"))
        return [
            RealisticAECClip(
                name: "challenge_double_talk", group: "real", parameters: "AEC-Challenge synthetic",
                far: challenge.far, mic: challenge.mic,
                near: folder.appendingPathComponent("nearend_double_talk.wav"),
                nearWithNoise: folder.appendingPathComponent("nearend_double_talk.wav"), echoDelay: 0, farOnset: 0,
                doubleTalkFrom: 0, nearSingleTalk: false),
            RealisticAECClip(
                name: "device_near_single_talk", group: "real", parameters: "real device",
                far: pair1.far, mic: pair1.mic, near: pair1.mic, nearWithNoise: pair1.mic, echoDelay: 0, farOnset: nil,
                nearSingleTalk: true, nearIsMicrophone: true),
            RealisticAECClip(
                name: "device_double_talk", group: "real", parameters: "real device",
                far: pair2.far, mic: pair2.mic, near: nil, echoDelay: 0, farOnset: 8_000,
                nearSingleTalk: false, singleTalkUntil: 56_000)
        ]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }
}

/// Scores of one canceller on one clip (nil: the clip has no such part, or the measure failed).
struct RealisticAECScores {
    var erle: Double?
    var erleFirst2s: Double?
    var erleAfterMove: Double?
    /// Against the near talker without noise.
    var pesqDoubleTalk: Double?
    var pesqNearSingleTalk: Double?
    /// Against the microphone without the echo (near talker plus noise).
    var pesqDoubleTalkWithNoise: Double?
    var pesqNearSingleTalkWithNoise: Double?
    /// Near-end single talk after the far end, against the same canceller's output without echo.
    var pesqNearAloneOwn: Double?
    /// Background level in far-end single talk against the canceller's own background, dB (first 2 s, from 4 s).
    var backgroundFirst2s: Double?
    var backgroundLater: Double?
    /// Echo-only ERLE, whole clip and first 2 s of echo (see the type's documentation).
    var echoERLE: Double?
    var echoERLEFirst2s: Double?
}

enum RealisticAECScoring {
    /// Far-end single-talk blocks of `clip`: far end (shifted by the echo delay) active, clean near end silent.
    static func singleTalkBlocks(clip: RealisticAECClip, far: [Int16], near: [Int16]?, count: Int) -> [Bool] {
        let n = 160
        var meanSquare = [Double](repeating: 0, count: count)
        for b in 0..<count {
            var sum = 0.0
            for i in b * n..<(b + 1) * n {
                let k = i - clip.echoDelay
                if k >= 0 && k < far.count { sum += Double(far[k]) * Double(far[k]) }
            }
            meanSquare[b] = sum / Double(n)
        }
        var mask = AECRunner.singleTalkBlocks(
            referenceMeanSquare: meanSquare, near: clip.nearIsMicrophone ? nil : near, blockSize: n)
        // A silent far end (a loopback at its noise floor) has no single talk to measure.
        if clip.farOnset == nil { return mask.map { _ in false } }
        if let until = clip.singleTalkUntil {
            for b in mask.indices where (b + 1) * n > until { mask[b] = false }
        }
        return mask
    }

    /// ERLE figures of `output` (aligned with `mic`) on `mask`.
    static func erle(clip: RealisticAECClip, mic: [Int16], output: [Int16], mask: [Bool]) -> RealisticAECScores {
        var scores = RealisticAECScores()
        scores.erle = AECRunner.erle(mic: mic, output: output, blocks: mask, blockSize: 160)
        if let onset = clip.farOnset {
            let first = (onset + clip.echoDelay) / 160
            scores.erleFirst2s = AECRunner.erle(
                mic: mic, output: output, blocks: mask, blockSize: 160, fromBlock: first, toBlock: first + 200)
        }
        if let move = clip.moveAt {
            scores.erleAfterMove = AECRunner.erle(
                mic: mic, output: output, blocks: mask, blockSize: 160, fromBlock: move / 160, toBlock: move / 160 + 200
            )
        }
        return scores
    }

    /// PESQ-WB of `output` against both near-end references over the clip's double talk or near-end single talk.
    static func pesq(clip: RealisticAECClip, output: [Int16], scratch: URL, into scores: inout RealisticAECScores) {
        guard clip.near != nil || clip.nearWithNoise != nil else { return }
        let degraded = scratch.appendingPathComponent("voice-bench-realistic-\(getpid()).wav")
        defer { try? FileManager.default.removeItem(at: degraded) }
        guard
            (try? WAVFile.write(pcm16: output, format: AudioFormat(sampleRate: 16_000, channels: 1), to: degraded.path))
                != nil
        else { return }
        func score(_ reference: URL?, from start: Int) -> Double? {
            reference.flatMap {
                PESQWideband.score(reference: $0, degraded: degraded, startSeconds: Double(start) / 16_000)
            }
        }
        if let from = clip.doubleTalkFrom {
            scores.pesqDoubleTalk = score(clip.near, from: from)
            scores.pesqDoubleTalkWithNoise = score(clip.nearWithNoise, from: from)
        }
        if clip.nearSingleTalk {
            scores.pesqNearSingleTalk = score(clip.near, from: 0)
            scores.pesqNearSingleTalkWithNoise = score(clip.nearWithNoise, from: 0)
        }
        if let from = clip.nearAloneFrom {
            scores.pesqNearSingleTalk = score(clip.near, from: from)
            scores.pesqNearSingleTalkWithNoise = score(clip.nearWithNoise, from: from)
        }
    }

    /// PESQ-WB of `output` against `reference` (the same canceller without echo) from sample `from`.
    static func pesq(output: [Int16], reference: [Int16], from: Int, scratch: URL) -> Double? {
        let format = AudioFormat(sampleRate: 16_000, channels: 1)
        let files = (
            scratch.appendingPathComponent("voice-bench-own-ref-\(getpid()).wav"),
            scratch.appendingPathComponent("voice-bench-own-out-\(getpid()).wav")
        )
        defer { for f in [files.0, files.1] { try? FileManager.default.removeItem(at: f) } }
        guard (try? WAVFile.write(pcm16: reference, format: format, to: files.0.path)) != nil,
            (try? WAVFile.write(pcm16: output, format: format, to: files.1.path)) != nil
        else { return nil }
        return PESQWideband.score(reference: files.0, degraded: files.1, startSeconds: Double(from) / 16_000)
    }

    /// `backgroundFirst2s`, `backgroundLater` and the echo-only ERLE of `output` against `background` (the same
    /// canceller, silent far end, on the microphone without echo); `echo`: the microphone minus that.
    static func background(
        clip: RealisticAECClip, echo: [Int16], output: [Int16], background: [Int16], mask: [Bool],
        into scores: inout RealisticAECScores
    ) {
        guard let onset = clip.farOnset else { return }
        let first = (onset + clip.echoDelay) / 160
        scores.backgroundFirst2s = AECRunner.backgroundLevel(
            output: output, background: background, mask: mask, from: first, to: first + 200)
        scores.backgroundLater = AECRunner.backgroundLevel(
            output: output, background: background, mask: mask, from: 400, to: mask.count)
        func echoERLE(from: Int, to: Int) -> Double? {
            AECRunner.echoOnlyERLE(echo: echo, output: output, background: background, mask: mask, from: from, to: to)
        }
        scores.echoERLE = echoERLE(from: 0, to: mask.count)
        scores.echoERLEFirst2s = echoERLE(from: first, to: first + 200)
    }
}

/// PESQ-WB through `Benchmarks/scripts/pesq-wb.py` (PyPI's `pesq`); nil with ``unavailableReason`` when it cannot run.
enum PESQWideband {
    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/pesq-wb.py")
    }

    nonisolated(unsafe) static var unavailableReason: String?

    static func score(reference: URL, degraded: URL, startSeconds: Double) -> Double? {
        guard unavailableReason == nil else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, reference.path, degraded.path, "--start", String(startSeconds)]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            unavailableReason = "python3 not runnable: \(error)"
            return nil
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus == 3 { unavailableReason = "pesq or scipy not installed (pip install pesq)" }
        guard process.terminationStatus == 0 else { return nil }
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

extension AECBench {
    /// Runs the realistic set and/or the real recordings: one row per clip, then the mean of every figure per
    /// group, engine (e) against WebRTC with moderate noise suppression (w); PESQ's `in` is the microphone's own.
    func runRealistic(realistic: String?, real: String?) throws {
        let scratch = FileManager.default.temporaryDirectory
        var engineConfiguration = EchoCancellerConfiguration()
        if let floor = suppressorFloor {
            guard floor == "off" || Double(floor) != nil else {
                throw ValidationError("--suppressor-floor: \(floor); a number of dB or 'off'")
            }
            engineConfiguration.residualEchoSuppressorFloorDB = Double(floor)
        }
        if !noiseSuppression { engineConfiguration.preprocessor.noiseSuppressionDB = nil }
        var clips: [RealisticAECClip] = []
        if let realistic { clips += try RealisticAECClip.realistic(in: URL(fileURLWithPath: realistic)) }
        if let real { clips += try RealisticAECClip.realRecordings(in: URL(fileURLWithPath: real), scratch: scratch) }
        if let filter { clips = clips.filter { $0.name.contains(filter) } }
        if !pesq { PESQWideband.unavailableReason = "not requested (--no-pesq)" }
        let webrtcSkipped = webrtc ? WebRTCEchoReference.unavailableReason : "not requested (--no-webrtc)"
        if let webrtcSkipped { print("note: WebRTC figures are null: \(webrtcSkipped)") }
        print(
            "voice-bench aec realistic: ERLE (dB) over far-end single talk, whole clip / first 2 s of echo / 2 s "
                + "after a device move; PESQ-WB (dt: double talk, nst: near-end single talk; in: the microphone's own) "
                + "against the near talker without noise (dt, nst) and against the microphone without echo, near talker "
                + "plus noise (dt+n, nst+n); nst°: a lone near talker after the far end (hand clips) against the same "
                + "canceller's output without echo; bg: far-end single talk's background against the canceller's own "
                + "with no far end, dB (first 2 s of echo, from 4 s); echo: echo-only ERLE, the output's energy minus that "
                + "background as residual echo (whole / first 2 s); e engine, w WebRTC (moderate NS)")
        let header = [
            "clip", "parameters", "ERLE e/w", "2s e/w", "move e/w", "dt e/w/in", "nst e/w/in",
            "dt+n e/w/in", "nst+n e/w/in", "µs e/raw", "nst° e/w", "bg 2s e/w", "bg later e/w", "echo e/w",
            "echo 2s e/w"
        ]
        let widths = [24, 22, 12, 12, 12, 17, 17, 17, 17, 10, 11, 13, 13, 12, 12]
        print(zip(header, widths).map { pad($0, $1) }.joined())
        var groups: [String: [[Double?]]] = [:]
        var bands: [String: [[Double?]]] = [:]
        var order: [String] = []
        var rows: [String] = []
        for clip in clips {
            let far = try WAVFile.read(path: clip.far.path).int16Samples
            let mic = try WAVFile.read(path: clip.mic.path).int16Samples
            let near = try clip.near.map { try WAVFile.read(path: $0.path).int16Samples }
            let count = min(far.count, mic.count)
            let engine = try AECRunner.runEngine(
                far: Array(far[..<count]), mic: Array(mic[..<count]), configuration: engineConfiguration)
            let raw = try AECRunner.runRawMDF(
                far: Array(far[..<count]), mic: Array(mic[..<count]), sampleRate: 16_000,
                tailMilliseconds: AECBenchmark.rawTailMilliseconds)
            let mask = RealisticAECScoring.singleTalkBlocks(clip: clip, far: far, near: near, count: count / 160)
            var e = RealisticAECScoring.erle(clip: clip, mic: mic, output: engine.output, mask: mask)
            RealisticAECScoring.pesq(clip: clip, output: engine.output, scratch: scratch, into: &e)
            // The same canceller on the microphone without echo: with the far end fed (the reference for a lone near
            // talker after the far end) and with a silent far end (the background when nobody speaks).
            let nearWithNoise = try clip.nearWithNoise.map {
                Array(try WAVFile.read(path: $0.path).int16Samples.prefix(count))
            }
            // The echo alone, as the microphone held it (the echo-only ERLE of both cancellers).
            let echo = nearWithNoise.map { near in zip(mic, near).map { Int16(clamping: Int($0) - Int($1)) } }
            let silentFar = scratch.appendingPathComponent("voice-bench-silent-far-\(getpid()).wav")
            defer { try? FileManager.default.removeItem(at: silentFar) }
            if let nearWithNoise, let echo, nearWithNoise.count == count, clip.farOnset != nil {
                if let from = clip.nearAloneFrom {
                    let own = try AECRunner.runEngine(
                        far: Array(far[..<count]), mic: nearWithNoise, configuration: engineConfiguration)
                    e.pesqNearAloneOwn = RealisticAECScoring.pesq(
                        output: engine.output, reference: own.output, from: from, scratch: scratch)
                }
                let quiet = try AECRunner.runEngine(
                    far: [Int16](repeating: 0, count: count), mic: nearWithNoise, configuration: engineConfiguration)
                RealisticAECScoring.background(
                    clip: clip, echo: echo, output: engine.output, background: quiet.output, mask: mask, into: &e)
                try WAVFile.write(
                    pcm16: [Int16](repeating: 0, count: count), format: AudioFormat(sampleRate: 16_000, channels: 1),
                    to: silentFar.path)
            }
            var w = RealisticAECScores()
            if webrtcSkipped == nil {
                let outcome = WebRTCEchoReference.process(
                    far: clip.far, mic: clip.mic, micSamples: Array(mic[..<count]), sampleRate: 16_000,
                    configuration: WebRTCEchoReference.withNoiseSuppression)
                if let output = outcome.output {
                    w = RealisticAECScoring.erle(clip: clip, mic: mic, output: output, mask: mask)
                    RealisticAECScoring.pesq(clip: clip, output: output, scratch: scratch, into: &w)
                    if let nearWithNoise, let echo, nearWithNoise.count == count, clip.farOnset != nil,
                        let noisyURL = clip.nearWithNoise
                    {
                        if let from = clip.nearAloneFrom,
                            let own = WebRTCEchoReference.process(
                                far: clip.far, mic: noisyURL, micSamples: nearWithNoise, sampleRate: 16_000,
                                configuration: WebRTCEchoReference.withNoiseSuppression
                            ).output
                        {
                            w.pesqNearAloneOwn = RealisticAECScoring.pesq(
                                output: output, reference: own, from: from, scratch: scratch)
                        }
                        if let quiet = WebRTCEchoReference.process(
                            far: silentFar, mic: noisyURL, micSamples: nearWithNoise, sampleRate: 16_000,
                            configuration: WebRTCEchoReference.withNoiseSuppression
                        ).output {
                            RealisticAECScoring.background(
                                clip: clip, echo: echo, output: output, background: quiet, mask: mask, into: &w)
                        }
                    }
                } else if let failure = outcome.failure {
                    print("note: \(clip.name) webrtc: \(failure)")
                }
            }
            var input = RealisticAECScores()
            if !clip.nearIsMicrophone {
                RealisticAECScoring.pesq(clip: clip, output: Array(mic[..<count]), scratch: scratch, into: &input)
            }
            let figures: [Double?] = [
                e.erle, w.erle, e.erleFirst2s, w.erleFirst2s, e.erleAfterMove, w.erleAfterMove, e.pesqDoubleTalk,
                w.pesqDoubleTalk, input.pesqDoubleTalk, e.pesqNearSingleTalk, w.pesqNearSingleTalk,
                input.pesqNearSingleTalk, e.pesqDoubleTalkWithNoise, w.pesqDoubleTalkWithNoise,
                input.pesqDoubleTalkWithNoise, e.pesqNearSingleTalkWithNoise, w.pesqNearSingleTalkWithNoise,
                input.pesqNearSingleTalkWithNoise, engine.microsecondsPerBlock, raw.microsecondsPerBlock,
                e.pesqNearAloneOwn, w.pesqNearAloneOwn, e.backgroundFirst2s, w.backgroundFirst2s, e.backgroundLater,
                w.backgroundLater, e.echoERLE, w.echoERLE, e.echoERLEFirst2s, w.echoERLEFirst2s
            ]
            if groups[clip.group] == nil { order.append(clip.group) }
            groups[clip.group, default: []].append(figures)
            if let snr = clip.snr, clip.doubleTalkFrom != nil || clip.nearSingleTalk || clip.nearAloneFrom != nil {
                bands[Self.snrBand(group: clip.group, snr: snr), default: []].append(figures)
            }
            print(line(clip.name, clip.parameters, figures, widths))
            fflush(nil)
            rows.append(
                "{\"name\":\(quoted(clip.name)),\"group\":\(quoted(clip.group)),"
                    + "\"erle_db\":{\"engine\":\(j(e.erle)),\"webrtc\":\(j(w.erle))},"
                    + "\"erle_first_2s_db\":{\"engine\":\(j(e.erleFirst2s)),\"webrtc\":\(j(w.erleFirst2s))},"
                    + "\"erle_after_move_db\":{\"engine\":\(j(e.erleAfterMove)),\"webrtc\":\(j(w.erleAfterMove))},"
                    + "\"pesq_wb_double_talk\":{\"engine\":\(j(e.pesqDoubleTalk)),\"webrtc\":\(j(w.pesqDoubleTalk)),"
                    + "\"microphone\":\(j(input.pesqDoubleTalk))},"
                    + "\"pesq_wb_near_single_talk\":{\"engine\":\(j(e.pesqNearSingleTalk)),"
                    + "\"webrtc\":\(j(w.pesqNearSingleTalk)),\"microphone\":\(j(input.pesqNearSingleTalk))},"
                    + "\"pesq_wb_double_talk_with_noise\":{\"engine\":\(j(e.pesqDoubleTalkWithNoise)),"
                    + "\"webrtc\":\(j(w.pesqDoubleTalkWithNoise)),\"microphone\":\(j(input.pesqDoubleTalkWithNoise))},"
                    + "\"pesq_wb_near_single_talk_with_noise\":{\"engine\":\(j(e.pesqNearSingleTalkWithNoise)),"
                    + "\"webrtc\":\(j(w.pesqNearSingleTalkWithNoise)),"
                    + "\"microphone\":\(j(input.pesqNearSingleTalkWithNoise))},"
                    + "\"pesq_wb_near_alone_vs_own_output_without_echo\":{\"engine\":\(j(e.pesqNearAloneOwn)),"
                    + "\"webrtc\":\(j(w.pesqNearAloneOwn))},"
                    + "\"background_first_2s_db\":{\"engine\":\(j(e.backgroundFirst2s)),\"webrtc\":\(j(w.backgroundFirst2s))},"
                    + "\"background_from_4s_db\":{\"engine\":\(j(e.backgroundLater)),\"webrtc\":\(j(w.backgroundLater))},"
                    + "\"echo_only_erle_db\":{\"engine\":\(j(e.echoERLE)),\"webrtc\":\(j(w.echoERLE))},"
                    + "\"echo_only_erle_first_2s_db\":{\"engine\":\(j(e.echoERLEFirst2s)),\"webrtc\":\(j(w.echoERLEFirst2s))},"
                    + "\"us_per_10ms\":{\"engine\":\(j(engine.microsecondsPerBlock)),"
                    + "\"speex_raw\":\(j(raw.microsecondsPerBlock))}}")
        }
        if let reason = PESQWideband.unavailableReason { print("note: PESQ figures are null: \(reason)") }
        print("means per group (clips with the figure):")
        var all: [[Double?]] = []
        for group in order {
            let members = groups[group] ?? []
            if group != "real" { all += members }
            print(line("mean \(group)", "\(members.count) clips", Self.means(members), widths))
        }
        if !all.isEmpty { print(line("mean generated", "\(all.count) clips", Self.means(all), widths)) }
        if !bands.isEmpty { print("means per background SNR band (generated double talk and near-end single talk):") }
        for band in bands.keys.sorted() {
            let members = bands[band] ?? []
            print(line("mean \(band)", "\(members.count) clips", Self.means(members), widths))
        }
        if json { print("{\"suite\":\"aec-realistic\",\"clips\":[\(rows.joined(separator: ","))]}") }
    }

    /// "nst SNR 30-40" for a clip of group nst drawn at 30...40 dB.
    static func snrBand(group: String, snr: Double) -> String {
        let low = min(30, max(0, Int(snr / 10) * 10))
        return "\(group) SNR \(low)-\(low + 10)"
    }

    /// Column-wise mean of the non-nil figures.
    static func means(_ rows: [[Double?]]) -> [Double?] {
        guard let width = rows.first?.count else { return [] }
        return (0..<width).map { k in
            let values = rows.compactMap { $0[k] }
            return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
        }
    }

    private func line(_ name: String, _ parameters: String, _ v: [Double?], _ widths: [Int]) -> String {
        pad(name, widths[0]) + pad(parameters, widths[1])
            + pad("\(f(v[0]))/\(f(v[1]))", widths[2]) + pad("\(f(v[2]))/\(f(v[3]))", widths[3])
            + pad("\(f(v[4]))/\(f(v[5]))", widths[4])
            + pad("\(f(v[6], 2))/\(f(v[7], 2))/\(f(v[8], 2))", widths[5])
            + pad("\(f(v[9], 2))/\(f(v[10], 2))/\(f(v[11], 2))", widths[6])
            + pad("\(f(v[12], 2))/\(f(v[13], 2))/\(f(v[14], 2))", widths[7])
            + pad("\(f(v[15], 2))/\(f(v[16], 2))/\(f(v[17], 2))", widths[8])
            + pad("\(f(v[18], 0))/\(f(v[19], 0))", widths[9])
            + pad("\(f(v[20], 2))/\(f(v[21], 2))", widths[10]) + pad("\(f(v[22]))/\(f(v[23]))", widths[11])
            + pad("\(f(v[24]))/\(f(v[25]))", widths[12]) + pad("\(f(v[26]))/\(f(v[27]))", widths[13])
            + pad("\(f(v[28]))/\(f(v[29]))", widths[14])
    }
}
