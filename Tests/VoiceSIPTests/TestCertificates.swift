import Foundation
import VoiceSIP
import VoiceTestSupport

/// The test PKI (VoiceTestSupport's `TestPKI`) with the SIP endpoint configurations the TLS tests use.
typealias TestCertificates = TestPKI

extension TestPKI {
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
}
