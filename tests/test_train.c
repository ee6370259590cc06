/* The training pipeline end to end on a tiny configuration: a base bundle,
 * a teacher dataset from `drape sim garment`, a few seconds of training that
 * lower the loss on a fixed batch, and an exported bundle that the C
 * runtime loads and matches PyTorch on. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/npy.h"
#include "util.h"

static char log_[16384];

static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }
static const char *bin(void) { return getenv("DRAPE_BIN") ? getenv("DRAPE_BIN") : "build/drape"; }

/* train/dataset.py on the tiny plan: one walk of SECONDS on one training
 * shape and one held-out shape, for each of GARMENTS. */
static int tiny_dataset_of(const char *garments, const char *base, const char *out, const char *seconds,
                           const char *extra)
{
    return tu_run(log_, sizeof log_,
                  "%s train/dataset.py --base %s --out %s --garments %s --train-betas 1 --test-betas 1 --motions walk "
                  "--train-seeds 1 --test-seeds 0 --seconds %s --jobs 2 --drape %s %s",
                  py(), base, out, garments, seconds, bin(), extra);
}

static int tiny_dataset(const char *base, const char *out, const char *seconds, const char *extra)
{
    return tiny_dataset_of("skirt", base, out, seconds, extra);
}

/* train/train.py init of the tiny preset for GARMENTS into BASE, with ARGS
 * (--seed, --set). */
static int tiny_init(const char *garments, const char *args, const char *base)
{
    return tu_run(log_, sizeof log_, "%s train/train.py init --preset tiny --garments %s %s --out %s", py(), garments,
                  args, base);
}

/* train/train.py fit of BASE on DATA into MODEL with ARGS. */
static int tiny_fit(const char *base, const char *data, const char *model, const char *args)
{
    return tu_run(log_, sizeof log_, "%s train/train.py fit --base %s --data %s --out %s %s", py(), base, data, model, args);
}

