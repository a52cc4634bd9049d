import Foundation

/// `0x` and lowercase hex, the form issue 3's JSON and every listing use.
func hexSSRC(_ ssrc: UInt32) -> String { "0x" + String(ssrc, radix: 16) }

/// An SSRC as a command line gives it: decimal or `0x` hex.
func parseSSRC(_ text: String) -> UInt32? {
    text.lowercased().hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
}

/// A command's failure: one `error:` line on stderr and the exit status of its class (sysexits: 64 usage, 65 bad
/// input data, 1 runtime failure).
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    var status: Int32

    static func usage(_ message: String) -> CommandFailure { CommandFailure(description: message, status: 64) }
    static func dataError(_ message: String) -> CommandFailure { CommandFailure(description: message, status: 65) }
    static func runtime(_ message: String) -> CommandFailure { CommandFailure(description: message, status: 1) }
}
