/* libFuzzer harness: the BVH reader and retargeting (runtime/motion.c) over
 * a file in memory, with the defaults (skeleton auto, 30 fps out). */
#include "motion_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    drape_motion m;
    drape_error err = {0};
    int rc = drape_motion_read_bvh(&m, data, len, NULL, &err);
    fuzz_motion_check(rc, &m, &err);
    return 0;
}
