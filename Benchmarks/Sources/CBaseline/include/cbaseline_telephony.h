#ifndef VOICEENGINE_CBASELINE_TELEPHONY_H
#define VOICEENGINE_CBASELINE_TELEPHONY_H
// The C floor of VoiceCodec's telephony codecs: the spandsp calls TelephonyEncoder/TelephonyDecoder make (g711_*,
// g722_*, plc_rx, plc_fillin), in a tight loop. The handle is opaque so no spandsp type reaches Swift.
#include <stdint.h>

typedef struct cb_telephony cb_telephony;

/// An encoder, a decoder and a concealer for `codec`: 0 PCMU, 1 PCMA, 2 G.722 (64 kb/s). NULL on failure.
cb_telephony *cb_telephony_create(int32_t codec);
void cb_telephony_destroy(cb_telephony *telephony);

/// Encodes and decodes (with plc_rx) `iterations` frames; frame k is read from
/// pcm + ((start + k) % frame_count) * frame_samples. Returns the total samples decoded.
int64_t cb_telephony_loop(cb_telephony *telephony, const int16_t *pcm, int32_t frame_samples, int32_t frame_count,
                          int64_t start, int64_t iterations, uint8_t *payload, int16_t *out);

/// Every other frame lost: decodes (with plc_rx) the payload of frame (start + 2k) % frame_count of `encoded`
/// (frame_count payloads of payload_bytes), then conceals the next frame with plc_fillin, `iterations` times.
/// Returns the total samples produced.
int64_t cb_telephony_conceal_loop(cb_telephony *telephony, const uint8_t *encoded, int32_t payload_bytes,
                                  int32_t frame_samples, int32_t frame_count, int64_t start, int64_t iterations,
                                  int16_t *out);
#endif
