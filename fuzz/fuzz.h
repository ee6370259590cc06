/* What the libFuzzer harnesses share (fuzz/README.md): the entry point's
 * declaration, a check that stops the run with the input saved, and memory
 * seen as a FILE for the parsers that read streams. */
#ifndef DRAPE_FUZZ_H
#define DRAPE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* an invariant the parser promises; abort() makes libFuzzer keep the input */
#define FUZZ_CHECK(c)                                                                    \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);        \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* the input as a read-only stream; NULL for an empty input (fmemopen wants
 * at least one byte on older C libraries) */
static inline FILE *fuzz_stream(const uint8_t *data, size_t len)
{
    return len ? fmemopen((void *)data, len, "rb") : NULL;
}

#endif
