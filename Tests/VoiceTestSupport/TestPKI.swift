import Foundation

/// A throwaway PKI made with the openssl command for one test run: a CA, a server certificate it signs for
/// `voiceengine.test`, 127.0.0.1 and ::1, one it signs for the name `voiceengine.test` only, and a second,
/// unrelated CA (with a server certificate of its own for the same names) whose trust must get a TLS peer refused.
public struct TestPKI: Sendable {
    public static let openssl = "/usr/bin/openssl"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: openssl) }

    public struct OpenSSLFailed: Error, CustomStringConvertible {
        public let description: String
    }

    public let directory: URL
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }
    public var otherCAFile: String { directory.appendingPathComponent("other-ca.pem").path }
    public var serverCertificateFile: String { directory.appendingPathComponent("server.pem").path }
    public var serverKeyFile: String { directory.appendingPathComponent("server.key").path }
    /// Same key, the DNS name only (no IP address): only a client that knows the server by that name accepts it.
    public var namedOnlyCertificateFile: String { directory.appendingPathComponent("server-named.pem").path }
    /// Same key and names, signed by the other CA: a client that trusts only `caFile` refuses it.
    public var otherCAServerCertificateFile: String { directory.appendingPathComponent("server-other.pem").path }

    public init(prefix: String = "pki") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func file(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let caExtensions = [
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"
        ]
        for (name, subject) in [("ca", "/CN=VoiceEngine Test CA"), ("other-ca", "/CN=Someone Else CA")] {
            try run(
                ["req", "-x509"] + ec + [
                    "-keyout", file("\(name).key"), "-out", file("\(name).pem"), "-days", "2", "-subj", subject
                ] + caExtensions)
        }
        try run(
            ["req"] + ec + ["-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=voiceengine.test"])
        let usage = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n"
        for (name, names, ca) in [
            ("server", "DNS:voiceengine.test,IP:127.0.0.1,IP:::1", "ca"),
            ("server-named", "DNS:voiceengine.test", "ca"),
            ("server-other", "DNS:voiceengine.test,IP:127.0.0.1,IP:::1", "other-ca")
        ] {
            let ext = directory.appendingPathComponent("\(name).ext")
            try "\(usage)subjectAltName=\(names)\n".write(to: ext, atomically: true, encoding: .utf8)
            try run([
                "x509", "-req", "-in", file("server.csr"), "-CA", file("\(ca).pem"), "-CAkey", file("\(ca).key"),
                "-CAcreateserial", "-out", file("\(name).pem"), "-days", "2", "-extfile", ext.path
            ])
        }
    }

    /// Kamailio's tls module file (`modparam("tls", "config", …)`): the server presents `certificate` (the CA's
    /// server certificate by default) with the server key; as a client it trusts only our CA.
    public func kamailioTLSConfiguration(certificate: String? = nil) -> String {
        """
        [server:default]
        method = TLSv1.2+
        verify_certificate = no
        require_certificate = no
        private_key = \(serverKeyFile)
        certificate = \(certificate ?? serverCertificateFile)

        [client:default]
        method = TLSv1.2+
        verify_certificate = yes
        require_certificate = yes
        ca_list = \(caFile)

        """
    }

    public func remove() { try? FileManager.default.removeItem(at: directory) }

    private func run(_ arguments: [String]) throws {
        let log = directory.appendingPathComponent("openssl.log")
        let process = try ChildProcessGroup(Self.openssl, arguments, log: log)
        let status = process.waitForExit()
        guard status == 0 else {
            throw OpenSSLFailed(
                description: "openssl \(arguments.joined(separator: " ")) exited \(status): \(process.logTail)")
        }
    }
}
