// The C floor of `voice-bench conference`: see include/cbaseline_conference.h.
#include "cbaseline_conference.h"

#include <opus/opus.h>
#include "CSRTP.h"  // the engine's libsrtp build (../../../Sources/CSRTP)
#include "cbaseline_srtp.h"
#include "cbaseline_common.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    CC_MAX_DATAGRAM = 1500,
    CC_CAPACITY = CC_MAX_DATAGRAM + 64,
    CC_TICK = 320,  // 20 ms at 16 kHz
    CC_PENDING = 4,
    CC_DORMANT_TICKS = 10,
    CC_WAKE_TICKS = 1,
    CC_MAX_TALKERS = 16,
    CC_RTP_TICKS = 960
};

typedef struct {
    uint32_t ssrc, timestamp;
    uint16_t sequence;
    srtp_t srtp_out;
} cc_sender;

typedef struct {
    OpusDecoder *decoder;
    OpusEncoder *encoder;
    srtp_t srtp_in;
    cc_sender out;
    uint8_t pending[CC_PENDING][CC_MAX_DATAGRAM];
    int32_t pending_length[CC_PENDING];
    int32_t pending_count;
    int16_t decoded[CC_TICK];
    double level, score, gain;
    int32_t quiet, dormant, talker;
} cc_participant;

struct cb_conference {
    int32_t count, max_talkers, dtx;
    double threshold, hysteresis;
    int32_t limiter_threshold;
    cc_participant *p;
    OpusEncoder *shared;
    double shared_gain;
    int32_t talkers[CC_MAX_TALKERS];
    int32_t talker_count;
    int32_t acc[CC_TICK];
    int16_t out[CC_TICK];
    uint8_t receive[CC_CAPACITY];
    uint8_t opus[CC_MAX_DATAGRAM];
    uint8_t send[CC_CAPACITY];
    cb_conference_counts counts;
};

static OpusEncoder *cc_encoder(int32_t bitrate, int32_t complexity, int32_t dtx) {
    int error = 0;
    OpusEncoder *e = opus_encoder_create(16000, 1, OPUS_APPLICATION_VOIP, &error);
    if (!e || error != OPUS_OK) return NULL;
    opus_encoder_ctl(e, OPUS_SET_BITRATE(bitrate));
    opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(complexity));
    opus_encoder_ctl(e, OPUS_SET_VBR(1));
    opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(0));
    opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(0));
    opus_encoder_ctl(e, OPUS_SET_DTX(dtx));
    return e;
}

cb_conference *cb_conference_create(int32_t participants, int32_t max_talkers, const uint8_t *local_keys,
                                    const uint8_t *remote_keys, int32_t bitrate, int32_t complexity, int32_t dtx,
                                    double speech_threshold_mean_square, int32_t limiter_threshold) {
    if (participants < 1 || max_talkers < 1 || max_talkers > CC_MAX_TALKERS) return NULL;
    cb_srtp_init_once();
    cb_conference *room = calloc(1, sizeof *room);
    if (!room) return NULL;
    room->count = participants;
    room->max_talkers = max_talkers;
    room->dtx = dtx;
    room->threshold = speech_threshold_mean_square;
    room->hysteresis = pow(10, 3.0 / 10);
    room->limiter_threshold = limiter_threshold;
    room->shared_gain = 1;
    room->p = calloc((size_t)participants, sizeof *room->p);
    room->shared = cc_encoder(bitrate, complexity, dtx);
    if (!room->p || !room->shared) {
        cb_conference_destroy(room);
        return NULL;
    }
    for (int32_t i = 0; i < participants; i++) {
        cc_participant *p = &room->p[i];
        int error = 0;
        p->decoder = opus_decoder_create(16000, 1, &error);
        p->encoder = cc_encoder(bitrate, complexity, dtx);
        p->gain = 1;
        p->out.ssrc = 0x10000u + (uint32_t)i;
        p->out.sequence = (uint16_t)(i * 7);
        p->out.timestamp = (uint32_t)i * 1000u;
        if (!p->decoder || error != OPUS_OK || !p->encoder || !cb_srtp_create_default(&p->srtp_in, remote_keys + 30 * i, 0) ||
            !cb_srtp_create_default(&p->out.srtp_out, local_keys + 30 * i, 1)) {
            cb_conference_destroy(room);
            return NULL;
        }
    }
    return room;
}

