/* libFuzzer harness: stream messages in msgpack, as binary frames carry
 * them (proto/msg.c; the checks are fuzz_msg.h's). */
#include "fuzz_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_msg(data, len, 1);
    return 0;
}
