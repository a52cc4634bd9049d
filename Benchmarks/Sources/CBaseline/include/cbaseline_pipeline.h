#ifndef VOICEENGINE_CBASELINE_PIPELINE_H
#define VOICEENGINE_CBASELINE_PIPELINE_H
// The plain C floor of `voice-bench pipeline`: one full-duplex call leg made of the library calls MediaStream
// makes (speexdsp resampler, echo canceller and preprocessor, libopus, RTP header, libsrtp2), in the same order,
// on the same input, with no abstraction around them. The handle is opaque, so no C library type reaches Swift.
//
// What it does NOT have, by design: a jitter buffer. Each received payload is queued in a small FIFO and decoded
// whole by the playout side when its previous frame is used up (opus_decode with a NULL packet, i.e. PLC, when the
// FIFO is empty). The Swift side runs the AdaptiveJitterBuffer there, so the ratio measures the wrapper and
// pipeline overhead including the buffer's logic. See Benchmarks/README.md ("Full-duplex pipeline").
#include <stdint.h>

typedef struct cb_leg cb_leg;

/// Creates one leg: device-rate ↔ processing-rate resamplers (quality 5; none when the rates are equal),
/// speex_echo_state_init(block, tail) + SPEEX_ECHO_SET_SAMPLING_RATE, speex_preprocess_state_init with denoise
/// (noise_suppress_db), AGC off, VAD on, echo suppression (echo_suppress_db / _active_db) and the echo state
/// attached; opus_encoder_create (voip, mono) with bitrate, complexity, VBR on, FEC off, loss 0, DTX off;
/// opus_decoder_create; two srtp_t (AES_CM_128_HMAC_SHA1_80, ssrc_any_outbound with `local_key`,
/// ssrc_any_inbound with `remote_key`, 30-byte keys, replay window 1024). RTP: payload type, SSRC, first
/// sequence number and timestamp as given, 48 kHz RTP clock. `read_impulse_every` > 0 reads
/// SPEEX_ECHO_GET_IMPULSE_RESPONSE every that many capture blocks (after the first 100), as the Swift canceller
/// does to track the echo path. `filter_frames_per_block` splits each processing block into that many frames for
/// speex_echo_cancellation and speex_preprocess_run (the Swift canceller's `filterFramesPerBlock`). NULL on failure.
cb_leg *cb_leg_create(int32_t device_rate, int32_t rate, int32_t bitrate, int32_t complexity, int32_t tail_samples,
                      int32_t noise_suppress_db, int32_t echo_suppress_db, int32_t echo_suppress_active_db,
                      int32_t read_impulse_every, int32_t filter_frames_per_block, const uint8_t *local_key,
                      const uint8_t *remote_key, uint32_t ssrc, uint8_t payload_type, uint16_t first_sequence,
                      uint32_t first_timestamp);
void cb_leg_destroy(cb_leg *leg);

/// One 10 ms microphone block at the device rate: resample to the processing rate, speex_echo_cancellation with
/// the block last played as reference, speex_preprocess_run; every 20 ms opus_encode, RTP header, srtp_protect.
/// Returns the length of the packet produced by this call (read it with cb_leg_packet), 0 if none, or a negative
/// error (-1000 - opus error, -2000 - srtp status, -3000 - resampler error).
int32_t cb_leg_capture(cb_leg *leg, const int16_t *device_block);

/// The last packet produced (valid until the next cb_leg_capture).
const uint8_t *cb_leg_packet(const cb_leg *leg);

/// One datagram from the peer: copy into the receive buffer, srtp_unprotect, RTP header parse (version,
/// CSRC count, extension, padding), payload queued for playout. Returns the payload length, or a negative error.
int32_t cb_leg_receive(cb_leg *leg, const uint8_t *datagram, int32_t length);

/// One 10 ms playout block at the device rate: the next processing-rate block of the decoded frame (opus_decode
/// of the next queued payload, or PLC when none is queued, whenever a frame is used up), kept as the echo
/// reference, resampled to the device rate into `device_block`. Returns the samples written, or a negative error.
int32_t cb_leg_playout(cb_leg *leg, int16_t *device_block);

/// One leg's acoustic echo path (the caller owns `line`, `length` samples, zeroed; `position` starts at 0).
typedef struct cb_room {
    int16_t *line;
    int32_t length, position, gain_q8;
} cb_room;

/// `steps` 20 ms steps of two legs calling each other, the loop `voice-bench pipeline` times against the Swift
/// pair. Per 10 ms tick: a.playout, a.capture, b.playout, b.capture; after two ticks, b receives a's packet and
/// a receives b's. Leg a's near-end block k is mic_a + ((start_block + k) % block_count) * device_block (the same
/// for b); its microphone hears that plus its own loudspeaker through `room_a` (`mic`: one device block of
/// scratch). `op_ns` (3 values) accumulates CLOCK_MONOTONIC nanoseconds spent in capture, receive and playout
/// calls. Returns a checksum of the outputs, or a negative error.
int64_t cb_pipeline_pair_loop(cb_leg *a, cb_leg *b, cb_room *room_a, cb_room *room_b, const int16_t *mic_a,
                              const int16_t *mic_b, int32_t device_block, int32_t block_count, int64_t start_block,
                              int64_t steps, int16_t *speaker, int16_t *mic, uint64_t *op_ns);

/// CPU time of the calling thread in nanoseconds (CLOCK_THREAD_CPUTIME_ID): for legs per core.
uint64_t cb_thread_cpu_ns(void);

#endif
