/* The refine step (runtime/refine.h): it pushes a garment out of the posed body
 * and pulls its edges toward their rest lengths, stays near the network's
 * prediction, runs only where the bundle asks for it, and never on the
 * plain-skinning baseline. Its agreement with train/reference.py is in
 * test_crosscheck.c (refine_step). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/body.h"
#include "../core/mesh.h"
#include "../runtime/sequence.h"
#include "../runtime/refine.h"
#include "util.h"

#define T 4
static const float BETAS[3] = {0.8f, -1.2f, 0.5f};

/* the posed body of frame `pose` and its normals, [Nb,3] each */
static void pose_body(const drape_model *m, const float *pose, float *body, float *bn)
{
    float v_s[3 * 4096], J[DRAPE_JOINTS * 3], A[DRAPE_JOINTS * 12];
    cr_assert_leq(m->Nb, 4096);
    float full[DRAPE_MAX_BETAS] = {0};
    memcpy(full, BETAS, sizeof BETAS);
    drape_body_shape(v_s, J, m, full);
    drape_fk(A, pose, pose + DRAPE_POSE_DIM, J, m->parents);
    drape_body_pose(body, m, v_s, A);
    drape_mesh_normals(bn, body, m->Nb, m->body_faces, m->Fb);
}

/* signed distance of x to the tangent plane of its nearest body vertex
 * (brute force: docs/design.md §4's collision test, an independent search) */
static double body_side(const drape_model *m, const float *body, const float *bn, const float *x)
{
    int best = 0;
    double bd = INFINITY;
    for (int b = 0; b < m->Nb; b++) {
        double d = 0;
        for (int c = 0; c < 3; c++) d += (double)(x[c] - body[3 * b + c]) * (x[c] - body[3 * b + c]);
        if (d < bd) bd = d, best = b;
    }
    double s = 0;
    for (int c = 0; c < 3; c++) s += (double)bn[3 * best + c] * (x[c] - body[3 * best + c]);
    return s;
}

/* mean |l − l0| / l0 over the garment's edges, l0 from rest0 */
static double edge_error(const drape_garment *g, const float *x, const float *rest0)
{
    double s = 0;
    for (int e = 0; e < g->n_edges; e++) {
        const int i = g->edges[2 * e], j = g->edges[2 * e + 1];
        double l = 0, l0 = 0;
        for (int c = 0; c < 3; c++) {
            l += (double)(x[3 * i + c] - x[3 * j + c]) * (x[3 * i + c] - x[3 * j + c]);
            l0 += (double)(rest0[3 * i + c] - rest0[3 * j + c]) * (rest0[3 * i + c] - rest0[3 * j + c]);
        }
        s += fabs(sqrt(l) - sqrt(l0)) / sqrt(l0);
    }
    return s / g->n_edges;
}

/* the zero-weight tiny model (plain skinning) refining its skirt with these
 * settings, its backend and an identity of shape BETAS */
static drape_identity *tiny_skirt(drape_model **m, drape_backend **be, int iters, float k, float margin)
{
    *m = tu_load("tiny_zero");
    (*m)->cfg.refine[0].iters = iters, (*m)->cfg.refine[0].stiffness = k, (*m)->cfg.refine[0].margin = margin;
    *be = tu_backend(*m);
    return tu_identity(*be, 0, BETAS, 3);
}

/* A skinned skirt jittered by ±3 mm, a third of the vertices near the body
 * (within 2 cm) shoved 1 cm into it: the refine step brings them out of the
 * body, lowers the edge error, and moves no vertex far. */
