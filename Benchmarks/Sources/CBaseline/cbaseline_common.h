#ifndef VOICEENGINE_CBASELINE_COMMON_H
#define VOICEENGINE_CBASELINE_COMMON_H
// What the C loops share (private to CBaseline, not part of the module's headers): the srtp_t every loop creates
// and the RTP header every loop writes.
#include <stdint.h>
#include "CSRTP.h"  // the engine's libsrtp build (../../../Sources/CSRTP)

/// srtp_create with AES_CM_128_HMAC_SHA1_80 for RTP and RTCP, ssrc_any_outbound or ssrc_any_inbound, a 30-byte
/// `key`, replay window 1024, no repeated transmission. Returns 1 on success.
int cb_srtp_create_default(srtp_t *session, const uint8_t *key, int outbound);

/// Writes the 12-byte RTP header (version 2, no padding, extension or CSRC) at `p`.
void cb_rtp_write_header(uint8_t *p, uint8_t payload_type, int marker, uint16_t sequence, uint32_t timestamp,
                         uint32_t ssrc);

#endif