Test(train, tiny_run_lowers_the_loss_and_exports_a_bundle_c_matches)
{
    char base[300], data[300], model[300];
    snprintf(base, sizeof base, "%s", tu_tmp("base.safetensors"));
    snprintf(data, sizeof data, "%s", tu_tmp("ds"));
    snprintf(model, sizeof model, "%s", tu_tmp("trained.safetensors"));
    int rc = tiny_init("skirt", "--seed 3", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    rc = tiny_dataset(base, data, "0.7", "");
    cr_assert_eq(rc, 0, "dataset failed:\n%s", log_);
    /* resumable: a second run has nothing to do */
    rc = tiny_dataset(base, data, "0.7", "");
    cr_assert(rc == 0 && strstr(log_, ": skip") && !strstr(log_, ": ok"), "rerun did work again:\n%s", log_);
    /* another teacher (here: another clip length) is refused, not mixed in */
    char stale[300];
    snprintf(stale, sizeof stale, "%s", tu_tmp("ds_stale"));
    rc = tu_run(log_, sizeof log_, "cp -r %s %s", data, stale);
    cr_assert_eq(rc, 0, "%s", log_);
    rc = tiny_dataset(base, stale, "0.5", "");
    cr_assert(rc != 0 && strstr(log_, "another teacher") && strstr(log_, "seconds 0.7 -> 0.5"),
              "a dataset of another teacher was not refused:\n%s", log_);
    rc = tiny_dataset(base, stale, "0.5", "--replace-stale");
    cr_assert(rc == 0 && strstr(log_, "stale files") && strstr(log_, ": ok") && !strstr(log_, ": skip"),
              "--replace-stale did not regenerate:\n%s", log_);
    /* a garment's own teacher arguments make another teacher too; a garment
     * outside the plan is named */
    rc = tiny_dataset(base, stale, "0.5", "--garment-sim-args 'skirt=--max-substeps 4'");
    cr_assert(rc != 0 && strstr(log_, "another teacher") && strstr(log_, "garment_sim_args None -> {'skirt'"),
              "another garment teacher was not refused:\n%s", log_);
    rc = tiny_dataset(base, stale, "0.5", "--garment-sim-args 'dress=--iters 3'");
    cr_assert(rc != 0 && strstr(log_, "--garment-sim-args 'dress=--iters 3'") && strstr(log_, "one of --garments (skirt)"),
              "a garment outside the plan was not named:\n%s", log_);
    rc = tiny_fit(base, data, model,
                  "--steps 12 --frames 6 --lr 3e-3 --threads 1 --w-phys 1e-3 --w-edge 0.1 --pen-nn pred --log-every 4");
    cr_assert_eq(rc, 0, "fit failed:\n%s", log_);
    cr_assert(strstr(log_, " edge ") && strstr(log_, " phys ") && strstr(log_, " pen "),
              "the edge, penetration and physics terms are not in the loss:\n%s", log_);
    double before = 0, after = 0;
    const char *p = strstr(log_, "fixed-batch loss before ");
    cr_assert_not_null(p, "%s", log_);
    cr_assert_eq(sscanf(p, "fixed-batch loss before %lf after %lf", &before, &after), 2, "%s", p);
    cr_log_info("tiny training: fixed-batch loss %g -> %g", before, after);
    cr_assert_lt(after, 0.9 * before, "training did not lower the loss: %g -> %g\n%s", before, after, log_);

    cr_assert(strstr(log_, "train: 1 training sequences from "), "%s", log_);
    /* several datasets pooled (--data A,B): their training sequences together */
    char pooled[700], model2[300];
    snprintf(pooled, sizeof pooled, "%s,%s", data, stale);
    snprintf(model2, sizeof model2, "%s", tu_tmp("pooled.safetensors"));
    rc = tiny_fit(base, pooled, model2, "--steps 2 --frames 2 --threads 1");
    cr_assert(rc == 0 && strstr(log_, "train: 2 training sequences from "), "pooled fit:\n%s", log_);

    /* a fit cut off after a checkpoint and resumed makes the network an
     * uninterrupted one makes (make model's steps go on across sessions):
     * the same batches, so the same tensors, bit for bit */
    char whole[300], cut[300], ck1[300], ck2[300], cmp[1400];
    snprintf(whole, sizeof whole, "%s", tu_tmp("whole.safetensors"));
    snprintf(cut, sizeof cut, "%s", tu_tmp("cut.safetensors"));
    snprintf(ck1, sizeof ck1, "%s", tu_tmp("whole.pt"));
    snprintf(ck2, sizeof ck2, "%s", tu_tmp("cut.pt"));
    const char *fit6 = "--steps 6 --frames 3 --lr 3e-3 --threads 1 --ckpt-every 2 --ckpt";
    char args[600];
    snprintf(args, sizeof args, "%s %s", fit6, ck1);
    rc = tiny_fit(base, data, whole, args);
    cr_assert_eq(rc, 0, "uninterrupted fit:\n%s", log_);
    snprintf(args, sizeof args, "%s %s --stop-at 3", fit6, ck2);
    rc = tiny_fit(base, data, cut, args);
    cr_assert(rc == 0 && strstr(log_, "stopped at step 3 of 6"), "fit cut off:\n%s", log_);
    snprintf(args, sizeof args, "%s %s --resume", fit6, ck2);
    rc = tiny_fit(base, data, cut, args);
    cr_assert(rc == 0 && strstr(log_, "resumed at step 3"), "resumed fit:\n%s", log_);
    snprintf(cmp, sizeof cmp,
             "%s -c \"import sys; sys.path.insert(0, 'train'); import numpy as np; from bundle import read_bundle; "
             "a, b = read_bundle('%s')[1], read_bundle('%s')[1]; "
             "d = [k for k in a if k not in b or not np.array_equal(a[k], b[k])]; "
             "print('differ:', len(d), d[:3], 'of', len(a), 'same names', set(a) == set(b))\"",
             py(), whole, cut);
    rc = tu_run(log_, sizeof log_, "%s", cmp);
    cr_assert(rc == 0 && strstr(log_, "differ: 0 []") && strstr(log_, "same names True"),
              "the resumed fit's network is not the uninterrupted one's:\n%s", log_);
    rc = tiny_fit(base, data, cut, "--steps 6 --stop-at 6 --ckpt x.pt");
    cr_assert(rc != 0 && strstr(log_, "--stop-at 6") && !strstr(log_, "Traceback"), "--stop-at 6 of 6:\n%s", log_);

    /* --through-refine: the losses on the refined positions, differentiated
     * through the refine step, lower the loss too; a bundle that refines
     * none of the garments trained is refused by name */
    char refined[300], model3[300];
    snprintf(refined, sizeof refined, "%s", tu_tmp("refined.safetensors"));
    snprintf(model3, sizeof model3, "%s", tu_tmp("through.safetensors"));
    rc = tiny_fit(model, data, model3, "--steps 2 --frames 2 --threads 1 --through-refine");
    cr_assert(rc != 0 && strstr(log_, "--through-refine") && strstr(log_, "refines none of skirt") &&
                  !strstr(log_, "Traceback"),
              "an unrefined bundle was not refused:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py refine --base %s --garment skirt --iters 4 --margin 0.005 --out %s",
                py(), model, refined);
    cr_assert_eq(rc, 0, "refine:\n%s", log_);
    /* --rho: Chebyshev-accelerated sweeps, written into the config; out of [0, 1) refused by name */
    char accel[300];
    snprintf(accel, sizeof accel, "%s", tu_tmp("accel.safetensors"));
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py refine --base %s --garment skirt --iters 30 --rho 1.5 --out %s",
                py(), model, accel);
    cr_assert(rc != 0 && strstr(log_, "--rho in [0, 1)") && !strstr(log_, "Traceback"), "rho 1.5:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py refine --base %s --garment skirt --iters 30 --rho 0.99 --out %s",
                py(), model, accel);
    cr_assert_eq(rc, 0, "refine --rho:\n%s", log_);
    drape_model *am = NULL;
    drape_error ae = {0};
    cr_assert_eq(drape_model_load(&am, accel, &ae), 0, "%s", ae.msg);
    cr_assert(am->cfg.refine[0].iters == 30 && am->cfg.refine[0].rho == 0.99, "refine %d sweeps, rho %g",
              am->cfg.refine[0].iters, am->cfg.refine[0].rho);
    drape_model_free(am);
    rc = tiny_fit(refined, data, model3, "--steps 12 --frames 6 --lr 3e-3 --threads 1 --pen-nn pred --through-refine");
    cr_assert(rc == 0 && strstr(log_, "the losses on the refined positions of skirt"), "fit through refine:\n%s", log_);
    p = strstr(log_, "fixed-batch loss before ");
    cr_assert(p && sscanf(p, "fixed-batch loss before %lf after %lf", &before, &after) == 2, "%s", log_);
    cr_assert_lt(after, 0.9 * before, "training through the refine step did not lower the loss: %g -> %g", before, after);
    /* and the loss is on other positions than the network's own: the same
     * bundle's fixed batch scores differently without the flag */
    double plain = 0, through = 0;
    rc = tiny_fit(refined, data, model3, "--steps 1 --frames 6 --threads 1 --pen-nn pred --through-refine");
    p = strstr(log_, "fixed-batch loss before ");
    cr_assert(rc == 0 && p && sscanf(p, "fixed-batch loss before %lf", &through) == 1, "%s", log_);
    rc = tiny_fit(refined, data, model3, "--steps 1 --frames 6 --threads 1 --pen-nn pred");
    p = strstr(log_, "fixed-batch loss before ");
    cr_assert(rc == 0 && p && sscanf(p, "fixed-batch loss before %lf", &plain) == 1, "%s", log_);
    cr_assert_gt(fabs(plain - through), 1e-3 * plain, "the refine step did not change the loss: %g and %g", plain, through);

    /* the exported bundle: C and PyTorch agree on it */
    float poses[5 * 75];
    tu_random_poses(poses, 5, 0.3f, 0.2f, 77);
    drape_error e = {0};
    char pin[300], pc[300], pr[300];
    snprintf(pin, sizeof pin, "%s", tu_tmp("tp.npy"));
    snprintf(pc, sizeof pc, "%s", tu_tmp("tc.npy"));
    snprintf(pr, sizeof pr, "%s", tu_tmp("tr.npy"));
    cr_assert_eq(drape_npy_write(pin, poses, 2, (int64_t[]){5, 75}, &e), 0, "%s", e.msg);
    rc = tu_run(log_, sizeof log_, "%s infer --backend cpu --model %s --garment skirt --betas 0.5,-1 --poses %s --out %s", bin(), model,
                pin, pc);
    cr_assert_eq(rc, 0, "drape infer on the trained bundle:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/reference.py infer --model %s --garment skirt --betas 0.5,-1 --poses %s --out %s",
                py(), model, pin, pr);
    cr_assert_eq(rc, 0, "reference infer:\n%s", log_);
    drape_npy c, r;
    cr_assert_eq(drape_npy_read(&c, pc, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_npy_read(&r, pr, &e), 0, "%s", e.msg);
    cr_assert_eq(c.shape[1], r.shape[1]);
    double d = tu_max_abs_diff(c.data, r.data, c.shape[0] * c.shape[1] * 3);
    cr_assert_leq(d, 1e-4, "C and PyTorch differ by %g m on the trained bundle", d);
    drape_npy_free(&c);
    drape_npy_free(&r);

    /* train/eval.py (what `make eval` prints) on the held-out walk: a table
     * per garment against skinning and the teacher, the goals' verdict
     * (exit 0 all met, 3 one missed), and the per-sequence JSON */
    char ej[300];
    snprintf(ej, sizeof ej, "%s", tu_tmp("eval.json"));
    rc = tu_run(log_, sizeof log_, "%s train/eval.py --model %s --data %s --drape %s --json %s --jobs 1", py(), model,
                data, bin(), ej);
    cr_assert((rc == 0 || rc == 3) && strstr(log_, "### skirt (1 sequences: 1 with unseen shapes") &&
                  strstr(log_, "| model | ") && strstr(log_, "| lbs | ") && strstr(log_, "| teacher | nan | nan | ") &&
                  strstr(log_, "model / lbs mean error: "),
              "eval.py (rc %d):\n%s", rc, log_);
    cr_assert_eq(rc, strstr(log_, "MISSED") ? 3 : 0, "the exit status does not follow the verdict:\n%s", log_);
    json_error_t je;
    json_t *res = json_load_file(ej, 0, &je);
    cr_assert(res && json_is_array(res) && json_array_size(res) == 1, "%s: %s", ej, res ? "not one sequence" : je.text);
    json_t *r0 = json_array_get(res, 0);
    cr_assert_str_eq(json_string_value(json_object_get(r0, "garment")), "skirt");
    cr_assert(json_real_value(json_object_get(json_object_get(r0, "model"), "mean_mm")) > 0, "no model error in %s", ej);
    json_decref(res);
    rc = tu_run(log_, sizeof log_, "%s train/eval.py --model %s --data %s --drape %s --garments skirt,dress --jobs 1",
                py(), model, data, bin());
    cr_assert(rc != 0 && rc != 3 && strstr(log_, "--garments skirt,dress: dress not in") && !strstr(log_, "Traceback"),
              "a garment outside the dataset was not named:\n%s", log_);
}

/* Prints EXPR into log_, Python's view of MODEL: c its config, t its
 * tensors (train/bundle.py), np numpy. */
static int bundle_print(const char *model, const char *expr)
{
    return tu_run(log_, sizeof log_,
                  "%s -c \"import sys; sys.path.insert(0, 'train'); import numpy as np; from bundle import read_bundle; "
                  "c, t = read_bundle('%s'); print(%s)\"",
                  py(), model, expr);
}

/* train.py init --set: network sizes over the preset's, and a pose history
 * longer than docs/design.md §2.4's three frames, which PyTorch trains and the C
 * runtime serves as PyTorch does (docs/conventions.md, "history"). */
Test(train, init_set_sizes_and_a_longer_history)
{
    char base[300], data[300], model[300];
    snprintf(base, sizeof base, "%s", tu_tmp("hbase.safetensors"));
    snprintf(data, sizeof data, "%s", tu_tmp("hds"));
    snprintf(model, sizeof model, "%s", tu_tmp("htrained.safetensors"));
    int rc = tiny_init("skirt", "--set nosuch=3", base);
    cr_assert(rc != 0 && strstr(log_, "--set nosuch=3") && strstr(log_, "bones"), "a bad --set was not named:\n%s", log_);
    rc = tiny_init("skirt", "--set history=1,2,0", base);
    cr_assert(rc != 0 && strstr(log_, "--set history=1,2,0") && strstr(log_, "decreasing"),
              "a history out of order was not named:\n%s", log_);
    rc = tiny_init("skirt", "--set history=64,0", base);
    cr_assert(rc != 0 && strstr(log_, "--set history=64,0") && strstr(log_, "63"),
              "a history past the runtime's reach was not named:\n%s", log_);
    /* the teacher's dataset comes from a three-frame base with the same
     * assets; the network trains on the longer history */
    rc = tiny_init("skirt", "--seed 3", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    rc = tiny_dataset(base, data, "0.4", "");
    cr_assert_eq(rc, 0, "dataset failed:\n%s", log_);
    /* the same assets with another network: the teacher's sequences stand */
    rc = tiny_init("skirt", "--seed 3 --set history=4,2,1,0", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    rc = tiny_dataset(base, data, "0.4", "");
    cr_assert(rc == 0 && strstr(log_, ": skip") && !strstr(log_, ": ok"),
              "a new pose history made the teacher's sequences stale:\n%s", log_);
    rc = tiny_init("skirt", "--seed 3 --set bones=12 --set hidden=24 --set history=4,2,1,0", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    rc = tiny_fit(base, data, model, "--steps 3 --frames 4 --threads 1 --garment-weights coat=2");
    cr_assert(rc != 0 && strstr(log_, "--garment-weights") && strstr(log_, "skirt"), "a bad weight was not named:\n%s",
              log_);
    rc = tiny_fit(base, data, model, "--steps 3 --frames 4 --threads 1 --garment-weights skirt=heavy");
    cr_assert(rc != 0 && strstr(log_, "--garment-weights skirt=heavy") && !strstr(log_, "Traceback"),
              "a malformed weight was not named:\n%s", log_);
    rc = tiny_fit(base, data, model, "--steps 3 --frames 4 --threads 1 --term-scale skirt:stretch=2");
    cr_assert(rc != 0 && strstr(log_, "--term-scale skirt:stretch=2") && strstr(log_, "pen") && !strstr(log_, "Traceback"),
              "a bad term was not named:\n%s", log_);
    rc = tiny_fit(base, data, model, "--steps 3 --frames 4 --threads 1 --term-scale coat:pen=2");
    cr_assert(rc != 0 && strstr(log_, "--term-scale coat:pen=2") && strstr(log_, "skirt"),
              "a bad garment was not named:\n%s", log_);
    rc = tiny_fit(base, data, model, "--steps 3 --frames 4 --threads 1 --term-scale skirt:lap=2,skirt:pen=inf");
    cr_assert(rc != 0 && strstr(log_, "--term-scale skirt:pen=inf") && !strstr(log_, "Traceback"),
              "an infinite scale was not named:\n%s", log_);
    /* every term of the only garment scaled to zero: the terms are still
     * computed (printed), the loss that trains is zero */
    rc = tiny_fit(base, data, model,
                  "--steps 2 --frames 4 --threads 1 --log-every 1 --w-pen 1 --w-area 1 "
                  "--term-scale skirt:pos=0,skirt:lap=0,skirt:pen=0,skirt:area=0");
    cr_assert(rc == 0 && strstr(log_, "step 1/2 loss 0 (pos ") && !strstr(log_, "(pos 0 ") && strstr(log_, " area "),
              "scaled terms:\n%s", log_);
    /* the robust position loss on the garments named: another first loss;
     * an unknown garment or kind named */
    double pos_mse = 0, pos_robust = 0;
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --log-every 1");
    cr_assert(rc == 0 && strstr(log_, "(pos ") && sscanf(strstr(log_, "(pos ") + 5, "%lf", &pos_mse) == 1, "mse:\n%s", log_);
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --log-every 1 --pos-loss robust:skirt");
    cr_assert(rc == 0 && strstr(log_, "(pos ") && sscanf(strstr(log_, "(pos ") + 5, "%lf", &pos_robust) == 1,
              "robust:skirt:\n%s", log_);
    cr_assert(fabs(pos_robust - pos_mse) > 0.2 * pos_mse, "the robust loss (%g) is the squared one (%g)", pos_robust, pos_mse);
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --pos-loss robust:coat");
    cr_assert(rc != 0 && strstr(log_, "--pos-loss robust:coat") && strstr(log_, "one of skirt") && !strstr(log_, "Traceback"),
              "a bad garment for the robust loss was not named:\n%s", log_);
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --pos-loss mse:skirt");
    cr_assert(rc != 0 && strstr(log_, "--pos-loss mse:skirt"), "mse with garments was not refused:\n%s", log_);
    /* the penetration term's margin: a wider one reaches more vertices, a
     * bad one is refused */
    double pen_5mm = 0, pen_3cm = 0;
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --log-every 1");
    cr_assert(rc == 0 && strstr(log_, " pen ") && sscanf(strstr(log_, " pen ") + 5, "%lf", &pen_5mm) == 1, "%s", log_);
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --log-every 1 --pen-margin 0.03");
    cr_assert(rc == 0 && strstr(log_, " pen ") && sscanf(strstr(log_, " pen ") + 5, "%lf", &pen_3cm) == 1, "%s", log_);
    cr_assert_gt(pen_3cm, pen_5mm, "a 3 cm margin (%g) is no stronger than 5 mm (%g)", pen_3cm, pen_5mm);
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --pen-margin -0.01");
    cr_assert(rc != 0 && strstr(log_, "--pen-margin -0.01") && !strstr(log_, "Traceback"), "%s", log_);
    /* weight decay: the same fit's weight matrices come out smaller with it
     * (lr 1e-3 and decay 100 take 10% off a weight a step, ten times what
     * Adam's step adds); a bad decay is named */
    double norm[2];
    for (int k = 0; k < 2; k++) {
        rc = tiny_fit(base, data, model, k ? "--steps 3 --frames 4 --threads 1 --lr 1e-3 --weight-decay 100"
                                           : "--steps 3 --frames 4 --threads 1 --lr 1e-3");
        cr_assert_eq(rc, 0, "fit failed:\n%s", log_);
        rc = bundle_print(model, "'norm', float(np.linalg.norm(t['bonenet.0.weight'])), "
                                 "'decay', c['training'].get('weight_decay', 0)");
        cr_assert(rc == 0 && strstr(log_, "norm ") && sscanf(strstr(log_, "norm ") + 5, "%lf", &norm[k]) == 1, "%s", log_);
        cr_assert(strstr(log_, k ? "decay 100" : "decay 0"), "the bundle's record of the decay:\n%s", log_);
    }
    cr_assert_lt(norm[1], 0.85 * norm[0], "with decay the first layer's norm is %g, without %g", norm[1], norm[0]);
    rc = tiny_fit(base, data, model, "--steps 1 --frames 4 --threads 1 --weight-decay nan");
    cr_assert(rc != 0 && strstr(log_, "--weight-decay nan") && !strstr(log_, "Traceback"), "%s", log_);
    rc = tiny_fit(base, data, model, "--steps 3 --frames 4 --threads 1 --log-every 1 --garment-weights skirt=2");
    cr_assert_eq(rc, 0, "fit failed:\n%s", log_);
    /* four frames: 4 positions and 3 differences per bone, 7 * 3 * 12 inputs */
    rc = bundle_print(model, "'history', c['history'], 'bones', c['bones'], 'hidden', c['hidden'], "
                             "'in', t['bonenet.in_mean'].shape[0], t['bonenet.0.weight'].shape[1]");
    cr_assert_eq(rc, 0, "%s", log_);
    cr_assert(strstr(log_, "history [4, 2, 1, 0] bones 12 hidden 24 in 252 252"), "%s", log_);
    /* the C runtime runs it as the reference does, on a sequence whose
     * early frames' windows reach before its start */
    char pin[300], pout[300], pref[300];
    snprintf(pin, sizeof pin, "%s", tu_tmp("hp.npy"));
    snprintf(pout, sizeof pout, "%s", tu_tmp("ho.npy"));
    snprintf(pref, sizeof pref, "%s", tu_tmp("hr.npy"));
    float poses[7 * 75];
    tu_random_poses(poses, 7, 0.3f, 0.2f, 77);
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(pin, poses, 2, (int64_t[]){7, 75}, &e), 0, "%s", e.msg);
    rc = tu_run(log_, sizeof log_, "%s infer --backend cpu --model %s --garment skirt --betas 0.5,-1 --poses %s --out %s", bin(),
                model, pin, pout);
    cr_assert_eq(rc, 0, "drape infer on a longer history:\n%s", log_);
    rc = tu_run(log_, sizeof log_,
                "%s train/reference.py infer --model %s --garment skirt --betas 0.5,-1 --poses %s --out %s", py(),
                model, pin, pref);
    cr_assert_eq(rc, 0, "the reference on a longer history:\n%s", log_);
    drape_npy got, want;
    cr_assert_eq(drape_npy_read(&got, pout, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_npy_read(&want, pref, &e), 0, "%s", e.msg);
    cr_assert_eq(got.shape[0] * got.shape[1], want.shape[0] * want.shape[1]);
    double d = tu_max_abs_diff(got.data, want.data, got.shape[0] * got.shape[1] * 3);
    cr_assert_leq(d, 1e-4, "C and PyTorch differ by %g m on the trained four-frame model", d);
    drape_npy_free(&got);
    drape_npy_free(&want);
}

Test(train, physics_terms_behave)
{
    int rc = tu_run(log_, sizeof log_, "%s train/check_physics.py", py());
    cr_assert_eq(rc, 0, "%s", log_);
}

/* train/hysteresis.py: the same clip after two preludes, one of them twice.
 * The teacher is deterministic, so the repeated prelude lands where the
 * first did; different preludes leave the skirt in different places; a bad
 * motion name is refused by name. */
Test(train, hysteresis_measures_what_the_teacher_remembers)
{
    char js[300], tiny[300];
    snprintf(js, sizeof js, "%s", tu_tmp("hyst.json"));
    snprintf(tiny, sizeof tiny, "%s", tu_bundle("tiny_random"));
    int rc = tu_run(log_, sizeof log_,
                    "%s train/hysteresis.py --model %s --garment skirt --drape %s "
                    "--preludes run:2,jump:4,run:2 --prelude-seconds 0.5 --clip-seconds 0.6 --last 5 --json %s",
                    py(), tiny, bin(), js);
    cr_assert_eq(rc, 0, "hysteresis failed:\n%s", log_);
    json_error_t je;
    json_t *r = json_load_file(js, 0, &je);
    cr_assert(r, "%s: %s", js, je.text);
    json_t *runs = json_object_get(r, "runs");
    json_t *a = json_object_get(runs, "run:2"), *b = json_object_get(runs, "run:2#3"), *c = json_object_get(runs, "jump:4");
    cr_assert(a && b && c && json_object_get(runs, "plain"), "runs missing:\n%s", log_);
    double da = json_real_value(json_object_get(a, "to_plain_mm")), db = json_real_value(json_object_get(b, "to_plain_mm")),
           dc = json_real_value(json_object_get(c, "to_plain_mm"));
    cr_assert(da > 0 && dc > 0 && fabs(da - dc) > 0.01, "preludes left no trace: run %g, jump %g mm", da, dc);
    cr_assert_float_eq(da, db, 1e-9, "the same prelude twice: %g and %g mm", da, db);
    cr_assert(json_is_integer(json_object_get(a, "pinched_edges")), "%s", log_);
    double spread = json_real_value(json_object_get(r, "spread_mm"));
    cr_assert(spread > 0 && spread < 1000, "spread %g mm", spread);
    json_decref(r);
    rc = tu_run(log_, sizeof log_, "%s train/hysteresis.py --model %s --garment skirt --preludes sprint:1 --drape %s",
                py(), tiny, bin());
    cr_assert(rc != 0 && strstr(log_, "'sprint:1' is not KIND:SEED") && !strstr(log_, "Traceback"),
              "a bad prelude was not named:\n%s", log_);
}

/* train.py attach: a copy of the bundle whose garment the simulator holds at
 * its hem and cuffs too (what `drape info` and the teacher read); bad
 * requests named */
Test(train, attach_holds_more_of_a_garment)
{
    char base[300], held[300];
    snprintf(base, sizeof base, "%s", tu_tmp("abase.safetensors"));
    snprintf(held, sizeof held, "%s", tu_tmp("aheld.safetensors"));
    int rc = tiny_init("skirt,tshirt", "--seed 3", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py attach --base %s --out %s --garment tshirt --hem 0.02", py(), base,
                held);
    cr_assert(rc == 0 && strstr(log_, "tshirt attached at 22 vertices (6 before"), "hem:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py attach --base %s --out %s --garment tshirt --hem 0.02 --cuffs 0.02",
                py(), held, held);
    cr_assert(rc == 0 && strstr(log_, "tshirt attached at 38 vertices (22 before"), "cuffs:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s info %s", bin(), held);
    cr_assert(rc == 0 && strstr(log_, "38 attached in simulation"), "drape info:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py attach --base %s --out %s --garment skirt --cuffs 0.02", py(), base,
                held);
    cr_assert(rc != 0 && strstr(log_, "skirt has no sleeves"), "cuffs on a skirt:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py attach --base %s --out %s --garment tshirt --hem 0.5", py(), base,
                held);
    cr_assert(rc != 0 && strstr(log_, "--hem 0.5: expected a band in [0, 0.1] m"), "a wide band:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py attach --base %s --out %s --garment dress --hem 0.01", py(), base,
                held);
    cr_assert(rc != 0 && strstr(log_, "no garment 'dress'") && strstr(log_, "skirt, tshirt"), "a garment not there:\n%s",
              log_);
}

/* A garment's own teacher arguments changed: with --replace-stale only its
 * sequences are made again, the other garment's are kept */
Test(train, dataset_remakes_only_the_garment_whose_teacher_changed)
{
    char base[300], data[300];
    snprintf(base, sizeof base, "%s", tu_tmp("gbase.safetensors"));
    snprintf(data, sizeof data, "%s", tu_tmp("gds"));
    int rc = tiny_init("skirt,miniskirt", "--seed 3", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    rc = tiny_dataset_of("skirt,miniskirt", base, data, "0.3", "");
    cr_assert(rc == 0 && strstr(log_, "] skirt-b0-walk-s0: ok") && strstr(log_, "miniskirt-b0-walk-s0: ok"),
              "dataset failed:\n%s", log_);
    const char *margs = "--garment-sim-args 'miniskirt=--max-substeps 4'";
    char replace[200];
    snprintf(replace, sizeof replace, "--replace-stale %s", margs);
    rc = tiny_dataset_of("skirt,miniskirt", base, data, "0.3", margs);
    cr_assert(rc != 0 && strstr(log_, "holds 4 files from another teacher") && strstr(log_, "garment_sim_args None"),
              "another garment teacher was not refused:\n%s", log_);
    rc = tiny_dataset_of("skirt,miniskirt", base, data, "0.3", replace);
    cr_assert(rc == 0 && strstr(log_, "removed 4 stale files (those of miniskirt)"), "not only the miniskirt's:\n%s",
              log_);
    cr_assert(strstr(log_, "] skirt-b0-walk-s0: skip") && strstr(log_, "] skirt-b1t-walk-s0: skip") &&
                  strstr(log_, "miniskirt-b0-walk-s0: ok") && strstr(log_, "miniskirt-b1t-walk-s0: ok"),
              "the skirt was made again or the miniskirt not:\n%s", log_);
    /* the clip length is every garment's teacher: all of it is made again */
    rc = tiny_dataset_of("skirt,miniskirt", base, data, "0.2", replace);
    cr_assert(rc == 0 && strstr(log_, "removed 8 stale files (all)") && !strstr(log_, ": skip"),
              "a new clip length kept sequences:\n%s", log_);
}

/* --garment-prelude: one garment's teacher starts worn in. Its sequences keep
 * the plain clip's poses and frame count; its garment is simulated after the
 * prelude, stored in the clip's own world frame (near the plain start, not a
 * walk's length away) and unlike the plain start; the other garment's
 * sequences are untouched; a new prelude remakes only its garment's; a bad
 * one is refused by name */
Test(train, dataset_prelude_starts_a_garment_worn_in)
{
    char base[300], plain[300], worn[300];
    snprintf(base, sizeof base, "%s", tu_tmp("pbase.safetensors"));
    snprintf(plain, sizeof plain, "%s", tu_tmp("pds_plain"));
    snprintf(worn, sizeof worn, "%s", tu_tmp("pds_worn"));
    int rc = tiny_init("skirt,miniskirt", "--seed 5", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    rc = tiny_dataset_of("skirt,miniskirt", base, plain, "0.4", "");
    cr_assert_eq(rc, 0, "dataset failed:\n%s", log_);
    rc = tiny_dataset_of("skirt,miniskirt", base, worn, "0.4", "--garment-prelude miniskirt=walk:1:0.5");
    cr_assert(rc == 0 && strstr(log_, "miniskirt-b0-walk-s0: ok"), "dataset with a prelude failed:\n%s", log_);
    rc = tu_run(log_, sizeof log_,
                "%s -c \"import json, numpy as np; P, W = '%s/seq/', '%s/seq/'; "
                "m = json.load(open('%s/manifest.json'))['teacher']; print('prelude', m['garment_prelude']); "
                "L = lambda d, n, k: np.load(d + n + '.' + k + '.npy'); "
                "[print(n, 'poses', np.array_equal(L(P, n, 'poses'), L(W, n, 'poses')), 'shape', "
                "L(P, n, 'sim').shape == L(W, n, 'sim').shape, 'same', np.array_equal(L(P, n, 'sim'), L(W, n, 'sim')), "
                "'start %%.3f' %% np.linalg.norm(L(P, n, 'sim')[0].mean(0) - L(W, n, 'sim')[0].mean(0)), "
                "'apart %%.4f' %% np.linalg.norm(L(P, n, 'sim')[0] - L(W, n, 'sim')[0], axis=1).mean()) "
                "for n in ('skirt-b0-walk-s0', 'miniskirt-b0-walk-s0')]\"",
                py(), plain, worn, worn);
    cr_assert_eq(rc, 0, "%s", log_);
    cr_assert(strstr(log_, "prelude {'miniskirt': 'walk:1:0.5'}"), "%s", log_);
    cr_assert(strstr(log_, "skirt-b0-walk-s0 poses True shape True same True"), "the skirt changed:\n%s", log_);
    const char *mini = strstr(log_, "miniskirt-b0-walk-s0 poses True shape True same False start ");
    double start = 1, apart = 0;
    cr_assert(mini && sscanf(mini, "miniskirt-b0-walk-s0 poses True shape True same False start %lf apart %lf", &start,
                             &apart) == 2, "the miniskirt is not the plain clip's poses worn in:\n%s", log_);
    cr_assert_lt(start, 0.05, "the worn-in garment is %g m from the plain start (not in the clip's frame)", start);
    cr_assert_gt(apart, 1e-4, "the worn-in garment starts where the plain one does (%g m apart)", apart);
    rc = tiny_dataset_of("skirt,miniskirt", base, worn, "0.4", "--replace-stale --garment-prelude miniskirt=idle:2:0.5");
    cr_assert(rc == 0 && strstr(log_, "removed 4 stale files (those of miniskirt)") &&
                  strstr(log_, "] skirt-b0-walk-s0: skip") && strstr(log_, "miniskirt-b0-walk-s0: ok"),
              "a new prelude did not remake the miniskirt's alone:\n%s", log_);
    rc = tiny_dataset_of("skirt,miniskirt", base, worn, "0.4", "--garment-prelude miniskirt=waltz:1");
    cr_assert(rc != 0 && strstr(log_, "--garment-prelude 'miniskirt=waltz:1'") && !strstr(log_, "Traceback"),
              "a bad prelude was not refused by name:\n%s", log_);
}

/* --kind-seeds: more training draws of one kind on each training shape, named
 * and seeded after the held-out draws, so every sequence of the plain plan
 * (the held-out ones above all) stays as it was; bad counts refused by name */
Test(train, dataset_kind_seeds_add_training_draws_only)
{
    char tiny[300], out[300], plain[sizeof log_];
    snprintf(tiny, sizeof tiny, "%s", tu_bundle("tiny_random"));
    snprintf(out, sizeof out, "%s", tu_tmp("kds"));
    const char *cmd = "%s train/dataset.py --base %s --out %s --garments skirt --train-betas 2 --test-betas 1 "
                      "--motions walk,idle --train-seeds 1 --test-seeds 1 --seconds 1 --dry-run %s";
    int rc = tu_run(log_, sizeof log_, cmd, py(), tiny, out, "");
    cr_assert(rc == 0 && strstr(log_, "dataset: 10 sequences (4 train, 6 test)"), "plain plan:\n%s", log_);
    snprintf(plain, sizeof plain, "%s", log_);
    rc = tu_run(log_, sizeof log_, cmd, py(), tiny, out, "--kind-seeds idle=3");
    cr_assert(rc == 0 && strstr(log_, "dataset: 14 sequences (8 train, 6 test)"), "with --kind-seeds:\n%s", log_);
    for (char *line = strtok(plain, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(line, "dataset: "))
            cr_assert(strstr(log_, line), "the plain plan's %s changed:\n%s", line, log_);
    cr_assert(strstr(log_, "skirt-b0-idle-s2 train idle seed 2001\n") &&
                  strstr(log_, "skirt-b1-idle-s3 train idle seed 3018\n") && !strstr(log_, "b2t-idle-s2") &&
                  !strstr(log_, "walk-s2"),
              "the extra draws are not the training shapes' idle s2 and s3:\n%s", log_);
    rc = tu_run(log_, sizeof log_, cmd, py(), tiny, out, "--kind-seeds idle=0");
    cr_assert(rc != 0 && strstr(log_, "--kind-seeds 'idle=0'") && !strstr(log_, "Traceback"),
              "fewer draws than --train-seeds were not refused by name:\n%s", log_);
    rc = tu_run(log_, sizeof log_, cmd, py(), tiny, out, "--kind-seeds run=4");
    cr_assert(rc != 0 && strstr(log_, "--kind-seeds 'run=4'") && !strstr(log_, "Traceback"),
              "a kind not in --motions was not refused by name:\n%s", log_);
}

/* train.py arms: a copy of the bundle whose shape space moves the arms
 * further out with girth and less in with narrow shoulders; check_arms.py
 * says what changed (the shapedirs' x of betas 1 and 2, on arm vertices) and
 * that a thick, narrow-shouldered body's lowered arms pass through its trunk
 * less; bad shifts named */
Test(train, arms_open_the_armpits)
{
    char out[300];
    snprintf(out, sizeof out, "%s", tu_tmp("arms.safetensors"));
    const char *small = tu_bundle("small_random");
    int rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py arms --base %s --out %s --girth 0.015 --shoulders -0.006",
                    py(), small, out);
    cr_assert(rc == 0 && strstr(log_, "arms out 0.015 m per unit of girth"), "arms:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/check_arms.py %s %s", py(), small, out);
    cr_assert(rc == 0 && strstr(log_, "arm vertices inside the trunk") && !strstr(log_, "FAILED"), "%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/check_arms.py %s %s", py(), small, small);
    cr_assert(rc != 0 && strstr(log_, "FAILED: only x of betas 1 and 2 moved"), "an unchanged copy passed:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py arms --base %s --out %s --girth 0.5", py(), small, out);
    cr_assert(rc != 0 && strstr(log_, "--girth 0.5: expected a shift in [-0.05, 0.05] m") && !strstr(log_, "Traceback"),
              "a wide shift:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s info %s", bin(), out);
    cr_assert_eq(rc, 0, "drape loads the copy:\n%s", log_);
}

/* `drape infer` of MODEL's GARMENT on the poses in PIN, read back. */
static drape_npy infer_of(const char *model, const char *garment, const char *pin, const char *tag)
{
    char out[300];
    snprintf(out, sizeof out, "%s", tu_tmp(tag));
    int rc = tu_run(log_, sizeof log_, "%s infer --backend cpu --model %s --garment %s --betas 0.5,-1 --poses %s --out %s", bin(), model,
                    garment, pin, out);
    cr_assert_eq(rc, 0, "drape infer %s %s:\n%s", model, garment, log_);
    drape_npy x;
    drape_error e = {0};
    cr_assert_eq(drape_npy_read(&x, out, &e), 0, "%s", e.msg);
    return x;
}

/* T random poses (σ 0.3 rad, root within 0.2 m) written to PATH as [T, 75] */
static void poses_npy(const char *path, int T, uint64_t seed)
{
    float poses[8 * 75];
    cr_assert(T <= 8);
    tu_random_poses(poses, T, 0.3f, 0.2f, seed);
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(path, poses, 2, (int64_t[]){T, 75}, &e), 0, "%s", e.msg);
}

static double npy_diff(const drape_npy *a, const drape_npy *b)
{
    cr_assert(a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1]);
    return tu_max_abs_diff(a->data, b->data, a->shape[0] * a->shape[1] * 3);
}

/* GRAFT, the miniskirt of FROM grafted into BASE, on the poses in PIN: its
 * skirt is BASE's to the bit, its miniskirt FROM's (to 1e-6) and more than
 * MIN_CHANGE from BASE's; BASE's skirt and GRAFT's miniskirt kept in the
 * out-parameters (TAG names the files) */
static void graft_check(const char *base, const char *from, const char *graft, const char *pin, const char *tag,
                        double min_change, drape_npy *base_skirt, drape_npy *g_mini)
{
    char f[5][64];
    for (int i = 0; i < 5; i++) snprintf(f[i], sizeof f[i], "%s%d.npy", tag, i);
    drape_npy base_mini = infer_of(base, "miniskirt", pin, f[0]), from_mini = infer_of(from, "miniskirt", pin, f[1]);
    drape_npy g_skirt = infer_of(graft, "skirt", pin, f[2]);
    *base_skirt = infer_of(base, "skirt", pin, f[3]);
    *g_mini = infer_of(graft, "miniskirt", pin, f[4]);
    cr_assert_eq(npy_diff(&g_skirt, base_skirt), 0, "%s: the skirt is no longer the base's", graft);
    cr_assert_leq(npy_diff(g_mini, &from_mini), 1e-6, "%s: the miniskirt is not %s's", graft, from);
    cr_assert_gt(npy_diff(g_mini, &base_mini), min_change, "%s: the miniskirt is still the base's", graft);
    drape_npy_free(&base_mini);
    drape_npy_free(&from_mini);
    drape_npy_free(&g_skirt);
}

/* train.py graft: a network trained on one garment alone (fit --garments)
 * becomes that garment's own in the base; the C runtime and PyTorch run it
 * for that garment only, and fit trains it further. */
Test(train, graft_gives_a_garment_its_own_network)
{
    char base[300], data[300], mini[300], graft[300], graft2[300], other[300];
    snprintf(base, sizeof base, "%s", tu_tmp("gbase.safetensors"));
    snprintf(data, sizeof data, "%s", tu_tmp("gds"));
    snprintf(mini, sizeof mini, "%s", tu_tmp("gmini.safetensors"));
    snprintf(graft, sizeof graft, "%s", tu_tmp("graft.safetensors"));
    snprintf(graft2, sizeof graft2, "%s", tu_tmp("graft2.safetensors"));
    snprintf(other, sizeof other, "%s", tu_tmp("gother.safetensors"));
    cr_assert_eq(tiny_init("skirt,miniskirt", "--seed 3", base), 0, "init failed:\n%s", log_);
    cr_assert_eq(tiny_dataset_of("miniskirt", base, data, "0.5", ""), 0, "dataset failed:\n%s", log_);
    const char *args = "--steps 6 --frames 4 --lr 3e-3 --threads 1 --garments miniskirt --log-every 3";
    cr_assert_eq(tiny_fit(base, data, mini, args), 0, "fit failed:\n%s", log_);
    int rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py graft --base %s --garment miniskirt --net-from %s --out %s", py(),
                    base, mini, graft);
    cr_assert(rc == 0 && strstr(log_, "miniskirt runs the network of"), "graft:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s info %s", bin(), graft);
    cr_assert(rc == 0 && strstr(log_, "its own network") && strstr(log_, "(0 not used"), "drape info:\n%s", log_);
    /* the base's dataset is the grafted bundle's too: the teacher drapes the same body and garments */
    rc = tiny_dataset_of("miniskirt", graft, data, "0.5", "");
    cr_assert(rc == 0 && strstr(log_, ": skip") && !strstr(log_, ": ok"), "the dataset was not kept:\n%s", log_);

    char pin[300], pr[300];
    snprintf(pin, sizeof pin, "%s", tu_tmp("gp.npy"));
    snprintf(pr, sizeof pr, "%s", tu_tmp("gr.npy"));
    poses_npy(pin, 4, 91);
    drape_npy base_skirt, g_mini; /* the miniskirt runs the grafted network, which training changed */
    graft_check(base, mini, graft, pin, "g", 1e-5, &base_skirt, &g_mini);
    /* PyTorch agrees */
    rc = tu_run(log_, sizeof log_,
                "%s train/reference.py infer --model %s --garment miniskirt --betas 0.5,-1 --poses %s --out %s", py(), graft,
                pin, pr);
    cr_assert_eq(rc, 0, "reference infer:\n%s", log_);
    drape_npy ref;
    drape_error e = {0};
    cr_assert_eq(drape_npy_read(&ref, pr, &e), 0, "%s", e.msg);
    cr_assert_leq(npy_diff(&g_mini, &ref), 1e-4, "C and PyTorch differ on the own network");
    /* fit trains the garment's own network and leaves the shared one */
    cr_assert_eq(tiny_fit(graft, data, graft2, args), 0, "fit of the grafted bundle failed:\n%s", log_);
    drape_npy g2_skirt = infer_of(graft2, "skirt", pin, "g6.npy"), g2_mini = infer_of(graft2, "miniskirt", pin, "g7.npy");
    cr_assert_eq(npy_diff(&g2_skirt, &base_skirt), 0, "fitting the miniskirt changed the skirt's network");
    cr_assert_gt(npy_diff(&g2_mini, &g_mini), 1e-6, "fit did not train the miniskirt's own network");
    drape_npy *all[] = {&base_skirt, &g_mini, &ref, &g2_skirt, &g2_mini};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) drape_npy_free(all[i]);

    /* a network of another body, or a garment that is not there, is refused */
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py arms --base %s --out %s --girth 0.01", py(), mini, other);
    cr_assert_eq(rc, 0, "arms:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py graft --base %s --garment miniskirt --net-from %s --out %s", py(),
                base, other, graft);
    cr_assert(rc != 0 && strstr(log_, "'body.shapedirs' differs") && strstr(log_, "another body or garment") &&
                  !strstr(log_, "Traceback"),
              "a network of another body:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py graft --base %s --garment dress --net-from %s --out %s", py(), base,
                mini, graft);
    cr_assert(rc != 0 && strstr(log_, "'dress' must be a garment of both") && !strstr(log_, "Traceback"),
              "a garment not there:\n%s", log_);

    /* a remake of the garment may list two bones of equal weight the other way
     * round (the T-shirt's did): the same skinning, so the graft takes it; two
     * bones of unequal weight swapped are another garment's skinning */
    char tbase[300], tnet[300], snet[300];
    snprintf(tbase, sizeof tbase, "%s", tu_tmp("gtbase.safetensors"));
    snprintf(tnet, sizeof tnet, "%s", tu_tmp("gtnet.safetensors"));
    snprintf(snet, sizeof snet, "%s", tu_tmp("gsnet.safetensors"));
    rc = tu_run(log_, sizeof log_,
                "%s -c \"import sys; sys.path.insert(0, 'train'); from bundle import read_bundle as r, write_bundle as w\n"
                "def tie(src, out, swap):\n"
                "    c, t = r(src); W, I = t['garment.miniskirt.skin_w0'].copy(), t['garment.miniskirt.skin_idx'].copy()\n"
                "    W[0, 0] = W[0, 1] = 0.5 * (W[0, 0] + W[0, 1])\n"
                "    if swap: I[0, [0, 1]] = I[0, [1, 0]]\n"
                "    t['garment.miniskirt.skin_w0'], t['garment.miniskirt.skin_idx'] = W, I; w(out, c, t)\n"
                "tie('%s', '%s', 0); tie('%s', '%s', 1)\n"
                "c, t = r('%s'); I = t['garment.miniskirt.skin_idx'].copy(); I[0, [0, 2]] = I[0, [2, 0]]\n"
                "t['garment.miniskirt.skin_idx'] = I; w('%s', c, t)\"",
                py(), base, tbase, mini, tnet, mini, snet);
    cr_assert_eq(rc, 0, "the tied bundles:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py graft --base %s --garment miniskirt --net-from %s --out %s", py(),
                tbase, tnet, graft);
    cr_assert(rc == 0 && strstr(log_, "miniskirt runs the network of"), "two tied bones the other way round:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py graft --base %s --garment miniskirt --net-from %s --out %s", py(),
                base, snet, graft);
    cr_assert(rc != 0 && strstr(log_, "'garment.miniskirt.skin_idx' differs") && !strstr(log_, "Traceback"),
              "two bones of unequal weight swapped:\n%s", log_);
}

/* graft --asset: a garment remade (here the miniskirt moved up 1 cm, its
 * bones with it) and given a network of its own replaces the base's garment
 * and network together; without --asset the remake is refused by name, and
 * the other garment stays the base's to the bit */
Test(train, graft_asset_brings_a_remade_garment)
{
    char base[300], remade[300], graft[300], pin[300];
    snprintf(base, sizeof base, "%s", tu_tmp("abase.safetensors"));
    snprintf(remade, sizeof remade, "%s", tu_tmp("aremade.safetensors"));
    snprintf(graft, sizeof graft, "%s", tu_tmp("agraft.safetensors"));
    snprintf(pin, sizeof pin, "%s", tu_tmp("ap.npy"));
    cr_assert_eq(tiny_init("skirt,miniskirt", "--seed 3", base), 0, "init failed:\n%s", log_);
    int rc = tu_run(log_, sizeof log_,
                    "%s -c \"import sys; sys.path.insert(0, 'train'); from bundle import read_bundle as r, write_bundle as w\n"
                    "c, t = r('%s')\n"
                    "for k in ('rest', 'bones'): t['garment.miniskirt.' + k] = (t['garment.miniskirt.' + k] + [0, 0.01, 0]).astype('f4')\n"
                    "w('%s', c, t)\"",
                    py(), base, remade);
    cr_assert_eq(rc, 0, "the remade bundle:\n%s", log_);
    const char *graft_cmd = "%s train/edit_bundle.py graft --base %s --garment miniskirt --net-from %s --out %s %s";
    rc = tu_run(log_, sizeof log_, graft_cmd, py(), base, remade, graft, "");
    cr_assert(rc != 0 && strstr(log_, "'garment.miniskirt.rest' differs") && strstr(log_, "--asset takes the garment") &&
                  !strstr(log_, "Traceback"),
              "a remade garment without --asset:\n%s", log_);
    rc = tu_run(log_, sizeof log_, graft_cmd, py(), base, remade, graft, "--asset");
    cr_assert(rc == 0 && strstr(log_, "and is its garment"), "graft --asset:\n%s", log_);

    poses_npy(pin, 3, 17);
    drape_npy b_skirt, g_mini; /* the miniskirt moved with its remake */
    graft_check(base, remade, graft, pin, "a", 5e-3, &b_skirt, &g_mini);
    drape_npy_free(&b_skirt);
    drape_npy_free(&g_mini);

    /* the body must still be the base's */
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py arms --base %s --out %s --girth 0.01", py(), remade, remade);
    cr_assert_eq(rc, 0, "arms:\n%s", log_);
    rc = tu_run(log_, sizeof log_, graft_cmd, py(), base, remade, graft, "--asset");
    cr_assert(rc != 0 && strstr(log_, "'body.shapedirs' differs") && !strstr(log_, "--asset takes") &&
                  !strstr(log_, "Traceback"),
              "a remade garment on another body:\n%s", log_);
}

/* write TEXT to the file PATH */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A tiny recipe: a base, a teacher dataset, a fit and a refine. FIT_STEPS
 * is the fit's step count, the part the test changes; DATA_SEED the
 * dataset's motion seed (its default, 1, is the flag's own default). */
static void tiny_recipe_seeded(const char *path, const char *out, int fit_steps, int data_seed)
{
    char text[2048];
    snprintf(text, sizeof text,
             "name = \"tiny\"\nout = \"%s\"\n"
             "[defaults]\nfit = \"--frames 2 --threads 1\"\n"
             "[[step]]\nname = \"base\"\ntool = \"init\"\nargs = \"--preset tiny --garments skirt --seed 3\"\n"
             "[[step]]\nname = \"data\"\ntool = \"dataset\"\nfrom = \"base\"\n"
             "args = \"--garments skirt --train-betas 1 --test-betas 1 --motions walk --train-seeds 1 --test-seeds 0 "
             "--seconds 0.5 --jobs 2 --seed %d\"\n"
             "[[step]]\nname = \"fit\"\ntool = \"fit\"\nfrom = \"base\"\ndata = [\"data\"]\nargs = \"--steps %d --lr 3e-3\"\n"
             "[[step]]\nname = \"final\"\ntool = \"refine\"\nfrom = \"fit\"\nargs = \"--garment skirt --iters 4\"\n",
             out, data_seed, fit_steps);
    write_text(path, text);
}

static void tiny_recipe(const char *path, const char *out, int fit_steps) { tiny_recipe_seeded(path, out, fit_steps, 1); }

/* train/recipe.py: a recipe runs its steps once, reruns only a changed step
 * and what follows it, and is recorded in the bundle it makes; a recipe
 * that reads a step below it, or trains one garment without saying why, is
 * refused by name */
Test(train, recipe_caches_steps_and_is_recorded)
{
    char recipe[300], dir[300], out[300];
    snprintf(recipe, sizeof recipe, "%s", tu_tmp("tiny.toml"));
    snprintf(dir, sizeof dir, "%s", tu_tmp("recipe_dir"));
    snprintf(out, sizeof out, "%s", tu_tmp("recipe_out.safetensors"));
    const char *run = "%s train/recipe.py run %s --dir %s --drape %s";
    tiny_recipe(recipe, out, 3);
    int rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert_eq(rc, 0, "first run:\n%s", log_);
    cr_assert(strstr(log_, "base: runs") && strstr(log_, "data: runs") && strstr(log_, "fit: runs") &&
                  strstr(log_, "final: runs") && strstr(log_, "4 step(s) run"),
              "the first run did not run every step:\n%s", log_);
    /* the bundle carries the recipe; `show` prints it */
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py show %s", py(), out);
    cr_assert(rc == 0 && strstr(log_, "name = \"fit\"") && strstr(log_, "--steps 3 --lr 3e-3"),
              "show does not print the recipe:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s info %s", bin(), out);
    cr_assert_eq(rc, 0, "the C runtime refuses the recorded bundle:\n%s", log_);
    /* nothing changed: nothing runs */
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert(rc == 0 && !strstr(log_, ": runs") && strstr(log_, "0 step(s) run"), "a second run did work:\n%s", log_);
    /* the base's arguments changed but not what it makes (--seed=3 for
     * --seed 3): it runs, and the steps that read it stay cached, since they
     * key on the bytes it wrote; back to --seed 3, the same */
    for (int i = 0; i < 2; i++) {
        rc = tu_run(log_, sizeof log_, i ? "sed -i 's/--seed=3/--seed 3/' %s" : "sed -i 's/--seed 3/--seed=3/' %s", recipe);
        cr_assert_eq(rc, 0, "%s", log_);
        rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
        cr_assert(rc == 0 && strstr(log_, "base: runs (changed)") && strstr(log_, "data: cached") &&
                      strstr(log_, "fit: cached") && strstr(log_, "final: cached") && strstr(log_, "1 step(s) run"),
                  "a base made again with the same bytes reran what reads it:\n%s", log_);
    }
    /* the fit changed: it and the refine after it run, the base and the data stay */
    tiny_recipe(recipe, out, 4);
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py plan %s --dir %s", py(), recipe, dir);
    cr_assert(rc == 0 && strstr(log_, "changed"), "plan:\n%s", log_);
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert(rc == 0 && strstr(log_, "base: cached") && strstr(log_, "data: cached") && strstr(log_, "fit: runs (changed)") &&
                  strstr(log_, "final: runs (changed)") && strstr(log_, "2 step(s) run"),
              "a changed fit did not rerun it and only what follows:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py show %s", py(), out);
    cr_assert(rc == 0 && strstr(log_, "--steps 4 --lr 3e-3"), "the new recipe is not recorded:\n%s", log_);

    /* --only: a step whose input is not cached is refused; the named steps run
     * alone, and a plain run then finds them cached */
    tiny_recipe(recipe, out, 5);
    const char *only = "%s train/recipe.py run %s --dir %s --drape %s --only %s";
    rc = tu_run(log_, sizeof log_, only, py(), recipe, dir, bin(), "final");
    cr_assert(rc == 2 && strstr(log_, "step 'fit' is read by one of 'final' but is not cached (changed)") &&
                  !strstr(log_, ": runs"),
              "--only with an input to rerun:\n%s", log_);
    rc = tu_run(log_, sizeof log_, only, py(), recipe, dir, bin(), "nosuch");
    cr_assert(rc == 2 && strstr(log_, "no step 'nosuch'"), "--only an unknown step:\n%s", log_);
    rc = tu_run(log_, sizeof log_, only, py(), recipe, dir, bin(), "fit");
    cr_assert(rc == 0 && strstr(log_, "fit: runs (changed)") && !strstr(log_, "final: runs") &&
                  strstr(log_, "no final bundle"),
              "--only fit:\n%s", log_);
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert(rc == 0 && strstr(log_, "fit: cached") && strstr(log_, "final: runs (changed)") && strstr(log_, "1 step(s) run"),
              "the run after --only:\n%s", log_);

    /* the dataset's plan changed: its sequences are made again, not kept
     * (dataset.py skips a sequence that is there, so a rerun into the old
     * folder kept the old motion under the new plan's name) */
    char seq_dir[400];
    snprintf(seq_dir, sizeof seq_dir, "%s/data", dir);
    rc = tu_run(log_, sizeof log_, "cat %s/seq/*.npy | md5sum", seq_dir);
    cr_assert_eq(rc, 0, "%s", log_);
    char before[64];
    snprintf(before, sizeof before, "%.32s", log_);
    tiny_recipe_seeded(recipe, out, 5, 2);
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert(rc == 0 && strstr(log_, "data: runs (changed)") && strstr(log_, "fit: runs (changed)"), "a new seed:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "cat %s/seq/*.npy | md5sum", seq_dir);
    cr_assert(rc == 0 && strncmp(before, log_, 32), "the dataset of seed 2 holds the sequences of seed 1 (%s)", before);
    /* two runners on one folder at once: the step one of them holds is
     * refused to the other by name, and neither writes over the other */
    tiny_recipe(recipe, out, 6);
    rc = tu_run(log_, sizeof log_,
                "(%s train/recipe.py run %s --dir %s --drape %s & %s train/recipe.py run %s --dir %s --drape %s; wait)",
                py(), recipe, dir, bin(), py(), recipe, dir, bin());
    cr_assert(strstr(log_, "is being run by another runner in"), "two runners at once:\n%s", log_);
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert_eq(rc, 0, "back to seed 1 after the race:\n%s", log_);

    /* a bundle made by the steps before the runner: the recipe recorded after the fact */
    char base[400];
    snprintf(base, sizeof base, "%s/base.safetensors", dir);
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py show %s", py(), base);
    cr_assert(rc != 0 && strstr(log_, "no recipe recorded"), "a bundle without a recipe:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py record %s %s && %s train/recipe.py show %s", py(), recipe, base,
                py(), base);
    cr_assert(rc == 0 && strstr(log_, "after the fact") && strstr(log_, "--steps 6 --lr 3e-3"), "record:\n%s", log_);

    /* refused by name */
    write_text(recipe, "[[step]]\nname = \"fit\"\ntool = \"fit\"\nfrom = \"base\"\ndata = [\"d\"]\n"
                       "[[step]]\nname = \"base\"\ntool = \"init\"\n");
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert(rc == 2 && strstr(log_, "step 'fit': reads 'base', which is not a step above it") && !strstr(log_, "Traceback"),
              "a step reading one below it:\n%s", log_);
    write_text(recipe, "[[step]]\nname = \"base\"\ntool = \"init\"\n[[step]]\nname = \"d\"\ntool = \"dataset\"\nfrom = \"base\"\n"
                       "[[step]]\nname = \"own\"\ntool = \"fit\"\nfrom = \"base\"\ndata = [\"d\"]\nargs = \"--garments skirt\"\n");
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert(rc == 2 && strstr(log_, "step 'own': a step that trains some garments only must say why"),
              "a garment's own step without why:\n%s", log_);
    write_text(recipe, "[[step]]\nname = \"base\"\ntool = \"train\"\n");
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, bin());
    cr_assert(rc == 2 && strstr(log_, "tool 'train': expected one of init, dataset, fit"), "an unknown tool:\n%s", log_);
}

/* train/edit_bundle.py (docs/design.md §3.3): the teacher's settings from a
 * plan, which `drape sim garment` then takes by default; the range of
 * Bone-Net's inputs over a plan's training frames, which C and PyTorch clamp
 * alike on poses far outside it; a fit keeps the teacher when its data was
 * made by it and drops it otherwise, and always drops the range (it would
 * clamp the new data to the old) */
Test(train, edit_bundle_teacher_and_input_range)
{
    char base[300], edited[300], data[300], other[300], fitted[300], pin[300], pc[300], pr[300];
    snprintf(base, sizeof base, "%s", tu_tmp("ebase.safetensors"));
    snprintf(edited, sizeof edited, "%s", tu_tmp("eedited.safetensors"));
    snprintf(data, sizeof data, "%s", tu_tmp("eds"));
    snprintf(other, sizeof other, "%s", tu_tmp("eds_other"));
    snprintf(fitted, sizeof fitted, "%s", tu_tmp("efit.safetensors"));
    snprintf(pin, sizeof pin, "%s", tu_tmp("ep.npy"));
    snprintf(pc, sizeof pc, "%s", tu_tmp("ec.npy"));
    snprintf(pr, sizeof pr, "%s", tu_tmp("er.npy"));
    int rc = tiny_init("skirt", "--seed 4", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    const char *teacher = "--sim-args '--max-substeps 2 --iters 3'";
    rc = tiny_dataset(base, data, "0.4", teacher);
    cr_assert_eq(rc, 0, "dataset:\n%s", log_);
    rc = tiny_fit(base, data, base, "--steps 4 --frames 4 --lr 3e-3 --threads 1");
    cr_assert_eq(rc, 0, "fit:\n%s", log_);
    rc = tu_run(log_, sizeof log_,
                "(%s train/edit_bundle.py teacher --base %s --out %s --from-plan \"%s\" && "
                "%s train/edit_bundle.py input-range --base %s --out %s --plan '--garments skirt --train-betas 1 "
                "--test-betas 1 --motions walk --train-seeds 1 --test-seeds 0 --seconds 0.4' && "
                "%s train/edit_bundle.py show --base %s)",
                py(), base, edited, teacher, py(), edited, edited, py(), edited);
    cr_assert(rc == 0 && strstr(log_, "\"args\": \"--max-substeps 2 --iters 3\"") &&
                  strstr(log_, "bonenet: input range") && strstr(log_, "range over 12 frames"),
              "edit_bundle:\n%s", log_);
    /* the simulator takes the teacher's flags */
    float poses[8 * 75];
    tu_random_poses(poses, 8, 0.8f, 0.4f, 91); /* far wider than a 0.4-s walk */
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(pin, poses, 2, (int64_t[]){8, 75}, &e), 0, "%s", e.msg);
    rc = tu_run(log_, sizeof log_, "%s sim garment --model %s --garment skirt --poses %s --out %s --settle 2", bin(),
                edited, pin, pc);
    cr_assert(rc == 0 && strstr(log_, "settings: the bundle's teacher for skirt (--max-substeps 2 --iters 3)") &&
                  strstr(log_, "(at most 2, ") && strstr(log_, "of 3 iterations"), "sim garment:\n%s", log_);
    /* C and PyTorch clamp alike: the same frames, and not those without the range */
    rc = tu_run(log_, sizeof log_,
                "(%s infer --backend cpu --model %s --garment skirt --betas 0.5,-1 --poses %s --out %s && "
                "%s train/reference.py infer --model %s --garment skirt --betas 0.5,-1 --poses %s --out %s)",
                bin(), edited, pin, pc, py(), edited, pin, pr);
    cr_assert_eq(rc, 0, "infer:\n%s", log_);
    drape_npy c, r;
    cr_assert_eq(drape_npy_read(&c, pc, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_npy_read(&r, pr, &e), 0, "%s", e.msg);
    double d = tu_max_abs_diff(c.data, r.data, c.numel);
    cr_log_info("clamped inputs: max |C − PyTorch| = %.3g m", d);
    cr_assert_leq(d, 1e-4, "C and PyTorch differ by %g m on clamped inputs", d);
    drape_npy_free(&r);
    rc = tu_run(log_, sizeof log_, "%s infer --backend cpu --model %s --garment skirt --betas 0.5,-1 --poses %s --out %s",
                bin(), base, pin, pr);
    cr_assert_eq(rc, 0, "%s", log_);
    cr_assert_eq(drape_npy_read(&r, pr, &e), 0, "%s", e.msg);
    cr_assert_gt(tu_max_abs_diff(c.data, r.data, c.numel), 1e-4, "the range clamped nothing on these poses");
    drape_npy_free(&c);
    drape_npy_free(&r);
    /* a fit on the teacher's own data keeps it, the range goes */
    rc = tiny_fit(edited, data, fitted, "--steps 2 --frames 2 --threads 1");
    cr_assert(rc == 0 && strstr(log_, "input range is dropped") && !strstr(log_, "teacher settings are not"),
              "fit:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py show --base %s", py(), fitted);
    cr_assert(rc == 0 && strstr(log_, "\"args\": \"--max-substeps 2 --iters 3\"") && !strstr(log_, "input range"),
              "after the fit:\n%s", log_);
    /* one on another teacher's drops the teacher */
    rc = tiny_dataset(base, other, "0.4", "--sim-args '--max-substeps 3 --iters 3'");
    cr_assert_eq(rc, 0, "dataset:\n%s", log_);
    rc = tiny_fit(edited, other, fitted, "--steps 2 --frames 2 --threads 1");
    cr_assert(rc == 0 && strstr(log_, "teacher settings are not the data's: dropped"), "fit:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py show --base %s", py(), fitted);
    cr_assert(rc == 0 && strstr(log_, "teacher: null"), "after the fit on another teacher's data:\n%s", log_);
}

/* edit_bundle.py physics (the config's "physics"): a garment's own pull in
 * the physics mode, which `drape sim garment --realtime` then takes, and
 * --pull -1 gives back the served one; recipe.py record --last: a recipe's
 * last step run by hand on the bundle recorded before, which stays under
 * "base" */
Test(train, edit_bundle_physics_and_a_last_step_recorded)
{
    char base[300], edited[300], pin[300], pout[300], recipe[300];
    snprintf(base, sizeof base, "%s", tu_tmp("pbase.safetensors"));
    snprintf(edited, sizeof edited, "%s", tu_tmp("pedited.safetensors"));
    snprintf(pin, sizeof pin, "%s", tu_tmp("pp.npy"));
    snprintf(pout, sizeof pout, "%s", tu_tmp("po.npy"));
    snprintf(recipe, sizeof recipe, "%s", tu_tmp("physics.toml"));
    int rc = tiny_init("skirt", "--seed 5", base);
    cr_assert_eq(rc, 0, "init failed:\n%s", log_);
    float poses[4 * 75];
    tu_random_poses(poses, 4, 0.3f, 0.1f, 17);
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(pin, poses, 2, (int64_t[]){4, 75}, &e), 0, "%s", e.msg);
    const char *sim = "%s sim garment --realtime --model %s --garment skirt --poses %s --out %s";
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py physics --base %s --out %s --garment skirt --pull 40", py(),
                base, edited);
    cr_assert(rc == 0 && strstr(log_, "garments with their own pull: skirt 40"), "edit_bundle physics:\n%s", log_);
    rc = tu_run(log_, sizeof log_, sim, bin(), edited, pin, pout);
    cr_assert(rc == 0 && strstr(log_, "serves skirt (pull 40/s^2, the bundle's)"), "sim garment:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py physics --base %s --out %s --garment skirt --pull -1", py(),
                edited, edited);
    cr_assert(rc == 0 && strstr(log_, "their own pull: none"), "edit_bundle physics --pull -1:\n%s", log_);
    rc = tu_run(log_, sizeof log_, sim, bin(), edited, pin, pout);
    cr_assert(rc == 0 && strstr(log_, "serves skirt (pull 10/s^2)"), "sim garment after --pull -1:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py physics --base %s --out %s --garment coat --pull 40", py(),
                base, edited);
    cr_assert(rc != 0 && strstr(log_, "'coat' is not a garment"), "an unknown garment:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py physics --base %s --out %s --garment skirt --pull 2e6", py(),
                base, edited);
    cr_assert(rc != 0 && strstr(log_, "--pull in [0, 1e6]"), "a pull out of range:\n%s", log_);

    write_text(recipe, "name = \"p\"\n[[step]]\nname = \"base\"\ntool = \"init\"\n"
                       "[[step]]\nname = \"pulled\"\ntool = \"physics\"\nfrom = \"base\"\n"
                       "args = \"--garment skirt --pull 40\"\n");
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py record %s %s && %s train/recipe.py record %s %s --last pulled "
                "--why 'a test' && %s train/recipe.py show %s", py(), recipe, base, py(), recipe, base, py(), base);
    cr_assert(rc == 0 && strstr(log_, "the step pulled run by hand on the bundle of the record under 'base': a test") &&
                  strstr(log_, "# on a bundle made by"),
              "record --last:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py record %s %s --last base --why 'a test'", py(), recipe, base);
    cr_assert(rc != 0 && strstr(log_, "must be the recipe's last step"), "record --last of another step:\n%s", log_);
    /* --steps: steps anywhere in the recipe run by hand and edited into the
     * bundle recorded before, whose record (and its own base) stays under it */
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py record %s %s --steps base,pulled --why 'a graft' && "
                "%s train/recipe.py show %s", py(), recipe, base, py(), base);
    cr_assert(rc == 0 &&
                  strstr(log_, "the steps base, pulled run by hand, their result edited into the bundle of the record "
                               "under 'base': a graft") &&
                  strstr(log_, "# on a bundle made by") &&
                  strstr(strstr(log_, "# on a bundle made by") + 1, "# on a bundle made by"),
              "record --steps:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py record %s %s --steps base,coat --why 'a graft'", py(), recipe,
                base);
    cr_assert(rc == 2 && strstr(log_, "no step coat in"), "record --steps of a step not in the recipe:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/recipe.py record %s %s --steps base", py(), recipe, base);
    cr_assert(rc == 2 && strstr(log_, "give --why"), "record --steps without --why:\n%s", log_);
}

