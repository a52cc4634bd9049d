import Dispatch
import Foundation
import VoiceEngine

#if canImport(Glibc)
import Glibc
#endif

/// `call`'s live call: the socket, the keys, the devices and a `LiveCall` until hang-up, then the summary.
enum CallRunner {
    /// Runs the async call on the cooperative pool while the main thread waits; throws why it failed.
    static func perform(_ plan: CallPlan) throws {
        try runBlocking {
            do { try await run(plan) } catch let failure as CommandFailure { throw failure } catch {
                throw CommandFailure.runtime("\(error)")
            }
        }
    }

    /// The call, from binding the socket to the summary; a `CommandFailure` says why it could not go ahead or
    /// why media never flowed both ways.
    static func run(_ plan: CallPlan) async throws {
        // The capture file is opened first: an unwritable path fails before anything else happens.
        let recorder: PacketCaptureRecorder?
        do { recorder = try plan.capture.map { try PacketCaptureRecorder(path: $0) } } catch {
            throw CommandFailure.runtime("--capture: \(error)")
        }
        defer { _ = try? recorder?.close() }
        let transport: UDPMediaTransport
        do {
            transport = try await UDPMediaTransport.bind(
                host: plan.bindHost, port: plan.bindPort, remote: plan.remote,
                configuration: UDPMediaTransport.Configuration(capture: recorder, receive: .consumerPolls))
        } catch {
            let local = (try? UDPEndpoint(host: plan.bindHost, port: plan.bindPort))?.description
            throw CommandFailure.runtime("cannot bind \(local ?? plan.bindHost): \(error)")
        }
        say(
            (plan.listening ? "listening on " : "calling \(plan.remote!) from ")
                + "\(transport.localEndpoint)" + localAddressesHint(transport.localEndpoint))

        var stream = plan.stream
        if let keys = plan.srtp {
            do { stream.srtp = try await exchangeKeys(keys) } catch {
                await transport.close()
                throw error
            }
        } else {
            say("SRTP is off (--no-srtp): media is sent in the clear")
        }

        let devices: (capture: any AudioDevice, playout: any AudioDevice)
        do {
            devices = try LiveDeviceName.openPair(
                microphone: plan.microphone, speaker: plan.speaker, sampleRate: plan.rate,
                loopMicrophone: plan.loopMicrophone)
        } catch {
            await transport.close()
            throw CommandFailure.runtime(error.description)
        }
        say("microphone \(plan.microphone), speaker \(plan.speaker), \(devices.capture.format)")

        let session = AudioSession(clock: MonotonicClock())
        await session.startEngine()
        let call: LiveCall
        do {
            call = try LiveCall(
                callID: CallID(plan.listening ? "listener" : "caller"), configuration: stream, transport: transport,
                capture: devices.capture, playout: devices.playout, session: session,
                options: LiveCallOptions(mediaTimeoutSeconds: plan.mediaTimeout))
            try call.start()
        } catch {
            devices.capture.close()
            devices.playout.close()
            await transport.close()
            throw CommandFailure.runtime("\(error)")
        }

        // Whatever comes first ends the call: Ctrl-C, the duration, or the call ending by itself.
        let (hangups, hangup) = AsyncStream.makeStream(of: CallEndCause.self, bufferingPolicy: .unbounded)
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupt.setEventHandler {
            say("hanging up (Ctrl-C)")
            hangup.yield(.localHangup)
        }
        interrupt.resume()
        defer {
            interrupt.cancel()
            signal(SIGINT, SIG_DFL)
        }
        if let duration = plan.duration {
            Task {
                try? await Task.sleep(for: .milliseconds(Int((duration * 1000).rounded())))
                hangup.yield(.localHangup)
            }
        }
        if !plan.listening {
            // Nobody answering must not keep the caller waiting for ever.
            Task {
                try? await Task.sleep(for: .milliseconds(Int((plan.connectTimeout * 1000).rounded())))
                if !call.isEstablished { hangup.yield(.localHangup) }
            }
        }
        let events = call.events
        Task {
            for await event in events {
                say("call: \(event)")
                if case .ended(let cause) = event { hangup.yield(cause) }
            }
        }
        var cause = CallEndCause.localHangup
        for await first in hangups {
            cause = first
            break
        }
        let result = await call.stop(cause: cause)
        hangup.finish()
        if let recorder {
            // The call closed the transport: nothing records any more.
            do {
                let summary = try recorder.close()
                say(
                    "capture: \(summary.packets) datagrams written to \(summary.path)"
                        + (summary.notRecorded > 0 ? " (\(summary.notRecorded) not recorded)" : ""))
            } catch {
                throw CommandFailure.runtime("--capture: \(error)")
            }
        }

        if let path = plan.report {
            do { try result.report.jsonData().write(to: URL(fileURLWithPath: path)) } catch {
                throw CommandFailure.runtime("--report \(path): \(error.localizedDescription)")
            }
        }
        printSummary(result)
        if let problem = result.playoutWriteError {
            throw CommandFailure.runtime("the speaker file is incomplete: \(problem)")
        }
        if !result.wasEstablished {
            throw CommandFailure.runtime(notEstablishedReason(result, plan: plan))
        }
    }

