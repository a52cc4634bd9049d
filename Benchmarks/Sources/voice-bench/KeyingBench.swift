#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import VoiceEngine
import VoiceWebRTC

/// How the calls of a `voice-bench live`/`keying` run get their SRTP keys.
enum CallKeying: String, CaseIterable, ExpressibleByArgument {
    /// Keys given to both ends, as SDES in the SDP does (AES_CM_128_HMAC_SHA1_80).
    case sdes
    /// As a client call over ICE and DTLS-SRTP: ICE checks on the media port (``ICEMediaPort``), then a DTLS-SRTP
    /// handshake there (``DTLSSRTPMediaPortHandshake``) whose exported keys (the suite it negotiates) key the call;
    /// consent checks and the DTLS hooks run for the whole call.
    case dtlsICE = "dtls-ice"
}

/// ICE and DTLS-SRTP between two call ends on loopback, in the order a client call runs them (`SIPCallMedia.start`):
/// A controlled and DTLS server, B controlling and DTLS client, each with its own certificate.
final class DTLSICEKeyedCall {
    let keysA: MediaStreamSRTP
    let keysB: MediaStreamSRTP
    private let ice: [ICEMediaPort]
    private let handshakes: [DTLSSRTPMediaPortHandshake]

    private init(
        keys: (MediaStreamSRTP, MediaStreamSRTP), ice: [ICEMediaPort], handshakes: [DTLSSRTPMediaPortHandshake]
    ) {
        (keysA, keysB) = keys
        self.ice = ice
        self.handshakes = handshakes
    }

    static func connect(_ a: UDPMediaTransport, _ b: UDPMediaTransport) async throws -> DTLSICEKeyedCall {
        let iceA = ICEMediaPort(transport: a, role: .controlled)
        let iceB = ICEMediaPort(transport: b, role: .controlling)
        async let selectedA = iceA.connect(to: iceB.sdp, timeout: .seconds(10))
        async let selectedB = iceB.connect(to: iceA.sdp, timeout: .seconds(10))
        let (pairA, pairB) = await (selectedA, selectedB)
        a.setRemote(try pairA.get())
        b.setRemote(try pairB.get())
        let certificateA = try DTLSCertificate(commonName: "voice-bench A")
        let certificateB = try DTLSCertificate(commonName: "voice-bench B")
        let handshakeA = try DTLSSRTPMediaPortHandshake(
            certificate: certificateA,
            negotiated: NegotiatedDTLS(remoteFingerprint: certificateB.fingerprint.sdpValue, isClient: false),
            transport: a)
        let handshakeB = try DTLSSRTPMediaPortHandshake(
            certificate: certificateB,
            negotiated: NegotiatedDTLS(remoteFingerprint: certificateA.fingerprint.sdpValue, isClient: true),
            transport: b)
        async let keyedA = handshakeA.run(timeout: .seconds(10))
        async let keyedB = handshakeB.run(timeout: .seconds(10))
        let (keysA, keysB) = await (keyedA, keyedB)
        return DTLSICEKeyedCall(
            keys: (try keysA.get().mediaStreamKeys, try keysB.get().mediaStreamKeys), ice: [iceA, iceB],
            handshakes: [handshakeA, handshakeB])
    }

    func stop() {
        for handshake in handshakes { handshake.stop() }
        for port in ice { port.stop() }
    }
}

