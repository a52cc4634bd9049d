// The C floor of `voice-bench pipeline`: see include/cbaseline_pipeline.h.
#include "cbaseline_pipeline.h"

#include <opus/opus.h>
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#include <speex/speex_resampler.h>
#include "cbaseline_srtp.h"
#include "cbaseline_common.h"
#include "CSRTP.h"  // the engine's libsrtp build (../../../Sources/CSRTP)
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    CB_MAX_DATAGRAM = 1500,
    CB_PACKET_CAPACITY = CB_MAX_DATAGRAM + 64,
    CB_QUEUE = 8,            // payloads waiting for playout
    CB_MAX_BLOCK = 480,      // 10 ms at 48 kHz
    CB_MAX_FRAME = 960,      // 20 ms at 48 kHz
    CB_RTP_TICKS_20MS = 960  // 20 ms at the 48 kHz RTP clock of Opus (RFC 7587)
};

struct cb_leg {
    int32_t device_rate, rate, device_block, block, frame;
    int32_t filter_frame;  // samples per speex_echo_cancellation / speex_preprocess_run call (block / frames per block)
    SpeexResamplerState *capture_resampler, *playout_resampler;
    SpeexEchoState *echo;
    SpeexPreprocessState *preprocess;
    OpusEncoder *encoder;
    OpusDecoder *decoder;
    srtp_t srtp_out, srtp_in;
    int srtp_out_ok, srtp_in_ok;
    // RTP sender state.
    uint8_t payload_type;
    uint32_t ssrc, timestamp;
    uint16_t sequence;
    int marker;
    // Capture side.
    int16_t mic[CB_MAX_BLOCK];
    int16_t processed[CB_MAX_BLOCK];
    int16_t frame_buffer[CB_MAX_FRAME];
    int32_t frame_fill;
    uint8_t opus_buffer[CB_MAX_DATAGRAM];
    uint8_t send_buffer[CB_PACKET_CAPACITY];
    int32_t read_impulse_every, blocks, blocks_since_impulse;
    int32_t *taps;
    int32_t tap_count;
    int32_t peak;  // index of the largest tap at the last read (the Swift canceller's peak search, minus its fit)
    // Receive side.
    uint8_t receive_buffer[CB_PACKET_CAPACITY];
    uint8_t queue[CB_QUEUE][CB_MAX_DATAGRAM];
    int32_t queue_length[CB_QUEUE];
    int32_t queue_head, queue_count;
    // Playout side.
    int16_t decoded[CB_MAX_FRAME];
    int32_t decoded_count, decoded_position;
    int16_t reference[CB_MAX_BLOCK];  // the processing-rate block last played: the echo reference
};

