/* Body model and forward kinematics against hand-worked values; a body of
 * one's own in SMPL's layout (`drape body import`): the round trip, a
 * changed body refitted and streamed, and every refusal with its message. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/mesh.h"
#include "../runtime/body.h"
#include "../runtime/body_import.h"
#include "../runtime/npy.h"
#include "../runtime/sequence.h"
#include "util.h"

static const int32_t SMPL_PARENTS[24] = {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21};

static void assert_vec(const float *got, const float *want, int n, float tol)
{
    for (int i = 0; i < n; i++) cr_assert(fabsf(got[i] - want[i]) <= tol, "[%d] got %.7f want %.7f", i, got[i], want[i]);
}

Test(body, rodrigues_known_rotations)
{
    float R[9];
    drape_rodrigues(R, (float[]){0, 0, (float)M_PI / 2});
    assert_vec(R, (float[]){0, -1, 0, 1, 0, 0, 0, 0, 1}, 9, 1e-6f);
    drape_rodrigues(R, (float[]){(float)M_PI, 0, 0});
    assert_vec(R, (float[]){1, 0, 0, 0, -1, 0, 0, 0, -1}, 9, 1e-6f);
    drape_rodrigues(R, (float[]){0, 0, 0});
    assert_vec(R, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 0);
    /* tiny angles use the first-order form, still a near-rotation */
    drape_rodrigues(R, (float[]){1e-14f, 0, 0});
    assert_vec(R, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 1e-7f);
}

/* Root turned 90° about z, joint 1 (left hip, parent 0) 90° about x; a point
 * rigidly attached to joint 1, worked out by hand:
 *   x − J1 = (0, −0.4, 0) → R_x(90°) → (0, 0, −0.4); + J1 − J0 = (0.1, −0.1, −0.4)
 *   → R_z(90°) → (0.1, 0.1, −0.4); + J0 + trans (1, 2, 3) = (1.1, 2.1, 2.6). */
Test(body, fk_two_joint_chain)
{
    float J[72] = {0}, pose[72] = {0}, A[24 * 12], y[3];
    J[3] = 0.1f, J[4] = -0.1f; /* J1 */
    for (int k = 2; k < 24; k++) J[3 * k + 1] = 0.3f * k; /* others anywhere */
    pose[2] = (float)M_PI / 2;
    pose[3] = (float)M_PI / 2;
    drape_fk(A, pose, (float[]){1, 2, 3}, J, SMPL_PARENTS);
    drape_tf_apply(y, A + 12, (float[]){0.1f, -0.5f, 0});
    assert_vec(y, (float[]){1.1f, 2.1f, 2.6f}, 3, 1e-6f);
    /* a joint not on the chain of 1 still follows the root only */
    drape_tf_apply(y, A + 12 * 2, (float[]){1, 0, 0});
    assert_vec(y, (float[]){1.0f, 3.0f, 3.0f}, 3, 1e-6f);
}