/* eval.py --families (make eval's rows by family): a row per garment and
 * held-out family and per clip of the folder (its frame rate from
 * index.json), against the teacher, with the teacher's spread and the
 * served physics mode's column; a folder that is not there is no clips;
 * the teacher's and the physics' outputs are kept and reused */
Test(train, eval_by_family_and_clip)
{
    char clips[300], work[300], clip[400], index[400];
    snprintf(clips, sizeof clips, "%s", tu_tmp("clips"));
    snprintf(work, sizeof work, "%s", tu_tmp("evwork"));
    snprintf(clip, sizeof clip, "%s/walk60.npy", clips);
    snprintf(index, sizeof index, "%s/index.json", clips);
    int rc = tu_run(log_, sizeof log_, "mkdir -p %s && %s train/motions.py --kind walk --seconds 0.8 --seed 2 --fps 60 --out %s",
                    clips, py(), clip);
    cr_assert_eq(rc, 0, "%s", log_);
    FILE *f = fopen(index, "w");
    cr_assert_not_null(f);
    fputs("{\"walk60\": {\"title\": \"a walk at 60 fps\", \"fps\": 60}}\n", f);
    fclose(f);
    const char *run = "%s train/eval.py --model %s --families held-out --clips %s --work %s --seconds 0.4 "
                      "--clip-seconds 0.4 --sim-args '--max-substeps 2 --iters 3' --jobs 2 --drape %s";
    rc = tu_run(log_, sizeof log_, run, py(), tu_bundle("tiny_random"), clips, work, bin());
    cr_assert_eq(rc, 0, "eval --families:\n%s", log_);
    const char *rows[] = {"| skirt | spin (held out) |", "| skirt | random (held out) |", "| skirt | dance (held out) |",
                          "| skirt | clip:walk60 |", "| miniskirt | spin (held out) |", "| miniskirt | clip:walk60 |"};
    for (int i = 0; i < 6; i++) cr_assert(strstr(log_, rows[i]), "no row '%s':\n%s", rows[i], log_);
    cr_assert(strstr(log_, "(8 sequences; teacher: --sim-args '--max-substeps 2 --iters 3' (the bundle has none)"),
              "%s", log_);
    /* the teacher's spread: a second run per row, the first pose held 20
     * frames longer, its distance to the first over skinning's error */
    cr_assert(strstr(log_, "| teacher's spread / skinning |") && strstr(log_, "held 20 frames longer"), "%s", log_);
    const char *row = strstr(log_, "| skirt | clip:walk60 |");
    int bars = 0;
    for (const char *c = row; *c && *c != '\n'; c++) bars += *c == '|';
    cr_assert_eq(bars, 12, "a row without the spread's and the physics' columns: %.*s", (int)strcspn(row, "\n"), row);
    /* the physics' column, the row's last: a positive ratio from its own run */
    cr_assert(strstr(log_, "| physics / skinning |"), "%s", log_);
    const char *end = row + strcspn(row, "\n") - 1, *cell = end - 1;
    while (cell > row && cell[-1] != '|') cell--;
    double phys = strtod(cell, NULL);
    cr_assert(phys > 0 && phys < 100, "physics / skinning %g: %.*s", phys, (int)strcspn(row, "\n"), row);
    rc = tu_run(log_, sizeof log_, "test $(ls %s/*-held20-*.sim.npy | wc -l) = 8 && test $(ls %s/*-physics-*.sim.npy | wc -l) = 8",
                work, work);
    cr_assert_eq(rc, 0, "the held or the physics runs are not in %s", work);
    /* the clip was resampled to the model's 30 fps: 0.4 s is 12 frames */
    rc = tu_run(log_, sizeof log_, "%s -c \"import numpy as np, glob; "
                "print('frames', np.load(glob.glob('%s/skirt-clip_walk60-[0-9a-f]*.poses.npy')[0]).shape[0])\"", py(), work);
    cr_assert(rc == 0 && strstr(log_, "frames 12"), "%s", log_);
    /* again: the teacher's outputs are reused (their files untouched) */
    rc = tu_run(log_, sizeof log_, "stat -c %%Y %s/*.sim.npy | sort | tail -1 > %s/t0 && sleep 1", work, work);
    cr_assert_eq(rc, 0, "%s", log_);
    rc = tu_run(log_, sizeof log_, run, py(), tu_bundle("tiny_random"), clips, work, bin());
    cr_assert_eq(rc, 0, "%s", log_);
    rc = tu_run(log_, sizeof log_, "test \"$(stat -c %%Y %s/*.sim.npy | sort | tail -1)\" = \"$(cat %s/t0)\"", work, work);
    cr_assert_eq(rc, 0, "the teacher ran again");
    /* the physics column as draped --physics-substeps serves it: the
     * miniskirt's physics runs again at 3 substeps a frame, the skirt's
     * are reused; a garment the model lacks is refused */
    char sub[700];
    snprintf(sub, sizeof sub, "%s --physics-substeps miniskirt=3", run);
    rc = tu_run(log_, sizeof log_, sub, py(), tu_bundle("tiny_random"), clips, work, bin());
    cr_assert(rc == 0 && strstr(log_, "as draped --physics-substeps miniskirt=3 serves it"), "%s", log_);
    rc = tu_run(log_, sizeof log_, "test $(ls %s/*-physics-*.sim.npy | wc -l) = 12 && "
                "test $(ls %s/miniskirt-*-physics-*.sim.npy | wc -l) = 8", work, work);
    cr_assert_eq(rc, 0, "the miniskirt's physics did not run again alone");
    snprintf(sub, sizeof sub, "%s --physics-substeps coat=3", run);
    rc = tu_run(log_, sizeof log_, sub, py(), tu_bundle("tiny_random"), clips, work, bin());
    cr_assert(rc != 0 && strstr(log_, "the model has no garment coat"), "%s", log_);
    /* no such folder: the families alone; --spread 0 --physics 0: neither column */
    char nospread[600];
    snprintf(nospread, sizeof nospread, "%s --spread 0 --physics 0", run);
    rc = tu_run(log_, sizeof log_, nospread, py(), tu_bundle("tiny_random"), "/nonexistent/motions", work, bin());
    cr_assert(rc == 0 && strstr(log_, "(6 sequences;") && !strstr(log_, "clip:") && !strstr(log_, "spread") &&
              !strstr(log_, "physics"), "%s", log_);
}

