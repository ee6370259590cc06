/* libFuzzer harness: npz files (runtime/npz.c's zip reading and inflate,
 * runtime/npy.c's float and integer arrays) over a file in memory, read as
 * AMASS motion (runtime/motion.c's import) and as an SMPL-layout body
 * (runtime/body_import.c's checks). */
#include <math.h>

#include "../runtime/body_import.h"
#include "motion_check.h"

/* a body read is one every check passed: shapes in bounds, finite values,
 * faces in range; a refusal says why and leaves nothing */
static void body_check(int rc, const drape_smpl_body *b, const drape_error *err)
{
    if (rc) {
        FUZZ_CHECK(err->msg[0] && rc < 0 && !b->v_template && !b->faces);
        return;
    }
    FUZZ_CHECK(b->N >= 4 && b->N <= DRAPE_BODY_MAX_VERTICES && b->F >= 1 && b->F <= DRAPE_BODY_MAX_FACES);
    for (int i = 0; i < 3 * b->F; i++) FUZZ_CHECK(b->faces[i] >= 0 && b->faces[i] < b->N);
    for (int i = 0; i < 3 * b->N; i++) FUZZ_CHECK(isfinite(b->v_template[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    drape_motion m;
    drape_error err = {0};
    int rc = drape_motion_read_npz(&m, data, len, NULL, &err);
    fuzz_motion_check(rc, &m, &err);
    drape_smpl_body b;
    drape_error berr = {0};
    rc = drape_smpl_read(&b, data, len, 2, &berr);
    body_check(rc, &b, &berr);
    drape_smpl_free(&b);
    return 0;
}
