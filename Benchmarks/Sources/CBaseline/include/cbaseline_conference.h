#ifndef VOICEENGINE_CBASELINE_CONFERENCE_H
#define VOICEENGINE_CBASELINE_CONFERENCE_H
// The plain C floor of `voice-bench conference`: one conference room made of the library calls the Swift
// ConferenceRoom makes (libsrtp2 unprotect/protect, libopus decode/PLC/encode), with the same mixing rules: the N
// loudest participants above the speech threshold (peak-following level, 0.85 decay per 20 ms, 3 dB hysteresis),
// an int32 sum, mix-minus and a limiter per talker, the full mix limited and encoded ONCE for every other
// participant (then only RTP header + srtp_protect each), and dormant participants (quiet for 10 ticks with
// nothing pending: not decoded until a packet arrives, then 3 ticks). Opus 16 kHz mono, 20 ms, VoIP.
//
// What it does NOT have, by design: a jitter buffer (payloads are decoded in arrival order, PLC when none is
// pending), RTCP reception, statistics beyond the call counts. The ratio against the Swift room therefore includes
// the adaptive jitter buffer's logic and MediaStream's bookkeeping. RTCP sending is optional
// (cb_conference_enable_rtcp), so that the Swift room with RTCP on is compared with a loop doing the same reports.
#include <stdint.h>

typedef struct cb_conference cb_conference;

/// Library calls made so far (the cost model's counts).
typedef struct {
    int64_t ticks, decodes, concealments, own_encodes, shared_encodes, protects, unprotects, talker_ticks;
    int64_t dormant_ticks, clipped_samples;
    /// srtp_protect_rtcp calls (one per report: SR/RR + SDES, on RFC 3550's randomized 5 s schedule).
    int64_t rtcp_protects;
} cb_conference_counts;

/// A room of `participants`, each with its own decoder, encoder and two srtp_t (AES_CM_128_HMAC_SHA1_80;
/// participant i unprotects with remote_keys + 30 i and protects with local_keys + 30 i), plus one shared encoder.
/// Encoders: bitrate, complexity, VBR on, FEC off, `dtx`. NULL on failure.
cb_conference *cb_conference_create(int32_t participants, int32_t max_talkers, const uint8_t *local_keys,
                                    const uint8_t *remote_keys, int32_t bitrate, int32_t complexity, int32_t dtx,
                                    double speech_threshold_mean_square, int32_t limiter_threshold);
void cb_conference_destroy(cb_conference *room);

/// Each leg sends RTCP as the engine's MediaStream does: SR/RR with a report block + SDES CNAME, built in place and
/// protected with srtp_protect_rtcp, on RFC 3550's randomized interval (5 s minimum, half before the first).
void cb_conference_enable_rtcp(cb_conference *room);

/// One 20 ms tick: the `count` datagrams that arrived (datagram k from participant owners[k], `lengths[k]` bytes
/// at `data + offsets[k]`), then decode, select, mix, encode, protect. Returns a checksum (bytes protected).
int64_t cb_conference_tick(cb_conference *room, const uint8_t *data, const int32_t *offsets, const int32_t *lengths,
                           const int32_t *owners, int32_t count);

void cb_conference_get_counts(const cb_conference *room, cb_conference_counts *counts);

#endif
