import ArgumentParser
import Foundation

/// How `voice-engine` ends: one status per class of outcome, the sysexits(3) number where one fits. The README's
/// command-line section documents them; every command ends with one of these.
enum ExitStatus: Int32, Sendable {
    case success = 0
    /// A runtime failure: a device, the network, a file that cannot be written, a call without media, a final
    /// SIP response other than 2xx, a failed check.
    case failure = 1
    /// EX_USAGE: an unknown or missing option, a value outside its range.
    case usage = 64
    /// EX_DATAERR: an unreadable or malformed WAV, capture, trace, key or secret.
    case dataError = 65
    /// EX_NOHOST: a host name that does not resolve.
    case noHost = 68
    /// EX_UNAVAILABLE: no answer, or the transport failed.
    case unavailable = 69
    /// EX_NOPERM: the server refused the credentials.
    case noPermission = 77
}

/// The one error every command throws: its message and exit status. `main` prints it in one place, as one
/// `error:` line on stderr (a usage error adds the command's usage line), and exits with the status.
struct CommandFailure: Error, CustomStringConvertible, Sendable {
    /// The `error:` line's text; nil when the command has already printed what failed (a table of checks, the
    /// client's failure event).
    var message: String?
    var status: ExitStatus
    /// Whether the command's usage line follows the message: for the command line itself being wrong.
    var showsUsage: Bool

    init(_ message: String?, status: ExitStatus, showsUsage: Bool? = nil) {
        self.message = message
        self.status = status
        self.showsUsage = showsUsage ?? (status == .usage)
    }

    var description: String { message ?? "exit status \(status.rawValue)" }

    static func usage(_ message: String) -> CommandFailure { CommandFailure(message, status: .usage) }
    static func dataError(_ message: String) -> CommandFailure { CommandFailure(message, status: .dataError) }
    static func runtime(_ message: String) -> CommandFailure { CommandFailure(message, status: .failure) }
    static func noHost(_ message: String) -> CommandFailure { CommandFailure(message, status: .noHost) }
    static func unavailable(_ message: String) -> CommandFailure { CommandFailure(message, status: .unavailable) }
    static func noPermission(_ message: String) -> CommandFailure { CommandFailure(message, status: .noPermission) }
    /// The command has printed why it failed: no `error:` line, only the status.
    static func alreadyPrinted(_ status: ExitStatus) -> CommandFailure { CommandFailure(nil, status: status) }

    /// Any error a command lets through, in the class it belongs to: ArgumentParser's `ValidationError` is a usage
    /// error, Foundation's file errors are runtime failures in their own sentence (not the domain/code/userInfo
    /// dump), anything else a runtime failure described as it describes itself.
    init(_ error: any Error) {
        switch error {
        case let failure as CommandFailure:
            self = failure
        case let validation as ValidationError:
            self = .usage(validation.message)
        case let code as ExitCode:
            self = .alreadyPrinted(ExitStatus(rawValue: code.rawValue) ?? .failure)
        case let error as NSError where error.domain == NSCocoaErrorDomain || error.domain == NSPOSIXErrorDomain:
            self = .runtime(error.localizedDescription)
        default:
            self = .runtime("\(error)")
        }
    }

    /// Prints the `error:` line (and `usage`, the command's usage line, when the failure shows it) on stderr and
    /// exits with the status.
    func printAndExit(usage: String?) -> Never {
        if let message {
            var text = "error: \(message)\n"
            if showsUsage, let usage { text += "Usage: \(usage)\n" }
            FileHandle.standardError.write(Data(text.utf8))
        }
        exit(status.rawValue)
    }
}
