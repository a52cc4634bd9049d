/// The calling SDKs' rule for user IDs, checked before any network traffic: printable ASCII (0x20…0x7E) only, at
/// least one and at most 40 characters.
public enum UserID {
    public static let maximumLength = 40

    /// Returns `id` when it follows the rule.
    /// - Throws: ``UserIDError`` naming what is wrong.
    public static func validate(_ id: String) throws(UserIDError) -> String {
        if id.isEmpty { throw UserIDError(id: id, reason: "a user ID cannot be empty") }
        for scalar in id.unicodeScalars where !(0x20...0x7E).contains(scalar.value) {
            throw UserIDError(
                id: id, reason: "character U+\(String(scalar.value, radix: 16, uppercase: true)) is not printable ASCII"
            )
        }
        let count = id.unicodeScalars.count
        if count > maximumLength {
            throw UserIDError(id: id, reason: "\(count) characters, at most \(maximumLength) allowed")
        }
        return id
    }
}

/// A user ID that breaks the rule, with the reason a person can act on.
public struct UserIDError: Error, Equatable, Sendable, CustomStringConvertible {
    public var id: String
    public var reason: String

    public init(id: String, reason: String) { (self.id, self.reason) = (id, reason) }

    public var description: String { "invalid user ID '\(id)': \(reason)" }
}
