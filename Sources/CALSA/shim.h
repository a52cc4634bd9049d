#ifndef VOICEENGINE_CALSA_SHIM_H
#define VOICEENGINE_CALSA_SHIM_H
// alsa-lib. Wrappers for the *_alloca macros are added by the devices module as it needs them.
#include <alsa/asoundlib.h>
#endif
