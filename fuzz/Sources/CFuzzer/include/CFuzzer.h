#ifndef STARLINE_CFUZZER_H
#define STARLINE_CFUZZER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (compiler-rt, linked by -sanitize=fuzzer): parses the libFuzzer flags in argv and runs
/// `callback` on every input.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
