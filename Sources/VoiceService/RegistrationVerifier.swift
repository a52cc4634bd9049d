import Foundation
import VoiceClientWire

/// The registration service's checks that need no state, in this order: well-formed user ID, known key,
/// signature, push data size. The sequence, the one check against state, is the store's
/// (``RegistrationStore/acceptSequence(applicationKey:userID:sequence:deviceID:pushData:displayName:)``), made atomically so that a
/// refused request never moves it and two nodes never both accept one sequence.
public enum RegistrationVerifier {
    public static let maximumPushDataBytes = PushData.maximumBytes

    /// Accepts `request` signed with `applicationSecret` (nil: no application has its key) or says why not.
    public static func verify(_ request: RegistrationRequest, applicationSecret: String?) throws(RegistrationRefusal) {
        do { _ = try UserID.validate(request.userID) } catch { throw .invalidUserID(error.reason) }
        guard let secret = applicationSecret else { throw .unknownApplicationKey(request.applicationKey) }
        let expected = SignedRegistration.sign(
            userID: request.userID, applicationKey: request.applicationKey, sequence: request.sequence,
            applicationSecret: secret)
        guard constantTimeEqual(Array(expected.signature.utf8), Array(request.signature.utf8)) else {
            throw .forgedSignature
        }
        if let data = request.pushData, data.count > maximumPushDataBytes { throw .pushDataTooLarge(data.count) }
        try verifyDevice(request.deviceID ?? "", displayName: request.displayName)
    }

    /// A device ID of at most 128 bytes and a display name of at most ``PushData/maximumDisplayNameBytes``.
    public static func verifyDevice(_ deviceID: String, displayName: String?) throws(RegistrationRefusal) {
        guard deviceID.utf8.count <= 128 else { throw .malformedRequest("the device ID is longer than 128 bytes") }
        if let displayName, displayName.utf8.count > PushData.maximumDisplayNameBytes {
            throw .malformedRequest("the display name is longer than \(PushData.maximumDisplayNameBytes) bytes")
        }
    }

    /// Compares without stopping at the first difference, so timing does not reveal how much of a forgery matched.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
