// Declarations only: the definition comes from the libFuzzer runtime linked by -sanitize=fuzzer.
#include "CLibFuzzer.h"
