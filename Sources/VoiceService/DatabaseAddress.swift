import Foundation
import NIOSSL
import PostgresNIO

/// Where the service's PostgreSQL database is, from a URL in libpq's form:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`, or `postgres://USER@/DATABASE?host=/socket/directory` for a
/// unix-domain socket (PORT names the socket file, `.s.PGSQL.<port>`, as in libpq). A password is better kept in a file (``RegistrationStore/open(_:password:)``)
/// than in the URL, which shows in the process list.
///
/// Secure by default: a server that is neither on loopback nor on a unix socket is reached over TLS only, its
/// certificate checked against the system's trust roots.
public struct DatabaseAddress: Sendable, Equatable {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket file's path.
        case unixSocket(path: String)
    }

    public var endpoint: Endpoint
    public var username: String
    public var password: String?
    public var database: String

    public init(endpoint: Endpoint, username: String, password: String? = nil, database: String) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public init(url: String) throws(ParseError) {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme)
        else { throw ParseError(description: "\(url): expected postgres://USER@HOST:PORT/DATABASE") }
        guard let user = components.user, !user.isEmpty else {
            throw ParseError(description: "\(url): no user name (postgres://USER@…)")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw ParseError(description: "\(url): no database name (…/DATABASE)")
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw ParseError(description: "\(url): port \(port) out of range") }
        let socketDirectory = components.queryItems?.first { $0.name == "host" }?.value
        let host = components.host ?? ""
        if let socketDirectory, socketDirectory.hasPrefix("/"), host.isEmpty {
            endpoint = .unixSocket(path: socketDirectory + "/.s.PGSQL.\(port)")
        } else if !host.isEmpty {
            endpoint = .tcp(host: host, port: port)
        } else {
            throw ParseError(description: "\(url): no host (…@HOST/… or ?host=/socket/directory)")
        }
        username = user
        password = components.password
        self.database = database
    }

    /// Whether the connection stays on this machine (loopback or a unix socket), where TLS adds nothing.
    public var isLocal: Bool {
        switch endpoint {
        case .unixSocket: true
        case .tcp(let host, _): host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        }
    }

    func clientConfiguration() -> PostgresClient.Configuration {
        var configuration =
            switch endpoint {
            case .unixSocket(let path):
                PostgresClient.Configuration(
                    unixSocketPath: path, username: username, password: password, database: database)
            case .tcp(let host, let port):
                PostgresClient.Configuration(
                    host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port,
                    username: username, password: password, database: database,
                    tls: isLocal ? .disable : .require(.makeClientConfiguration()))
            }
        // A database that does not answer fails the requests in seconds (the client retries), not after minutes.
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}