Test(body, fk_rest_pose_is_identity)
{
    drape_model *m = tu_load("tiny_random");
    float J[72], pose[72] = {0}, A[24 * 12];
    float betas[10] = {1, -1, 0.5f, 2};
    drape_body_shape(NULL, J, m, betas);
    drape_fk(A, pose, (float[]){0, 0, 0}, J, m->parents);
    for (int k = 0; k < 24; k++)
        assert_vec(A + 12 * k, (float[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, 12, 1e-6f);
    drape_model_free(m);
}

Test(body, shape_space_changes_the_body)
{
    drape_model *m = tu_load("tiny_random");
    float J0[72], J1[72], betas[10] = {0}, b1[10] = {2};
    drape_body_shape(NULL, J0, m, betas);
    drape_body_shape(NULL, J1, m, b1);
    /* joints are the regressor applied to the shaped body: β0 moves them */
    double moved = 0;
    for (int i = 0; i < 72; i++) moved += fabs(J1[i] - J0[i]);
    cr_assert_gt(moved, 1e-3);
    drape_model_free(m);
}

Test(body, heading_frame)
{
    float pose[72] = {0}, H[12], J0[3] = {0.1f, 0.9f, 0}, tr[3] = {1, 0, -2};
    /* yaw of 0.7 rad about y: ψ = 0.7 */
    pose[1] = 0.7f;
    drape_heading(H, pose, tr, J0);
    float c = cosf(0.7f), s = sinf(0.7f);
    assert_vec(H, (float[]){c, 0, s, 1.1f, 0, 1, 0, 0.9f, -s, 0, c, -2}, 12, 1e-6f);
    /* tilting the root forward by 0.3 about x keeps ψ = 0 */
    memset(pose, 0, sizeof pose);
    pose[0] = 0.3f;
    drape_heading(H, pose, tr, J0);
    assert_vec(H, (float[]){1, 0, 0, 1.1f, 0, 1, 0, 0.9f, 0, 0, 1, -2}, 12, 1e-6f);
    /* facing straight down (f vertical): fall back to g = R·(1,0,0);
     * R = R_y(0.5)·R_x(π/2) as one axis-angle */
    float Rx[9], Ry[9], R[9];
    drape_rodrigues(Rx, (float[]){(float)M_PI / 2, 0, 0});
    drape_rodrigues(Ry, (float[]){0, 0.5f, 0});
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) R[3 * i + j] = Ry[3 * i] * Rx[j] + Ry[3 * i + 1] * Rx[3 + j] + Ry[3 * i + 2] * Rx[6 + j];
    double ang = acos((R[0] + R[4] + R[8] - 1) / 2), k = ang / (2 * sin(ang));
    pose[0] = (float)(k * (R[7] - R[5]));
    pose[1] = (float)(k * (R[2] - R[6]));
    pose[2] = (float)(k * (R[3] - R[1]));
    drape_heading(H, pose, tr, J0);
    cr_assert(fabsf(H[0] - cosf(0.5f)) < 1e-5f && fabsf(H[2] - sinf(0.5f)) < 1e-5f, "H = %f %f", H[0], H[2]);
}

Test(body, transform_algebra)
{
    float a[12], b[12], ab[12], inv[12], id[12], x[3] = {0.3f, -1, 2}, y1[3], y2[3];
    float R[9];
    drape_rodrigues(R, (float[]){0.2f, -0.4f, 0.9f});
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) a[4 * i + j] = R[3 * i + j];
        a[4 * i + 3] = (float)(i + 1);
    }
    drape_rodrigues(R, (float[]){-1, 0.1f, 0.3f});
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) b[4 * i + j] = R[3 * i + j];
        b[4 * i + 3] = -(float)i;
    }
    drape_tf_compose(ab, a, b);
    drape_tf_apply(y1, b, x);
    drape_tf_apply(y1, a, y1);
    drape_tf_apply(y2, ab, x);
    assert_vec(y1, y2, 3, 1e-5f);
    drape_tf_inverse_rigid(inv, a);
    drape_tf_compose(id, inv, a);
    assert_vec(id, (float[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, 12, 1e-6f);
}

/* ---- drape body import (runtime/body_import.h, docs/body.md) ---- */

static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }
static const char *drape_bin(void) { return getenv("DRAPE_BIN") ? getenv("DRAPE_BIN") : "build/drape"; }

/* Writes the body of bundle `name` as an SMPL-layout npz at path, the way
 * SMPL's files are: float64 arrays, kintree_table int64 with SMPL's uint32
 * −1 as the root's parent, f uint32, posedirs [N,3,207] present, two extra
 * shape directions beyond the bundle's betas. `edit` is Python run on the
 * dict d (and np) before numpy saves it: how the bad-input tests break it. */