void cb_conference_destroy(cb_conference *room) {
    if (!room) return;
    if (room->p) {
        for (int32_t i = 0; i < room->count; i++) {
            if (room->p[i].decoder) opus_decoder_destroy(room->p[i].decoder);
            if (room->p[i].encoder) opus_encoder_destroy(room->p[i].encoder);
            if (room->p[i].srtp_in) srtp_dealloc(room->p[i].srtp_in);
            if (room->p[i].out.srtp_out) srtp_dealloc(room->p[i].out.srtp_out);
        }
        free(room->p);
    }
    if (room->shared) opus_encoder_destroy(room->shared);
    free(room);
}

/// srtp_unprotect, RTP header, payload into the participant's pending FIFO.
static void cc_receive(cb_conference *room, cc_participant *p, const uint8_t *datagram, int32_t length) {
    if (length < 12 || length > CC_MAX_DATAGRAM) return;
    memcpy(room->receive, datagram, (size_t)length);
    int len = length;
    room->counts.unprotects++;
    if (srtp_unprotect(p->srtp_in, room->receive, &len) != srtp_err_status_ok) return;
    const uint8_t *b = room->receive;
    int32_t header = 12 + 4 * (b[0] & 0x0F);
    if (b[0] & 0x10) {
        if (len < header + 4) return;
        header += 4 + 4 * ((b[header + 2] << 8) | b[header + 3]);
    }
    int32_t end = len;
    if (b[0] & 0x20) end -= b[len - 1];
    if (end <= header || p->pending_count == CC_PENDING) return;
    memcpy(p->pending[p->pending_count], b + header, (size_t)(end - header));
    p->pending_length[p->pending_count++] = end - header;
}

/// The Swift ConferenceLimiter, operation for operation.
static void cc_limit(const int32_t *acc, const int16_t *minus, int16_t *out, double *gain, int32_t threshold,
                     int64_t *clipped) {
    int32_t peak = 0;
    for (int i = 0; i < CC_TICK; i++) {
        int32_t x = minus ? acc[i] - minus[i] : acc[i];
        int32_t a = x < 0 ? -x : x;
        if (a > peak) peak = a;
    }
    double target = peak > threshold ? (double)threshold / peak : 1;
    double start, end;
    if (target <= *gain) {
        start = end = target;
    } else {
        start = *gain;
        end = fmin(target, *gain + (target - *gain) * 0.1 + 1e-6);
    }
    double step = (end - start) / CC_TICK, g = start;
    int unity = start == 1 && end == 1;
    for (int i = 0; i < CC_TICK; i++) {
        int32_t x = minus ? acc[i] - minus[i] : acc[i];
        int32_t y = unity ? x : (int32_t)(x * g);
        if (y > threshold || y < -threshold) {
            (*clipped)++;
            y = y > threshold ? threshold : -threshold;
        }
        out[i] = (int16_t)y;
        g += step;
    }
    *gain = end;
}

/// RTP header + payload + srtp_protect (the packet is then dropped: the Swift side sends to a null sink).
static int64_t cc_send(cb_conference *room, cc_sender *s, const uint8_t *payload, int32_t bytes) {
    if (room->dtx && bytes <= 2) {
        s->timestamp += CC_RTP_TICKS;
        return 0;
    }
    uint8_t *b = room->send;
    cb_rtp_write_header(b, 111, 0, s->sequence, s->timestamp, s->ssrc);
    memcpy(b + 12, payload, (size_t)bytes);
    s->sequence++;
    s->timestamp += CC_RTP_TICKS;
    int length = 12 + bytes;
    room->counts.protects++;
    if (srtp_protect(s->srtp_out, b, &length) != srtp_err_status_ok) return -1;
    return length;
}

