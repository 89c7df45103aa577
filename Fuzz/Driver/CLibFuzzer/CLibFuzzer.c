// Only the header matters: the driver itself comes from the toolchain's libFuzzer.
#include "CLibFuzzer.h"
