#include "cbaseline.h"

#include <opus/opus.h>
#include <speex/speex_resampler.h>
#include <stdlib.h>
#include <time.h>

struct cb_encoder { OpusEncoder *opus; };
struct cb_decoder { OpusDecoder *opus; };
struct cb_resampler { SpeexResamplerState *speex; uint32_t channels; };

cb_encoder *cb_encoder_create(int32_t sample_rate, int32_t channels, int32_t application_voip, int32_t bitrate,
                              int32_t complexity, int32_t vbr, int32_t inband_fec, int32_t loss_percent,
                              int32_t dtx) {
    int error = OPUS_OK;
    OpusEncoder *opus = opus_encoder_create(sample_rate, channels,
                                            application_voip ? OPUS_APPLICATION_VOIP : OPUS_APPLICATION_AUDIO,
                                            &error);
    if (opus == NULL || error != OPUS_OK) return NULL;
    if (opus_encoder_ctl(opus, OPUS_SET_BITRATE(bitrate)) != OPUS_OK ||
        opus_encoder_ctl(opus, OPUS_SET_COMPLEXITY(complexity)) != OPUS_OK ||
        opus_encoder_ctl(opus, OPUS_SET_VBR(vbr)) != OPUS_OK ||
        opus_encoder_ctl(opus, OPUS_SET_INBAND_FEC(inband_fec)) != OPUS_OK ||
        opus_encoder_ctl(opus, OPUS_SET_PACKET_LOSS_PERC(loss_percent)) != OPUS_OK ||
        opus_encoder_ctl(opus, OPUS_SET_DTX(dtx)) != OPUS_OK) {
        opus_encoder_destroy(opus);
        return NULL;
    }
    cb_encoder *encoder = malloc(sizeof *encoder);
    if (encoder == NULL) { opus_encoder_destroy(opus); return NULL; }
    encoder->opus = opus;
    return encoder;
}

void cb_encoder_destroy(cb_encoder *encoder) {
    if (encoder == NULL) return;
    opus_encoder_destroy(encoder->opus);
    free(encoder);
}

int64_t cb_encode_loop(cb_encoder *encoder, const int16_t *pcm, int32_t frame_samples, int32_t frame_count,
                       int64_t start, int64_t iterations, uint8_t *packet, int32_t packet_capacity) {
    OpusEncoder *opus = encoder->opus;
    int64_t total = 0;
    for (int64_t k = 0; k < iterations; k++) {
        const int16_t *frame = pcm + ((start + k) % frame_count) * frame_samples;
        int bytes = opus_encode(opus, frame, frame_samples, packet, packet_capacity);
        if (bytes < 0) return bytes;
        total += bytes;
    }
    return total;
}

cb_decoder *cb_decoder_create(int32_t sample_rate, int32_t channels) {
    int error = OPUS_OK;
    OpusDecoder *opus = opus_decoder_create(sample_rate, channels, &error);
    if (opus == NULL || error != OPUS_OK) return NULL;
    cb_decoder *decoder = malloc(sizeof *decoder);
    if (decoder == NULL) { opus_decoder_destroy(opus); return NULL; }
    decoder->opus = opus;
    return decoder;
}

void cb_decoder_destroy(cb_decoder *decoder) {
    if (decoder == NULL) return;
    opus_decoder_destroy(decoder->opus);
    free(decoder);
}

int64_t cb_decode_loop(cb_decoder *decoder, const uint8_t *packets, const int32_t *offsets, const int32_t *lengths,
                       int32_t packet_count, int64_t start, int64_t iterations, int16_t *pcm, int32_t pcm_capacity) {
    OpusDecoder *opus = decoder->opus;
    int64_t total = 0;
    for (int64_t k = 0; k < iterations; k++) {
        int32_t index = (int32_t)((start + k) % packet_count);
        int samples = opus_decode(opus, packets + offsets[index], lengths[index], pcm, pcm_capacity, 0);
        if (samples < 0) return samples;
        total += samples;
    }
    return total;
}

int64_t cb_conceal_loop(cb_decoder *decoder, int64_t iterations, int16_t *pcm, int32_t frame_samples) {
    OpusDecoder *opus = decoder->opus;
    int64_t total = 0;
    for (int64_t k = 0; k < iterations; k++) {
        int samples = opus_decode(opus, NULL, 0, pcm, frame_samples, 0);
        if (samples < 0) return samples;
        total += samples;
    }
    return total;
}

cb_resampler *cb_resampler_create(uint32_t channels, uint32_t input_rate, uint32_t output_rate, int32_t quality) {
    int error = RESAMPLER_ERR_SUCCESS;
    SpeexResamplerState *speex = speex_resampler_init(channels, input_rate, output_rate, quality, &error);
    if (speex == NULL || error != RESAMPLER_ERR_SUCCESS) return NULL;
    cb_resampler *resampler = malloc(sizeof *resampler);
    if (resampler == NULL) { speex_resampler_destroy(speex); return NULL; }
    resampler->speex = speex;
    resampler->channels = channels;
    return resampler;
}

void cb_resampler_destroy(cb_resampler *resampler) {
    if (resampler == NULL) return;
    speex_resampler_destroy(resampler->speex);
    free(resampler);
}

int64_t cb_resample_loop(cb_resampler *resampler, const int16_t *input, int32_t block_samples, int32_t block_count,
                         int64_t start, int64_t iterations, int16_t *output, uint32_t output_capacity) {
    SpeexResamplerState *speex = resampler->speex;
    uint32_t channels = resampler->channels;
    int64_t total = 0;
    for (int64_t k = 0; k < iterations; k++) {
        const int16_t *block = input + ((start + k) % block_count) * block_samples;
        spx_uint32_t in_len = (spx_uint32_t)block_samples / channels;
        spx_uint32_t out_len = output_capacity / channels;
        int error = channels == 1
            ? speex_resampler_process_int(speex, 0, block, &in_len, output, &out_len)
            : speex_resampler_process_interleaved_int(speex, block, &in_len, output, &out_len);
        if (error != RESAMPLER_ERR_SUCCESS) return -error;
        total += out_len;
    }
    return total;
}

uint64_t cb_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
