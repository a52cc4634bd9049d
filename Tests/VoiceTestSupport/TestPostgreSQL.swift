import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of the test process's own (Debian's `postgresql`): `initdb` in a temporary directory,
/// the server on a free loopback port and a socket in that directory, started at the first use and stopped when
/// the process exits (a watchdog stops it too if the process dies without exiting). Each test takes a fresh
/// database of its own from it (``database()``), so tests run in parallel without seeing each other's rows.
/// Run as the `postgres` user when the tests run as root (the server refuses root).
public final class TestPostgreSQL: Sendable {
    public static let user = "voiceengine"
    public let port: Int
    public let password: String
    /// Holds the data directory and the server's socket.
    public let directory: URL
    private let server: ChildProcessGroup

    /// The directory of `initdb`, `postgres` and `psql` (the newest installed version), nil when not installed.
    public static let binaries: URL? = {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.compactMap { Int($0) }.sorted().reversed().map {
            root.appendingPathComponent("\($0)/bin")
        }.first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("postgres").path) }
    }()

    /// Why PostgreSQL cannot run here, nil when it can.
    public static var unavailableReason: String? {
        guard binaries != nil else {
            return "PostgreSQL is not installed (make test-deps installs postgresql)"
        }
        if getuid() == 0, getpwnam("postgres") == nil {
            return "the tests run as root and there is no postgres user to run PostgreSQL as"
        }
        return nil
    }

    /// The process's cluster, started at the first call (a few seconds); the error says why it did not start.
    public static func shared() throws -> TestPostgreSQL { try sharedCluster.get() }

    private static let sharedCluster: Result<TestPostgreSQL, TestPostgreSQLError> = {
        do {
            let cluster = try TestPostgreSQL()
            atexit {
                if case .success(let cluster) = TestPostgreSQL.sharedCluster { cluster.stop() }
            }
            return .success(cluster)
        } catch let error as TestPostgreSQLError {
            return .failure(error)
        } catch {
            return .failure(TestPostgreSQLError(description: "\(error)"))
        }
    }()

    private init() throws {
        if let reason = Self.unavailableReason { throw TestPostgreSQLError(description: reason) }
        let bin = Self.binaries!
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("voiceengine-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        password = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let passwordFile = directory.appendingPathComponent("password")
        try password.write(to: passwordFile, atomically: true, encoding: .utf8)
        // The server refuses to run as root: as postgres then, owning the directory.
        let asServerUser = getuid() == 0 ? "setpriv --reuid=postgres --regid=postgres --init-groups " : ""
        if getuid() == 0 {
            let owned = ChildProcessGroup.shell("chown -R postgres:postgres '\(directory.path)'")
            guard owned.status == 0 else { throw TestPostgreSQLError(description: "chown: \(owned.output)") }
        }
        let data = directory.appendingPathComponent("data").path
        let initdb = ChildProcessGroup.shell(
            "\(asServerUser)'\(bin.path)/initdb' -D '\(data)' -U \(Self.user) --pwfile='\(passwordFile.path)' "
                + "--auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync")
        guard initdb.status == 0 else { throw TestPostgreSQLError(description: "initdb failed:\n\(initdb.output)") }
        port = Self.freeTCPPort()
        // Durability settings off: the cluster lives as long as the test process.
        let postgres =
            "\(asServerUser)'\(bin.path)/postgres' -D '\(data)' -p \(port) -k '\(directory.path)' "
            + "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            + "-c max_connections=200"
        // The watchdog: stops the server (fast shutdown) when the test process is gone.
        let script = """
            \(postgres) &
            server=$!
            trap 'kill -INT $server; wait $server; exit 0' TERM INT
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 1 & wait $!; done
            kill -INT $server 2>/dev/null; wait $server
            """
        server = try ChildProcessGroup(
            "/bin/sh", ["-c", script], log: directory.appendingPathComponent("postgres.log"))
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if (try? psql(database: "postgres", "SELECT 1")) == "1" { return }
            guard server.isRunning else { break }
            usleep(100_000)
        }
        let tail = server.logTail
        server.stop()
        throw TestPostgreSQLError(description: "PostgreSQL did not start on 127.0.0.1:\(port):\n\(tail)")
    }

    /// Stops the server (fast shutdown: open connections are closed) and removes its directory.
    public func stop() {
        if server.isRunning { kill(-server.pid, SIGINT) }
        let deadline = Date().addingTimeInterval(5)
        while server.isRunning, Date() < deadline { usleep(20_000) }
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A new, empty database of this cluster.
    public func database() throws -> TestDatabase {
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        _ = try psql(database: "postgres", "CREATE DATABASE \(name)")
        return TestDatabase(cluster: self, name: name)
    }

    /// Runs `sql` (statements, or the contents of `files` after it) with psql in `database`; psql's unaligned
    /// output, trimmed. Throws psql's message on the first error.
    @discardableResult
    public func psql(database: String, _ sql: String, files: [String] = []) throws -> String {
        let log = directory.appendingPathComponent("psql-\(UUID().uuidString).log")
        let script = directory.appendingPathComponent("psql-\(UUID().uuidString).sql")
        defer {
            try? FileManager.default.removeItem(at: log)
            try? FileManager.default.removeItem(at: script)
        }
        var text = sql.isEmpty ? "" : sql + ";\n"
        for file in files { text += try String(contentsOfFile: file, encoding: .utf8) + "\n" }
        try text.write(to: script, atomically: true, encoding: .utf8)
        let process = try ChildProcessGroup(
            "/usr/bin/env",
            [
                "PGPASSWORD=\(password)", Self.binaries!.appendingPathComponent("psql").path, "-h", "127.0.0.1",
                "-p", "\(port)", "-U", Self.user, "-d", database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                "-f", script.path
            ], log: log)
        let status = process.waitForExit()
        let output = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").trimmingCharacters(
            in: .whitespacesAndNewlines)
        guard status == 0 else { throw TestPostgreSQLError(description: "psql: \(output)") }
        return output
    }

    /// A loopback TCP port nobody listens on now (the kernel's pick for port 0).
    static func freeTCPPort() -> Int {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketDescriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketDescriptor, $0, length)
                return getsockname(socketDescriptor, $0, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// One database of the test cluster.
public struct TestDatabase: Sendable {
    public let cluster: TestPostgreSQL
    public let name: String

    /// libpq's URL with the password in it (for Kamailio's db_postgres and the registration store).
    public var url: String {
        "postgres://\(TestPostgreSQL.user):\(cluster.password)@127.0.0.1:\(cluster.port)/\(name)"
    }

    /// Runs SQL in this database (see ``TestPostgreSQL/psql(database:_:files:)``).
    @discardableResult
    public func psql(_ sql: String, files: [String] = []) throws -> String {
        try cluster.psql(database: name, sql, files: files)
    }

    /// Drops the database (closing whatever is still connected to it).
    public func drop() {
        _ = try? cluster.psql(database: "postgres", "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }
}

public struct TestPostgreSQLError: Error, CustomStringConvertible {
    public let description: String
}
