import Foundation

/// The SDKs' rules for custom headers on calls and messages: names start with `x-` (any case), are tokens, and
/// names plus values total at most 1024 bytes.
public enum CustomHeaders {
    public static let maximumTotalBytes = 1024

    /// Returns the headers when they follow the rules, else the reason.
    public static func validate(_ headers: [String: String]) throws(VoiceClientError) -> [(name: String, value: String)]
    {
        var total = 0
        var result: [(name: String, value: String)] = []
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            guard name.lowercased().hasPrefix("x-"), name.count > 2 else {
                throw .invalidMessage("custom header '\(name)' must start with x-")
            }
            guard name.unicodeScalars.allSatisfy({ tokenCharacters.contains($0) }) else {
                throw .invalidMessage("custom header name '\(name)' holds a character not allowed in a SIP header name")
            }
            guard value.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }) else {
                throw .invalidMessage("the value of '\(name)' must be printable ASCII on one line")
            }
            total += name.utf8.count + value.utf8.count
            result.append((name, value))
        }
        if total > maximumTotalBytes {
            throw .invalidMessage("custom headers total \(total) bytes, at most \(maximumTotalBytes) allowed")
        }
        return result
    }

    private static let tokenCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.!%*_+`'~".unicodeScalars)
}

/// User IDs in SIP URIs: characters outside RFC 3261's `unreserved` / `user-unreserved` are %-escaped, so any
/// printable-ASCII user ID (spaces, `@`, `:` included) makes a valid `sip:user@domain`.
enum SIPUserPart {
    static func escape(_ userID: String) -> String {
        var result = ""
        for byte in userID.utf8 {
            let scalar = Unicode.Scalar(byte)
            if allowed.contains(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    static func unescape(_ user: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(user.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let allowed = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'()&=+$,;?/".unicodeScalars)
}
