/* libFuzzer harness: AMASS npz files (runtime/npz.c's zip reading and
 * inflate, runtime/npy.c's float64 arrays, runtime/motion.c's import)
 * over a file in memory. */
#include "motion_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    drape_motion m;
    drape_error err = {0};
    int rc = drape_motion_read_npz(&m, data, len, NULL, &err);
    fuzz_motion_check(rc, &m, &err);
    return 0;
}
