#ifndef VOICEENGINE_CBASELINE_SIP_H
#define VOICEENGINE_CBASELINE_SIP_H
// The C side of `voice-bench sip`: libre's SIP parser (sip_msg_decode, the one baresip uses), loaded at run time
// from Debian's libre0 (installed with baresip) so that building the benchmarks needs no libre headers.
#include <stddef.h>
#include <stdint.h>

/// dlopen("libre.so.0") and look up sip_msg_decode, mbuf_alloc, mem_deref. 0 on success, -1 when libre is absent.
int32_t cb_sip_open(void);

/// Decodes the message `iterations` times (a fresh decode of the same bytes each time, its result freed).
/// Returns how many decodes succeeded, or -1 when cb_sip_open has not succeeded.
int64_t cb_sip_parse_loop(const uint8_t *message, size_t length, int64_t iterations);

#endif