static void write_smpl_npz(const char *name, const char *path, int compressed, const char *edit)
{
    drape_model *m = tu_load(name);
    int N = m->Nb, S = m->cfg.betas, S2 = S + 2;
    drape_error e = {0};
    float *sd = calloc((size_t)N * 3 * S2, sizeof *sd), *fa = malloc(sizeof(float) * 3 * (size_t)m->Fb);
    uint64_t st = 9;
    for (int i = 0; i < N * 3; i++)
        for (int s = 0; s < S2; s++) sd[i * S2 + s] = s < S ? m->shapedirs[i * S + s] : 0.01f * tu_rand(&st);
    for (int i = 0; i < 3 * m->Fb; i++) fa[i] = (float)m->body_faces[i];
    char dir[256];
    snprintf(dir, sizeof dir, "%s", tu_tmp("smpl_parts"));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    cr_assert_eq(system(cmd), 0);
    const struct { const char *n; const float *d; int nd; int64_t sh[3]; } parts[] = {
        {"v_template", m->v_template, 2, {N, 3}}, {"shapedirs", sd, 3, {N, 3, S2}},
        {"J_regressor", m->J_regressor, 2, {24, N}}, {"weights", m->weights, 2, {N, 24}}, {"f", fa, 2, {m->Fb, 3}},
    };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s.npy", dir, parts[i].n);
        cr_assert_eq(drape_npy_write(p, parts[i].d, parts[i].nd, parts[i].sh, &e), 0, "%s", e.msg);
    }
    free(sd);
    free(fa);
    drape_model_free(m);
    char out[4096];
    int rc = tu_run(out, sizeof out,
                    "%s -c \"import numpy as np\n"
                    "L = lambda n: np.load('%s/' + n + '.npy')\n"
                    "P = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21]\n"
                    "d = dict(v_template=L('v_template').astype(np.float64), shapedirs=L('shapedirs').astype(np.float64),\n"
                    "         posedirs=np.zeros((len(L('v_template')), 3, 207)), J_regressor=L('J_regressor').astype(np.float64),\n"
                    "         weights=L('weights').astype(np.float64), f=L('f').astype(np.uint32),\n"
                    "         kintree_table=np.array([[4294967295] + P[1:], list(range(24))], np.int64))\n"
                    "%s\n"
                    "np.%s('%s', **d)\"",
                    py(), dir, edit ? edit : "", compressed ? "savez_compressed" : "savez", path);
    cr_assert_eq(rc, 0, "numpy could not write the npz: %s", out);
}

/* the same vertices out: body tensors, garments, and frames of both
 * modules with a shape and a motion */
static void assert_same_model(const drape_model *a, const drape_model *b, double tol)
{
    cr_assert_eq(a->Nb, b->Nb);
    cr_assert_leq(tu_max_abs_diff(a->v_template, b->v_template, 3 * a->Nb), tol);
    cr_assert_leq(tu_max_abs_diff(a->shapedirs, b->shapedirs, 3 * (int64_t)a->Nb * a->cfg.betas), tol);
    for (int gi = 0; gi < a->cfg.n_garments; gi++) {
        const drape_garment *ga = &a->garments[gi], *gb = &b->garments[gi];
        cr_assert_leq(tu_max_abs_diff(ga->rest, gb->rest, 3 * ga->V), tol, "%s rest", ga->name);
        cr_assert_leq(tu_max_abs_diff(ga->bones, gb->bones, 3 * a->cfg.bones), tol, "%s bones", ga->name);
        cr_assert_eq(memcmp(ga->body_nn, gb->body_nn, sizeof(int32_t) * (size_t)ga->V), 0, "%s body_nn", ga->name);
        cr_assert_eq(memcmp(ga->bone_body_nn, gb->bone_body_nn, sizeof(int32_t) * (size_t)a->cfg.bones), 0);
        enum { T = 12 };
        float poses[T * 75], betas[10] = {1.5f, -1, 0.5f, 0, 2};
        tu_random_poses(poses, T, 0.3f, 0.5f, 7 + (uint64_t)gi);
        float *oa = malloc(sizeof(float) * T * 3 * (size_t)ga->V), *ob = malloc(sizeof(float) * T * 3 * (size_t)ga->V);
        for (int lbs = 0; lbs < 2; lbs++) {
            const drape_model *ms[2] = {a, b};
            float *outs[2] = {oa, ob};
            for (int k = 0; k < 2; k++) {
                drape_backend *be = tu_backend(ms[k]);
                drape_identity *id = tu_identity(be, gi, betas, 5);
                drape_error e = {0};
                cr_assert_eq(drape_sequence_run(be, id, poses, T, lbs, outs[k], 4, &e), 0, "%s", e.msg);
                drape_identity_free(be, id);
                drape_backend_free(be);
            }
            cr_assert_leq(tu_max_abs_diff(oa, ob, T * 3 * (int64_t)ga->V), tol, "%s frames (lbs %d)", ga->name, lbs);
        }
        free(oa);
        free(ob);
    }
}

