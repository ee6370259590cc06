/* The C runtime against the independent PyTorch implementation in train/
 * (train/reference.py): same bundle, same random poses and betas, vertices
 * within 1e-4 m, at the tiny, small and paper-scale configurations and with
 * a longer pose history than docs/design.md §2.4's three frames, with a garment
 * that runs a network of its own, and on the default model, whose Bone-Net
 * inputs are clamped to their training range (module A to 1e-4 m; as served,
 * through its 100 refine sweeps, to 1e-3 m: see default_model_refined). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/npy.h"
#include "../runtime/sequence.h"
#include "util.h"

static void crosscheck_within(const char *bundle, int garment, int T, const float *betas, int nb, int lbs, double tol)
{
    drape_model *m = tu_load(bundle);
    drape_backend *be = tu_backend(m);
    cr_assert_lt(garment, m->cfg.n_garments);
    drape_identity *id = tu_identity(be, garment, betas, nb);
    int V = m->garments[garment].V;
    float *poses = malloc(sizeof(float) * 75 * T), *out = malloc(sizeof(float) * T * V * 3);
    tu_random_poses(poses, T, 0.35f, 0.25f, 1000 + T);
    drape_error e = {0};
    char pin[300], pout[300], betas_s[256] = "";
    snprintf(pin, sizeof pin, "%s", tu_tmp("poses.npy"));
    snprintf(pout, sizeof pout, "%s", tu_tmp("ref.npy"));
    cr_assert_eq(drape_npy_write(pin, poses, 2, (int64_t[]){T, 75}, &e), 0, "%s", e.msg);
    for (int i = 0; i < nb; i++)
        snprintf(betas_s + strlen(betas_s), sizeof betas_s - strlen(betas_s), i ? ",%.9g" : "%.9g", betas[i]);
    cr_assert_eq(drape_sequence_run(be, id, poses, T, lbs, out, 8, &e), 0, "%s", e.msg);

    const char *py = getenv("DRAPE_PYTHON");
    char log[4096];
    int rc = tu_run(log, sizeof log, "%s train/reference.py infer --model '%s' --garment %s --betas '%s' --poses '%s' --out '%s' %s",
                    py ? py : "/usr/bin/python3", tu_bundle(bundle), m->garments[garment].name, betas_s, pin, pout,
                    lbs ? "--lbs-only" : "");
    cr_assert_eq(rc, 0, "reference failed:\n%s", log);
    drape_npy ref;
    cr_assert_eq(drape_npy_read(&ref, pout, &e), 0, "%s", e.msg);
    cr_assert_eq(ref.ndim, 3);
    cr_assert(ref.shape[0] == T && ref.shape[1] == V && ref.shape[2] == 3);
    double d = tu_max_abs_diff(out, ref.data, (int64_t)T * V * 3);
    cr_log_info("%s %s%s: max |C − PyTorch| = %.3g m over %d frames × %d vertices", bundle, m->garments[garment].name,
                lbs ? " (lbs)" : "", d, T, V);
    cr_assert_leq(d, tol, "%s: C and PyTorch differ by %g m (allowed %g)", bundle, d, tol);
    drape_npy_free(&ref);
    free(poses);
    free(out);
    drape_identity_free(be, id);
    drape_backend_free(be);
    drape_model_free(m);
}

static void crosscheck(const char *bundle, int garment, int T, const float *betas, int nb, int lbs)
{
    crosscheck_within(bundle, garment, T, betas, nb, lbs, 1e-4);
}

/* a copy of the default model with GARMENT's refine step off: its module A
 * alone, which C and PyTorch compute to float32 rounding */
static const char *default_unrefined(const char *garment)
{
    static char path[300];
    snprintf(path, sizeof path, "%s", tu_tmp("default_unrefined.safetensors"));
    const char *py = getenv("DRAPE_PYTHON");
    char log[4096];
    int rc = tu_run(log, sizeof log, "%s train/edit_bundle.py refine --base models/default.safetensors --garment %s --iters 0 --out '%s'",
                    py ? py : "/usr/bin/python3", garment, path);
    cr_assert_eq(rc, 0, "the unrefined copy:\n%s", log);
    return path;
}

