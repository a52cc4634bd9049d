#ifndef VOICEENGINE_CSRTP_H
#define VOICEENGINE_CSRTP_H
// libsrtp 2.5.0, built from source in this target (see ../README.md). Its API is plain functions and structs,
// so no wrappers are needed. The path is relative so that targets importing CSRTP need no extra search path.
#include "../vendor/libsrtp/include/srtp.h"
#include "srtp_engine_crypto.h"
#endif
