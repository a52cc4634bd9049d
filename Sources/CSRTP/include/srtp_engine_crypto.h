#ifndef VOICEENGINE_SRTP_ENGINE_CRYPTO_H
#define VOICEENGINE_SRTP_ENGINE_CRYPTO_H
#include <stdint.h>
// VoiceEngine's per-packet crypto for libsrtp (../engine/srtp_engine_crypto.c, ../README.md "Per-packet crypto").

/// Bits of what voiceengine_srtp_install_crypto installed.
#define VOICEENGINE_SRTP_HMAC_SHA1 1
#define VOICEENGINE_SRTP_AESNI_ICM 2

/// After srtp_init(): replaces libsrtp's HMAC-SHA1 with one from precomputed pads over OpenSSL's SHA-1, and, on a
/// CPU with AES-NI, its OpenSSL AES-ICM (128 and 256) with an AES-NI one that keeps the key schedule; libsrtp runs
/// its self-tests on each first. Returns the VOICEENGINE_SRTP_* bits installed, or -1 when a self-test failed
/// (libsrtp's own implementations then stay in place for what was not replaced). Call once, before sessions exist.
int voiceengine_srtp_install_crypto(void);

/// What voiceengine_srtp_install_crypto installed (0 before it ran).
int voiceengine_srtp_installed_crypto(void);

/// For tests: `rounds` random keys, IVs, packet lengths (0–1599 octets) and split points through libsrtp's own
/// AES-ICM (OpenSSL) and HMAC-SHA1 and through these; returns how many outputs differed.
int voiceengine_srtp_crosscheck(int rounds, uint32_t seed);
#endif
