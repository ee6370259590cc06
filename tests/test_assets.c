/* The procedural assets and motions of train/ (issue 5): train/check_assets.py
 * checks them (determinism, garment topology and UV atlases, clearance from
 * the body, the shape space, motion smoothness and what each kind does); one
 * test per part so that they run in parallel. */
#include <criterion/criterion.h>
#include <stdio.h>
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
/* the committed capture clips: format, size, source and licence, evaluation only */
Test(assets, clips) { check("clips"); }

/* the shipped bundle records the shipped recipe as the file is now, and a
 * recipe changed after it is caught */
Test(assets, the_shipped_bundle_records_its_recipe)
{
    check("recorded");
    const char *py = getenv("DRAPE_PYTHON");
    static char log[1 << 16];
    const char *recipe = tu_tmp("edited.toml");
    int rc = tu_run(log, sizeof log,
                    "sed 's/--steps 8000/--steps 8001/' train/recipes/default.toml > %s && OPENBLAS_NUM_THREADS=1 %s "
                    "train/check_assets.py recorded --recipe %s",
                    recipe, py ? py : "/usr/bin/python3", recipe);
    cr_assert(rc == 1 && strstr(log, "FAIL models/default.safetensors records"), "an edited recipe (rc %d):\n%s", rc, log);
}

/* check_assets heldout on the shipped recipe with the T-shirt's dataset
 * steps (the wide plan's and the four more families') drawing `seeds` draws
 * each (5 shipped); its exit status, log in log */
static int tshirt_seeds_heldout(char *log, int cap, const char *py, const char *seeds)
{
    char name[32];
    snprintf(name, sizeof name, "tshirt_seeds_%s.toml", seeds);
    const char *recipe = tu_tmp(name);
    return tu_run(log, cap,
                  "sed '/--garments tshirt/s/--train-betas 8 --train-seeds 5/--train-betas 8 --train-seeds %s/' "
                  "train/recipes/default.toml > %s && OPENBLAS_NUM_THREADS=1 %s train/check_assets.py heldout --recipe %s "
                  "--eval-args '--garments skirt --train-betas 8 --train-seeds 5 --test-seeds 1 --test-motion-betas 1 --seconds 3'",
                  seeds, recipe, py ? py : "/usr/bin/python3", recipe);
}

/* make eval's per-seed tables are held out from the shipped recipe's
 * training data (train/check_assets.py heldout through `make eval-heldout`,
 * the Makefile's own arguments); the old plan's numbering, under which
 * every one of the 42 sequences was a motion the wide plan trains on, is
 * caught; and the recipe's own dataset steps are issue 31's size (20
 * minutes over 8 shapes for each of the bundle's garments, no held-out
 * family). */
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
    /* the recipe's own data at the size: the T-shirt on 3 draws of
     * its fourteen families is short of 20 minutes (12 + 4.8); the skirt has
     * 36 on its eighteen (20 + 8 + 8) */
    rc = tshirt_seeds_heldout(log, sizeof log, py, "3");
    cr_assert(rc == 1 && strstr(log, "ok   skirt: 36.0 minutes") && strstr(log, "FAIL tshirt: 16.8 minutes of training motion over 8 shapes"),
              "a short recipe (rc %d):\n%s", rc, log);
    /* a garment of the bundle that no dataset step trains on at all fails
     * too (the loop went over the garments with data only) */
    rc = tshirt_seeds_heldout(log, sizeof log, py, "0");
    cr_assert(rc == 1 && strstr(log, "ok   dress: 20.0 minutes") && strstr(log, "FAIL tshirt: 0.0 minutes of training motion over 0 shapes"),
              "a recipe without the T-shirt's data (rc %d):\n%s", rc, log);
}