Test(body_import, smpl_layout_round_trip_gives_the_same_vertices)
{
    for (int compressed = 0; compressed < 2; compressed++) {
        char npz[300], out[300], log[4096];
        snprintf(npz, sizeof npz, "%s", tu_tmp(compressed ? "rt_c.npz" : "rt.npz"));
        snprintf(out, sizeof out, "%s", tu_tmp("rt.safetensors"));
        write_smpl_npz("tiny_random", npz, compressed, NULL);
        int rc = tu_run(log, sizeof log, "%s body import %s --model %s --out %s", drape_bin(), npz,
                        tu_bundle("tiny_random"), out);
        cr_assert_eq(rc, 0, "%s", log);
        cr_assert(strstr(log, "posedirs ignored"), "%s", log);
        cr_assert(strstr(log, "12 shape directions (the first 10 kept)"), "%s", log);
        cr_assert(strstr(log, "the bundle's body mesh"), "%s", log);
        drape_model *a = tu_load("tiny_random"), *b;
        drape_error e = {0};
        cr_assert_eq(drape_model_load(&b, out, &e), 0, "%s", e.msg);
        assert_same_model(a, b, 1e-6);
        /* every garment's network is now flagged, the original's not */
        for (int g = 0; g < b->cfg.n_garments; g++) {
            cr_assert_eq(b->cfg.stale_net[g], 1);
            cr_assert_eq(a->cfg.stale_net[g], 0);
        }
        drape_model_free(a);
        drape_model_free(b);
    }
}

/* A garment listed as untrained (no network to flag) is not listed stale;
 * a bundle's own network (tinyown) keeps its tensors. */
static char *cfg_untrained;
static int keep_all(const char *n, drape_dtype *dt, int *nd, int64_t *sh, void *d, void *c)
{
    (void)n, (void)dt, (void)nd, (void)sh, (void)d, (void)c;
    return 1;
}

Test(body_import, untrained_garments_are_not_flagged_and_own_networks_stay)
{
    drape_st *st;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st, tu_bundle("tinyown_random"), &e), 0, "%s", e.msg);
    const char *cfg = drape_st_meta(st, "drape.config");
    cfg_untrained = malloc(strlen(cfg) + 64);
    snprintf(cfg_untrained, strlen(cfg) + 64, "%.*s,\"untrained\":[\"miniskirt\"]}", (int)strlen(cfg) - 1, cfg);
    int n_tensors = drape_st_count(st);
    drape_st_free(st);
    char in[300], npz[300], out[300], log[4096];
    snprintf(in, sizeof in, "%s", tu_tmp("untrained.safetensors"));
    tu_rewrite(tu_bundle("tinyown_random"), in, keep_all, cfg_untrained, NULL);
    free(cfg_untrained);
    snprintf(npz, sizeof npz, "%s", tu_tmp("own.npz"));
    snprintf(out, sizeof out, "%s", tu_tmp("own_out.safetensors"));
    write_smpl_npz("tinyown_random", npz, 0, NULL);
    cr_assert_eq(tu_run(log, sizeof log, "%s body import %s --model %s --out %s", drape_bin(), npz, in, out), 0, "%s",
                 log);
    drape_model *b;
    cr_assert_eq(drape_model_load(&b, out, &e), 0, "%s", e.msg);
    cr_assert_eq(b->n_tensors, n_tensors);
    cr_assert_eq(b->cfg.stale_net[drape_model_garment(b, "skirt")], 1);
    cr_assert_eq(b->cfg.stale_net[drape_model_garment(b, "miniskirt")], 0);
    cr_assert_eq(b->n_own, 1);
    drape_model_free(b);
    cr_assert(tu_run(log, sizeof log, "%s info %s", drape_bin(), out) == 0 && strstr(log, "trained on another body"),
              "%s", log);
}

/* A changed body (the template 5% larger about the pelvis): the garments
 * move with it, each vertex's body_nn is the new body's nearest vertex, and
 * the bundle streams in a real draped, neural (flagged) and physics. */
