import Foundation
import VoiceEngine

/// One user's records in the app's ``ClientStateStore``: the outbox, the grant (secret: it holds the SIP
/// password) and the push data, as versioned JSON named after the user (`<user>.outbox.json`, …). A record that
/// does not decode, or was written for another user or version, is set aside and reported
/// (``VoiceClientEvent/stateStoreFailed(_:)``); the client goes on without it. Without a store nothing is kept.
final class ClientState: Sendable {
    private let store: (any ClientStateStore)?
    private let userID: String
    private let report: @Sendable (ClientStateError) -> Void

    static let version = 1

    init(store: (any ClientStateStore)?, userID: String, report: @escaping @Sendable (ClientStateError) -> Void) {
        self.store = store
        self.userID = userID
        self.report = report
    }

    /// A message of the outbox, its first attempt on the wall clock (the client's media clock starts afresh with
    /// the process).
    struct SavedMessage: Codable, Equatable {
        var id: String
        var recipient: String
        var text: String
        var headerNames: [String]
        var headerValues: [String]
        var firstAttemptUnixTime: UInt64
        var attempts: Int
        var lastFailure: String?
        /// Every recipient of the message (nil: `recipient` alone).
        var recipients: [String]? = nil

        /// What makes it a message the client could not have kept, if anything.
        var problem: String? {
            if (try? UserID.validate(recipient)) == nil { return "not a user ID" }
            if let recipients, recipients.contains(where: { (try? UserID.validate($0)) == nil }) {
                return "a recipient that is not a user ID"
            }
            if !(0...1_000_000).contains(attempts) { return "\(attempts) attempts" }
            if headerNames.count != headerValues.count { return "header names and values do not pair up" }
            if let name = headerNames.first(where: { !$0.lowercased().hasPrefix("x-") }) {
                return "header \(name) is not a custom header"
            }
            return nil
        }
    }

    struct SavedOutbox: Codable {
        var version: Int
        var userID: String
        var messages: [SavedMessage]
    }

    /// The last grant and what it was granted for: a restarted client uses it only for the same application,
    /// service and push data.
    struct SavedGrant: Codable, Equatable {
        var version: Int
        var userID: String
        var applicationKey: String
        var serviceHost: String
        var registrationPort: Int
        var pushData: Data?
        var grant: RegistrationGrant
    }

    struct SavedPush: Codable {
        var version: Int
        var userID: String
        var pushData: Data
    }

    struct SavedDevice: Codable {
        var version: Int
        var userID: String
        var deviceID: String
    }

    // MARK: Records

    /// The kept messages; none when one of them is not a message this client could have kept.
    var outbox: [SavedMessage] {
        guard let saved = load(SavedOutbox.self, "outbox", version: \.version, user: \.userID) else { return [] }
        for message in saved.messages {
            guard let problem = message.problem else { continue }
            report(
                .corrupt(record: name("outbox"), reason: "message \(message.id) to \(message.recipient): \(problem)"))
            perform { (store: any ClientStateStore) throws(ClientStateError) in try store.setAside(name("outbox")) }
            return []
        }
        return saved.messages
    }

    func saveOutbox(_ messages: [SavedMessage]) {
        save(SavedOutbox(version: Self.version, userID: userID, messages: messages), "outbox", secret: false)
    }

    var grant: SavedGrant? { load(SavedGrant.self, "grant", version: \.version, user: \.userID) }

    func saveGrant(_ grant: SavedGrant) { save(grant, "grant", secret: true) }

    func removeGrant() {
        perform { (store: any ClientStateStore) throws(ClientStateError) in try store.remove(name("grant")) }
    }

    var pushData: Data? { load(SavedPush.self, "push", version: \.version, user: \.userID)?.pushData }

    /// This device's ID, made once and kept (push data is kept per device at the service).
    var deviceID: String? { load(SavedDevice.self, "device", version: \.version, user: \.userID)?.deviceID }

    func saveDeviceID(_ id: String) {
        save(SavedDevice(version: Self.version, userID: userID, deviceID: id), "device", secret: false)
    }

    func removePushData() {
        perform { (store: any ClientStateStore) throws(ClientStateError) in try store.remove(name("push")) }
    }

    func savePushData(_ data: Data) {
        save(SavedPush(version: Self.version, userID: userID, pushData: data), "push", secret: false)
    }

    // MARK: Encoding

    /// The record's file name: the user ID with everything but letters, digits, `-` and `_` percent-encoded.
    func name(_ record: String) -> String {
        var safe = ""
        for byte in userID.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                safe.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                safe += String(format: "%%%02X", byte)
            }
        }
        return "\(safe).\(record).json"
    }

    private func load<Record: Decodable>(
        _ type: Record.Type, _ record: String, version: KeyPath<Record, Int>, user: KeyPath<Record, String>
    ) -> Record? {
        guard let store else { return nil }
        let name = name(record)
        let data: Data
        do {
            guard let read = try store.read(name) else { return nil }
            data = read
        } catch {
            report(error)
            return nil
        }
        let reason: String
        do {
            let decoded = try JSONDecoder().decode(Record.self, from: data)
            if decoded[keyPath: version] != Self.version {
                reason = "version \(decoded[keyPath: version]), this client reads \(Self.version)"
            } else if decoded[keyPath: user] != userID {
                reason = "written for user '\(decoded[keyPath: user])'"
            } else {
                return decoded
            }
        } catch {
            reason = "not a \(record) record (\(data.count) bytes): \(error)"
        }
        report(.corrupt(record: name, reason: reason))
        perform { (store: any ClientStateStore) throws(ClientStateError) in try store.setAside(name) }
        return nil
    }

    private func save<Record: Encodable>(_ value: Record, _ record: String, secret: Bool) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(value) else { return }
        perform { (store: any ClientStateStore) throws(ClientStateError) in
            try store.write(data, to: name(record), secret: secret)
        }
    }

    private func perform(_ body: (any ClientStateStore) throws(ClientStateError) -> Void) {
        guard let store else { return }
        do { try body(store) } catch { report(error) }
    }
}

extension ClientState {
    struct SavedCallStatistics: Codable {
        var version: Int
        var userID: String
        var records: [CallStatisticsRecord]
    }

    /// Call statistics not yet taken by the registration service.
    var callStatistics: [CallStatisticsRecord] {
        load(SavedCallStatistics.self, "call-statistics", version: \.version, user: \.userID)?.records ?? []
    }

    func saveCallStatistics(_ records: [CallStatisticsRecord]) {
        save(
            SavedCallStatistics(version: Self.version, userID: userID, records: records), "call-statistics",
            secret: false)
    }
}