int64_t cb_conference_tick(cb_conference *room, const uint8_t *data, const int32_t *offsets, const int32_t *lengths,
                           const int32_t *owners, int32_t count) {
    int64_t checksum = 0;
    room->counts.ticks++;
    for (int32_t k = 0; k < count; k++)
        if (owners[k] >= 0 && owners[k] < room->count) cc_receive(room, &room->p[owners[k]], data + offsets[k], lengths[k]);
    // Decode (or conceal) 20 ms per awake participant; dormant ones only when a packet arrived.
    for (int32_t i = 0; i < room->count; i++) {
        cc_participant *p = &room->p[i];
        if (p->dormant) {
            if (p->pending_count == 0) {
                room->counts.dormant_ticks++;
                continue;
            }
            p->dormant = 0;
            p->quiet = CC_DORMANT_TICKS - CC_WAKE_TICKS;
        }
        int n;
        if (p->pending_count > 0) {
            n = opus_decode(p->decoder, p->pending[0], p->pending_length[0], p->decoded, CC_TICK, 0);
            room->counts.decodes++;
            p->pending_count--;
            for (int32_t q = 0; q < p->pending_count; q++) {
                memcpy(p->pending[q], p->pending[q + 1], (size_t)p->pending_length[q + 1]);
                p->pending_length[q] = p->pending_length[q + 1];
            }
        } else {
            n = opus_decode(p->decoder, NULL, 0, p->decoded, CC_TICK, 0);
            room->counts.concealments++;
        }
        if (n != CC_TICK) memset(p->decoded, 0, sizeof p->decoded);
        int64_t sum = 0;
        for (int s = 0; s < CC_TICK; s++) sum += (int64_t)p->decoded[s] * p->decoded[s];
        double ms = (double)sum / CC_TICK;
        p->level = fmax(ms, p->level * 0.85);
        p->quiet = p->level < room->threshold ? p->quiet + 1 : 0;
        if (p->quiet >= CC_DORMANT_TICKS && p->pending_count == 0) {
            p->dormant = 1;
            p->level = 0;
        }
    }
    // The N loudest, with the hysteresis bonus for current talkers.
    room->talker_count = 0;
    for (int32_t i = 0; i < room->count; i++) {
        cc_participant *p = &room->p[i];
        int was = p->talker;
        p->talker = 0;
        if (p->dormant || !(p->level > room->threshold)) continue;
        p->score = was ? p->level * room->hysteresis : p->level;
        int32_t slot = room->talker_count;
        while (slot > 0 && p->score > room->p[room->talkers[slot - 1]].score) {
            if (slot < room->max_talkers) room->talkers[slot] = room->talkers[slot - 1];
            slot--;
        }
        if (slot < room->max_talkers) {
            room->talkers[slot] = i;
            if (room->talker_count < room->max_talkers) room->talker_count++;
        }
    }
    memset(room->acc, 0, sizeof room->acc);
    for (int32_t k = 0; k < room->talker_count; k++) {
        cc_participant *p = &room->p[room->talkers[k]];
        p->talker = 1;
        for (int s = 0; s < CC_TICK; s++) room->acc[s] += p->decoded[s];
    }
    room->counts.talker_ticks += room->talker_count;
    // Talkers: mix-minus, own encoder.
    for (int32_t k = 0; k < room->talker_count; k++) {
        cc_participant *p = &room->p[room->talkers[k]];
        cc_limit(room->acc, p->decoded, room->out, &p->gain, room->limiter_threshold, &room->counts.clipped_samples);
        int bytes = opus_encode(p->encoder, room->out, CC_TICK, room->opus, CC_MAX_DATAGRAM);
        room->counts.own_encodes++;
        if (bytes > 0) checksum += cc_send(room, &p->out, room->opus, bytes);
    }
    // Everyone else: one shared encode.
    if (room->count > room->talker_count) {
        cc_limit(room->acc, NULL, room->out, &room->shared_gain, room->limiter_threshold, &room->counts.clipped_samples);
        int bytes = opus_encode(room->shared, room->out, CC_TICK, room->opus, CC_MAX_DATAGRAM);
        room->counts.shared_encodes++;
        if (bytes > 0)
            for (int32_t i = 0; i < room->count; i++)
                if (!room->p[i].talker) checksum += cc_send(room, &room->p[i].out, room->opus, bytes);
    }
    return checksum;
}

void cb_conference_get_counts(const cb_conference *room, cb_conference_counts *counts) { *counts = room->counts; }
