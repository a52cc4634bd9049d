#ifndef VOICEENGINE_CSPEEXDSP_SHIM_H
#define VOICEENGINE_CSPEEXDSP_SHIM_H
// speexdsp: resampler, echo canceller, preprocessor and jitter buffer. All entry points are
// plain functions Swift can call; wrappers are added here only for macros.
#include <speex/speex_resampler.h>
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#include <speex/speex_jitter.h>
#endif