static const float BETAS[4] = {0.8f, -1.5f, 0.6f, 2.2f};

Test(crosscheck, tiny) { crosscheck("tiny_random", 0, 6, BETAS, 4, 0); }
Test(crosscheck, tiny_lbs_only) { crosscheck("tiny_random", 0, 4, BETAS, 2, 1); }
Test(crosscheck, small) { crosscheck("small_random", 0, 5, BETAS, 4, 0); }
Test(crosscheck, small_second_garment) { crosscheck("small_random", 1, 4, BETAS, 4, 0); }
Test(crosscheck, paper_scale) { crosscheck("paper_random", 0, 3, BETAS, 3, 0); }
/* a four-frame history with gaps (t-6, t-3, t-1, t): 10 frames cover the
 * windows that reach before the sequence's start and those that do not */
Test(crosscheck, longer_history) { crosscheck("tinyhist_random", 0, 10, BETAS, 4, 0); }
/* a garment with a network of its own beside one that runs the shared one */
Test(crosscheck, own_network) { crosscheck("tinyown_random", 1, 6, BETAS, 4, 0); }
Test(crosscheck, own_network_bundle_shared_garment) { crosscheck("tinyown_random", 0, 5, BETAS, 3, 0); }
/* the refine step after module A (runtime/refine.h) against the reference's */
Test(crosscheck, refine_step) { crosscheck("tinyrefine_random", 0, 5, BETAS, 3, 0); }
/* the refine step's Chebyshev-accelerated sweeps (config rho), 30 past the
 * 10 plain ones, on the tiny bundle given a refine entry */
Test(crosscheck, refine_step_accelerated)
{
    char path[300];
    snprintf(path, sizeof path, "%s", tu_tmp("accelerated.safetensors"));
    tu_config_plus(tu_bundle("tiny_random"), path,
                   "\"refine\": {\"skirt\": {\"iters\": 40, \"stiffness\": 20, \"margin\": 0.003, \"rho\": 0.99}}");
    crosscheck(path, 0, 5, BETAS, 3, 0);
}
Test(crosscheck, longer_history_second_garment) { crosscheck("tinyhist_random", 1, 10, BETAS, 3, 0); }
/* the default model, whose Bone-Net inputs are clamped to their training
 * range (docs/design.md §3.3; random poses reach far past it): the skirt's,
 * the dress's and the T-shirt's own networks, module A alone (the refine
 * step off) */
Test(crosscheck, default_model_clamped_inputs) { crosscheck(default_unrefined("skirt"), 0, 4, BETAS, 4, 0); }
Test(crosscheck, default_model_dress_own_network) { crosscheck(default_unrefined("dress"), 1, 4, BETAS, 4, 0); }
Test(crosscheck, default_model_own_network_clamped_inputs) { crosscheck(default_unrefined("tshirt"), 2, 4, BETAS, 4, 0); }
/* ... and as served, with each garment's refine step: 100 Chebyshev sweeps
 * at stiffness 100, near their stability limit (rho 0.9983), with contact
 * pushes that a rounding can switch on or off, carry float32 rounding to
 * 1e-5..5e-4 m on such poses (measured 2026-12-07: the skirt 1.4e-5, the
 * T-shirt 2.5e-5, the dress 1.6e-4, the dress of before 5.0e-4 on other
 * random poses), where the refine step itself moves the dress 16 mm on
 * average (up to 17 cm): a sweep missing or wrong shows. The
 * refine step's own arithmetic is held to 1e-4 by refine_step and
 * refine_step_accelerated above (1e-6 measured). */
Test(crosscheck, default_model_refined)
{
    for (int g = 0; g < 3; g++) crosscheck_within("models/default.safetensors", g, 4, BETAS, 4, 0, 1e-3);
}