/* the first line of LOG that contains KEY, "" when none */
static const char *line_with(const char *log, const char *key)
{
    static char line[1024];
    const char *p = strstr(log, key);
    if (!p) return "";
    while (p > log && p[-1] != '\n') p--;
    snprintf(line, sizeof line, "%.*s", (int)strcspn(p, "\n"), p);
    return line;
}

/* A garment's own stage (train/recipes/garment.toml) in its pieces: graft
 * takes the garment out of the config's "untrained" and "stale_networks"
 * (the bundle contract of issue 32); teacher --garment adds that garment's
 * flags and keeps the rest; input-range --garments makes that garment's
 * range and keeps the others'; a recipe's parameters are given, required
 * and named, or refused by name. */
Test(train, garment_stage_edits_and_recipe_parameters)
{
    char b[300], g[300], t[300], r[300], r2[300], recipe[300], dir[300];
    snprintf(b, sizeof b, "%s", tu_tmp("sb.safetensors"));
    snprintf(g, sizeof g, "%s", tu_tmp("sg.safetensors"));
    snprintf(t, sizeof t, "%s", tu_tmp("st.safetensors"));
    snprintf(r, sizeof r, "%s", tu_tmp("sr.safetensors"));
    snprintf(r2, sizeof r2, "%s", tu_tmp("sr2.safetensors"));
    snprintf(recipe, sizeof recipe, "%s", tu_tmp("params.toml"));
    snprintf(dir, sizeof dir, "%s", tu_tmp("params_dir"));
    const char *cfg_of = "%s -c \"import sys, json; sys.path.insert(0, 'train'); from bundle import read_bundle; "
                         "c, _ = read_bundle('%s'); print('untrained', json.dumps(c.get('untrained')), 'stale', "
                         "json.dumps(c.get('stale_networks')))\"";
    int rc = tu_run(log_, sizeof log_,
                    "%s -c \"import sys; sys.path.insert(0, 'train'); from bundle import read_bundle, write_bundle; "
                    "c, t = read_bundle('%s'); c['untrained'] = ['miniskirt']; c['stale_networks'] = ['miniskirt', 'skirt']; "
                    "write_bundle('%s', c, t)\"",
                    py(), tu_bundle("tiny_random"), b);
    cr_assert_eq(rc, 0, "%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py graft --base %s --garment miniskirt --net-from %s --out %s", py(),
                b, b, g);
    cr_assert_eq(rc, 0, "graft:\n%s", log_);
    rc = tu_run(log_, sizeof log_, cfg_of, py(), g);
    cr_assert(rc == 0 && strstr(log_, "untrained null stale [\"skirt\"]"), "after the graft:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s info %s", bin(), g);
    cr_assert(rc == 0 && strstr(line_with(log_, "  miniskirt "), "network trained (modes neural"), "drape info:\n%s", log_);

    /* the garment's teacher flags: added to its own, the common ones and the others' kept */
    rc = tu_run(log_, sizeof log_,
                "(%s train/edit_bundle.py teacher --base %s --out %s --garment miniskirt '--args=--max-disp 0.01' && "
                "%s train/edit_bundle.py teacher --base %s --out %s --garment miniskirt '--args=--iters 3' && "
                "%s train/edit_bundle.py show --base %s && %s info %s)",
                py(), g, t, py(), t, t, py(), t, bin(), t);
    cr_assert(rc == 0 && strstr(log_, "teacher: {\"garments\": {\"miniskirt\": \"--max-disp 0.01 --iters 3\"}}"),
              "teacher --garment:\n%s", log_);
    rc = tu_run(log_, sizeof log_, "%s train/edit_bundle.py teacher --base %s --out %s --garment dress", py(), g, t);
    cr_assert(rc != 0 && strstr(log_, "--garment 'dress': a garment of") && !strstr(log_, "Traceback"), "%s", log_);

    /* input-range --garments: that garment's own network only */
    const char *plan = "--train-betas 1 --test-betas 0 --train-seeds 1 --test-seeds 0 --seconds 0.4";
    rc = tu_run(log_, sizeof log_,
                "(%s train/edit_bundle.py input-range --base %s --out %s --plan '--garments skirt,miniskirt --motions walk %s' && "
                "%s train/edit_bundle.py input-range --base %s --out %s --garments miniskirt "
                "--plan '--garments miniskirt --motions run %s')",
                py(), g, r, plan, py(), r, r2, plan);
    cr_assert(rc == 0 && strstr(log_, "garment.miniskirt.net.bonenet: range over 12 frames") &&
                  strstr(log_, "sr2.safetensors: 2 range tensors"), "input-range --garments:\n%s", log_);
    rc = tu_run(log_, sizeof log_,
                "%s -c \"import sys; sys.path.insert(0, 'train'); import numpy as np; from bundle import read_bundle; "
                "a = read_bundle('%s')[1]; b = read_bundle('%s')[1]; "
                "print('shared', all(np.array_equal(a[k], b[k]) for k in ('bonenet.in_min', 'bonenet.in_max')), "
                "'own', np.array_equal(a['garment.miniskirt.net.bonenet.in_max'], b['garment.miniskirt.net.bonenet.in_max']))\"",
                py(), r, r2);
    cr_assert(rc == 0 && strstr(log_, "shared True own False"), "the ranges:\n%s", log_);
    rc = tu_run(log_, sizeof log_,
                "%s train/edit_bundle.py input-range --base %s --out %s --garments skirt --plan '--garments skirt %s'", py(),
                r, r2, plan);
    cr_assert(rc != 0 && strstr(log_, "skirt has no network of its own") && !strstr(log_, "Traceback"), "%s", log_);

    /* a recipe's parameters */
    write_text(recipe, "name = \"p\"\nrequired = [\"bundle\"]\n[params]\nsteps = \"3\"\n"
                       "[[step]]\nname = \"input\"\ntool = \"input\"\npath = \"{bundle}\"\n"
                       "[[step]]\nname = \"final\"\ntool = \"refine\"\nfrom = \"input\"\nargs = \"--garment skirt --iters {steps}\"\n");
    const char *run = "%s train/recipe.py run %s --dir %s --out %s --drape %s %s";
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, r2, bin(), "");
    cr_assert(rc == 2 && strstr(log_, "give --set bundle=..."), "a required parameter not given:\n%s", log_);
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, r2, bin(), "--set bundle=/nonexistent.safetensors");
    cr_assert(rc == 2 && strstr(log_, "step 'input': no file '/nonexistent.safetensors'"), "%s", log_);
    char sets[400];
    snprintf(sets, sizeof sets, "--set bundle=%s --set iters=4", g);
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, r2, bin(), sets);
    cr_assert(rc == 2 && strstr(log_, "--set 'iters=4': expected NAME=VALUE with NAME one of bundle, steps"), "%s", log_);
    snprintf(sets, sizeof sets, "--set bundle=%s --set steps=4", g);
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, r2, bin(), sets);
    cr_assert(rc == 0 && strstr(log_, "--garment skirt --iters 4") && strstr(log_, "2 step(s) run"), "%s", log_);
    /* the same bytes elsewhere: cached; the recipe and its values recorded */
    rc = tu_run(log_, sizeof log_, "(cp %s %s.copy && %s train/recipe.py run %s --dir %s --out %s --drape %s "
                "--set bundle=%s.copy --set steps=4 && %s train/recipe.py show %s)",
                g, g, py(), recipe, dir, r2, bin(), g, py(), r2);
    cr_assert(rc == 0 && strstr(log_, "0 step(s) run") && strstr(log_, "'--set steps=4'") &&
                  strstr(log_, "--iters {steps}"), "%s", log_);
    write_text(recipe, "[[step]]\nname = \"base\"\ntool = \"init\"\nargs = \"--preset tiny --seed {seed}\"\n");
    rc = tu_run(log_, sizeof log_, run, py(), recipe, dir, r2, bin(), "");
    cr_assert(rc == 2 && strstr(log_, "step 'base': {seed} is not a parameter (the recipe has none)"), "%s", log_);
}

