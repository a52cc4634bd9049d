import Foundation
import VoiceCore

/// A recorded (or synthesised) packet trace: one record per packet in send order, packet `i` carrying frame `i`.
///
/// File format (CSV): a header line `send_ms,arrival_ms`, then one row per packet, `arrival_ms` empty when the
/// packet was lost. Times are decimal milliseconds. Blank lines are ignored; anything else that does not parse
/// is rejected with its line number and the reason.
public struct NetworkTrace: Sendable, Hashable {
    public struct Record: Sendable, Hashable {
        public var send: MediaTime
        public var arrival: MediaTime?
        public init(send: MediaTime, arrival: MediaTime?) {
            self.send = send
            self.arrival = arrival
        }
    }

    public var records: [Record]

    public init(records: [Record]) { self.records = records }

    /// A trace of what a simulator did.
    public init(fates: [PacketFate]) { records = fates.map { Record(send: $0.sendTime, arrival: $0.arrival) } }

    /// Largest time a trace may hold, in milliseconds (about 11.6 days). Larger values are rejected: they would not
    /// fit `MediaTime`'s nanoseconds (converting them trapped) and, above 2^53 ns, would not round-trip exactly.
    public static let maximumMilliseconds: Double = 1e9

    /// Parses CSV text.
    /// - Throws: `NetworkSimulatorError.malformedTrace` with the 1-based line and the reason: missing or wrong
    ///   header, wrong column count, a number that does not parse or is negative, not finite or above
    ///   ``maximumMilliseconds``, send times going
    ///   backwards, an arrival before its send time, or no packets at all.
    public init(csv: String) throws(NetworkSimulatorError) {
        var records: [Record] = []
        var sawHeader = false
        var lineNumber = 0
        var lastSend = -Double.infinity
        var lastContentLine = 1
        for rawLine in csv.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty { continue }
            lastContentLine = lineNumber
            if !sawHeader {
                let header = line.split(separator: ",", omittingEmptySubsequences: false)
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                guard header == ["send_ms", "arrival_ms"] else {
                    throw .malformedTrace(
                        line: lineNumber, reason: "expected header 'send_ms,arrival_ms', got '\(line)'")
                }
                sawHeader = true
                continue
            }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count == 2 else {
                throw .malformedTrace(line: lineNumber, reason: "expected 2 fields, got \(fields.count)")
            }
            guard let send = Double(fields[0]), send.isFinite, send >= 0 else {
                throw .malformedTrace(line: lineNumber, reason: "send_ms '\(fields[0])' is not a non-negative number")
            }
            guard send <= Self.maximumMilliseconds else {
                throw .malformedTrace(
                    line: lineNumber, reason: "send_ms \(fields[0]) exceeds \(Self.maximumMilliseconds)")
            }
            guard send >= lastSend else {
                throw .malformedTrace(
                    line: lineNumber, reason: "send_ms \(fields[0]) goes backwards (rows are in send order)")
            }
            lastSend = send
            var arrival: MediaTime?
            if !fields[1].isEmpty {
                guard let a = Double(fields[1]), a.isFinite else {
                    throw .malformedTrace(line: lineNumber, reason: "arrival_ms '\(fields[1])' is not a number")
                }
                guard a >= send else {
                    throw .malformedTrace(
                        line: lineNumber, reason: "arrival_ms \(fields[1]) is before send_ms \(fields[0])")
                }
                guard a <= Self.maximumMilliseconds else {
                    throw .malformedTrace(
                        line: lineNumber, reason: "arrival_ms \(fields[1]) exceeds \(Self.maximumMilliseconds)")
                }
                arrival = MediaTime(nanoseconds: Int64((a * 1e6).rounded()))
            }
            records.append(Record(send: MediaTime(nanoseconds: Int64((send * 1e6).rounded())), arrival: arrival))
        }
        guard sawHeader else { throw .malformedTrace(line: max(lineNumber, 1), reason: "empty trace: no header") }
        guard !records.isEmpty else {
            throw .malformedTrace(line: lastContentLine, reason: "no packets after the header")
        }
        self.records = records
    }

    /// Reads and parses a trace file.
    /// - Throws: `NetworkSimulatorError.unreadableTrace` when the file cannot be read as UTF-8 text, else
    ///   `malformedTrace` as `init(csv:)`.
    public init(contentsOf url: URL) throws(NetworkSimulatorError) {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            let reason =
                !exists ? "no such file" : isDirectory.boolValue ? "it is a directory" : error.localizedDescription
            throw .unreadableTrace(path: url.path, reason: reason)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw .unreadableTrace(path: url.path, reason: "not UTF-8 text (\(data.count) bytes)")
        }
        try self.init(csv: text)
    }

    /// The trace as CSV text in the format `init(csv:)` reads.
    public var csv: String {
        var out = "send_ms,arrival_ms\n"
        for r in records {
            out += Self.format(r.send) + "," + (r.arrival.map(Self.format) ?? "") + "\n"
        }
        return out
    }

    /// Milliseconds with up to six decimals: exact to the nanosecond, so a trace round-trips losslessly.
    private static func format(_ t: MediaTime) -> String {
        let ms = t.nanoseconds / 1_000_000
        let frac = t.nanoseconds % 1_000_000
        guard frac != 0 else { return "\(ms)" }
        var digits = String(String(frac + 1_000_000).dropFirst())
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(ms).\(digits)"
    }

    /// Fraction of packets that never arrived.
    public var lossRate: Double {
        records.isEmpty ? 0 : Double(records.filter { $0.arrival == nil }.count) / Double(records.count)
    }

    /// The oracle floor: the smallest fixed one-way playout delay (send time + delay = play time) at which at most
    /// `lateLoss` of the *arrived* packets are late, given perfect knowledge of the whole trace. Returns
    /// milliseconds; nil when no packet arrived.
    public func oracleDelayMilliseconds(lateLoss: Double) -> Double? {
        let arrived = records.reduce(0) { $0 + ($1.arrival == nil ? 0 : 1) }
        return oracleDelayMilliseconds(latePackets: Int((max(0, lateLoss) * Double(arrived)).rounded(.down)))
    }

    /// The oracle floor for a count: the smallest fixed one-way playout delay at which at most `latePackets` of
    /// the arrived packets arrive after their play time (a packet arriving exactly at its play time is in time).
    /// This is how a strategy that had `latePackets` late packets on this trace is judged: the oracle gets the
    /// same late loss and the smallest delay that allows it. Returns milliseconds; nil when no packet arrived.
    public func oracleDelayMilliseconds(latePackets: Int) -> Double? {
        let transits = records.compactMap { r in r.arrival.map { ($0 - r.send).milliseconds } }.sorted()
        guard !transits.isEmpty else { return nil }
        return transits[max(0, transits.count - 1 - max(0, latePackets))]
    }
}