Test(body_import, changed_body_refits_and_streams)
{
    char npz[300], out[300], log[8192];
    snprintf(npz, sizeof npz, "%s", tu_tmp("big.npz"));
    snprintf(out, sizeof out, "%s", tu_tmp("big.safetensors"));
    write_smpl_npz("tiny_random", npz, 1, "d['v_template'] = (d['v_template'] - d['v_template'][0]) * 1.05 + d['v_template'][0]");
    cr_assert_eq(tu_run(log, sizeof log, "%s body import %s --model %s --out %s", drape_bin(), npz,
                        tu_bundle("tiny_random"), out), 0, "%s", log);
    drape_model *a = tu_load("tiny_random"), *b;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&b, out, &e), 0, "%s", e.msg);
    for (int gi = 0; gi < a->cfg.n_garments; gi++) {
        const drape_garment *ga = &a->garments[gi], *gb = &b->garments[gi];
        double moved = 0;
        for (int v = 0; v < gb->V; v++) {
            const float *x = gb->rest + 3 * v;
            double best = INFINITY;
            for (int i = 0; i < b->Nb; i++) {
                double dx = b->v_template[3 * i] - x[0], dy = b->v_template[3 * i + 1] - x[1],
                       dz = b->v_template[3 * i + 2] - x[2];
                if (dx * dx + dy * dy + dz * dz < best) best = dx * dx + dy * dy + dz * dz;
            }
            const float *n = b->v_template + 3 * gb->body_nn[v];
            double d = (n[0] - x[0]) * (n[0] - x[0]) + (n[1] - x[1]) * (n[1] - x[1]) + (n[2] - x[2]) * (n[2] - x[2]);
            cr_assert_leq(d, best * (1 + 1e-5) + 1e-12, "%s vertex %d: body_nn not the nearest", gb->name, v);
            /* and it is as near the new body as it was to the old, give or take */
            const float *o = a->v_template + 3 * ga->body_nn[v], *y = ga->rest + 3 * v;
            double d0 = sqrt((o[0] - y[0]) * (o[0] - y[0]) + (o[1] - y[1]) * (o[1] - y[1]) + (o[2] - y[2]) * (o[2] - y[2]));
            cr_assert_lt(fabs(sqrt(d) - d0), 0.03, "%s vertex %d: %g m from the body, was %g", gb->name, v, sqrt(d), d0);
            moved = fmax(moved, fabs(x[1] - y[1]));
        }
        cr_assert_gt(moved, 0.01, "%s did not move with the body", gb->name);
        for (int k = 0; k < b->cfg.bones; k++)
            cr_assert_eq(memcmp(gb->bone_joint_w + 24 * k, b->weights + 24 * gb->bone_body_nn[k], 24 * sizeof(float)), 0);
    }
    drape_model_free(a);
    drape_model_free(b);

    /* served: /v1/model flags the networks, and both modes stream */
    tu_server s = tu_draped_start(out, "");
    cr_assert_eq(tu_run(log, sizeof log, "curl -s %s/v1/model", s.url), 0, "%s", log);
    cr_assert(strstr(log, "\"networks\":{\"skirt\":\"other_body\",\"miniskirt\":\"other_body\"}"), "%s", log);
    const char *modes[2] = {"neural", "physics"};
    for (int k = 0; k < 2; k++) {
        int rc = tu_run(log, sizeof log, "%s load --url %s --avatars 1 --fps 30 --duration 1 --garment skirt --mode %s --json",
                        drape_bin(), s.ws, modes[k]);
        cr_assert_eq(rc, 0, "%s", log);
        json_error_t je;
        json_t *j = strchr(log, '{') ? json_loads(strchr(log, '{'), JSON_DISABLE_EOF_CHECK, &je) : NULL;
        cr_assert_not_null(j, "%s", log);
        cr_assert_eq(json_integer_value(json_object_get(j, "errors")), 0, "%s: %s", modes[k], log);
        cr_assert_gt(json_integer_value(json_object_get(j, "received")), 5, "%s: %s", modes[k], log);
        json_decref(j);
    }
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* every refusal, with its message: through the reader, and the first
 * through the tool (one line, exit 1, the output file not written) */
static void refused(const char *edit, int betas, int code, const char *msg)
{
    char npz[300];
    snprintf(npz, sizeof npz, "%s", tu_tmp("bad.npz"));
    write_smpl_npz("tiny_random", npz, 0, edit);
    drape_smpl_body b;
    drape_error e = {0};
    int rc = drape_smpl_read_file(&b, npz, betas, &e);
    cr_assert_eq(rc, code, "%s: rc %d (%s)", edit, rc, e.msg);
    cr_assert(strstr(e.msg, msg), "%s: message '%s' lacks '%s'", edit, e.msg, msg);
    cr_assert_null(b.v_template);
}

