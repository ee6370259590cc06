/* The procedural assets and motions of train/ (issue 5): train/check_assets.py
 * checks them (determinism, garment topology and UV atlases, clearance from
 * the body, the shape space, motion smoothness and what each kind does); one
 * test per part so that they run in parallel. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "util.h"

static void check(const char *what)
{
    const char *py = getenv("DRAPE_PYTHON");
    static char log[1 << 16];
    int rc = tu_run(log, sizeof log, "OPENBLAS_NUM_THREADS=1 %s train/check_assets.py %s", py ? py : "/usr/bin/python3",
                    what);
    cr_assert_eq(rc, 0, "check_assets.py %s failed:\n%s", what, log);
}

Test(assets, body) { check("body"); }
Test(assets, skirt) { check("garment skirt"); }
Test(assets, miniskirt) { check("garment miniskirt"); }
Test(assets, dress) { check("garment dress"); }
Test(assets, tshirt) { check("garment tshirt"); }
Test(assets, motions) { check("motions"); }
/* issue 31's families: limits, speeds, the spin's rate, the held-out plan */
Test(assets, families) { check("families"); }
