#ifndef VOICEENGINE_CBASELINE_H
#define VOICEENGINE_CBASELINE_H
// The plain C floor `voice-bench` measures the Swift wrappers against: the same libopus / speexdsp calls the
// wrappers make, on the same input, in a tight C loop. The handles are opaque so no libopus or speexdsp type
// reaches Swift (and none clashes with VoiceCodec's OpusEncoder / OpusDecoder).
#include <stdint.h>

typedef struct cb_encoder cb_encoder;
typedef struct cb_decoder cb_decoder;
typedef struct cb_resampler cb_resampler;

/// opus_encoder_create plus the same ctls OpusEncoder applies (bitrate, complexity, VBR, in-band FEC, expected
/// loss, DTX). `application_voip` = 1 for OPUS_APPLICATION_VOIP, 0 for OPUS_APPLICATION_AUDIO. NULL on failure.
cb_encoder *cb_encoder_create(int32_t sample_rate, int32_t channels, int32_t application_voip, int32_t bitrate,
                              int32_t complexity, int32_t vbr, int32_t inband_fec, int32_t loss_percent,
                              int32_t dtx);
void cb_encoder_destroy(cb_encoder *encoder);

/// Encodes `iterations` frames with opus_encode; frame k is read from
/// pcm + ((start + k) % frame_count) * frame_samples. Returns the total bytes produced, or a negative opus error.
int64_t cb_encode_loop(cb_encoder *encoder, const int16_t *pcm, int32_t frame_samples, int32_t frame_count,
                       int64_t start, int64_t iterations, uint8_t *packet, int32_t packet_capacity);

/// opus_decoder_create. NULL on failure.
cb_decoder *cb_decoder_create(int32_t sample_rate, int32_t channels);
void cb_decoder_destroy(cb_decoder *decoder);

/// Decodes `iterations` packets with opus_decode (decode_fec 0); packet k is
/// packets + offsets[(start + k) % packet_count], lengths[...] bytes. `pcm_capacity` samples per channel.
/// Returns the total samples produced, or a negative opus error.
int64_t cb_decode_loop(cb_decoder *decoder, const uint8_t *packets, const int32_t *offsets, const int32_t *lengths,
                       int32_t packet_count, int64_t start, int64_t iterations, int16_t *pcm, int32_t pcm_capacity);

/// Conceals `iterations` lost frames of `frame_samples` with opus_decode(decoder, NULL, 0, ...).
int64_t cb_conceal_loop(cb_decoder *decoder, int64_t iterations, int16_t *pcm, int32_t frame_samples);

/// speex_resampler_init (mono or interleaved). NULL on failure.
cb_resampler *cb_resampler_create(uint32_t channels, uint32_t input_rate, uint32_t output_rate, int32_t quality);
void cb_resampler_destroy(cb_resampler *resampler);

/// Resamples `iterations` blocks with speex_resampler_process_int (channel 0, or the _interleaved_ call for
/// more than one channel); block k is input + ((start + k) % block_count) * block_samples.
/// Returns the total samples produced, or a negative (-RESAMPLER_ERR_*) error.
int64_t cb_resample_loop(cb_resampler *resampler, const int16_t *input, int32_t block_samples, int32_t block_count,
                         int64_t start, int64_t iterations, int16_t *output, uint32_t output_capacity);

/// CLOCK_MONOTONIC in nanoseconds: the clock both sides are timed with.
uint64_t cb_monotonic_ns(void);

// The full-duplex pipeline loop (`voice-bench pipeline`).
#include "cbaseline_pipeline.h"

#endif
