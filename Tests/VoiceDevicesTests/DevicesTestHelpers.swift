import Foundation
import VoiceCore

@testable import VoiceDevices
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A fresh path in the temporary directory, unique per call.
func temporaryPath(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.path
    return "\(dir)/voicedevices-\(getpid())-\(UInt64.random(in: 0...UInt64.max))-\(name)"
}

/// Sample-shaped draws from the shared seeded generator, so synthetic inputs are the same on every run.
extension SplitMix64 {
    /// Uniform in [-1, 1).
    mutating func nextSigned() -> Double { Double(next() >> 11) / Double(1 << 52) - 1 }
    mutating func nextSample() -> Int16 { Int16(truncatingIfNeeded: next()) }
}

/// Waits (without asserting anything about time) until `condition` holds or `limit` seconds pass; returns
/// whether it held. Used to let a real-time device run a few periods.
func waitUntil(seconds limit: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(limit)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// Everything an event stream holds once it has been finished.
func collect(_ events: AsyncStream<DeviceEvent>) async -> [DeviceEvent] {
    var result: [DeviceEvent] = []
    for await event in events { result.append(event) }
    return result
}

/// Reads everything currently in `ring`.
func drain(_ ring: SampleRing) -> [Int16] {
    var out = [Int16](repeating: 0, count: ring.availableToRead)
    let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0) }
    return Array(out.prefix(n))
}
