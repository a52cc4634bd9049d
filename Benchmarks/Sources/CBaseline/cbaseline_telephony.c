#include "cbaseline_telephony.h"

#include <stdlib.h>
#include <spandsp/telephony.h>
#include <spandsp/bit_operations.h>
#include <spandsp/g711.h>
#include <spandsp/g722.h>
#include <spandsp/plc.h>

struct cb_telephony {
    int g722;
    g711_state_t *encode711, *decode711;
    g722_encode_state_t *encode722;
    g722_decode_state_t *decode722;
    plc_state_t *plc;
};

cb_telephony *cb_telephony_create(int32_t codec) {
    cb_telephony *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->g722 = codec == 2;
    if (t->g722) {
        t->encode722 = g722_encode_init(NULL, 64000, 0);
        t->decode722 = g722_decode_init(NULL, 64000, 0);
    } else {
        t->encode711 = g711_init(NULL, codec == 0 ? G711_ULAW : G711_ALAW);
        t->decode711 = g711_init(NULL, codec == 0 ? G711_ULAW : G711_ALAW);
    }
    t->plc = plc_init(NULL);
    return t;
}

void cb_telephony_destroy(cb_telephony *t) {
    if (t->encode711) g711_free(t->encode711);
    if (t->decode711) g711_free(t->decode711);
    if (t->encode722) g722_encode_free(t->encode722);
    if (t->decode722) g722_decode_free(t->decode722);
    plc_free(t->plc);
    free(t);
}

int64_t cb_telephony_loop(cb_telephony *t, const int16_t *pcm, int32_t frame_samples, int32_t frame_count,
                          int64_t start, int64_t iterations, uint8_t *payload, int16_t *out) {
    int64_t total = 0;
    for (int64_t k = 0; k < iterations; k++) {
        const int16_t *frame = pcm + ((start + k) % frame_count) * frame_samples;
        int bytes, samples;
        if (t->g722) {
            bytes = g722_encode(t->encode722, payload, frame, frame_samples);
            samples = g722_decode(t->decode722, out, payload, bytes);
        } else {
            bytes = g711_encode(t->encode711, payload, frame, frame_samples);
            samples = g711_decode(t->decode711, out, payload, bytes);
        }
        plc_rx(t->plc, out, samples);
        total += samples;
    }
    return total;
}

int64_t cb_telephony_conceal_loop(cb_telephony *t, const uint8_t *encoded, int32_t payload_bytes,
                                  int32_t frame_samples, int32_t frame_count, int64_t start, int64_t iterations,
                                  int16_t *out) {
    int64_t total = 0;
    for (int64_t k = 0; k < iterations; k++) {
        const uint8_t *payload = encoded + ((start + 2 * k) % frame_count) * payload_bytes;
        int samples;
        if (t->g722)
            samples = g722_decode(t->decode722, out, payload, payload_bytes);
        else
            samples = g711_decode(t->decode711, out, payload, payload_bytes);
        plc_rx(t->plc, out, samples);
        total += samples;
        total += plc_fillin(t->plc, out, frame_samples);
    }
    return total;
}