/// `voice-bench keying`: the process CPU of N steady-state real-time calls keyed by SDES against the same calls
/// keyed as a client keys them over ICE and DTLS-SRTP, in one run, the two alternating (the order flipped every
/// pair). The same calls as `voice-bench live` (Opus 16 kHz 32 kb/s c5, looping WAV microphone, null speaker,
/// shared media threads, sockets read at the tick); the handshakes happen before the warm-up, so the window holds
/// what a call costs while it runs: SRTP in the suite each keying gives, consent checks, the DTLS hooks.
struct KeyingBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keying",
        abstract: "CPU per call-second of real-time calls keyed by ICE + DTLS-SRTP against SDES, side by side.",
        discussion: """
            JSON (--json, last line): {"suite":"keying","calls":…,"sdes_cpu_ms_per_call_s":…,\
            "dtls_ice_cpu_ms_per_call_s":…,"ratio":…,"ratio_ci95":[low, high] or null,"dtls_suite":…}. \
            See Benchmarks/README.md.
            """)

    @Option(help: "Simultaneous calls in this process.")
    var calls = 10

    @Option(help: "Seconds of established calls measured per run.")
    var seconds = 8.0

    @Option(help: "Seconds after the start before measuring.")
    var warmUp = 2.0

    @Option(
        help: """
            Pairs of runs (SDES and DTLS/ICE each once per pair); 6 or more give the ratio's 95 % CI (with 6 it spans             the smallest to the largest pair, with 12 the 3rd to the 10th).
            """)
    var repeats = 12

    @Option(help: "Microphone WAV (16 kHz mono), looped.")
    var speech = "TestVectors/speech_like_16k.wav"

    @Flag(help: "End with one JSON line.")
    var json = false

    /// The target for the DTLS/ICE call against the SDES one.
    static let target = 1.1

    func validate() throws {
        guard (1...500).contains(calls) else { throw ValidationError("--calls takes 1...500") }
        guard seconds.isFinite, (1...600).contains(seconds) else { throw ValidationError("--seconds takes 1...600") }
        guard warmUp.isFinite, (0.5...60).contains(warmUp) else { throw ValidationError("--warm-up takes 0.5...60") }
        guard (1...50).contains(repeats) else { throw ValidationError("--repeats takes 1...50") }
        guard FileManager.default.isReadableFile(atPath: speech) else {
            throw ValidationError("--speech \(speech): no such readable file")
        }
    }

    func run() throws {
        print(
            "voice-bench keying: \(calls) real-time calls in one process (two LiveCalls each, loopback UDP, Opus "
                + "16 kHz 32 kb/s c5, no voice processing), SDES against ICE + DTLS-SRTP; \(fixed(seconds, 0)) s "
                + "measured after \(fixed(warmUp, 0)) s, \(repeats) pairs")
        print(
            "Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(loadAverage()) at the start — CPU time, not wall time"
        )
        var runs: [CallKeying: [LiveRun]] = [:]
        for index in 0..<repeats {
            let order: [CallKeying] = index % 2 == 0 ? [.sdes, .dtlsICE] : [.dtlsICE, .sdes]
            for keying in order {
                let run = try EngineCalls.run(
                    calls: calls, speech: speech, seconds: seconds, warmUp: warmUp, processing: false,
                    cancelEcho: false, callOptions: LiveCallOptions(), receive: .consumerPolls, keying: keying)
                if let damage = run.damage {
                    throw LiveBenchFailure("\(keying.rawValue) run \(index + 1): \(damage)")
                }
                runs[keying, default: []].append(run)
                print(
                    "  pair \(index + 1) \(keying.rawValue): \(fixed(run.cpuMillisecondsPerCallSecond, 2)) ms/call-s, "
                        + "\(fixed(run.wakeupsPerCallSecond, 0)) wake-ups/call-s, load \(loadAverage())")
                fflush(nil)
            }
        }
        let sdes = runs[.sdes]!, dtls = runs[.dtlsICE]!
        let ratios = zip(dtls, sdes).map { $0.cpuMillisecondsPerCallSecond / $1.cpuMillisecondsPerCallSecond }
        let ratio = SideBySideRunner.median(ratios)
        let interval = SideBySideRunner.medianConfidenceInterval(ratios)
        let sdesCPU = SideBySideRunner.median(sdes.map(\.cpuMillisecondsPerCallSecond))
        let dtlsCPU = SideBySideRunner.median(dtls.map(\.cpuMillisecondsPerCallSecond))
        let suite = try Self.dtlsSuite()
        print("keying     CPU ms/call-s  wake-ups/call-s  SRTP suite")
        print(
            "sdes       \(fixed(sdesCPU, 2))          \(fixed(SideBySideRunner.median(sdes.map(\.wakeupsPerCallSecond)), 0))              AES_CM_128_HMAC_SHA1_80"
        )
        print(
            "dtls-ice   \(fixed(dtlsCPU, 2))          \(fixed(SideBySideRunner.median(dtls.map(\.wakeupsPerCallSecond)), 0))              \(suite)"
        )
        print(
            "DTLS/ICE ÷ SDES: \(fixed(ratio, 3))× (pairs \(fixed(ratios.min()!, 3))–\(fixed(ratios.max()!, 3))"
                + (interval.map { ", 95 % CI \(fixed($0.low, 3))–\(fixed($0.high, 3))" } ?? "") + ")")
        let verdict: String
        if let interval {
            verdict =
                interval.high <= Self.target
                ? "met" : interval.low > Self.target ? "not met" : "undecided (the CI spans the target)"
        } else {
            verdict = "too few pairs for a verdict (at least 6)"
        }
        print("Target DTLS/ICE ÷ SDES ≤ \(fixed(Self.target, 1)), judged on the CI's upper end: \(verdict)")
        if json {
            print(
                "{\"suite\":\"keying\",\"calls\":\(calls),\"sdes_cpu_ms_per_call_s\":\(fixed(sdesCPU, 3)),"
                    + "\"dtls_ice_cpu_ms_per_call_s\":\(fixed(dtlsCPU, 3)),\"ratio\":\(fixed(ratio, 3)),\"ratio_ci95\":"
                    + (interval.map { "[\(fixed($0.low, 3)),\(fixed($0.high, 3))]" } ?? "null")
                    + ",\"dtls_suite\":\"\(suite)\"}")
        }
    }

    /// The suite the DTLS-SRTP handshake negotiates between two engine ends (reported next to the figures).
    static func dtlsSuite() throws -> String {
        final class Outcome: @unchecked Sendable { var result: Result<String, Error>? }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let a = try await UDPMediaTransport.bind(
                    host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
                let b = try await UDPMediaTransport.bind(
                    host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
                let keyed = try await DTLSICEKeyedCall.connect(a, b)
                keyed.stop()
                await a.close()
                await b.close()
                outcome.result = .success(keyed.keysA.suite.rawValue)
            } catch {
                outcome.result = .failure(error)
            }
            done.signal()
        }
        done.wait()
        return try outcome.result!.get()
    }
}
