// See cbaseline_common.h.
#include "cbaseline_common.h"

#include <string.h>

int cb_srtp_create_default(srtp_t *session, const uint8_t *key, int outbound) {
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    srtp_crypto_policy_set_rtp_default(&policy.rtp);
    srtp_crypto_policy_set_rtcp_default(&policy.rtcp);
    policy.ssrc.type = outbound ? ssrc_any_outbound : ssrc_any_inbound;
    policy.key = (unsigned char *)key;
    policy.window_size = 1024;
    policy.allow_repeat_tx = 0;
    policy.next = NULL;
    return srtp_create(session, &policy) == srtp_err_status_ok;
}

void cb_rtp_write_header(uint8_t *p, uint8_t payload_type, int marker, uint16_t sequence, uint32_t timestamp,
                         uint32_t ssrc) {
    p[0] = 0x80;
    p[1] = (uint8_t)((marker ? 0x80 : 0) | payload_type);
    p[2] = (uint8_t)(sequence >> 8);
    p[3] = (uint8_t)sequence;
    p[4] = (uint8_t)(timestamp >> 24);
    p[5] = (uint8_t)(timestamp >> 16);
    p[6] = (uint8_t)(timestamp >> 8);
    p[7] = (uint8_t)timestamp;
    p[8] = (uint8_t)(ssrc >> 24);
    p[9] = (uint8_t)(ssrc >> 16);
    p[10] = (uint8_t)(ssrc >> 8);
    p[11] = (uint8_t)ssrc;
}
