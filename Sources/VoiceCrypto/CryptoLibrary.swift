internal import COpenSSL

/// OpenSSL's libcrypto as a whole process uses it.
public enum CryptoLibrary {
    /// Keeps libcrypto usable until the process is gone. By default OpenSSL frees its algorithms in an `atexit`
    /// handler, and a thread still hashing then (a call whose teardown outlives `main`: the TURN deallocation's
    /// HMAC, an SRTP key) fails, which VoiceCrypto treats as a crash. A program calls this first, before anything
    /// uses OpenSSL: once libcrypto has initialised itself, the handler is registered.
    public static func skipCleanupAtExit() {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
    }
}
