// libFuzzer's driver, as the toolchain's -sanitize=fuzzer links it. Called from each target's
// main.swift: SwiftPM gives every executable target its own `main`, which would hide
// libFuzzer's.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test_one_input)(const uint8_t *data, size_t size));
