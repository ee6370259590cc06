/* The procedural assets and motions of train/ (issue 5): train/check_assets.py
 * checks them (determinism, garment topology and UV atlases, clearance from
 * the body, the shape space, motion smoothness and what each kind does); one
 * test per part so that they run in parallel. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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

/* make eval's per-seed tables are held out from the shipped recipe's
 * training data (train/check_assets.py heldout through `make eval-heldout`,
 * the Makefile's own arguments); the old plan's numbering, under which
 * every one of the 42 sequences was a motion the wide plan trains on, is
 * caught. */
Test(assets, make_eval_is_held_out_from_the_recipe)
{
    const char *py = getenv("DRAPE_PYTHON");
    static char log[1 << 16];
    int rc = tu_run(log, sizeof log, "env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s --no-print-directory eval-heldout");
    cr_assert(rc == 0 && strstr(log, "ok   make eval's sequences play no motion (family and seed) the recipe trains on") &&
                  strstr(log, "ok   make eval's unseen shapes are no training shape") && strstr(log, "data_wide (800)"),
              "make eval-heldout (rc %d):\n%s", rc, log);
    rc = tu_run(log, sizeof log,
                "OPENBLAS_NUM_THREADS=1 %s train/check_assets.py heldout --eval-args '--garments skirt,dress,tshirt "
                "--train-betas 3 --test-betas 1 --train-seeds 2 --test-seeds 1 --test-motion-betas 1 --seconds 3'",
                py ? py : "/usr/bin/python3");
    cr_assert(rc == 1 && strstr(log, "42 of 42 do, skirt-b0-walk-s2t"), "the old numbering (rc %d):\n%s", rc, log);
}