/* A dataset step's key reads the cloth engine's code (recipe.teacher_code):
 * every file of sim/ the teacher runs, not sim/metrics.*, which judges
 * garments and is never linked into a simulation step (an edit there would
 * have remade hours of teacher data). */
Test(train, the_teacher_key_reads_the_engine_not_its_metrics)
{
    int rc = tu_run(log_, sizeof log_,
                    "%s -c \"import sys; sys.path.insert(0, 'train'); import recipe; "
                    "k = recipe.teacher_code(); print(sorted(k)); "
                    "assert {'sim/cloth.c', 'sim/collide.c', 'sim/garment.c', 'tools/sim_cmd.c'} <= set(k), 'engine'; "
                    "assert not any(f.startswith('sim/metrics') for f in k), 'metrics'\"",
                    py());
    cr_assert_eq(rc, 0, "%s", log_);
}

/* one run's eval.py --json: rows by family (MOTIONS) or per-seed rows (no
 * motion), skinning at 100 mm, the model at RATIO x 100 */
static const char *eval_json(const char *name, int n, const char *const *garment, const char *const *motion,
                             const double *ratio)
{
    const char *path = tu_tmp(name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "[");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s{\"garment\": \"%s\", %s%s%s\"model\": {\"mean_mm\": %.4f}, \"lbs\": {\"mean_mm\": 100}}",
                i ? ", " : "", garment[i], motion ? "\"motion\": \"" : "\"name\": \"seq", motion ? motion[i] : "",
                "\", ", 100 * ratio[i]);
    fprintf(f, "]\n");
    fclose(f);
    return path;
}

