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
    CC_RTP_TICKS = 960,
    CC_RTCP_MIN_TICKS = 250  // RFC 3550's 5 s minimum interval, in 20 ms ticks
};

typedef struct {
    uint32_t ssrc, timestamp;
    uint16_t sequence;
    srtp_t srtp_out;
    uint32_t packets, octets;  // for the SR
    int32_t sent_since_report;
} cc_sender;

/// What a receiver reports about its source (RFC 3550 report block), kept as cheaply as the fields allow.
typedef struct {
    uint32_t ssrc, cycles, received, expected_prior, received_prior;
    uint16_t base, highest;
    int32_t valid;
} cc_reception;

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
    cc_reception in;
    int64_t next_rtcp_tick;
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
    int32_t rtcp;
    uint64_t random;
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

/// The sequence bookkeeping a report block needs (highest extended sequence, packets received).
static void cc_note_sequence(cc_reception *r, uint16_t sequence, uint32_t ssrc) {
    if (!r->valid) {
        r->valid = 1;
        r->ssrc = ssrc;
        r->base = r->highest = sequence;
    } else if ((uint16_t)(sequence - r->highest) < 0x8000) {
        if (sequence < r->highest) r->cycles += 0x10000;
        r->highest = sequence;
    }
    r->received++;
}

/// srtp_unprotect, RTP header, payload into the participant's pending FIFO.
static void cc_receive(cb_conference *room, cc_participant *p, const uint8_t *datagram, int32_t length) {
    if (length < 12 || length > CC_MAX_DATAGRAM) return;
    memcpy(room->receive, datagram, (size_t)length);
    int len = length;
    room->counts.unprotects++;
    if (srtp_unprotect(p->srtp_in, room->receive, &len) != srtp_err_status_ok) return;
    const uint8_t *b = room->receive;
    cc_note_sequence(&p->in, (uint16_t)((b[2] << 8) | b[3]), ((uint32_t)b[8] << 24) | ((uint32_t)b[9] << 16) | ((uint32_t)b[10] << 8) | b[11]);
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
    s->packets++;
    s->octets += (uint32_t)bytes;
    s->sent_since_report = 1;
    int length = 12 + bytes;
    room->counts.protects++;
    if (srtp_protect(s->srtp_out, b, &length) != srtp_err_status_ok) return -1;
    return length;
}

static void cc_put32(uint8_t *b, uint32_t v) {
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

/// RFC 3550's randomized interval for a two-member session whose computed interval is below the 5 s minimum
/// (as every leg here is): minimum (half of it before the first report) × U[0.5, 1.5] ÷ (e − 3/2), in ticks.
static int64_t cc_rtcp_interval(cb_conference *room, int initial) {
    room->random ^= room->random << 13;
    room->random ^= room->random >> 7;
    room->random ^= room->random << 17;
    double u = (double)(room->random >> 11) / 9007199254740992.0;
    double minimum = initial ? CC_RTCP_MIN_TICKS / 2.0 : CC_RTCP_MIN_TICKS;
    return (int64_t)(minimum * (0.5 + u) / (2.718281828459045 - 1.5) + 0.5);
}

/// The report the engine's MediaStream sends: SR (if it sent RTP since the last report, else RR) with one report
/// block once the source is known, SDES with a 21-byte CNAME; srtp_protect_rtcp; dropped like the RTP.
static int64_t cc_send_report(cb_conference *room, cc_participant *p) {
    uint8_t *b = room->send;
    cc_sender *s = &p->out;
    int sr = s->sent_since_report, blocks = p->in.valid ? 1 : 0;
    int size = (sr ? 28 : 8) + 24 * blocks;
    b[0] = (uint8_t)(0x80 | blocks);
    b[1] = sr ? 200 : 201;
    b[2] = 0;
    b[3] = (uint8_t)(size / 4 - 1);
    cc_put32(b + 4, s->ssrc);
    int o = 8;
    if (sr) {
        uint64_t ms = (uint64_t)room->counts.ticks * 20;
        cc_put32(b + 8, (uint32_t)(2208988800u + ms / 1000));
        cc_put32(b + 12, (uint32_t)(((ms % 1000) << 32) / 1000));
        cc_put32(b + 16, s->timestamp);
        cc_put32(b + 20, s->packets);
        cc_put32(b + 24, s->octets);
        o = 28;
    }
    if (blocks) {
        cc_reception *r = &p->in;
        uint32_t extended = r->cycles + r->highest;
        uint32_t expected = extended - r->base + 1;
        int32_t lost = (int32_t)(expected - r->received);
        uint32_t expected_interval = expected - r->expected_prior, received_interval = r->received - r->received_prior;
        int32_t lost_interval = (int32_t)(expected_interval - received_interval);
        r->expected_prior = expected;
        r->received_prior = r->received;
        uint8_t fraction = expected_interval == 0 || lost_interval <= 0 ? 0 : (uint8_t)((lost_interval << 8) / expected_interval);
        cc_put32(b + o, r->ssrc);
        cc_put32(b + o + 4, ((uint32_t)fraction << 24) | ((uint32_t)lost & 0xFFFFFF));
        cc_put32(b + o + 8, extended);
        cc_put32(b + o + 12, 0);  // jitter (the C loop has no arrival times)
        cc_put32(b + o + 16, 0);
        cc_put32(b + o + 20, 0);
        o += 24;
    }
    static const char cname[] = "voice-engine-0123abcd";
    int cname_length = (int)sizeof cname - 1;
    int chunk = (4 + 2 + cname_length + 1 + 3) / 4 * 4;
    b[o] = 0x81;
    b[o + 1] = 202;
    b[o + 2] = 0;
    b[o + 3] = (uint8_t)(chunk / 4);
    cc_put32(b + o + 4, s->ssrc);
    b[o + 8] = 1;
    b[o + 9] = (uint8_t)cname_length;
    memcpy(b + o + 10, cname, (size_t)cname_length);
    memset(b + o + 10 + cname_length, 0, (size_t)(chunk - 6 - cname_length));
    int length = o + 4 + chunk;
    s->sent_since_report = 0;
    room->counts.rtcp_protects++;
    if (srtp_protect_rtcp(s->srtp_out, b, &length) != srtp_err_status_ok) return -1;
    return length;
}

void cb_conference_enable_rtcp(cb_conference *room) {
    room->rtcp = 1;
    room->random = 0x9E3779B97F4A7C15ull;
    for (int32_t i = 0; i < room->count; i++) room->p[i].next_rtcp_tick = cc_rtcp_interval(room, 1);
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
    // RTCP: each leg's report on its own schedule.
    if (room->rtcp)
        for (int32_t i = 0; i < room->count; i++) {
            cc_participant *p = &room->p[i];
            if (room->counts.ticks < p->next_rtcp_tick) continue;
            checksum += cc_send_report(room, p);
            p->next_rtcp_tick = room->counts.ticks + cc_rtcp_interval(room, 0);
        }
    return checksum;
}

void cb_conference_get_counts(const cb_conference *room, cb_conference_counts *counts) { *counts = room->counts; }
