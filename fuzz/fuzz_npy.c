/* libFuzzer harness: the .npy reader (runtime/npy.c) over a file in memory.
 * Checks that an accepted array's element count is its shape's product and
 * that all of its data is there to read. */
#include "../runtime/npy.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    FILE *f = fuzz_stream(data, len);
    if (!f) return 0;
    drape_npy a;
    drape_error err = {0};
    int rc = drape_npy_fread(&a, f, "fuzz.npy", &err);
    fclose(f);
    if (rc) {
        FUZZ_CHECK(err.msg[0] && !a.data);
        return 0;
    }
    FUZZ_CHECK(a.ndim >= 0 && a.ndim <= DRAPE_NPY_MAX_DIMS && a.data);
    int64_t numel = 1;
    for (int d = 0; d < a.ndim; d++) numel *= a.shape[d];
    FUZZ_CHECK(numel == a.numel && (size_t)numel * 4 <= len);
    volatile float sum = 0;
    for (int64_t i = 0; i < a.numel; i++) sum += a.data[i];
    (void)sum;
    drape_npy_free(&a);
    return 0;
}
