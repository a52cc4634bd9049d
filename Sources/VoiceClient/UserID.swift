/// The calling SDKs' rule for user IDs, checked before any network traffic: printable ASCII (0x20…0x7E) only, at
/// least one and at most 40 characters.
public enum UserID {
    public static let maximumLength = 40

    /// Returns `id` when it follows the rule.
    /// - Throws: ``VoiceClientError/invalidUserID(_:reason:)`` naming what is wrong.
    public static func validate(_ id: String) throws(VoiceClientError) -> String {
        if id.isEmpty { throw .invalidUserID(id, reason: "a user ID cannot be empty") }
        for scalar in id.unicodeScalars where !(0x20...0x7E).contains(scalar.value) {
            throw .invalidUserID(id, reason: "character U+\(String(scalar.value, radix: 16, uppercase: true)) is not printable ASCII")
        }
        let count = id.unicodeScalars.count
        if count > maximumLength { throw .invalidUserID(id, reason: "\(count) characters, at most \(maximumLength) allowed") }
        return id
    }
}
