#ifndef VOICEENGINE_COPUS_SHIM_H
#define VOICEENGINE_COPUS_SHIM_H
// libopus, plus static inline wrappers for the variadic opus_*_ctl requests the engine uses,
// which Swift cannot call directly.
#include <opus/opus.h>

static inline int ve_opus_encoder_set_bitrate(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_BITRATE(v)); }
static inline int ve_opus_encoder_get_bitrate(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_BITRATE(v)); }
static inline int ve_opus_encoder_set_complexity(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(v)); }
static inline int ve_opus_encoder_get_complexity(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_COMPLEXITY(v)); }
static inline int ve_opus_encoder_set_vbr(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_VBR(v)); }
static inline int ve_opus_encoder_set_vbr_constraint(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_VBR_CONSTRAINT(v)); }
static inline int ve_opus_encoder_set_inband_fec(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(v)); }
static inline int ve_opus_encoder_get_inband_fec(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_INBAND_FEC(v)); }
static inline int ve_opus_encoder_set_packet_loss_perc(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(v)); }
static inline int ve_opus_encoder_get_packet_loss_perc(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_PACKET_LOSS_PERC(v)); }
static inline int ve_opus_encoder_set_dtx(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_DTX(v)); }
static inline int ve_opus_encoder_get_dtx(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_DTX(v)); }
static inline int ve_opus_encoder_set_signal(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_SIGNAL(v)); }
static inline int ve_opus_encoder_set_max_bandwidth(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_MAX_BANDWIDTH(v)); }
static inline int ve_opus_encoder_get_lookahead(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_LOOKAHEAD(v)); }
static inline int ve_opus_encoder_reset_state(OpusEncoder *e) { return opus_encoder_ctl(e, OPUS_RESET_STATE); }
static inline int ve_opus_decoder_reset_state(OpusDecoder *d) { return opus_decoder_ctl(d, OPUS_RESET_STATE); }
static inline int ve_opus_decoder_get_last_packet_duration(OpusDecoder *d, opus_int32 *v) { return opus_decoder_ctl(d, OPUS_GET_LAST_PACKET_DURATION(v)); }
static inline int ve_opus_decoder_set_gain(OpusDecoder *d, opus_int32 v) { return opus_decoder_ctl(d, OPUS_SET_GAIN(v)); }
static inline int ve_opus_encoder_get_in_dtx(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_IN_DTX(v)); }
static inline int ve_opus_encoder_get_final_range(OpusEncoder *e, opus_uint32 *v) { return opus_encoder_ctl(e, OPUS_GET_FINAL_RANGE(v)); }
static inline int ve_opus_decoder_get_final_range(OpusDecoder *d, opus_uint32 *v) { return opus_decoder_ctl(d, OPUS_GET_FINAL_RANGE(v)); }

#endif