cb_leg *cb_leg_create(int32_t device_rate, int32_t rate, int32_t bitrate, int32_t complexity, int32_t tail_samples,
                      int32_t noise_suppress_db, int32_t echo_suppress_db, int32_t echo_suppress_active_db,
                      int32_t read_impulse_every, int32_t filter_frames_per_block, const uint8_t *local_key,
                      const uint8_t *remote_key, uint32_t ssrc, uint8_t payload_type, uint16_t first_sequence,
                      uint32_t first_timestamp) {
    if (device_rate / 100 > CB_MAX_BLOCK || rate / 50 > CB_MAX_FRAME) return NULL;
    if (filter_frames_per_block < 1 || (rate / 100) % filter_frames_per_block != 0) return NULL;
    cb_srtp_init_once();
    cb_leg *leg = calloc(1, sizeof *leg);
    if (leg == NULL) return NULL;
    leg->device_rate = device_rate;
    leg->rate = rate;
    leg->device_block = device_rate / 100;
    leg->block = rate / 100;
    leg->frame = rate / 50;
    leg->filter_frame = leg->block / filter_frames_per_block;
    leg->payload_type = payload_type;
    leg->ssrc = ssrc;
    leg->sequence = first_sequence;
    leg->timestamp = first_timestamp;
    leg->marker = 1;
    leg->read_impulse_every = read_impulse_every;
    int error = 0;
    if (device_rate != rate) {
        leg->capture_resampler = speex_resampler_init(1, (spx_uint32_t)device_rate, (spx_uint32_t)rate, 5, &error);
        leg->playout_resampler = speex_resampler_init(1, (spx_uint32_t)rate, (spx_uint32_t)device_rate, 5, &error);
        if (leg->capture_resampler == NULL || leg->playout_resampler == NULL) goto fail;
    }
    leg->echo = speex_echo_state_init(leg->filter_frame, tail_samples);
    if (leg->echo == NULL) goto fail;
    int value = rate;
    if (speex_echo_ctl(leg->echo, SPEEX_ECHO_SET_SAMPLING_RATE, &value) != 0) goto fail;
    if (speex_echo_ctl(leg->echo, SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE, &leg->tap_count) != 0) goto fail;
    leg->taps = calloc((size_t)leg->tap_count, sizeof *leg->taps);
    if (leg->taps == NULL) goto fail;
    leg->preprocess = speex_preprocess_state_init(leg->filter_frame, rate);
    if (leg->preprocess == NULL) goto fail;
    value = 1;
    if (speex_preprocess_ctl(leg->preprocess, SPEEX_PREPROCESS_SET_DENOISE, &value) != 0) goto fail;
    value = noise_suppress_db;
    if (speex_preprocess_ctl(leg->preprocess, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &value) != 0) goto fail;
    value = 0;
    if (speex_preprocess_ctl(leg->preprocess, SPEEX_PREPROCESS_SET_AGC, &value) != 0) goto fail;
    value = 1;
    if (speex_preprocess_ctl(leg->preprocess, SPEEX_PREPROCESS_SET_VAD, &value) != 0) goto fail;
    value = echo_suppress_db;
    if (speex_preprocess_ctl(leg->preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, &value) != 0) goto fail;
    value = echo_suppress_active_db;
    if (speex_preprocess_ctl(leg->preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, &value) != 0) goto fail;
    if (speex_preprocess_ctl(leg->preprocess, SPEEX_PREPROCESS_SET_ECHO_STATE, leg->echo) != 0) goto fail;
    leg->encoder = opus_encoder_create(rate, 1, OPUS_APPLICATION_VOIP, &error);
    if (leg->encoder == NULL || error != OPUS_OK) goto fail;
    if (opus_encoder_ctl(leg->encoder, OPUS_SET_BITRATE(bitrate)) != OPUS_OK ||
        opus_encoder_ctl(leg->encoder, OPUS_SET_COMPLEXITY(complexity)) != OPUS_OK ||
        opus_encoder_ctl(leg->encoder, OPUS_SET_VBR(1)) != OPUS_OK ||
        opus_encoder_ctl(leg->encoder, OPUS_SET_INBAND_FEC(0)) != OPUS_OK ||
        opus_encoder_ctl(leg->encoder, OPUS_SET_PACKET_LOSS_PERC(0)) != OPUS_OK ||
        opus_encoder_ctl(leg->encoder, OPUS_SET_DTX(0)) != OPUS_OK)
        goto fail;
    leg->decoder = opus_decoder_create(rate, 1, &error);
    if (leg->decoder == NULL || error != OPUS_OK) goto fail;
    leg->srtp_out_ok = cb_srtp_create_default(&leg->srtp_out, local_key, 1);
    leg->srtp_in_ok = cb_srtp_create_default(&leg->srtp_in, remote_key, 0);
    if (!leg->srtp_out_ok || !leg->srtp_in_ok) goto fail;
    return leg;
fail:
    cb_leg_destroy(leg);
    return NULL;
}

void cb_leg_destroy(cb_leg *leg) {
    if (leg == NULL) return;
    if (leg->capture_resampler) speex_resampler_destroy(leg->capture_resampler);
    if (leg->playout_resampler) speex_resampler_destroy(leg->playout_resampler);
    if (leg->preprocess) speex_preprocess_state_destroy(leg->preprocess);
    if (leg->echo) speex_echo_state_destroy(leg->echo);
    if (leg->encoder) opus_encoder_destroy(leg->encoder);
    if (leg->decoder) opus_decoder_destroy(leg->decoder);
    if (leg->srtp_out_ok) srtp_dealloc(leg->srtp_out);
    if (leg->srtp_in_ok) srtp_dealloc(leg->srtp_in);
    free(leg->taps);
    free(leg);
}

