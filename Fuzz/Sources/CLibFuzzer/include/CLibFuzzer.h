// libFuzzer's entry point for programs that keep their own main (clang's -fsanitize=fuzzer
// runtime provides it; see https://llvm.org/docs/LibFuzzer.html#using-libfuzzer-as-a-library).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
