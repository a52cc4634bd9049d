#ifndef VOICEENGINE_CSRTP_SHIM_H
#define VOICEENGINE_CSRTP_SHIM_H
// libsrtp2. Its API is plain functions and structs, so no wrappers are needed.
#include <srtp2/srtp.h>
#endif
