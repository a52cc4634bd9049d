#ifndef VOICEENGINE_CALSA_SHIM_H
#define VOICEENGINE_CALSA_SHIM_H
// alsa-lib. The devices module uses the *_malloc/*_free forms of the parameter containers, so no *_alloca
// wrappers are needed; only what Swift cannot express lives here.
#include <alsa/asoundlib.h>

// alsa-lib prints its own diagnostics ("ALSA lib pcm.c:...") to stderr through a variadic handler, which
// Swift cannot define. Every ALSA failure already reaches the caller as an ALSAError naming the call and
// code, so the devices module can install this no-op handler to keep stderr clean.
static void voiceengine_alsa_silent_error_handler(const char *file, int line, const char *function, int err,
                                                  const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline int voiceengine_alsa_silence_library_errors(void) {
    return snd_lib_error_set_handler(voiceengine_alsa_silent_error_handler);
}

static inline int voiceengine_alsa_restore_library_errors(void) {
    return snd_lib_error_set_handler(NULL);
}
#endif
