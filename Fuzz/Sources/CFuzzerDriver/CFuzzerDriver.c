// Intentionally empty: the header declares a function the libFuzzer runtime (-sanitize=fuzzer) defines.
#include "CFuzzerDriver.h"
