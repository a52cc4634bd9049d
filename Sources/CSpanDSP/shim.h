#ifndef VOICEENGINE_CSPANDSP_SHIM_H
#define VOICEENGINE_CSPANDSP_SHIM_H
// spandsp: the G.711 and G.722 codecs and their packet loss concealment. Only these headers, not <spandsp.h>,
// which pulls in libtiff for fax.
#include <stdint.h>
#include <spandsp/telephony.h>
#include <spandsp/bit_operations.h>
#include <spandsp/g711.h>
#include <spandsp/g722.h>
#include <spandsp/plc.h>
#endif