Test(refine, pushes_out_and_restores_lengths)
{
    drape_model *m;
    drape_backend *be;
    drape_identity *id = tiny_skirt(&m, &be, 10, 1, 0.003f);
    const drape_garment *g = &m->garments[0];
    int V = g->V;
    float poses[T * 75];
    tu_random_poses(poses, T, 0.2f, 0.1f, 7);
    float *x = malloc(sizeof(float) * T * V * 3), *rest0 = malloc(sizeof(float) * V * 3);
    float *body = malloc(sizeof(float) * m->Nb * 3), *bn = malloc(sizeof(float) * m->Nb * 3);
    drape_error e = {0};
    /* the zero-weight model is plain skinning: frame 0 at the rest pose gives g(β) */
    float rest_pose[75] = {0};
    cr_assert_eq(drape_sequence_run(be, id, rest_pose, 1, 1, rest0, 1, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_sequence_run(be, id, poses, T, 1, x, 1, &e), 0, "%s", e.msg);
    drape_refine *r;
    float full[DRAPE_MAX_BETAS] = {0};
    memcpy(full, BETAS, sizeof BETAS);
    cr_assert_eq(drape_refine_create(&r, m, 0, full, &e), 0, "%s", e.msg);
    cr_assert_not_null(r);
    uint64_t rng = 99;
    for (int t = 0; t < T; t++) {
        float *xt = x + (size_t)t * V * 3, *p = malloc(sizeof(float) * V * 3);
        pose_body(m, poses + 75 * t, body, bn);
        int shoved = 0;
        for (int v = 0; v < V; v++) {
            for (int c = 0; c < 3; c++) xt[3 * v + c] += 0.003f * tu_rand(&rng);
            double s = body_side(m, body, bn, xt + 3 * v);
            if (v % 3 == 0 && s < 0.02) { /* near the body: 1 cm inside, along the nearest body normal */
                int best = 0;
                double bd = INFINITY;
                for (int b = 0; b < m->Nb; b++) {
                    double d = 0;
                    for (int c = 0; c < 3; c++) d += pow(xt[3 * v + c] - body[3 * b + c], 2);
                    if (d < bd) bd = d, best = b;
                }
                for (int c = 0; c < 3; c++) xt[3 * v + c] -= (float)((s + 0.01) * bn[3 * best + c]);
                shoved++;
            }
        }
        int inside0 = 0, inside1 = 0;
        for (int v = 0; v < V; v++) inside0 += body_side(m, body, bn, xt + 3 * v) < 0;
        double e0 = edge_error(g, xt, rest0);
        memcpy(p, xt, sizeof(float) * V * 3);
        cr_assert_eq(drape_refine_frame(r, xt, poses + 75 * t, poses + 75 * t + 72, &e), 0, "%s", e.msg);
        for (int v = 0; v < V; v++) inside1 += body_side(m, body, bn, xt + 3 * v) < 0;
        double e1 = edge_error(g, xt, rest0), moved = 0, mean = 0;
        for (int v = 0; v < V; v++) {
            double d = 0;
            for (int c = 0; c < 3; c++) d += pow(xt[3 * v + c] - p[3 * v + c], 2);
            moved = fmax(moved, sqrt(d));
            mean += sqrt(d) / V;
        }
        cr_log_info("frame %d: inside %d -> %d of %d, edge error %.4f -> %.4f, moved %.1f mm on average, at most "
                    "%.1f mm", t, inside0, inside1, V, e0, e1, 1e3 * mean, 1e3 * moved);
        cr_assert_gt(shoved, 0);
        cr_assert_gt(inside0, 0);
        cr_assert_leq(inside1, V / 100, "frame %d: %d of %d vertices still inside the body", t, inside1, V);
        cr_assert_lt(e1, 0.8 * e0, "frame %d: edge error %g -> %g", t, e0, e1);
        /* a vertex by a body vertex's tangent plane far from it (the coarse
         * tiny body's crotch) may move several cm; on average little moves */
        cr_assert_lt(mean, 0.015, "frame %d: vertices moved %g m on average", t, mean);
        cr_assert_lt(moved, 0.1, "frame %d: a vertex moved %g m", t, moved);
        free(p);
    }
    drape_refine_free(r);
    free(x), free(rest0), free(body), free(bn);
    drape_identity_free(be, id);
    drape_backend_free(be);
    drape_model_free(m);
}

/* Through the backend: refined frames differ from the network's, the
 * plain-skinning baseline is never refined, a garment the bundle does not
 * name is not refined, and the identity's size counts the step's data. */
Test(refine, runs_where_the_bundle_asks)
{
    float poses[T * 75];
    tu_random_poses(poses, T, 0.2f, 0.1f, 3);
    float *out[2][2][2]; /* [refine on][garment][lbs] */
    size_t bytes[2];
    int V[2];
    for (int on = 0; on < 2; on++) {
        drape_model *m = tu_load("tiny_random");
        if (on) m->cfg.refine[0].iters = 10, m->cfg.refine[0].stiffness = 1, m->cfg.refine[0].margin = 0.003f;
        drape_backend *be = tu_backend(m);
        for (int g = 0; g < 2; g++) {
            drape_identity *id = tu_identity(be, g, BETAS, 3);
            if (g == 0) bytes[on] = drape_identity_bytes(id);
            V[g] = m->garments[g].V;
            for (int lbs = 0; lbs < 2; lbs++) {
                out[on][g][lbs] = malloc(sizeof(float) * T * V[g] * 3);
                drape_error e = {0};
                cr_assert_eq(drape_sequence_run(be, id, poses, T, lbs, out[on][g][lbs], 2, &e), 0, "%s", e.msg);
            }
            drape_identity_free(be, id);
        }
        drape_backend_free(be);
        drape_model_free(m);
    }
    int64_t n0 = (int64_t)T * V[0] * 3, n1 = (int64_t)T * V[1] * 3;
    double d = tu_max_abs_diff(out[0][0][0], out[1][0][0], n0), mean = 0;
    for (int64_t i = 0; i < n0; i += 3) {
        const float *p = out[0][0][0] + i, *r = out[1][0][0] + i;
        mean += sqrt((double)(p[0] - r[0]) * (p[0] - r[0]) + (double)(p[1] - r[1]) * (p[1] - r[1]) +
                     (double)(p[2] - r[2]) * (p[2] - r[2]));
    }
    mean /= (double)(n0 / 3);
    cr_log_info("refined skirt: max change %.2f mm, mean %.2f mm", 1e3 * d, 1e3 * mean);
    cr_assert_gt(d, 1e-4, "the refine step changed nothing");
    /* near the prediction: a random network's frames are stretched unevenly,
     * and the springs move a few vertices far from the body by centimetres
     * (49 mm at most, 4.4 mm on average, on an AMD Zen 3 machine's bundle) */
    cr_assert_lt(mean, 0.01, "the refine step moved the garment %.1f mm on average", 1e3 * mean);
    cr_assert_lt(d, 0.1, "the refine step moved a vertex %.1f mm", 1e3 * d);
    cr_assert_eq(tu_max_abs_diff(out[0][0][1], out[1][0][1], n0), 0, "the baseline was refined");
    cr_assert_eq(tu_max_abs_diff(out[0][1][0], out[1][1][0], n1), 0, "a garment the bundle does not name was refined");
    cr_assert_gt(bytes[1], bytes[0]);
    for (int a = 0; a < 2; a++)
        for (int g = 0; g < 2; g++)
            for (int l = 0; l < 2; l++) free(out[a][g][l]);
}

/* A skinned skirt stretched 8% about its centre: a garment-wide stretch, the
 * error plain sweeps shrink slowest. In 40 sweeps at k = 100 the
 * Chebyshev-accelerated ones (rho: the plain sweep's spectral radius) leave
 * less than half the stretch the plain ones leave (measured: a third), and
 * with a rho too large for this small mesh they still converge, slower. */
Test(refine, chebyshev_sweeps_undo_a_garment_wide_stretch)
{
    static const double RHO[3] = {0, 0.998, 0.99999};
    double err[3];
    float rest_pose[75] = {0}, full[DRAPE_MAX_BETAS] = {0};
    memcpy(full, BETAS, sizeof BETAS);
    drape_model *m;
    drape_backend *be;
    drape_identity *id = tiny_skirt(&m, &be, 40, 100, 0);
    const drape_garment *g = &m->garments[0];
    int V = g->V;
    float *rest0 = malloc(sizeof(float) * V * 3), *stretched = malloc(sizeof(float) * V * 3),
          *x = malloc(sizeof(float) * V * 3);
    drape_error e = {0};
    cr_assert_eq(drape_sequence_run(be, id, rest_pose, 1, 1, rest0, 1, &e), 0, "%s", e.msg);
    double c[3] = {0};
    for (int v = 0; v < V; v++)
        for (int d = 0; d < 3; d++) c[d] += rest0[3 * v + d] / (double)V;
    for (int v = 0; v < V; v++)
        for (int d = 0; d < 3; d++) stretched[3 * v + d] = (float)(c[d] + 1.08 * (rest0[3 * v + d] - c[d]));
    double e0 = edge_error(g, stretched, rest0);
    for (int k = 0; k < 3; k++) {
        m->cfg.refine[0].rho = RHO[k]; /* read when the step's identity state is made */
        drape_refine *r;
        cr_assert_eq(drape_refine_create(&r, m, 0, full, &e), 0, "%s", e.msg);
        memcpy(x, stretched, sizeof(float) * V * 3);
        cr_assert_eq(drape_refine_frame(r, x, rest_pose, rest_pose + 72, &e), 0, "%s", e.msg);
        drape_refine_free(r);
        for (int i = 0; i < 3 * V; i++) cr_assert(isfinite(x[i]), "rho %g: vertex %d not finite", RHO[k], i / 3);
        err[k] = edge_error(g, x, rest0);
        cr_log_info("rho %g: edge error %.4f -> %.4f", RHO[k], e0, err[k]);
        cr_assert_lt(err[k], e0);
    }
    cr_assert_lt(err[1], 0.5 * err[0], "accelerated %g, plain %g", err[1], err[0]);
    cr_assert_gt(err[2], err[1], "a rho past the radius converged faster than the right one: %g, %g", err[2], err[1]);
    free(rest0), free(stretched), free(x);
    drape_identity_free(be, id);
    drape_backend_free(be);
    drape_model_free(m);
}
