#ifndef VOICEENGINE_CDTLS_SHIM_H
#define VOICEENGINE_CDTLS_SHIM_H
// OpenSSL's libssl and the libcrypto pieces VoiceWebRTC needs: DTLS 1.2 with use_srtp (RFC 5764), the ECDSA P-256
// certificate and its fingerprint, HMAC-SHA1 and MD5 for STUN. Only VoiceWebRTC imports this module, so a SIP+SDES
// client never links libssl. The inline functions wrap macros and variadic calls Swift cannot import.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
#include <openssl/md5.h>
#include <sys/time.h>

/// A fresh EC key on P-256 (EVP_EC_gen is a variadic macro in OpenSSL 3).
static inline EVP_PKEY *voice_dtls_generate_p256(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

/// DTLSv1_get_timeout: 1 and the time left when a retransmission timer runs, 0 when none does.
static inline long voice_dtls_get_timeout(SSL *ssl, struct timeval *left) {
    return DTLSv1_get_timeout(ssl, left);
}

/// DTLSv1_handle_timeout: retransmits the last flight when the timer expired (1), 0 when nothing was due, -1 on error.
static inline long voice_dtls_handle_timeout(SSL *ssl) {
    return DTLSv1_handle_timeout(ssl);
}

/// Fixes the path MTU (no kernel query: the packet I/O is ours, through memory BIOs).
static inline void voice_dtls_set_mtu(SSL *ssl, long mtu) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    SSL_set_mtu(ssl, mtu);
    DTLS_set_link_mtu(ssl, mtu);
}

/// DTLS 1.2 only (RFC 8827 requires 1.2 at least; OpenSSL 3.0 has no DTLS 1.3).
static inline int voice_dtls_ctx_set_versions(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION)
        && (int)SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION);
}

/// A memory BIO that reports "retry" rather than EOF when empty (BIO_set_mem_eof_return(bio, -1)).
static inline BIO *voice_dtls_new_mem_bio(void) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio) BIO_set_mem_eof_return(bio, -1);
    return bio;
}

/// Bytes waiting in a memory BIO.
static inline long voice_dtls_bio_pending(BIO *bio) { return (long)BIO_ctrl_pending(bio); }

#endif