    /// Why media never flowed both ways, as far as this side can tell.
    static func notEstablishedReason(_ result: LiveCallResult, plan: CallPlan) -> String {
        let r = result.report
        let failed = r.drops.counts.authenticationFailed + r.drops.counts.rtcpAuthenticationFailed
        if failed > 0 && r.rtp.received == 0 {
            return "every packet from the peer (\(failed)) failed SRTP authentication: the keys do not match "
                + "(each side's --remote-key or a=crypto line must be the other side's key, in the same --suite)"
        }
        if r.rtp.received == 0 && !plan.listening, let peer = plan.remote {
            return "nobody answered at \(peer) within \(plan.connectTimeout) s (--connect-timeout): is the peer "
                + "listening there, and does a firewall let UDP through?"
        }
        if r.rtp.received == 0 { return "no media arrived from the peer" }
        return "media arrived but ours never reached the peer (is the peer's address right?)"
    }

    /// Our `a=crypto` line is printed (marked) when we generated the key; the peer's comes from the flags or stdin.
    static func exchangeKeys(_ keys: CallPlan.Keys) async throws -> MediaStreamSRTP {
        let local: SDESCryptoAttribute
        do { local = try LiveCallKeys.localAttribute(suite: keys.suite, base64Key: keys.localKey) } catch {
            throw CommandFailure.dataError("--local-key: \(error)")
        }
        if keys.localKey == nil {
            // The one place a key is shown: the line the user must hand to the peer.
            let block =
                "----- give this line to the other side (it holds this call's key; share it with no one else) -----\n"
                + local.attributeLine + "\n-----\n"
            FileHandle.standardOutput.write(Data(block.utf8))  // unbuffered: visible before we wait for stdin
        }
        let remote: SDESCryptoAttribute
        do {
            if let line = keys.remoteCrypto {
                remote = try LiveCallKeys.remoteAttribute(line: line, suite: keys.suite)
            } else if let key = keys.remoteKey {
                remote = try LiveCallKeys.remoteAttribute(suite: keys.suite, base64Key: key)
            } else {
                say("paste the other side's a=crypto line and press Enter:")
                guard let line = await readLineFromStandardInput() else {
                    throw CommandFailure.runtime("no a=crypto line on standard input")
                }
                remote = try LiveCallKeys.remoteAttribute(line: line, suite: keys.suite)
            }
            return try LiveCallKeys.streamKeys(local: local, remote: remote)
        } catch let error as SDESError {
            throw CommandFailure.dataError("the peer's key: \(error)")
        }
    }

    /// One line from stdin, read off the cooperative pool (it blocks until the user presses Enter).
    static func readLineFromStandardInput() async -> String? {
        await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            DispatchQueue.global().async { c.resume(returning: readLine(strippingNewline: true)) }
        }
    }

    /// When bound to the wildcard address, the interface addresses the peer can use (IPv6 ones only when the
    /// socket is IPv6; link-local IPv6 addresses are left out, they need a zone to be dialled).
    static func localAddressesHint(_ endpoint: UDPEndpoint) -> String {
        guard endpoint.address.isUnspecified else { return "" }
        var addresses: [String] = []
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return "" }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            guard let address = entry.pointee.ifa_addr, let found = UDPEndpoint(socketAddress: address),
                !found.isIPv6 || endpoint.isIPv6
            else { continue }
            if case .v6(let high, _) = found.address, high >> 54 == 0x3FA { continue }  // fe80::/10
            addresses.append(UDPEndpoint(address: found.address, port: endpoint.port).description)
        }
        return addresses.isEmpty ? "" : " (reachable as " + addresses.joined(separator: ", ") + ")"
    }

    static func printSummary(_ result: LiveCallResult) {
        let r = result.report
        let s = result.statistics
        func f(_ x: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", x) }
        let received = r.rtp.expected > 0
        say(
            "call ended (\(result.cause)) after \(f(r.durationSeconds)) s: sent \(s.datagramsSent) datagrams"
                + (s.datagramsNoRemote > 0 ? " (\(s.datagramsNoRemote) held back before the peer was known)" : "")
                + ", received \(r.rtp.received) of \(r.rtp.expected) RTP (lost \(r.rtp.lost))"
                + (received
                    ? ", jitter \(f(r.jitter.interarrivalMilliseconds)) ms, RTT "
                        + (r.rtt.meanMilliseconds.map { f($0) + " ms" } ?? "n/a")
                        + ", buffer \(f(r.jitterBuffer.meanDelayMilliseconds, 0)) ms, concealed "
                        + "\(f(r.jitterBuffer.concealmentRatio * 100)) %, MOS \(f(r.quality.mos, 2))"
                    : ""))
        say(
            "media thread: \(s.ticks) ticks (\(s.lateTicks) late, \(s.delayedTicks) begun a tick late), \(s.captureUnderruns) capture underruns, "
                + "\(s.playoutOverflows) playout overflows; drops \(r.drops.total); devices: "
                + "mic \(result.capture.xruns) xruns, speaker \(result.playout.xruns) xruns")
    }
}
