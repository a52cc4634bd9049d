import ArgumentParser
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import VoiceConference
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceWebRTC

#if canImport(Glibc)
import Glibc
#endif

/// `voice-engine conference-server`: conference rooms over SIP (VoiceConferenceServer), until SIGINT or SIGTERM.
struct ConferenceServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conference-server",
        abstract:
            "Conference rooms over SIP: INVITE sip:conf-<id>@host joins room <id> (Opus, SDES- or DTLS-SRTP, mix-minus).",
        discussion: """
            A room opens with its first participant and closes after the last one leaves; its report (participants \
            over time, talkers, loss and concealment per participant) is printed then, and for every open room on \
            SIGUSR1; with --stats-dir each report is also written there as <room>.json. A participant mutes itself \
            with a re-INVITE offering a=sendonly (or inactive) and unmutes with sendrecv. OPTIONS are answered 200 \
            (a dispatcher's liveness probe). Several servers behind Kamailio's dispatcher: \
            Services/kamailio-conference/kamailio.cfg. SIGINT/SIGTERM hang up everyone and exit 0.
            """)

    @Option(help: "SIP listener (UDP) as host:port.")
    var bind: String = "127.0.0.1:5060"
    @Option(help: "Our SIP domain (the host of sip:conference@domain).")
    var domain: String = "conference.voiceengine.test"
    @Option(help: "Media address announced in SDP and bound (default: --bind's host; loopback for a wildcard).")
    var mediaAddress: String?
    @Option(help: "UDP ports for participants' media, one per participant, as A-B.")
    var rtpPorts: String = "20000-20999"
    @Flag(help: "Also admit plain-RTP participants (default: SDES-SRTP required, RTP/SAVP).")
    var optionalSRTP = false
    @Option(help: "Directory for each room's JSON report (written on close and on SIGUSR1).")
    var statsDir: String?
    @Option(help: "How many of the loudest talkers each room mixes (N).")
    var talkers: Int = 3
    @Option(help: "Media threads ticking the rooms (a fixed pool; default: one per core).")
    var mediaThreads: Int = ProcessInfo.processInfo.activeProcessorCount
    @Option(help: "RFC 3261 T1 in milliseconds.")
    var t1: Int = 500
    @Flag(help: "Print every SIP message sent and received on stderr.")
    var trace = false

    @Flag(
        help:
            "Refuse DTLS-SRTP offers (default: UDP/TLS/RTP/SAVP(F) offers with a=fingerprint are answered with ours and a=setup:passive)."
    )
    var noDtls = false

    func validate() throws {
        try OptionRange("--t1", 1...60_000, "ms").check(t1)
        try OptionRange("--talkers", 1...16, "talkers").check(talkers)
        try OptionRange("--media-threads", 1...256, "threads").check(mediaThreads)
        _ = try portRange()
        // Bound for every participant's media and announced in SDP's c= line: an address, not a name.
        if let mediaAddress, (try? SocketAddress(ipAddress: mediaAddress, port: 0)) == nil {
            throw ValidationError("--media-address \(mediaAddress): must be an IPv4 or IPv6 address")
        }
    }

    func portRange() throws -> ClosedRange<Int> {
        let parts = rtpPorts.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let low = Int(parts[0]), let high = Int(parts[1]), 1 <= low, low <= high, high <= 65_535
        else {
            throw ValidationError("--rtp-ports '\(rtpPorts)': expected A-B with 1 <= A <= B <= 65535")
        }
        return low...high
    }

    func run() throws {
        // Made and written to before listening: room reports would otherwise be lost silently when the first room
        // closes.
        try OutputPaths.prepareFolder(statsDir, option: "--stats-dir")
        let address = try socketAddress(bind, option: "--bind")
        let suites: [SRTPCryptoSuite] = [.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32]
        let configuration = ConferenceServerConfiguration(
            sipAddress: address, domain: domain, mediaHost: mediaAddress, rtpPorts: try portRange(),
            srtp: optionalSRTP ? .optional(suites) : .required(suites),
            timers: SIPTimerConfiguration(
                t1: .milliseconds(t1), t2: .milliseconds(max(4000, t1 * 8)), t4: .milliseconds(max(5000, t1 * 10))),
            statisticsDirectory: statsDir.map { URL(fileURLWithPath: $0) },
            room: ConferenceRoomConfiguration(maximumTalkers: talkers), mediaThreads: mediaThreads,
            acceptsDTLSSRTP: !noDtls)
        let traced = trace
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        try runBlocking {
            let server: ConferenceServer
            do {
                server = try await ConferenceServer.start(configuration, on: loop) { report in say(report.text) }
            } catch {
                throw CommandFailure.runtime("cannot listen on \(address): \(error)")
            }
            if traced { server.endpoint.onTrace { FileHandle.standardError.write(Data(($0 + "\n").utf8)) } }
            let listening = await server.sipAddress.map { "\($0)" } ?? "?"
            say(
                "conference server: sip udp \(listening), media \(configuration.mediaHost) ports \(configuration.rtpPorts.lowerBound)-\(configuration.rtpPorts.upperBound)"
                    + (server.dtlsCertificate.map { ", DTLS-SRTP fingerprint \($0.fingerprint)" }
                        ?? ", DTLS-SRTP refused"))
            let (stops, stop) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
            var sources: [any DispatchSourceSignal] = []
            for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { stop.yield(name) }
                source.resume()
                sources.append(source)
            }
            signal(SIGUSR1, SIG_IGN)
            let report = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
            report.setEventHandler {
                Task {
                    let open = await server.writeReports()
                    say(open.isEmpty ? "no open rooms" : open.map(\.text).joined(separator: "\n"))
                }
            }
            report.resume()
            sources.append(report)
            var reason = ""
            for await next in stops {
                reason = next
                break
            }
            say("stopping (\(reason))")
            await server.close()
            for source in sources { source.cancel() }
        }
    }
}
