import Foundation
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A whole client call as the network sees it: dumpcap on loopback while two `VoiceClient`s register through the
/// service (HTTPS to the registration service, REGISTER over SIP/TLS), call each other (INVITE over TLS,
/// DTLS-SRTP and ICE on the media ports), hang up (BYE) and unregister. The capture must hold no password, no
/// shared or application secret, no SDES key, no SIP, HTTP or SDP text, and tshark must find only TLS on the
/// service's ports and only DTLS, SRTP/SRTCP and ICE's STUN checks on the media ports. Needs root for the capture.
/// Ports 26190 (SIP) and 31190 (TLS).
@Suite(
    "VoiceClient call in a packet capture", .tags(.interop, .live, .root), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: geteuid() == 0, "capturing on loopback needs root"),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/dumpcap")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark"),
        "dumpcap and tshark are not installed (make test-deps installs tshark)"))
struct ClientCallCaptureTests {
    @Test func aWholeCallCarriesNoSecretAndNoSignallingInClearText() async throws {
        try await withService(sipPort: 26190) { service in
            let capture = service.directory.appendingPathComponent("call.pcap")
            let filter = "tcp port \(service.registrationPort) or tcp port \(service.tlsPort) or udp"
            let dumpcap = try ChildProcessGroup(
                "/usr/bin/dumpcap", ["-i", "lo", "-q", "-P", "-f", filter, "-w", capture.path],
                log: service.directory.appendingPathComponent("dumpcap.log"))
            defer { dumpcap.stop() }
            guard await Self.captureStarted(capture, dumpcap) else {
                try Test.cancel("dumpcap did not start capturing on lo:\n\(dumpcap.logTail)")
            }
            let started = UInt64(Date().timeIntervalSince1970)
            let alice = try service.client("alice"), bob = try service.client("bob")
            let aliceLog = EventLog(alice), bobLog = EventLog(bob)
            await alice.start()
            await bob.startListening()
            #expect(await aliceLog.first { $0 == .started } != nil)
            #expect(await bobLog.first { $0 == .started } != nil)
            let call = try await alice.callUser("bob")
            let incoming = try #require(await bobLog.incomingCall(), "bob got no call: \(bobLog.events)")
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await waitFor(incoming.call, .established)
            try await Task.sleep(for: .seconds(3))
            // The media ports are this process's UDP sockets while the call runs (the service's are Kamailio's).
            let mediaPorts = Self.ownUDPPorts()
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            await alice.terminate()
            await bob.terminate()
            let finished = UInt64(Date().timeIntervalSince1970)
            try await Task.sleep(for: .milliseconds(500))
            dumpcap.stop()

            let bytes = try Data(contentsOf: capture)
            #expect(bytes.count > 10_000, "the capture holds \(bytes.count) bytes: \(dumpcap.logTail)")
            #expect(!mediaPorts.isEmpty, "no UDP socket of this process was open during the call")

            // Secrets known to this session, searched in everything captured on loopback.
            let issuer = EphemeralCredentialIssuer(
                sharedSecret: service.sharedSecret, lifetime: 3600, domain: "voiceengine.test")
            let passwords = ["alice", "bob"].flatMap { user in
                (started...finished + 1).map { issuer.issue(userID: user, now: $0).password }
            }
            let secrets =
                passwords + [service.sharedSecret, ServiceHarness.applicationSecret, ServiceHarness.applicationKey]
            for secret in secrets {
                #expect(!bytes.contains(Data(secret.utf8)), "'\(secret)' is in the capture in clear text")
            }

            // What this call sent: the service's TCP ports and the media ports. No signalling, SDP or key text.
            let ours =
                "tcp.port == \(service.registrationPort) || tcp.port == \(service.tlsPort) || "
                + mediaPorts.map { "udp.port == \($0)" }.joined(separator: " || ")
            let callOnly = service.directory.appendingPathComponent("call-only.pcap")
            let tsharkLog = service.directory.appendingPathComponent("tshark.log")
            _ = try await Self.tshark(
                ["-r", capture.path, "-Y", ours, "-w", callOnly.path, "-F", "pcap"], log: tsharkLog)
            let callBytes = try Data(contentsOf: callOnly)
            #expect(callBytes.count > 10_000, "the call's packets: \(callBytes.count) bytes")
            for text in [
                "a=crypto", "inline:", "a=fingerprint", "a=ice-pwd", "a=ice-ufrag", "m=audio", "a=rtpmap", "v=0\r\n",
                "c=IN IP4", "REGISTER sip", "INVITE sip", "BYE sip", "SIP/2.0", "alice@", "bob@", "POST /",
                "HTTP/1.1", "Authorization", "password"
            ] {
                #expect(!callBytes.contains(Data(text.utf8)), "'\(text)' is in the call's packets in clear text")
            }

            // What the dissector sees: per frame its protocol column, payload-carrying TCP decoded as TLS on the
            // service's ports, UDP with the RTP heuristic on.
            let frames = try await Self.tshark(
                [
                    "-r", callOnly.path, "-d", "tcp.port==\(service.registrationPort),tls", "-d",
                    "tcp.port==\(service.tlsPort),tls", "--enable-heuristic", "rtp_udp", "-Y",
                    "(tcp && tcp.len > 0) || udp", "-T", "fields", "-e", "frame.protocols", "-e", "_ws.col.Protocol",
                    "-e", "_ws.col.Info"
                ], log: tsharkLog
            ).filter { $0.contains(":ip") }.map { line in
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                return (layers: fields[0], column: fields.count > 1 ? fields[1] : "", info: fields.last ?? "")
            }
            var seen: [String: Int] = [:]
            for frame in frames { seen[frame.column, default: 0] += 1 }
            print(
                "capture: \(bytes.count) bytes, the call's \(callBytes.count); media ports \(mediaPorts); protocols \(seen)"
            )
            let tcp = frames.filter { $0.layers.contains(":tcp") }
            let udp = frames.filter { $0.layers.contains(":udp") }
            // A TCP segment carrying part of a TLS record that a later segment completes is shown as TCP.
            let notTLS = tcp.filter {
                !$0.layers.contains(":tls") && !$0.info.contains("TCP segment of a reassembled PDU")
                    && !$0.info.contains("Retransmission]")
            }
            #expect(tcp.count > 10 && notTLS.isEmpty, "TCP not TLS: \(notTLS.prefix(5)); all: \(seen)")
            let allowed = ["dtls", "rtp", "rtcp", "srtp", "srtcp", "stun", "classicstun"]
            let other = udp.filter { frame in
                !allowed.contains { frame.layers.hasSuffix(":\($0)") || frame.layers.contains(":\($0):") }
            }
            #expect(other.isEmpty, "UDP that is not DTLS, SRTP or STUN: \(other.prefix(5)); all: \(seen)")
            #expect(udp.contains { $0.layers.contains(":dtls") }, "no DTLS handshake on the media ports: \(seen)")
            #expect(udp.filter { $0.layers.contains(":rtp") }.count > 100, "too little SRTP: \(seen)")
        }
    }

