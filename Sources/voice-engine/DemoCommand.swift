import ArgumentParser
import Foundation
import Synchronization
import VoiceEngine
import VoiceLab

#if canImport(Glibc)
import Glibc
#endif

/// `voice-engine demo`: the main job — a two-party call over real loopback UDP with SRTP through a simulated
/// network, with reports.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a demo call: two endpoints over real loopback UDP with SRTP through a simulated network.",
        discussion: """
            A and B run in one process, each with its own UDP socket on 127.0.0.1 and its own media stream \
            (echo cancellation, noise suppression, Opus 32 kb/s in 20 ms packets, RTP/RTCP multiplexed, SRTP \
            AES_CM_128_HMAC_SHA1_80 with keys exchanged as a=crypto lines, adaptive jitter buffer). A says \
            TestVectors/speech_like_16k.wav, B says TestVectors/speech_like_16k_b.wav, taking turns of 2.5 s \
            (--turns, or --double-talk for both at once), and B's loudspeaker leaks into B's microphone (40 ms, -6 dB room), so B's echo canceller is at work. Every datagram goes over UDP; \
            a network simulator decides which ones the network loses and when each arrives.

            Network profiles (both directions, separate seeds; --loss and --jitter override the profile's figures):
            \(DemoNetworkProfile.all.map { "  " + $0.summary + ($0 == .wifi ? "  [default]" : "") }.joined(separator: "\n"))

            Runs in fast time (a 10 s call in a few seconds) unless --realtime. Writes to --out: a_received.wav \
            (what A heard), b_received.wav (what B heard), b_microphone.wav (B's speech plus echo), report.json \
            (both end-of-call reports, configuration, time line) and report.html (summary and charts), and prints a \
            summary table. SRTP keys are never printed or written.
            """)

    @Option(help: "Call length in seconds (default: the input length plus 0.5 s; inputs loop when longer).")
    var duration: Double?
    @Option(help: "Folder for the WAVs and reports.")
    var out: String = "demo-out"
    @Option(help: "Network profile: \(DemoNetworkProfile.all.map(\.name).joined(separator: ", ")).")
    var profile: String = "wifi"
    @Option(help: "Packet loss in percent (0...100), keeping the profile's burstiness.")
    var loss: Double?
    @Option(help: "Jitter in ms: extra one-way delay ~ normal(mean = sd = this), clipped at 0.")
    var jitter: Double?
    @Option(help: "Seed of the network simulators and the streams.")
    var seed: UInt64 = 1
    @Flag(help: "Run at wall-clock pace instead of fast time.")
    var realtime = false
    @Flag(help: "Send plain RTP instead of SRTP.")
    var noSRTP = false
    @Option(help: "Jitter buffer: adaptive or speexdsp.")
    var jitterBuffer: String = "adaptive"
    @Option(help: "Turn length in seconds: A and B take turns (A first), so B's echo canceller sees single talk.")
    var turns: Double = 2.5
    @Flag(help: "Both talk all the time (continuous double talk) instead of taking turns.")
    var doubleTalk = false
    @Option(help: "What A says (mono WAV, 8-48 kHz).")
    var inputA: String = DemoCall.defaultInputA
    @Option(help: "What B says (mono WAV, 8-48 kHz).")
    var inputB: String = DemoCall.defaultInputB
    @Option(
        help: ArgumentHelp(
            "Write every datagram as it arrives at A or B (SRTP as sent, simulated arrival times) into this pcapng "
                + "file, for Wireshark, rtp-dump and replay.", valueName: "file.pcapng"))
    var capture: String?

    /// The options the flags describe.
    /// - Throws: `ValidationError` naming the bad flag.
    func options() throws -> DemoCall.Options {
        guard var network = DemoNetworkProfile.named(profile) else {
            throw ValidationError(
                "--profile \(profile): use one of \(DemoNetworkProfile.all.map(\.name).joined(separator: ", "))")
        }
        if let loss {
            network.lossPercent = loss
            network.name = "custom"
        }
        if let jitter {
            network.jitterMilliseconds = jitter
            network.name = "custom"
        }
        if network.name == "custom" { network.name = "\(profile)+overrides" }
        let strategy: MediaStreamJitterBuffer
        switch jitterBuffer {
        case "adaptive": strategy = .adaptive()
        case "speexdsp": strategy = .speexdsp
        default: throw ValidationError("--jitter-buffer \(jitterBuffer): use adaptive or speexdsp")
        }
        let options = DemoCall.Options(
            inputA: inputA, inputB: inputB, durationSeconds: duration, outputDirectory: out, network: network,
            seed: seed, realtime: realtime, srtpSuite: noSRTP ? nil : .aesCM128HmacSHA1_80, jitterBuffer: strategy,
            turnSeconds: doubleTalk ? nil : turns, capturePath: capture)
        do { try options.validate() } catch { throw ValidationError(error.description) }
        return options
    }

    func validate() throws { _ = try options() }

    func run() throws {
        let options = try options()
        try OutputPaths.checkFolder(out, option: "--out")
        try OutputPaths.checkFile(capture, option: "--capture")
        let mode = options.realtime ? "real time" : "fast time"
        print(
            "VoiceEngine demo call: A ⇄ B over UDP 127.0.0.1, \(options.srtpSuite.map { "SRTP \($0.rawValue)" } ?? "plain RTP"), \(mode)"
        )
        print("network \(options.network.summary)")
        fflush(nil)  // stdout before progress or errors on stderr
        let bar = ProgressReporter()
        let outcome: DemoCall.Outcome
        do {
            outcome = try runBlocking { try await DemoCall.run(options) { bar.update($0) } }
        } catch let error as DemoError {
            bar.finish()
            if case .invalidOption = error { throw CommandFailure.usage(error.description) }
            throw CommandFailure.runtime("\(error)")
        }
        bar.finish()
        let r = outcome.report
        print(
            "\(String(format: "%.1f", r.configuration.durationSeconds)) s call in \(String(format: "%.2f", r.wallClockSeconds)) s (\(r.configuration.mode) mode), sockets \(r.configuration.endpointA) and \(r.configuration.endpointB)\n"
        )
        print(outcome.summaryTable)
        print("\nreports: \(outcome.files.html)")
        print("         \(outcome.files.json)")
        print("audio:   \(outcome.files.aReceived) (what A heard), \(outcome.files.bReceived) (what B heard),")
        print("         \(outcome.files.bMicrophone) (B's microphone with echo)")
        if let capture = outcome.files.capture { print("capture: \(capture) (as each side received it)") }
    }
}

/// A progress bar on stderr when it is a terminal, otherwise a line every 25 %.
private final class ProgressReporter: Sendable {
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let state = Mutex<(lastQuarter: Int, drawn: Bool)>((-1, false))

    func update(_ fraction: Double) {
        let f = min(1, max(0, fraction))
        if isTerminal {
            let width = 40
            let filled = Int(f * Double(width))
            let line =
                "\r[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
                + "] \(Int(f * 100)) %"
            FileHandle.standardError.write(Data(line.utf8))
            state.withLock { $0.drawn = true }
        } else {
            let quarter = Int(f * 4)
            let report = state.withLock { s -> Bool in
                guard quarter > s.lastQuarter else { return false }
                s.lastQuarter = quarter
                return true
            }
            if report { FileHandle.standardError.write(Data("progress: \(quarter * 25) %\n".utf8)) }
        }
    }

    func finish() {
        if state.withLock({ $0.drawn }) { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
