#ifndef VOICEENGINE_CSPANDSP_SHIM_H
#define VOICEENGINE_CSPANDSP_SHIM_H
// spandsp: the G.711 and G.722 codecs, their packet loss concealment, and the DTMF receiver for keys sent as tones in
// the audio. Only these headers, not <spandsp.h>, which pulls in libtiff for fax.
#include <stdint.h>
#include <stddef.h>
#include <spandsp/telephony.h>
#include <spandsp/bit_operations.h>
#include <spandsp/g711.h>
#include <spandsp/g722.h>
#include <spandsp/plc.h>
#include <spandsp/logging.h>
#include <spandsp/super_tone_rx.h>
#include <spandsp/dtmf.h>
#endif