/// Encode, RTP header, SRTP: the 20 ms send step. Returns the packet length or a negative error.
static int32_t leg_send_frame(cb_leg *leg) {
    int bytes = opus_encode(leg->encoder, leg->frame_buffer, leg->frame, leg->opus_buffer, CB_MAX_DATAGRAM);
    if (bytes < 0) return -1000 + bytes;
    uint8_t *p = leg->send_buffer;
    cb_rtp_write_header(p, leg->payload_type, leg->marker, leg->sequence, leg->timestamp, leg->ssrc);
    memcpy(p + 12, leg->opus_buffer, (size_t)bytes);
    leg->marker = 0;
    leg->sequence++;
    leg->timestamp += CB_RTP_TICKS_20MS;
    int length = 12 + bytes;
    srtp_err_status_t status = srtp_protect(leg->srtp_out, p, &length);
    if (status != srtp_err_status_ok) return -2000 - (int32_t)status;
    return length;
}

int32_t cb_leg_capture(cb_leg *leg, const int16_t *device_block) {
    const int16_t *mic = device_block;
    if (leg->capture_resampler) {
        spx_uint32_t in_length = (spx_uint32_t)leg->device_block, out_length = CB_MAX_BLOCK;
        int error = speex_resampler_process_interleaved_int(leg->capture_resampler, device_block, &in_length,
                                                            leg->mic, &out_length);
        if (error != 0) return -3000 - error;
        mic = leg->mic;  // exactly one processing block per device block (48 k → 16 k: 480 → 160)
    }
    for (int32_t f = 0; f < leg->block; f += leg->filter_frame)
        speex_echo_cancellation(leg->echo, mic + f, leg->reference + f, leg->processed + f);
    leg->blocks++;
    if (leg->read_impulse_every > 0 && ++leg->blocks_since_impulse >= leg->read_impulse_every) {
        leg->blocks_since_impulse = 0;
        if (leg->blocks >= 100) {
            if (speex_echo_ctl(leg->echo, SPEEX_ECHO_GET_IMPULSE_RESPONSE, leg->taps) != 0) return -4000;
            int32_t best = 0;
            for (int32_t i = 1; i < leg->tap_count; i++)
                if (abs(leg->taps[i]) > abs(leg->taps[best])) best = i;
            leg->peak = best;
        }
    }
    for (int32_t f = 0; f < leg->block; f += leg->filter_frame) speex_preprocess_run(leg->preprocess, leg->processed + f);
    memcpy(leg->frame_buffer + leg->frame_fill, leg->processed, (size_t)leg->block * sizeof(int16_t));
    leg->frame_fill += leg->block;
    if (leg->frame_fill < leg->frame) return 0;
    leg->frame_fill = 0;
    return leg_send_frame(leg);
}

const uint8_t *cb_leg_packet(const cb_leg *leg) { return leg->send_buffer; }

int32_t cb_leg_receive(cb_leg *leg, const uint8_t *datagram, int32_t length) {
    if (length < 12 || length > CB_MAX_DATAGRAM) return -1;
    memcpy(leg->receive_buffer, datagram, (size_t)length);
    int len = length;
    srtp_err_status_t status = srtp_unprotect(leg->srtp_in, leg->receive_buffer, &len);
    if (status != srtp_err_status_ok) return -2000 - (int32_t)status;
    const uint8_t *p = leg->receive_buffer;
    if ((p[0] >> 6) != 2) return -2;
    int32_t header = 12 + 4 * (p[0] & 0x0F);
    if (p[0] & 0x10) {
        if (len < header + 4) return -3;
        header += 4 + 4 * ((p[header + 2] << 8) | p[header + 3]);
    }
    int32_t end = len;
    if (p[0] & 0x20) end -= p[len - 1];
    if (end < header) return -4;
    if (leg->queue_count == CB_QUEUE) return -5;
    int32_t slot = (leg->queue_head + leg->queue_count) % CB_QUEUE;
    memcpy(leg->queue[slot], p + header, (size_t)(end - header));
    leg->queue_length[slot] = end - header;
    leg->queue_count++;
    return end - header;
}

