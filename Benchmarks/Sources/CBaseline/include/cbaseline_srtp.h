#ifndef VOICEENGINE_CBASELINE_SRTP_H
#define VOICEENGINE_CBASELINE_SRTP_H
// The plain C floor of `voice-bench srtp`: the libsrtp calls SRTPSession makes (the engine's own libsrtp build,
// Sources/CSRTP), in a tight loop over the same packets. The handle is opaque so no libsrtp type reaches Swift.
#include <stdint.h>

typedef struct cb_srtp cb_srtp;

/// srtp_init once per process. Its status is not checked: when VoiceSRTP has already initialised libsrtp, a
/// second srtp_init returns srtp_err_status_bad_param (its debug module is registered twice) although the crypto
/// kernel is ready; srtp_create fails afterwards if it really is not.
void cb_srtp_init_once(void);

/// srtp_create with the policy SRTPSession builds: `suite` 0 AES_CM_128_HMAC_SHA1_80, 1 AES_CM_128_HMAC_SHA1_32,
/// 2 AES_256_CM_HMAC_SHA1_80, 3 AEAD_AES_128_GCM, 4 AEAD_AES_256_GCM; ssrc_any_outbound or ssrc_any_inbound,
/// replay window 1024, no repeated transmission. The key is copied. NULL on failure.
cb_srtp *cb_srtp_create(int32_t suite, const uint8_t *key, int32_t key_length, int32_t outbound);
void cb_srtp_destroy(cb_srtp *session);

/// Protects `iterations` packets: each copies `packet` (an RTP packet of `length` bytes) into `buffer`, writes
/// sequence number *sequence (then increments it) into bytes 2-3, and calls srtp_protect. Returns the total
/// protected bytes, or -2000 - srtp status.
int64_t cb_srtp_protect_loop(cb_srtp *session, const uint8_t *packet, int32_t length, uint16_t *sequence,
                             int64_t iterations, uint8_t *buffer, int32_t capacity);

/// Unprotects `iterations` packets: packet k is packets + ((*next + k) % count) * stride, lengths[...] bytes,
/// copied into `buffer` and passed to srtp_unprotect. Whenever the position wraps to 0 the inbound session is
/// created anew (srtp_dealloc + srtp_create), since every packet authenticates only once (replay protection).
/// Advances *next. Returns the total unprotected bytes, or -2000 - srtp status.
int64_t cb_srtp_unprotect_loop(cb_srtp *session, const uint8_t *packets, int32_t stride, const int32_t *lengths,
                               int32_t count, int64_t *next, int64_t iterations, uint8_t *buffer, int32_t capacity);


/// The C floor of `voice-bench webrtc`: per packet what the WebRTC transport does after the handshake, as plain
/// calls: copy the packet, write the sequence number, srtp_protect (`out`), sendto 127.0.0.1:`port` from `tx`,
/// poll `rx`, recvfrom into `received` until EAGAIN (as the transport drains), the RFC 7983 first-byte check,
/// srtp_unprotect (`in`). Returns the
/// total unprotected bytes, -2000 - srtp status, or -3000 (sendto), -3001 (recvfrom), -3002 (not RTP).
int64_t cb_srtp_udp_loop(cb_srtp *out, cb_srtp *in, int32_t tx, int32_t rx, uint16_t port, const uint8_t *packet,
                         int32_t length, uint16_t *sequence, int64_t iterations, uint8_t *buffer, uint8_t *received,
                         int32_t capacity);
#endif