Test(body_import, refuses_smpl_h_by_name)
{
    refused("d['kintree_table'] = np.array([[4294967295] + list(range(51)), list(range(52))], np.int64)", 10,
            DRAPE_ERANGE, "kintree_table: 52 joints, SMPL-H's (SMPL's 22 body joints and 30 hand joints) layout");
    char npz[300], out[300], log[4096];
    snprintf(npz, sizeof npz, "%s", tu_tmp("bad.npz"));
    snprintf(out, sizeof out, "%s", tu_tmp("never.safetensors"));
    int rc = tu_run(log, sizeof log, "%s body import %s --model %s --out %s", drape_bin(), npz, tu_bundle("tiny_random"), out);
    cr_assert_eq(rc, 1, "%s", log);
    cr_assert(strstr(log, "drape body import: ") == log && strstr(log, "52 joints, SMPL-H's") &&
                  strchr(log, '\n') == log + strlen(log) - 1, "%s", log);
    cr_assert_neq(access(out, F_OK), 0, "the bundle was written");
}

Test(body_import, refuses_another_joint_tree_naming_the_joint)
{
    refused("d['kintree_table'][0, 13] = 6", 10, DRAPE_ERANGE,
            "kintree_table: joint 13 (l_collar) has parent 6 (spine2); SMPL's parent is 9 (spine3)");
    refused("d['kintree_table'][1, [4, 5]] = [5, 4]", 10, DRAPE_ERANGE,
            "kintree_table: column 4 is joint 5; SMPL's order has 4 (l_knee) there");
    refused("d['kintree_table'] = d['kintree_table'].astype(np.float64)", 10, DRAPE_EDTYPE,
            "kintree_table: dtype float, expected an integer type");
}

Test(body_import, refuses_a_missing_array)
{
    refused("del d['weights']", 10, DRAPE_ENOTFOUND, "no array 'weights' (SMPL's layout: v_template, shapedirs");
    refused("del d['kintree_table']", 10, DRAPE_ENOTFOUND, "no array 'kintree_table'");
}

Test(body_import, refuses_a_pickle_by_name)
{
    char pkl[300], out[300], log[4096];
    snprintf(pkl, sizeof pkl, "%s", tu_tmp("smpl.pkl"));
    snprintf(out, sizeof out, "%s", tu_tmp("never.safetensors"));
    cr_assert_eq(tu_run(log, sizeof log, "%s -c \"import pickle; pickle.dump({'v_template': [[0, 0, 0]]}, "
                                         "open('%s', 'wb'), protocol=2)\"", py(), pkl), 0, "%s", log);
    cr_assert_eq(tu_run(log, sizeof log, "%s body import %s --model %s --out %s", drape_bin(), pkl,
                        tu_bundle("tiny_random"), out), 1, "%s", log);
    cr_assert(strstr(log, "a Python pickle (SMPL's .pkl?), not an .npz"), "%s", log);
    cr_assert_neq(access(out, F_OK), 0, "the bundle was written");
}

Test(body_import, refuses_nan)
{
    refused("d['v_template'][7, 1] = np.nan", 10, DRAPE_ENONFINITE, "v_template: element 22 is not finite");
    refused("d['shapedirs'][0, 0, 0] = np.inf", 10, DRAPE_ENONFINITE, "shapedirs: element 0 is not finite");
}

Test(body_import, refuses_wrong_shapes_and_dtypes)
{
    refused("d['J_regressor'] = d['J_regressor'][:23]", 10, DRAPE_ESHAPE, "J_regressor: shape [23, 552, ...], expected [24, N]");
    refused("d['weights'] = d['weights'][:100]", 10, DRAPE_ESHAPE, "weights: shape [100, 24, ...], expected [N, 24]");
    refused("d['v_template'] = d['v_template'][:, :2].copy()", 10, DRAPE_ESHAPE, "v_template: shape [552, 2], expected [N, 3]");
    refused("d['f'] = d['f'][:, :2].copy()", 10, DRAPE_ESHAPE, "f: shape [1040, 2], expected [F, 3]");
    refused("d['f'] = d['f'].astype(np.float32)", 10, DRAPE_EDTYPE, "f: dtype float, expected an integer type");
    refused("d['v_template'] = d['v_template'].astype(np.int64)", 10, DRAPE_EDTYPE,
            "v_template: dtype integer, expected float32 or float64");
    refused("d['f'][3, 1] = 552", 10, DRAPE_ERANGE, "f: face 3's vertex 552 is outside [0, 552)");
    refused("import scipy.sparse as sp; d['J_regressor'] = np.array(sp.csc_matrix(d['J_regressor']), dtype=object)", 10,
            DRAPE_EDTYPE, "J_regressor: dtype '|O', expected float32, float64 or a little-endian integer; only a dense [24, N] array is read");
}

