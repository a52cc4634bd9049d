#include "cbaseline_srtp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "CSRTP.h"  // the engine's libsrtp build (../../../Sources/CSRTP)

struct cb_srtp {
    srtp_t session;
    int32_t suite, outbound;
    uint8_t key[64];
};

static int srtp_initialised = 0;

void cb_srtp_init_once(void) {
    if (!srtp_initialised) {
        (void)srtp_init();
        srtp_initialised = 1;
    }
}

typedef void (*policy_setter)(srtp_crypto_policy_t *);

// Per suite index (see cbaseline_srtp.h): the RTP and RTCP crypto policies SRTPSession.makePolicy sets (SRTCP keeps
// 80-bit tags with AES_CM_128_HMAC_SHA1_32, RFC 4568 §6.2.2).
static const policy_setter rtp_policies[5] = {
    srtp_crypto_policy_set_rtp_default /* = AES_CM_128_HMAC_SHA1_80 */, srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32,
    srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80, srtp_crypto_policy_set_aes_gcm_128_16_auth,
    srtp_crypto_policy_set_aes_gcm_256_16_auth};
static const policy_setter rtcp_policies[5] = {
    srtp_crypto_policy_set_rtcp_default, srtp_crypto_policy_set_rtcp_default,
    srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80, srtp_crypto_policy_set_aes_gcm_128_16_auth,
    srtp_crypto_policy_set_aes_gcm_256_16_auth};

static int make_session(cb_srtp *s) {
    if (s->suite < 0 || s->suite > 4) return 0;
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    rtp_policies[s->suite](&policy.rtp);
    rtcp_policies[s->suite](&policy.rtcp);
    policy.ssrc.type = s->outbound ? ssrc_any_outbound : ssrc_any_inbound;
    policy.key = s->key;
    policy.window_size = 1024;
    policy.allow_repeat_tx = 0;
    policy.next = NULL;
    return srtp_create(&s->session, &policy) == srtp_err_status_ok;
}

cb_srtp *cb_srtp_create(int32_t suite, const uint8_t *key, int32_t key_length, int32_t outbound) {
    if (key_length < 0 || key_length > 64) return NULL;
    cb_srtp_init_once();
    cb_srtp *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->suite = suite;
    s->outbound = outbound;
    memcpy(s->key, key, (size_t)key_length);
    if (!make_session(s)) {
        free(s);
        return NULL;
    }
    return s;
}

void cb_srtp_destroy(cb_srtp *s) {
    if (s == NULL) return;
    srtp_dealloc(s->session);
    free(s);
}

// The send side of one packet: copy the template, write the sequence number, protect in place (*len: in, out).
static inline srtp_err_status_t protect_next(cb_srtp *s, const uint8_t *packet, int32_t length, uint16_t seq,
                                             uint8_t *buffer, int *len) {
    memcpy(buffer, packet, (size_t)length);
    buffer[2] = (uint8_t)(seq >> 8);
    buffer[3] = (uint8_t)seq;
    *len = length;
    return srtp_protect(s->session, buffer, len);
}

int64_t cb_srtp_protect_loop(cb_srtp *s, const uint8_t *packet, int32_t length, uint16_t *sequence,
                             int64_t iterations, uint8_t *buffer, int32_t capacity) {
    if (length < 12 || length > capacity) return -2000 - (int64_t)srtp_err_status_bad_param;
    int64_t total = 0;
    uint16_t seq = *sequence;
    for (int64_t k = 0; k < iterations; k++) {
        int len;
        srtp_err_status_t status = protect_next(s, packet, length, seq++, buffer, &len);
        if (status != srtp_err_status_ok) return -2000 - (int64_t)status;
        total += len;
    }
    *sequence = seq;
    return total;
}

int64_t cb_srtp_unprotect_loop(cb_srtp *s, const uint8_t *packets, int32_t stride, const int32_t *lengths,
                               int32_t count, int64_t *next, int64_t iterations, uint8_t *buffer, int32_t capacity) {
    int64_t total = 0;
    int64_t position = *next;
    for (int64_t k = 0; k < iterations; k++) {
        if (position == count) {
            srtp_dealloc(s->session);
            if (!make_session(s)) return -2000 - (int64_t)srtp_err_status_init_fail;
            position = 0;
        }
        int len = lengths[position];
        if (len > capacity) return -2000 - (int64_t)srtp_err_status_bad_param;
        memcpy(buffer, packets + position * (int64_t)stride, (size_t)len);
        srtp_err_status_t status = srtp_unprotect(s->session, buffer, &len);
        if (status != srtp_err_status_ok) return -2000 - (int64_t)status;
        total += len;
        position++;
    }
    *next = position;
    return total;
}

int64_t cb_srtp_udp_loop(cb_srtp *out, cb_srtp *in, int32_t tx, int32_t rx, uint16_t port, const uint8_t *packet,
                         int32_t length, uint16_t *sequence, int64_t iterations, uint8_t *buffer, uint8_t *received,
                         int32_t capacity) {
    if (length < 12 || length > capacity) return -2000 - (int64_t)srtp_err_status_bad_param;
    struct sockaddr_in to;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int64_t total = 0;
    uint16_t seq = *sequence;
    for (int64_t k = 0; k < iterations; k++) {
        int len;
        srtp_err_status_t status = protect_next(out, packet, length, seq++, buffer, &len);
        if (status != srtp_err_status_ok) return -2000 - (int64_t)status;
        if (sendto(tx, buffer, (size_t)len, 0, (const struct sockaddr *)&to, sizeof to) != len) return -3000;
        struct pollfd p = {rx, POLLIN, 0};
        while (poll(&p, 1, 100) <= 0) {}
        // Drain until EAGAIN, as the transport's receive loop does.
        int got = 0;
        for (;;) {
            struct sockaddr_storage from;
            socklen_t from_length = sizeof from;
            ssize_t n = recvfrom(rx, received, (size_t)capacity, MSG_DONTWAIT, (struct sockaddr *)&from, &from_length);
            if (n < 0) break;
            if (n == 0 || received[0] < 128 || received[0] > 191) return -3002;  // RFC 7983: RTP/RTCP
            int rlen = (int)n;
            status = srtp_unprotect(in->session, received, &rlen);
            if (status != srtp_err_status_ok) return -2000 - (int64_t)status;
            total += rlen;
            got++;
        }
        if (got == 0) return -3001;
    }
    *sequence = seq;
    return total;
}
