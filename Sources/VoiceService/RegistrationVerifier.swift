import Foundation
import VoiceClientWire

/// The registration service's decision, without I/O: checks a ``RegistrationRequest`` against the configured
/// applications and the last sequence accepted per (application key, user ID), in this order — well-formed user
/// ID, known key, signature, increasing sequence — and records the sequence only when everything holds, so a
/// refused request never moves it.
public struct RegistrationVerifier: Sendable {
    /// Application key → application secret.
    public var applications: [String: String]
    /// "key\u{0}user" → last accepted sequence.
    public private(set) var lastSequences: [String: UInt64]
    /// "key\u{0}user" → the device's push data from its last accepted registration.
    public private(set) var pushData: [String: Data] = [:]

    public static let maximumPushDataBytes = PushData.maximumBytes

    public init(applications: [String: String], lastSequences: [String: UInt64] = [:]) {
        self.applications = applications
        self.lastSequences = lastSequences
    }

    static func key(_ applicationKey: String, _ userID: String) -> String { applicationKey + "\u{0}" + userID }

    /// Accepts `request` (recording its sequence and push data) or says why not.
    public mutating func verify(_ request: RegistrationRequest) throws(RegistrationRefusal) {
        do { _ = try UserID.validate(request.userID) } catch { throw .invalidUserID(error.reason) }
        guard let secret = applications[request.applicationKey] else {
            throw .unknownApplicationKey(request.applicationKey)
        }
        let expected = SignedRegistration.sign(
            userID: request.userID, applicationKey: request.applicationKey, sequence: request.sequence,
            applicationSecret: secret)
        guard Self.constantTimeEqual(Array(expected.signature.utf8), Array(request.signature.utf8)) else {
            throw .forgedSignature
        }
        let slot = Self.key(request.applicationKey, request.userID)
        if let last = lastSequences[slot], request.sequence <= last {
            throw .sequenceNotIncreasing(received: request.sequence, lastAccepted: last)
        }
        if let data = request.pushData, data.count > Self.maximumPushDataBytes { throw .pushDataTooLarge(data.count) }
        lastSequences[slot] = request.sequence
        pushData[slot] = request.pushData
    }

    public func pushData(applicationKey: String, userID: String) -> Data? { pushData[Self.key(applicationKey, userID)] }

    /// Compares without stopping at the first difference, so timing does not reveal how much of a forgery matched.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