Test(body_import, refuses_too_few_betas_and_bad_values)
{
    refused(NULL, 13, DRAPE_ESHAPE, "shapedirs: 12 shape directions, the bundle's body has 13 betas: too few");
    refused("d['v_template'] *= 100", 10, DRAPE_ERANGE, "SMPL's units are metres");
    refused("d['J_regressor'][3] *= 0.5", 10, DRAPE_ERANGE, "J_regressor: row 3 (spine1) sums to");
    refused("d['weights'][9] *= 2", 10, DRAPE_ERANGE, "weights: vertex 9's weights sum to 2");
}

/* the side of x on which the body (v, normals n) lies at vertex i */
static double clearance(const float *v, const float *n, int i, const float *x)
{
    return (x[0] - v[3 * i]) * n[3 * i] + (x[1] - v[3 * i + 1]) * n[3 * i + 1] + (x[2] - v[3 * i + 2]) * n[3 * i + 2];
}

/* Another mesh (the small bundle's 2428-vertex body, 5% larger, into the
 * tiny bundle's 552-vertex one, about the feet): no vertex correspondence, so the garments
 * follow the joints; a vertex that was outside the old body keeps
 * min(its clearance, 5 mm) outside the new one. */
Test(body_import, another_mesh_follows_the_joints_and_keeps_clearance)
{
    char npz[300], out[300], log[4096];
    snprintf(npz, sizeof npz, "%s", tu_tmp("other.npz"));
    snprintf(out, sizeof out, "%s", tu_tmp("other.safetensors"));
    write_smpl_npz("small_random", npz, 1,
                   "c = d['v_template'].mean(0); c[1] = d['v_template'][:, 1].min(); d['v_template'] = (d['v_template'] - c) * 1.05 + c");
    cr_assert_eq(tu_run(log, sizeof log, "%s body import %s --model %s --out %s", drape_bin(), npz,
                        tu_bundle("tiny_random"), out), 0, "%s", log);
    cr_assert(strstr(log, "another mesh"), "%s", log);
    drape_model *a = tu_load("tiny_random"), *b;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&b, out, &e), 0, "%s", e.msg);
    cr_assert_eq(b->Nb, 2428);
    float *na = malloc(sizeof(float) * 3 * (size_t)a->Nb), *nb = malloc(sizeof(float) * 3 * (size_t)b->Nb);
    drape_mesh_normals(na, a->v_template, a->Nb, a->body_faces, a->Fb);
    drape_mesh_normals(nb, b->v_template, b->Nb, b->body_faces, b->Fb);
    for (int gi = 0; gi < a->cfg.n_garments; gi++) {
        const drape_garment *ga = &a->garments[gi], *gb = &b->garments[gi];
        double moved = 0, worst = INFINITY;
        int outside = 0;
        for (int v = 0; v < ga->V; v++) {
            double c0 = clearance(a->v_template, na, ga->body_nn[v], ga->rest + 3 * v);
            double c1 = clearance(b->v_template, nb, gb->body_nn[v], gb->rest + 3 * v);
            if (c0 >= 0) {
                outside++;
                worst = fmin(worst, c1 - fmin(c0, DRAPE_BODY_CLEARANCE));
            }
            for (int c = 0; c < 3; c++) moved = fmax(moved, fabs(gb->rest[3 * v + c] - ga->rest[3 * v + c]));
        }
        cr_assert_gt(outside, ga->V / 2);
        cr_assert_geq(worst, -1e-4, "%s: a vertex is %g m short of its clearance", ga->name, -worst);
        cr_assert_gt(moved, 0.01, "%s did not follow the larger body", ga->name);
    }
    free(na);
    free(nb);
    drape_model_free(a);
    drape_model_free(b);
}