int32_t cb_leg_playout(cb_leg *leg, int16_t *device_block) {
    if (leg->decoded_position >= leg->decoded_count) {
        int samples;
        if (leg->queue_count > 0) {
            int32_t slot = leg->queue_head;
            samples = opus_decode(leg->decoder, leg->queue[slot], leg->queue_length[slot], leg->decoded,
                                  CB_MAX_FRAME, 0);
            leg->queue_head = (leg->queue_head + 1) % CB_QUEUE;
            leg->queue_count--;
        } else {
            samples = opus_decode(leg->decoder, NULL, 0, leg->decoded, leg->frame, 0);
        }
        if (samples < 0) return -1000 + samples;
        leg->decoded_count = samples;
        leg->decoded_position = 0;
    }
    memcpy(leg->reference, leg->decoded + leg->decoded_position, (size_t)leg->block * sizeof(int16_t));
    leg->decoded_position += leg->block;
    if (!leg->playout_resampler) {
        memcpy(device_block, leg->reference, (size_t)leg->block * sizeof(int16_t));
        return leg->block;
    }
    spx_uint32_t in_length = (spx_uint32_t)leg->block, out_length = (spx_uint32_t)leg->device_block;
    int error = speex_resampler_process_interleaved_int(leg->playout_resampler, leg->reference, &in_length,
                                                        device_block, &out_length);
    if (error != 0) return -3000 - error;
    return (int32_t)out_length;
}

static inline uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/// One leg's acoustics, as PipelineRoom in BenchmarkFixtures: a delay line of what the loudspeaker played; the
/// microphone hears the near end plus that, a line length later, × gain_q8 / 256.
static void room_capture(cb_room *room, const int16_t *near, const int16_t *played, int16_t *mic, int32_t count) {
    int32_t p = room->position;
    for (int32_t i = 0; i < count; i++) {
        int32_t v = (int32_t)near[i] + (((int32_t)room->line[p] * room->gain_q8) >> 8);
        mic[i] = (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
        room->line[p] = played[i];
        if (++p == room->length) p = 0;
    }
    room->position = p;
}

int64_t cb_pipeline_pair_loop(cb_leg *a, cb_leg *b, cb_room *room_a, cb_room *room_b, const int16_t *mic_a,
                              const int16_t *mic_b, int32_t device_block, int32_t block_count, int64_t start_block,
                              int64_t steps, int16_t *speaker, int16_t *mic, uint64_t *op_ns) {
    int64_t sum = 0;
    int64_t block = start_block % block_count;
    int32_t packet_a = 0, packet_b = 0;
    uint64_t capture_ns = 0, receive_ns = 0, playout_ns = 0;
    uint64_t t = now_ns(), u;
    for (int64_t s = 0; s < steps; s++) {
        for (int tick = 0; tick < 2; tick++) {
            const int16_t *in_a = mic_a + block * device_block;
            const int16_t *in_b = mic_b + block * device_block;
            int32_t r;
            if ((r = cb_leg_playout(a, speaker)) < 0) return r;
            u = now_ns(); playout_ns += u - t; t = u;
            room_capture(room_a, in_a, speaker, mic, device_block);
            if ((r = cb_leg_capture(a, mic)) < 0) return r;
            if (r > 0) packet_a = r;
            u = now_ns(); capture_ns += u - t; t = u;
            sum += speaker[0];
            if ((r = cb_leg_playout(b, speaker)) < 0) return r;
            u = now_ns(); playout_ns += u - t; t = u;
            room_capture(room_b, in_b, speaker, mic, device_block);
            if ((r = cb_leg_capture(b, mic)) < 0) return r;
            if (r > 0) packet_b = r;
            u = now_ns(); capture_ns += u - t; t = u;
            sum += speaker[0];
            if (++block == block_count) block = 0;
        }
        int32_t r;
        if ((r = cb_leg_receive(b, cb_leg_packet(a), packet_a)) < 0) return r;
        sum += r;
        if ((r = cb_leg_receive(a, cb_leg_packet(b), packet_b)) < 0) return r;
        sum += r;
        u = now_ns(); receive_ns += u - t; t = u;
    }
    op_ns[0] += capture_ns;
    op_ns[1] += receive_ns;
    op_ns[2] += playout_ns;
    return sum < 0 ? -sum : sum;
}

uint64_t cb_thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
