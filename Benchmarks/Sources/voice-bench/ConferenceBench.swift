#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import BenchmarkFixtures
import CBaseline
import Foundation
import VoiceConference
import VoiceEngine
import VoiceLab
import VoiceNetSim

/// `voice-bench conference`: the conference mixer's capacity and quality.
///
/// Capacity: rooms of 3, 10 and 50 participants, 3 talking (real speech), the rest silent with Opus DTX, Opus
/// 16 kHz, SRTP on every leg. The same pre-generated uplink datagrams go through the Swift `ConferenceRoom` and
/// through `cbaseline_conference.c` (the same libsrtp/libopus calls and mixing rules, no jitter buffer), in
/// alternating rounds on this thread; CPU time per 20 ms tick (CLOCK_THREAD_CPUTIME_ID), the ratio, participants
/// per core (participants × 20 ms ÷ CPU per tick), and the library calls per tick on both sides against the cost
/// model: decodes ≈ talkers (+ a DTX update now and then), encodes = talkers + 1 shared, protects = participants.
///
/// Quality: a 5-participant room, 3 talkers, every leg through VoiceNetSim (loss and jitter); each participant's
/// received mix scored with PESQ-WB against the ideal mix (the other talkers' clean speech summed), and the
/// mixer's clipped-sample count.
struct ConferenceBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conference",
        abstract: "Conference mixer: participants per core (Swift room vs a plain C loop) and PESQ-WB of the mixes.",
        discussion: "Needs real speech (../shared/testdata/speech, or --testdata); skips with a message without it.")

    @Option(help: "Room sizes (participants), comma-separated.")
    var sizes = "3,10,50"

    @Option(help: "Talkers per room (real speech); the others are silent with DTX.")
    var talkers = 3

    @Option(help: "Seconds of media per round.")
    var seconds = 10.0

    @Option(help: "Rounds per side (alternating Swift and C; the paired ratio's 95 % interval needs at least 6).")
    var rounds = 31

    @Option(help: "Shared test data folder holding speech/*.wav (default: ../shared/testdata next to the repository).")
    var testdata: String?

    @Option(help: "Seconds of the quality run; 0 skips it.")
    var qualitySeconds = 20.0

    @Option(help: "Loss (%) on every leg of the quality run.")
    var lossPercent = 5.0

    @Option(
        help:
            "Jitter (ms): normal extra delay with this mean and standard deviation (clipped at 0) on every leg of the quality run."
    )
    var jitterMilliseconds = 20.0

    @Flag(
        inversion: .prefixedNo,
        help: "In-band FEC on every encoder of the quality run (clients, talkers, shared), as the server negotiates it."
    )
    var qualityFec = true

    @Flag(
        inversion: .prefixedNo,
        help:
            "Talk spurts after dormancy resume at the jitter buffer's target delay (ConferenceRoomConfiguration.restartsTalkSpurtsAtTargetDelay)."
    )
    var qualityTargetRestart = true

    @Option(help: "Directions the quality run's loss and jitter apply to: both, up (to the room) or down (from it).")
    var qualityImpaired = "both"

    @Flag(help: "End with one JSON line.")
    var json = false

    @Flag(
        inversion: .prefixedNo,
        help:
            "Both sides send RTCP (SR/RR + SDES, SRTCP-protected, RFC 3550 schedule); --no-rtcp compares the mixing alone."
    )
    var rtcp = true

    @Option(
        help:
            "Profiling: build the workload of the first --sizes once, then run only the timed room ticks (a fresh room per round, as in the measurement) for this many seconds of this thread's CPU, print the time per tick and exit (no table, no quality run); for `perf record`."
    )
    var profileRoom = 0.0

    @Option(help: "Which room --profile-room runs: swift (ConferenceRoom) or c (cbaseline_conference.c).")
    var profileSide = "swift"

    @Option(
        help:
            "With --profile-room: a perf control FIFO (`perf record -D -1 --control fifo:PATH`); \"enable\" is written to it when the room loop starts and \"disable\" when it ends, so the profile holds the room's ticks only."
    )
    var profileControl: String?

    @Option(
        help:
            "Seconds (real time, 2 s of it warm-up) Janus AudioBridge runs each room size with plain-RTP participants, side by side with the Swift room on the same plain-RTP datagrams; 0 skips it."
    )
    var janusSeconds = 0.0

    func validate() throws {
        try requireOption("--talkers", Double(talkers), within: 1...16, "")
        try requireOption("--seconds", seconds, within: 1...600, "s")
        try requireOption("--rounds", Double(rounds), within: 1...1_000, "")
        try requireOption("--quality-seconds", qualitySeconds, within: 0...600, "s")
        try requireOption("--loss-percent", lossPercent, within: 0...50, "%")
        try requireOption("--jitter-milliseconds", jitterMilliseconds, within: 0...500, "ms")
        try requireOption("--janus-seconds", janusSeconds, within: 0...600, "s")
        try requireOption("--profile-room", profileRoom, within: 0...3_600, "s")
        guard profileSide == "swift" || profileSide == "c" else {
            throw ValidationError("--profile-side: swift or c (got \(profileSide))")
        }
        guard ConferenceSimulation.Directions(rawValue: qualityImpaired) != nil else {
            throw ValidationError("--quality-impaired: both, up or down (got \(qualityImpaired))")
        }
        if let path = profileControl { try Self.checkControlFIFO(path, profileRoom: profileRoom) }
    }

    /// `--profile-control` must name a FIFO that a reader (perf) already has open, or the profile would silently
    /// run uncontrolled: perf opens its control FIFO before it starts the command, so a non-blocking open for
    /// writing succeeds then and fails with ENXIO without it.
    static func checkControlFIFO(_ path: String, profileRoom: Double) throws {
        guard profileRoom > 0 else { throw ValidationError("--profile-control: only with --profile-room") }
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw ValidationError("--profile-control: \(path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFIFO else {
            throw ValidationError(
                "--profile-control: \(path) is not a FIFO (mkfifo it and give it to perf record --control fifo:\(path))"
            )
        }
        let fd = open(path, O_WRONLY | O_NONBLOCK)
        guard fd >= 0 else {
            let reason =
                errno == ENXIO
                ? "nobody reads it (run the bench under perf record -D -1 --control fifo:\(path))"
                : String(cString: strerror(errno))
            throw ValidationError("--profile-control: cannot write to \(path): \(reason)")
        }
        close(fd)
    }

    mutating func run() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let folders =
            testdata.map { [$0 + "/speech"] }
            ?? [
                repository.deletingLastPathComponent().appendingPathComponent("shared/testdata/speech").path,
                "../shared/testdata/speech"
            ]
        guard let speech = folders.lazy.compactMap({ ConferenceWorkload.speech(in: $0) }).first else {
            print(
                "voice-bench conference: skipped: no real speech under \(folders.joined(separator: " or ")) (--testdata)"
            )
            return
        }
        let roomSizes = sizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !roomSizes.isEmpty, roomSizes.allSatisfy({ (1...500).contains($0) }) else {
            throw ValidationError("--sizes: comma-separated room sizes within 1...500")
        }
        if profileRoom > 0 {
            try profile(speech: speech, participants: roomSizes[0])
            return
        }
        print(
            "voice-bench conference: Swift ConferenceRoom vs plain C loop (same libsrtp/libopus calls), \(talkers) talkers"
                + " (real speech), the rest silent with DTX, Opus 16 kHz 24 kb/s c5, SRTP; CPU per 20 ms tick, median of"
                + " \(rounds) alternating rounds of \(fixed(seconds, 0)) s"
                + (rtcp ? "; RTCP on both sides" : "; no RTCP on either side"))
        print(
            column("room", 6) + column("Swift µs/tick", 15, right: true) + column("C µs/tick", 12, right: true)
                + column("ratio", 8, right: true) + column("paired", 8, right: true)
                + column("paired 95 % CI", 16, right: true)
                + column("min ratio", 10, right: true) + column("part./core", 12, right: true)
                + column("C part./core", 14, right: true))
        fflush(nil)
        var rows: [String] = []
        var costLines: [String] = []
        var verdicts: [(participants: Int, upper: Double?)] = []
        for n in roomSizes {
            let t = min(talkers, n)
            let ticks = Int(seconds * 50)
            let workload = try ConferenceWorkload(participants: n, talkers: t, ticks: ticks, speech: speech)
            var swiftTimes: [Double] = []
            var cTimes: [Double] = []
            var ratios: [Double] = []
            var swiftStats: ConferenceRoomStatistics?
            var cCounts = cb_conference_counts()
            var lastSwiftRTCP = 0
            for round in 0..<(rounds + 1) {  // round 0 warms caches and is discarded
                var s = 0.0
                var c = 0.0
                if round % 2 == 0 {
                    s = try runSwift(workload, &swiftStats, &lastSwiftRTCP)
                    c = try runC(workload, &cCounts)
                } else {
                    c = try runC(workload, &cCounts)
                    s = try runSwift(workload, &swiftStats, &lastSwiftRTCP)
                }
                guard round > 0 else { continue }
                swiftTimes.append(s / Double(ticks))
                cTimes.append(c / Double(ticks))
                ratios.append(s / c)
            }
            let swiftTick = SideBySideRunner.median(swiftTimes)
            let cTick = SideBySideRunner.median(cTimes)
            let paired = SideBySideRunner.median(ratios)
            let interval = SideBySideRunner.medianConfidenceInterval(ratios)
            let minimumRatio = (swiftTimes.min() ?? 0) / (cTimes.min() ?? 1)
            verdicts.append((n, interval?.high))
            let perCore = Double(n) * 20e6 / swiftTick
            let cPerCore = Double(n) * 20e6 / cTick
            var line = column("\(n)", 6)
            line += column(fixed(swiftTick / 1000, 1), 15, right: true)
            line += column(fixed(cTick / 1000, 1), 12, right: true)
            line += column(fixed(swiftTick / cTick, 3), 8, right: true)
            line += column(fixed(paired, 3), 8, right: true)
            line += column(interval.map { fixed($0.low, 3) + "–" + fixed($0.high, 3) } ?? "n/a", 16, right: true)
            line += column(fixed(minimumRatio, 3), 10, right: true)
            line += column(fixed(perCore, 0), 12, right: true)
            line += column(fixed(cPerCore, 0), 14, right: true)
            print(line)
            fflush(nil)
            rows.append(
                "{\"participants\":\(n),\"talkers\":\(t),\"swift_us_per_tick\":\(fixed(swiftTick / 1000, 3)),"
                    + "\"c_us_per_tick\":\(fixed(cTick / 1000, 3)),\"ratio\":\(fixed(swiftTick / cTick, 4)),"
                    + "\"paired_ratio\":\(fixed(paired, 4)),"
                    + "\"paired_ratio_ci95\":\(interval.map { "[\(fixed($0.low, 4)),\(fixed($0.high, 4))]" } ?? "null"),"
                    + "\"minimum_ratio\":\(fixed(minimumRatio, 4)),\"rounds\":\(rounds),\"participants_per_core\":\(fixed(perCore, 1)),"
                    + "\"c_participants_per_core\":\(fixed(cPerCore, 1))}")
            if let st = swiftStats {
                let k = Double(ticks)
                let jitterPackets = st.participants.reduce(0) { $0 + $1.packetsReceived }
                let sent = st.participants.reduce(0) { $0 + $1.packetsSent }
                costLines.append(
                    "  \(column("\(n)", 4)) Swift: decoded \(fixed(Double(st.decodedTicks) / k, 2)) (packets \(fixed(Double(jitterPackets) / k, 2)))"
                        + "  encodes \(fixed(Double(st.ownEncodedFrames + st.sharedEncodedFrames) / k, 2))"
                        + " (own \(fixed(Double(st.ownEncodedFrames) / k, 2)) + shared \(fixed(Double(st.sharedEncodedFrames) / k, 2)))"
                        + "  protects \(fixed(Double(sent) / k, 2))  unprotects \(fixed(Double(st.datagramsReceived) / k, 2))"
                        + "  talkers \(fixed(st.meanTalkers, 2))  clipped \(st.clippedSamples)"
                        + "  RTCP \(fixed(Double(lastSwiftRTCP) / k, 3))")
                costLines.append(
                    "  \(column("", 4)) C:     decoded \(fixed(Double(cCounts.decodes + cCounts.concealments) / k, 2)) (packets \(fixed(Double(cCounts.decodes) / k, 2)))"
                        + "  encodes \(fixed(Double(cCounts.own_encodes + cCounts.shared_encodes) / k, 2))"
                        + " (own \(fixed(Double(cCounts.own_encodes) / k, 2)) + shared \(fixed(Double(cCounts.shared_encodes) / k, 2)))"
                        + "  protects \(fixed(Double(cCounts.protects) / k, 2))  unprotects \(fixed(Double(cCounts.unprotects) / k, 2))"
                        + "  talkers \(fixed(Double(cCounts.talker_ticks) / k, 2))  clipped \(cCounts.clipped_samples)"
                        + "  RTCP \(fixed(Double(cCounts.rtcp_protects) / k, 3))")
                costLines.append(
                    "  \(column("", 4)) model: decodes ≈ talkers (+ DTX updates), encodes = talkers + 1 (shared, when"
                        + " anyone listens), protects = participants sent to, RTCP = participants ÷ (4.1 s ÷ 20 ms) per tick"
                )
            }
        }
        // The target is judged on one statistic, fixed in advance (Benchmarks/README.md, Conference mixer): the
        // upper end of the 95 % confidence interval of the median paired ratio.
        print(
            "Target Swift/C ≤ 1.05, judged on the upper end of the paired ratio's 95 % CI (median of per-round"
                + " Swift/C, sign-test interval): "
                + verdicts.map { v in
                    "\(v.participants): "
                        + (v.upper.map { $0 <= 1.05 ? "met (≤ \(fixed($0, 3)))" : "not shown (\(fixed($0, 3)))" }
                            ?? "too few rounds")
                }.joined(separator: ", "))
        print("Library calls per 20 ms tick (participant-ticks decoded incl. PLC; packets = payloads decoded):")
        for line in costLines { print(line) }
        print(
            "Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(loadAverage()) — CPU time, not wall time."
        )
        fflush(nil)

        var janusJSON = ""
        if janusSeconds > 0 {
            janusJSON = try janus(speech: speech, sizes: roomSizes)
        }
        var qualityJSON = ""
        if qualitySeconds > 0 {
            qualityJSON = try quality(speech: speech)
        }
        if json {
            print("{\"suite\":\"conference\",\"rooms\":[\(rows.joined(separator: ","))]\(janusJSON)\(qualityJSON)}")
        }
    }

    private func runSwift(
        _ w: ConferenceWorkload, _ stats: inout ConferenceRoomStatistics?, _ rtcpSent: inout Int
    ) throws -> Double {
        var configuration = ConferenceWorkload.room
        configuration.sendsRTCP = rtcp
        let (room, members) = try w.makeRoom(configuration: configuration)
        let start = cb_thread_cpu_ns()
        let handed = w.run(room, members, ticks: 0..<w.ticks)
        let elapsed = Double(cb_thread_cpu_ns() - start)
        if handed < 0 { print("") }
        stats = room.statistics
        rtcpSent = members.reduce(0) { $0 + $1.stream.statistics.rtcpSent }
        return elapsed
    }

    private func runC(_ w: ConferenceWorkload, _ counts: inout cb_conference_counts) throws -> Double {
        let local = ConferenceWorkload.concatenated(w.localKeys)
        let remote = ConferenceWorkload.concatenated(w.remoteKeys)
        let threshold = ConferenceMixing.meanSquare(dBFS: ConferenceWorkload.room.speechThresholdDBFS)
        guard
            let room = cb_conference_create(
                Int32(w.participants), Int32(ConferenceWorkload.room.maximumTalkers), local, remote,
                Int32(ConferenceWorkload.opus.bitrate), Int32(ConferenceWorkload.opus.complexity), 1, threshold,
                Int32(ConferenceWorkload.room.limiterThreshold))
        else { throw ValidationError("cb_conference_create failed") }
        defer { cb_conference_destroy(room) }
        if rtcp { cb_conference_enable_rtcp(room) }
        var checksum: Int64 = 0
        let start = cb_thread_cpu_ns()
        w.data.withUnsafeBufferPointer { data in
            w.offsets.withUnsafeBufferPointer { offsets in
                w.lengths.withUnsafeBufferPointer { lengths in
                    w.owners.withUnsafeBufferPointer { owners in
                        for t in 0..<w.ticks {
                            let first = w.tickStart[t]
                            checksum &+= cb_conference_tick(
                                room, data.baseAddress!, offsets.baseAddress! + first, lengths.baseAddress! + first,
                                owners.baseAddress! + first, Int32(w.tickStart[t + 1] - first))
                        }
                    }
                }
            }
        }
        let elapsed = Double(cb_thread_cpu_ns() - start)
        if checksum == 42 { print("") }
        cb_conference_get_counts(room, &counts)
        return elapsed
    }

    /// `--profile-room`: the room loop alone, repeated, so a profiler sees the room's own frames (the workload's
    /// client encodes, which otherwise dominate a profile of the whole command, happen before it starts and are
    /// excluded with `--profile-control`).
    private func profile(speech: [[Int16]], participants n: Int) throws {
        let ticks = Int(seconds * 50)
        let setup = cb_thread_cpu_ns()
        let workload = try ConferenceWorkload(participants: n, talkers: min(talkers, n), ticks: ticks, speech: speech)
        print(
            "voice-bench conference --profile-room: \(n) participants, workload of \(ticks) ticks built in"
                + " \(fixed(Double(cb_thread_cpu_ns() - setup) / 1e6, 0)) ms CPU; running the \(profileSide) room for"
                + " \(fixed(profileRoom, 0)) s (pid \(getpid()))")
        fflush(nil)
        var control: UnsafeMutablePointer<FILE>?
        if let path = profileControl {
            guard let opened = fopen(path, "w") else {
                throw ValidationError("--profile-control: cannot open \(path): \(String(cString: strerror(errno)))")
            }
            control = opened
        }
        func command(_ text: String) {
            guard let control else { return }
            fputs(text + "\n", control)
            fflush(control)
        }
        command("enable")
        var stats: ConferenceRoomStatistics?
        var rtcpSent = 0
        var counts = cb_conference_counts()
        var times: [Double] = []
        var spent = 0.0
        while spent < profileRoom * 1e9 {
            let t = profileSide == "swift" ? try runSwift(workload, &stats, &rtcpSent) : try runC(workload, &counts)
            times.append(t / Double(ticks))
            spent += t
        }
        command("disable")
        if let control { fclose(control) }
        print(
            "\(times.count) rounds, median \(fixed(SideBySideRunner.median(times) / 1000, 1)) µs per tick"
                + " (load \(loadAverage()))")
    }

    /// Janus AudioBridge (Debian's `janus`, plain-RTP participants, driven by scripts/janus-audiobridge.py in real
    /// time; its process CPU over the measured window) beside the Swift room on the same plain-RTP datagrams (fast
    /// time, this thread's CPU).
    private func janus(speech: [[Int16]], sizes: [Int]) throws -> String {
        let script = URL(fileURLWithPath: PESQ.script).deletingLastPathComponent().appendingPathComponent(
            "janus-audiobridge.py"
        ).path
        print(
            "Janus AudioBridge side by side (plain RTP, no SRTP on either side; Janus in real time, CPU of its process):"
        )
        print(
            column("room", 6) + column("Swift part./core", 18, right: true)
                + column("Janus part./core", 18, right: true)
                + column("Janus mixed pkts", 18, right: true))
        var items: [String] = []
        for n in sizes {
            guard 2 * n <= 88 else {
                print(
                    column("\(n)", 6)
                        + "   does not fit: Janus takes 2 ports per plain-RTP participant, the bench has 90 (28310-28399)"
                )
                continue
            }
            let ticks = Int(janusSeconds * 50)
            let w = try ConferenceWorkload(
                participants: n, talkers: min(talkers, n), ticks: ticks, speech: speech, srtp: false)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "voice-bench-janus-\(getpid()).vcwl"
            ).path
            try w.write(to: file)
            defer { try? FileManager.default.removeItem(atPath: file) }
            var stats: ConferenceRoomStatistics?
            var rtcpSent = 0
            var swiftTimes: [Double] = []
            for _ in 0..<3 { swiftTimes.append(try runSwift(w, &stats, &rtcpSent) / Double(ticks)) }
            let swiftPerCore = Double(n) * 20e6 / SideBySideRunner.median(swiftTimes)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", script, file]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0,
                let line = String(decoding: output, as: UTF8.self).split(separator: "\n").last,
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else {
                print(
                    column("\(n)", 6) + column(fixed(swiftPerCore, 0), 18, right: true)
                        + column("failed (exit \(process.terminationStatus))", 30, right: true))
                continue
            }
            let janusPerCore = (object["participants_per_core"] as? Double) ?? 0
            let mixed = (object["mixed_packets_received"] as? Int) ?? 0
            guard mixed > 0 else {
                print(
                    column("\(n)", 6) + column(fixed(swiftPerCore, 0), 18, right: true)
                        + "   Janus sent no mixed audio back: its CPU (\(fixed(janusPerCore, 0)) part./core) is not a measurement"
                )
                continue
            }
            print(
                column("\(n)", 6) + column(fixed(swiftPerCore, 0), 18, right: true)
                    + column(fixed(janusPerCore, 0), 18, right: true) + column("\(mixed)", 18, right: true))
            fflush(nil)
            items.append(
                "{\"participants\":\(n),\"swift_plain_participants_per_core\":\(fixed(swiftPerCore, 1)),"
                    + "\"janus_participants_per_core\":\(fixed(janusPerCore, 1))}")
        }
        return ",\"janus\":[\(items.joined(separator: ","))]"
    }

    /// The quality run: PESQ-WB and the project's spectral distance of each participant's mix against the ideal.
    private func quality(speech: [[Int16]]) throws -> String {
        let durationMs = Int(qualitySeconds * 1000)
        let samples = durationMs * 16
        let inputs = (0..<3).map { i in
            (0..<samples).map { speech[i % speech.count][$0 % speech[i % speech.count].count] }
        }
        let network = NetworkConditions(
            baseDelayMilliseconds: 30,
            jitter: .normal(meanMilliseconds: jitterMilliseconds, standardDeviationMilliseconds: jitterMilliseconds),
            loss: .bernoulli(probability: lossPercent / 100))
        let impaired = ConferenceSimulation.Directions(rawValue: qualityImpaired) ?? .both
        var members = (0..<3).map {
            var m = ConferenceSimulation.Member(label: "talker\($0)", input: inputs[$0], network: network)
            m.impaired = impaired
            return m
        }
        members += (0..<2).map {
            var m = ConferenceSimulation.Member(label: "listener\($0)", network: network)
            m.impaired = impaired
            return m
        }
        var opus = ConferenceSimulation.defaultOpus
        opus.inbandFEC = qualityFec
        var roomConfiguration = ConferenceRoomConfiguration()
        roomConfiguration.restartsTalkSpurtsAtTargetDelay = qualityTargetRestart
        let sim = try ConferenceSimulation(
            configuration: .init(
                members: members, room: roomConfiguration, opus: opus, durationMilliseconds: durationMs))
        let result = sim.run()
        print(
            "Quality: 5 participants, 3 talkers (real speech), legs impaired \(impaired.rawValue): \(fixed(lossPercent, 0)) % loss,"
                + " normal jitter mean/sd \(fixed(jitterMilliseconds, 0)) ms, 30 ms base delay; FEC \(qualityFec ? "on" : "off"),"
                + " spurts restart at \(qualityTargetRestart ? "the target delay" : "once");"
                + " \(fixed(qualitySeconds, 0)) s. Received mix vs the ideal mix of the other talkers' clean speech,"
                + " sample-aligned (ideal) and with each talker at the delay it reached this listener with (aligned, 1 s windows)"
        )
        print(
            column("participant", 14) + column("PESQ ideal", 11, right: true) + column("PESQ aligned", 13, right: true)
                + column("spec. dB", 9, right: true) + column("aligned dB", 11, right: true)
                + column("lag ms", 8, right: true)
                + column("loss %", 8, right: true) + column("conceal %", 11, right: true)
                + "   talkers' lags in this mix (ms, min–max)")
        var items: [String] = []
        for (i, m) in members.enumerated() {
            let others = (0..<3).filter { $0 != i }
            var ideal = [Int16](repeating: 0, count: samples)
            for j in others {
                for k in 0..<samples { ideal[k] = Int16(clamping: Int32(ideal[k]) + Int32(inputs[j][k])) }
            }
            let received = Array(result.received[i].prefix(samples))
            let alignment = ConferenceAlignment(received: received, talkers: others.map { inputs[$0] })
            let alignedIdeal = alignment.alignedIdeal(talkers: others.map { inputs[$0] }, samples: received.count)
            // Skip the first second (joining, jitter buffer start).
            let reference = Array(ideal[16_000...])
            let degraded = Array(received[16_000...])
            let alignedReference = Array(alignedIdeal[16_000...])
            let pesq = PESQ.wideband(reference: reference, degraded: degraded)
            let pesqAligned = PESQ.wideband(reference: alignedReference, degraded: degraded)
            let distance = SpectralDistance.measure(reference: reference, degraded: degraded, sampleRate: 16_000)
            let alignedDistance = SpectralDistance.measure(
                reference: alignedReference, degraded: degraded, sampleRate: 16_000)
            let client = result.clients[i]
            let lossPercent =
                client.expectedPackets == 0 ? 0 : 100 * Double(client.lostPackets) / Double(client.expectedPackets)
            let conceal = 100 * client.jitterBuffer.concealmentRatio
            let lagText =
                others.indices.map { k in
                    let r = alignment.lagRangeMilliseconds(k)
                    return "t\(others[k]) \(fixed(r.min, 0))–\(fixed(r.max, 0))"
                }.joined(separator: ", ") + "; apart \(fixed(alignment.meanLagDifferenceMilliseconds(0, 1), 0)) ms"
            print(
                column(m.label, 14) + column(pesq.map { fixed($0, 2) } ?? "n/a", 11, right: true)
                    + column(pesqAligned.map { fixed($0, 2) } ?? "n/a", 13, right: true)
                    + column(fixed(distance.decibels, 2), 9, right: true)
                    + column(fixed(alignedDistance.decibels, 2), 11, right: true)
                    + column(fixed(distance.lagMilliseconds, 0), 8, right: true)
                    + column(fixed(lossPercent, 1), 8, right: true) + column(fixed(conceal, 1), 11, right: true)
                    + "   " + lagText)
            items.append(
                "{\"participant\":\"\(m.label)\",\"pesq_wb\":\(pesq.map { fixed($0, 3) } ?? "null"),"
                    + "\"pesq_wb_aligned\":\(pesqAligned.map { fixed($0, 3) } ?? "null"),"
                    + "\"spectral_db\":\(fixed(distance.decibels, 3)),\"spectral_db_aligned\":\(fixed(alignedDistance.decibels, 3))}"
            )
        }
        print("Room side (what the mixer decoded from each talker):")
        for p in result.participants.prefix(3) {
            print(
                "  \(p.label): uplink loss \(fixed(100 * p.lossRatio, 1)) %, concealed \(fixed(100 * p.concealmentRatio, 1)) %,"
                    + " FEC-recovered frames \(p.fecRecoveredFrames)")
        }
        print(
            "Shared encoder: FEC \(result.room.sharedEncoderFEC ? "on" : "off"), expected loss"
                + " \(result.room.sharedExpectedLossPercent) %, \(result.room.sharedFECAdaptations) adaptations")
        print(
            "Mixer clipped samples: \(result.room.clippedSamples); limiter active in \(result.room.limitedBlocks) blocks"
        )
        fflush(nil)
        return ",\"quality\":[\(items.joined(separator: ","))],\"clipped_samples\":\(result.room.clippedSamples)"
    }

}

/// `text` padded to `width` (right-aligned when `right`).
private func column(_ text: String, _ width: Int, right: Bool = false) -> String {
    guard text.count < width else { return " " + text }
    let fill = String(repeating: " ", count: width - text.count)
    return right ? fill + text : text + fill
}
