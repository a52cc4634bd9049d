// libFuzzer's documented driver entry point (compiler-rt FuzzerInterface.h), declared for Swift.
//
// SwiftPM renames an executable's entry point (`-entry-point-function-name <module>_main`, then
// `--defsym main=<module>_main` on Linux), so libFuzzer's own `main` cannot be used: each fuzz target has a Swift
// `@main` that hands the command line to LLVMFuzzerRunDriver instead.
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