    /// Whether dumpcap has opened its output (the pcap header written) and still runs.
    static func captureStarted(_ file: URL, _ dumpcap: ChildProcessGroup) async -> Bool {
        for _ in 0..<250 {
            if let size = try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int, size >= 24 {
                // dumpcap writes its header when the capture is open; give the filter a moment to be attached.
                try? await Task.sleep(for: .milliseconds(300))
                return dumpcap.isRunning
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The local ports of the UDP sockets this process has open (its descriptors' socket inodes looked up in
    /// /proc/net/udp and udp6).
    static func ownUDPPorts() -> [Int] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let inodes = Set(
            descriptors.compactMap { fd -> String? in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
                    target.hasPrefix("socket:[")
                else { return nil }
                return String(target.dropFirst("socket:[".count).dropLast())
            })
        var ports: Set<Int> = []
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ")
                guard columns.count > 9, inodes.contains(String(columns[9])),
                    let port = columns[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
                else { continue }
                ports.insert(port)
            }
        }
        return ports.sorted()
    }

    /// Runs tshark (numeric addresses) and returns the lines it printed (its own warnings too); throws with them
    /// when it fails.
    static func tshark(_ arguments: [String], log: URL) async throws -> [Substring] {
        try? FileManager.default.removeItem(at: log)
        let process = try ChildProcessGroup("/usr/bin/tshark", ["-n"] + arguments, log: log)
        guard await process.wait(timeout: .seconds(60)) == 0 else {
            process.stop()
            throw CaptureAnalysisError(description: "tshark \(arguments.joined(separator: " ")): \(process.logTail)")
        }
        return try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
    }

    struct CaptureAnalysisError: Error, CustomStringConvertible {
        let description: String
    }
}