/* train/compare.py: two arms of runs, each row the mean of its arm's runs,
 * judged by the rule on its command line; a bad file is refused */
Test(train, compare_judges_two_arms_of_runs_by_a_rule)
{
    const char *g[] = {"skirt", "skirt", "dress", "dress"}, *m[] = {"spin", "walk", "spin", "walk"};
    char b1[300], b2[300], n1[300], n2[300], worse[300], sb[300], sn[300], other[300], bad[300];
    snprintf(b1, sizeof b1, "%s", eval_json("b1.json", 4, g, m, (double[]){0.60, 0.70, 0.80, 0.90}));
    snprintf(b2, sizeof b2, "%s", eval_json("b2.json", 4, g, m, (double[]){0.64, 0.70, 0.82, 0.90}));
    /* the skirt 0.05 better a row on average, the dress level */
    snprintf(n1, sizeof n1, "%s", eval_json("n1.json", 4, g, m, (double[]){0.56, 0.64, 0.81, 0.90}));
    snprintf(n2, sizeof n2, "%s", eval_json("n2.json", 4, g, m, (double[]){0.58, 0.66, 0.81, 0.90}));
    /* the dress's spin 0.07 worse than the base's 0.81 */
    snprintf(worse, sizeof worse, "%s", eval_json("w.json", 4, g, m, (double[]){0.56, 0.64, 0.88, 0.90}));
    /* per-seed tables: the skirt 0.2 and 0.25 */
    snprintf(sb, sizeof sb, "%s", eval_json("sb.json", 2, g, NULL, (double[]){0.1, 0.3}));
    snprintf(sn, sizeof sn, "%s", eval_json("sn.json", 2, g, NULL, (double[]){0.2, 0.3}));
    const char *cmp = "%s train/compare.py --base %s %s --new %s %s %s";

    int rc = tu_run(log_, sizeof log_, cmp, py(), b1, b2, n1, n2, "--gain skirt=0.04");
    cr_assert(rc == 0 && strstr(log_, "| skirt | spin | 0.6200 | 0.5700 | -0.0500 | 100.0 | -5.0 |") &&
                  strstr(log_, "| skirt | 0.6600 | 0.6100 | -0.0500 | 0.0200 | 0.0200 | at least 0.04 under: ok |") &&
                  strstr(log_, "| dress | 0.8550 | 0.8550 | +0.0000 | 0.0100 | 0.0000 | at most 0.01 over: ok |") &&
                  strstr(log_, "\nPASS") && !strstr(log_, "note:"),
              "two arms of two runs:\n%s", log_);
    /* a margin no wider than the runs' spread is pointed out; not met, it fails */
    rc = tu_run(log_, sizeof log_, cmp, py(), b1, b2, n1, n2, "--gain skirt=0.015,dress=0.005");
    cr_assert(rc == 1 && strstr(log_, "note: the margin for skirt, dress is not wider than the runs' spread") &&
                  strstr(log_, "FAILS: dress: mean 0.8550 against 0.8550 (at least 0.005 under)") &&
                  strstr(log_, "DOES NOT PASS"),
              "a garment that had to gain:\n%s", log_);
    /* one row too much worse fails the rule whatever the means say */
    rc = tu_run(log_, sizeof log_, cmp, py(), b1, b2, worse, "", "--gain skirt=0.04 --mean-worse 0.05");
    cr_assert(rc == 1 && strstr(log_, "FAILS: dress / spin: worse by 0.0700 (allowed 0.05)") &&
                  strstr(log_, "note: an arm of one run"),
              "a row worse by 0.07:\n%s", log_);
    /* the per-seed tables, as eval.py reads them: mean error over mean skinning */
    rc = tu_run(log_, sizeof log_, cmp, py(), b1, sb, n1, sn, "");
    cr_assert(rc == 1 && strstr(log_, "| skirt | 0.2000 | 0.2500 | +0.0500 |") &&
                  strstr(log_, "FAILS: skirt: per-seed 0.2500 against 0.2000 (allowed 0.02 over)"),
              "per-seed tables:\n%s", log_);
    /* bad input: other rows, not JSON, a garment the rows lack */
    snprintf(other, sizeof other, "%s", eval_json("o.json", 2, g, m, (double[]){0.6, 0.7}));
    rc = tu_run(log_, sizeof log_, cmp, py(), b1, b2, other, "", "");
    cr_assert(rc == 2 && strstr(log_, "compare: the arms' rows differ"), "other rows:\n%s", log_);
    snprintf(bad, sizeof bad, "%s", tu_tmp("bad.json"));
    rc = tu_run(log_, sizeof log_, "echo '[{\"garment\": 1' > %s", bad);
    cr_assert_eq(rc, 0);
    rc = tu_run(log_, sizeof log_, cmp, py(), b1, b2, bad, "", "");
    cr_assert(rc == 2 && strstr(log_, "not an eval.py --json file"), "a broken file:\n%s", log_);
    rc = tu_run(log_, sizeof log_, cmp, py(), b1, b2, n1, n2, "--gain shirt=0.02");
    cr_assert(rc == 2 && strstr(log_, "--gain: no garment 'shirt' in the rows (skirt, dress)"), "%s", log_);
}
