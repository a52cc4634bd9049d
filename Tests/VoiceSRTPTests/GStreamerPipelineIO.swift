import Foundation
import Testing

// Feeding and draining a running gst-launch-1.0 pipeline over loopback UDP, shared by the interop tests. Every
// wait is bounded; on failure the pipeline is killed and an issue carrying its stderr is recorded.
extension BoundedProcess {
    /// Waits until the pipeline's udpsrc has bound `port` (so no packet goes to a closed port), then sends
    /// `datagrams` to it from a fresh socket, 1 ms apart. Returns false, having recorded an issue, if the pipeline
    /// exits or `deadline` passes before the port is bound.
    func feedUDPSource(
        port: UInt16, _ datagrams: [[UInt8]], deadline: ContinuousClock.Instant,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Bool {
        while !udpPortIsBound(port) {
            guard isRunning, ContinuousClock.now < deadline else {
                kill()
                Issue.record(
                    Comment(rawValue: diagnostics("udpsrc never bound port \(port)")), sourceLocation: sourceLocation)
                return false
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let socket = try LoopbackUDPSocket()
        for datagram in datagrams {
            try socket.send(datagram, toPort: port)
            try await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    /// Waits (at most `GStreamer.processTimeout`) for the pipeline to exit. Returns false, having recorded an issue,
    /// unless it exited with status 0.
    func exitsCleanly(sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        guard let status = await wait(timeout: GStreamer.processTimeout) else {
            Issue.record(
                Comment(rawValue: diagnostics("gst-launch-1.0 did not finish; killed")), sourceLocation: sourceLocation)
            return false
        }
        guard status == 0 else {
            Issue.record(
                Comment(rawValue: diagnostics("gst-launch-1.0 exited with status \(status)")),
                sourceLocation: sourceLocation)
            return false
        }
        return true
    }

    /// Collects the datagrams arriving on `socket` while the pipeline runs, and those still queued once it has
    /// exited. Returns nil, having recorded an issue, if it runs past `deadline` or exits with a status other than 0.
    func collectDatagrams(
        on socket: LoopbackUDPSocket, deadline: ContinuousClock.Instant,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [[UInt8]]? {
        var datagrams: [[UInt8]] = []
        while isRunning {
            if let datagram = try socket.receiveIfAvailable() {
                datagrams.append(datagram)
                continue
            }
            guard ContinuousClock.now < deadline else {
                kill()
                Issue.record(
                    Comment(rawValue: diagnostics("gst-launch-1.0 did not finish; killed")),
                    sourceLocation: sourceLocation)
                return nil
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        while let datagram = try socket.receiveIfAvailable() { datagrams.append(datagram) }
        let status = terminationStatus ?? -1
        guard status == 0 else {
            Issue.record(
                Comment(rawValue: diagnostics("gst-launch-1.0 exited with status \(status)")),
                sourceLocation: sourceLocation)
            return nil
        }
        return datagrams
    }
}
