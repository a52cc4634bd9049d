import Foundation
import VoiceSIP
import VoiceTestSupport

/// A throwaway PKI made with the openssl command for one test run: a CA, a server certificate it signs for
/// `voiceengine.test`, 127.0.0.1 and ::1, one it signs for the name `voiceengine.test` only, and a second,
/// unrelated CA whose trust must get a TLS peer refused.
struct TestCertificates {
    static let openssl = "/usr/bin/openssl"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: openssl) }

    let directory: URL
    var caFile: String { directory.appendingPathComponent("ca.pem").path }
    var otherCAFile: String { directory.appendingPathComponent("other-ca.pem").path }
    var serverCertificateFile: String { directory.appendingPathComponent("server.pem").path }
    var serverKeyFile: String { directory.appendingPathComponent("server.key").path }
    /// Same key, the DNS name only (no IP address): only a client that knows the server by that name accepts it.
    var namedOnlyCertificateFile: String { directory.appendingPathComponent("server-named.pem").path }

    /// A client that trusts our CA (and presents the server certificate when it listens for TLS itself).
    var trustingConfiguration: SIPTLSConfiguration {
        SIPTLSConfiguration(
            trustRoots: .pemFile(caFile), certificateChainFile: serverCertificateFile, privateKeyFile: serverKeyFile)
    }

    /// A client that trusts only the other CA: every server of ours must be refused.
    var distrustingConfiguration: SIPTLSConfiguration {
        SIPTLSConfiguration(
            trustRoots: .pemFile(otherCAFile), certificateChainFile: serverCertificateFile,
            privateKeyFile: serverKeyFile)
    }

    init() throws {
        directory = try makeTemporaryDirectory("sip-tls")
        let ext = directory.appendingPathComponent("server.ext")
        try
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:voiceengine.test,IP:127.0.0.1,IP:::1\n"
            .write(to: ext, atomically: true, encoding: .utf8)
        func file(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let caExtensions = [
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"
        ]
        try run(
            ["req", "-x509"] + ec + [
                "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "2", "-subj", "/CN=VoiceEngine Test CA"
            ] + caExtensions)
        try run(
            ["req", "-x509"] + ec + [
                "-keyout", file("other-ca.key"), "-out", file("other-ca.pem"), "-days", "2", "-subj",
                "/CN=Someone Else CA"
            ] + caExtensions)
        try run(
            ["req"] + ec + ["-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=voiceengine.test"])
        let namedExt = directory.appendingPathComponent("server-named.ext")
        try
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:voiceengine.test\n"
            .write(to: namedExt, atomically: true, encoding: .utf8)
        try run([
            "x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
            "-CAcreateserial",
            "-out", file("server-named.pem"), "-days", "2", "-extfile", namedExt.path
        ])
        try run([
            "x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
            "-CAcreateserial", "-out", file("server.pem"),
            "-days", "2", "-extfile", ext.path
        ])
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    private func run(_ arguments: [String]) throws {
        let log = directory.appendingPathComponent("openssl.log")
        let process = try ChildProcessGroup(Self.openssl, arguments, log: log)
        let status = process.waitForExit()
        guard status == 0 else {
            throw SIPError(.tls, "openssl \(arguments.joined(separator: " ")) exited \(status): \(process.logTail)")
        }
    }
}
