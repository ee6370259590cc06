/* The garment parts of the engine (bending springs, attachments, damping),
 * `drape sim garment` and `drape metrics` (sim/garment.c, sim/metrics.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/body.h"
#include "../runtime/npy.h"
#include "../sim/cloth.h"
#include "../sim/collide.h"
#include "../sim/garment.h"
#include "../sim/garment_test.h"
#include "../core/geom.h"
#include "../sim/metrics.h"
#include "util.h"

/* nx × nx vertices over w × w in the z = 0 plane from the origin, rows along +y */
static void grid(double *X, int32_t *T, int nx, double w)
{
    drape_grid_mesh(X, T, nx, nx, w, w);
    for (int i = 0; i < nx * nx; i++) X[3 * i] += w / 2, X[3 * i + 1] += w / 2;
}

static const drape_cloth_params CLOTH = {.dt = 1.0 / 60, .gravity = 9.81, .iters = 10, .ym = 2, .mass = DRAPE_MASS_AREA,
                                         .density = 0.2, .bend = 0.02, .attach = 500, .damping = 0.02};

Test(sim_garment, hinges_and_bending_springs_are_counted)
{
    /* 3 × 3 vertices, 8 triangles: 16 edges, 8 on the border, so 8 interior
     * edges and 8 bending springs */
    double X[27];
    int32_t T[24];
    grid(X, T, 3, 1.0);
    int32_t *h;
    int nh;
    cr_assert_eq(drape_hinges(&h, &nh, T, 8), 0);
    cr_assert_eq(nh, 8);
    for (int i = 0; i < nh; i++) { /* opposite vertices are in neither end of the edge, and differ */
        const int32_t *q = h + 4 * i;
        cr_assert(q[2] != q[0] && q[2] != q[1] && q[3] != q[0] && q[3] != q[1] && q[2] != q[3]);
    }
    /* the central diagonal 0–4 of the first quad: opposite vertices 1 and 3 */
    int seen = 0;
    for (int i = 0; i < nh; i++)
        if (h[4 * i] == 0 && h[4 * i + 1] == 4) seen = (h[4 * i + 2] == 1 && h[4 * i + 3] == 3) || (h[4 * i + 2] == 3 && h[4 * i + 3] == 1);
    cr_assert(seen, "hinge 0-4 should join vertices 1 and 3");
    free(h);
    drape_cloth *c;
    drape_error e = {0};
    cr_assert_eq(drape_cloth_create(&c, X, 9, T, 8, NULL, 0, &CLOTH, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_springs(c), 24);
    cr_assert_eq(drape_cloth_bend_springs(c), 8);
    drape_cloth_free(c);
    drape_cloth_params nb = CLOTH;
    nb.bend = 0;
    cr_assert_eq(drape_cloth_create(&c, X, 9, T, 8, NULL, 0, &nb, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_springs(c), 16);
    cr_assert_eq(drape_cloth_bend_springs(c), 0);
    drape_cloth_free(c);
}

/* The top row is attached to targets that sweep sideways and up: after
 * settling it follows them within 1 cm (the hanging cloth pulls on it), the
 * objective still descends with attachments and bending, and the matrix
 * was factorized once. */
Test(sim_garment, attachments_track_their_targets)
{
    int nx = 9, n = nx * nx, F = 2 * (nx - 1) * (nx - 1);
    double *X = malloc(sizeof(double) * 3 * n), tgt[3 * 9], en[10];
    int32_t *T = malloc(sizeof(int32_t) * 3 * F), att[9];
    grid(X, T, nx, 0.4);
    for (int i = 0; i < nx; i++) att[i] = (nx - 1) * nx + i;
    drape_cloth *c;
    drape_error e = {0};
    drape_cloth_params p = CLOTH;
    p.ym = 0.02; /* soft enough to sag visibly */
    cr_assert_eq(drape_cloth_create_attached(&c, X, n, T, F, NULL, 0, att, nx, &p, &e), 0, "%s", e.msg);
    double off[3];
    for (int s = 0; s < 240; s++) {
        double t = s / 60.0;
        off[0] = 0.2 * sin(2 * t), off[1] = 0.05 * t, off[2] = 0.1 * sin(3 * t);
        for (int i = 0; i < nx; i++)
            for (int d = 0; d < 3; d++) tgt[3 * i + d] = X[3 * att[i] + d] + off[d];
        cr_assert_eq(drape_cloth_set_targets(c, tgt, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_cloth_step_traced(c, en, &e), 0, "%s", e.msg);
        for (int i = 1; i < p.iters; i++) cr_assert_leq(en[i], en[i - 1] * (1 + 1e-12) + 1e-12, "step %d", s);
        if (s < 60) continue;
        const double *x = drape_cloth_positions(c);
        for (int i = 0; i < nx; i++) {
            double d2 = 0;
            for (int d = 0; d < 3; d++) d2 += (x[3 * att[i] + d] - tgt[3 * i + d]) * (x[3 * att[i] + d] - tgt[3 * i + d]);
            cr_assert_lt(sqrt(d2), 0.01, "step %d: attached vertex %d is %g m from its target", s, att[i], sqrt(d2));
        }
    }
    const double *x = drape_cloth_positions(c);
    cr_assert_lt(x[1], X[1] + off[1] - 0.002, "the free part should sag below its lifted rest (y %g)", x[1]);
    cr_assert_eq(drape_cloth_factorizations(c), 1);
    drape_cloth_free(c);
    free(X);
    free(T);
}

Test(sim_garment, damping_slows_a_free_fall)
{
    double X[9] = {0, 0, 0, 1, 0, 0, 0, 0, 1};
    int32_t T[3] = {0, 1, 2};
    drape_cloth_params p = CLOTH;
    double v[2];
    for (int k = 0; k < 2; k++) {
        p.damping = k ? 0.1 : 0;
        drape_cloth *c;
        drape_error e = {0};
        cr_assert_eq(drape_cloth_create(&c, X, 3, T, 1, NULL, 0, &p, &e), 0, "%s", e.msg);
        for (int s = 0; s < 30; s++) drape_cloth_step(c, &e);
        v[k] = drape_cloth_velocities(c)[1];
        drape_cloth_free(c);
    }
    cr_assert_lt(v[0], v[1] - 0.5, "undamped %g m/s, damped %g m/s", v[0], v[1]);
    cr_assert_lt(v[1], 0);
}

Test(sim_garment, bad_attachments_are_rejected)
{
    double X[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0};
    int32_t T[6] = {0, 1, 3, 0, 3, 2}, pin[1] = {0};
    drape_cloth *c;
    drape_error e = {0};
    cr_assert_eq(drape_cloth_create_attached(&c, X, 4, T, 2, NULL, 0, (int32_t[]){9}, 1, &CLOTH, &e), DRAPE_ERANGE);
    cr_assert_eq(drape_cloth_create_attached(&c, X, 4, T, 2, pin, 1, (int32_t[]){0}, 1, &CLOTH, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "pinned"), "%s", e.msg);
    cr_assert_eq(drape_cloth_create_attached(&c, X, 4, T, 2, NULL, 0, (int32_t[]){1, 1}, 2, &CLOTH, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "twice"), "%s", e.msg);
    drape_cloth_params p = CLOTH;
    p.attach = 0;
    cr_assert_eq(drape_cloth_create_attached(&c, X, 4, T, 2, NULL, 0, (int32_t[]){1}, 1, &p, &e), DRAPE_EINVAL);
    p = CLOTH;
    p.damping = 1;
    cr_assert_eq(drape_cloth_create(&c, X, 4, T, 2, NULL, 0, &p, &e), DRAPE_EINVAL);
    cr_assert_eq(drape_cloth_create_attached(&c, X, 4, T, 2, NULL, 0, (int32_t[]){1}, 1, &CLOTH, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_set_targets(c, (double[]){0, NAN, 0}, &e), DRAPE_ENONFINITE);
    drape_cloth_free(c);
}

Test(sim_garment, posed_body_at_rest_is_the_shaped_body)
{
    drape_model *m = tu_load("tiny_random");
    float betas[2] = {0.5f, -1}, pose[75] = {0}, J[72], *vs = malloc(sizeof(float) * 3 * m->Nb),
          *vp = malloc(sizeof(float) * 3 * m->Nb);
    drape_error e = {0};
    float bfull[DRAPE_MAX_BETAS] = {0.5f, -1};
    drape_body_shape(vs, J, m, bfull);
    cr_assert_eq(drape_garment_body_frames(m, betas, 2, pose, 1, vp, &e), 0, "%s", e.msg);
    cr_assert_leq(tu_max_abs_diff(vs, vp, 3 * m->Nb), 1e-6);
    pose[72] = 1, pose[73] = 2, pose[74] = 3; /* a translation moves every vertex by it */
    cr_assert_eq(drape_garment_body_frames(m, betas, 2, pose, 1, vp, &e), 0, "%s", e.msg);
    for (int i = 0; i < m->Nb; i++)
        for (int d = 0; d < 3; d++) cr_assert_float_eq(vp[3 * i + d], vs[3 * i + d] + d + 1, 1e-5);
    free(vs);
    free(vp);
    drape_model_free(m);
}

/* ---- the commands, run as a user runs them ---- */

static const char *bin(void)
{
    const char *b = getenv("DRAPE_BIN");
    return b ? b : "build/drape";
}

#define FRAMES 12

typedef struct {
    char poses[300], sim[300], lbs[300];
    drape_model *m;
    float P[75 * FRAMES];
} run_ctx;

/* sim and LBS outputs for the walk on the small bundle */
static void simulate(run_ctx *r, const char *extra)
{
    char log[4096];
    snprintf(r->poses, sizeof r->poses, "%s", tu_tmp("walk.npy"));
    snprintf(r->sim, sizeof r->sim, "%s", tu_tmp("sim.npy"));
    snprintf(r->lbs, sizeof r->lbs, "%s", tu_tmp("lbs.npy"));
    drape_garment_walk(r->P, FRAMES, 30);
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(r->poses, r->P, 2, (int64_t[]){FRAMES, 75}, &e), 0, "%s", e.msg);
    const char *M = tu_bundle("small_random");
    cr_assert_eq(tu_run(log, sizeof log, "%s sim garment --model '%s' --garment skirt --betas 0.5,-0.5 --poses '%s' "
                        "--out '%s' --settle 30 %s", bin(), M, r->poses, r->sim, extra), 0, "%s", log);
    cr_assert(strstr(log, "ms per frame"), "%s", log);
    cr_log_info("%s", log);
    cr_assert_eq(tu_run(log, sizeof log, "%s infer --model '%s' --garment skirt --betas 0.5,-0.5 --poses '%s' "
                        "--out '%s' --lbs-only", bin(), M, r->poses, r->lbs), 0, "%s", log);
    r->m = tu_load("small_random");
}

Test(sim_garment, sim_garment_end_to_end)
{
    run_ctx r;
    simulate(&r, "--iters 8");
    drape_model *m = r.m;
    const drape_garment *g = &m->garments[drape_model_garment(m, "skirt")];
    drape_npy a, b;
    drape_error e = {0};
    cr_assert_eq(drape_npy_read(&a, r.sim, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_npy_read(&b, r.lbs, &e), 0, "%s", e.msg);
    cr_assert_eq(a.ndim, 3);
    cr_assert(a.shape[0] == FRAMES && a.shape[1] == g->V && a.shape[2] == 3);
    for (int64_t i = 0; i < a.numel; i++) cr_assert(isfinite(a.data[i]), "value %lld", (long long)i);
    /* attached (waist) vertices stay near their skinned positions */
    float *rest = malloc(sizeof(float) * 3 * g->V), *body = malloc(sizeof(float) * 3 * m->Nb * FRAMES);
    cr_assert_eq(drape_garment_lbs(m, drape_model_garment(m, "skirt"), (float[]){0.5f, -0.5f}, 2, r.P, 1, rest, NULL,
                                   &e), 0, "%s", e.msg);
    int32_t *att;
    int na;
    drape_garment_sim_params p = drape_garment_sim_defaults();
    cr_assert_eq(drape_garment_waist(&att, &na, rest, g->V, p.attach_band, &e), 0);
    cr_assert_geq(na, 8, "the skirt's waist ring should be attached (%d vertices)", na);
    double worst = 0, moved = 0;
    for (int t = 0; t < FRAMES; t++)
        for (int i = 0; i < na; i++) {
            const float *x = a.data + ((size_t)t * g->V + att[i]) * 3, *y = b.data + ((size_t)t * g->V + att[i]) * 3;
            worst = fmax(worst, sqrt((x[0] - y[0]) * (x[0] - y[0]) + (x[1] - y[1]) * (x[1] - y[1]) + (x[2] - y[2]) * (x[2] - y[2])));
        }
    for (int i = 0; i < a.numel; i++) moved = fmax(moved, fabs(a.data[i] - b.data[i]));
    cr_log_info("attached vertices within %.4f m of their skinned targets; the skirt moved up to %.3f m off LBS", worst,
                moved);
    cr_assert_lt(worst, 0.01);
    cr_assert_gt(moved, 0.005, "the simulated skirt should differ from plain skinning");
    /* after each frame no vertex is inside the posed body. The check's own
     * collider reaches 1 m, not the simulation's 8 cm: beyond its reach a
     * vertex deep inside reads +INFINITY, "outside". */
    cr_assert_eq(drape_garment_body_frames(m, (float[]){0.5f, -0.5f}, 2, r.P, FRAMES, body, &e), 0, "%s", e.msg);
    drape_collider *col;
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_set_mesh(col, m->body_faces, m->Fb, m->Nb, 1.0, &e), 0, "%s", e.msg);
    double dmin = INFINITY;
    int in_box = 0;
    for (int t = 0; t < FRAMES; t++) {
        const float *bt = body + (size_t)t * m->Nb * 3;
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int i = 0; i < m->Nb; i++)
            for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], bt[3 * i + k]), hi[k] = fmaxf(hi[k], bt[3 * i + k]);
        cr_assert_eq(drape_collider_update_mesh(col, bt, &e), 0, "%s", e.msg);
        for (int v = 0; v < g->V; v++) {
            const float *x = a.data + ((size_t)t * g->V + v) * 3;
            double pt[3] = {x[0], x[1], x[2]}, q[3], n[3], d = drape_collider_distance(col, pt, q, n);
            /* within the body's box the surface is always within reach */
            if (x[0] >= lo[0] && x[0] <= hi[0] && x[1] >= lo[1] && x[1] <= hi[1] && x[2] >= lo[2] && x[2] <= hi[2]) {
                in_box++;
                cr_assert(isfinite(d), "frame %d vertex %d: in the body's box but no surface found", t, v);
            }
            dmin = fmin(dmin, d);
        }
    }
    cr_assert_gt(in_box, 0, "no garment vertex within the body's box: the check saw nothing");
    cr_log_info("closest garment vertex to the body: %.4f m", dmin);
    cr_assert_geq(dmin, -1e-3, "a vertex is %g m inside the body", -dmin);
    drape_collider_free(col);
    free(att);
    free(rest);
    free(body);
    drape_npy_free(&a);
    drape_npy_free(&b);
    drape_model_free(m);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A bundle with garment.<g>.attach: exactly that set is attached (the same
 * for every betas), and it follows its skinned positions. */
Test(sim_garment, the_bundle_attach_set_is_used)
{
    drape_model *m = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&m, "models/default.safetensors", &e), 0, "%s", e.msg);
    int gi = drape_model_garment(m, "skirt");
    const drape_garment *g = &m->garments[gi];
    cr_assert_gt(g->n_attach, 0);
    enum { T = 3 };
    float P[75 * T], betas[2] = {1.5f, -1.0f};
    drape_garment_walk(P, T, 30);
    float *out = malloc(sizeof(float) * 3 * g->V * T), *lbs = malloc(sizeof(float) * 3 * g->V * T),
          *rest = malloc(sizeof(float) * 3 * g->V);
    drape_garment_sim_params p = drape_garment_sim_defaults();
    p.settle = 10;
    p.attach_band = 0; /* the band rule would attach the top vertex alone; the bundle's set overrides it */
    drape_garment_sim_stats st;
    cr_assert_eq(drape_garment_simulate(m, gi, betas, 2, P, T, &p, out, &st, &e), 0, "%s", e.msg);
    cr_assert_eq(st.attached, g->n_attach, "attached %d, the bundle lists %d", st.attached, g->n_attach);
    cr_assert_eq(drape_garment_lbs(m, gi, betas, 2, P, T, rest, lbs, &e), 0, "%s", e.msg);
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < g->n_attach; i++) {
            const float *x = out + ((size_t)t * g->V + g->attach[i]) * 3, *y = lbs + ((size_t)t * g->V + g->attach[i]) * 3;
            worst = fmax(worst, sqrt((x[0] - y[0]) * (x[0] - y[0]) + (x[1] - y[1]) * (x[1] - y[1]) + (x[2] - y[2]) * (x[2] - y[2])));
        }
    cr_assert_lt(worst, 0.01, "an attached vertex is %g m from its skinned target", worst);
    /* the set itself, not only its size, at that shape and another (the
     * band rule, on the shaped rest, would move with the shape) */
    const float shapes[2][2] = {{1.5f, -1.0f}, {-2.5f, 2.0f}};
    for (int k = 0; k < 2; k++) {
        drape_garment_rig *rig;
        cr_assert_eq(drape_garment_rig_create(&rig, m, gi, shapes[k], 2, &p, 1, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_rig_attached(rig), g->n_attach, "betas %g,%g: attached %d, the bundle lists %d",
                     shapes[k][0], shapes[k][1], drape_garment_rig_attached(rig), g->n_attach);
        /* as sets: both ascending, the bundle's by its format */
        int32_t *att = malloc(sizeof(int32_t) * (size_t)g->n_attach);
        memcpy(att, drape_garment_rig_attach_set(rig), sizeof(int32_t) * (size_t)g->n_attach);
        qsort(att, (size_t)g->n_attach, sizeof *att, cmp_i32);
        for (int i = 0; i < g->n_attach; i++)
            cr_assert_eq(att[i], g->attach[i], "betas %g,%g: attached vertex %d is %d, the bundle's %d", shapes[k][0],
                         shapes[k][1], i, att[i], g->attach[i]);
        free(att);
        drape_garment_rig_free(rig);
    }
    free(out);
    free(lbs);
    free(rest);
    drape_model_free(m);
}

static double json_num(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    cr_assert(p, "no %s in %s", key, s);
    return atof(p + strlen(key) + 2);
}

Test(sim_garment, metrics_report_their_fields)
{
    run_ctx r;
    simulate(&r, "--substeps 2");
    char out[4096];
    const char *M = tu_bundle("small_random");
    /* LBS against itself: no distance */
    cr_assert_eq(tu_run(out, sizeof out, "%s metrics --model '%s' --garment skirt --betas 0.5,-0.5 --poses '%s' "
                        "--verts '%s' --ref '%s'", bin(), M, r.poses, r.lbs, r.lbs), 0, "%s", out);
    cr_log_info("lbs: %s", out);
    const char *keys[] = {"\"edge_error\"", "\"area_error\"", "\"collision_pct\"", "\"stretch\"", "\"bending\"",
                          "\"inertia\"", "\"gravity\"", "\"mean\"", "\"max\""};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        double v = json_num(out, keys[k]);
        cr_assert(isfinite(v) && v >= 0, "%s = %g", keys[k], v);
    }
    cr_assert_eq(json_num(out, "\"mean\""), 0);
    cr_assert_eq(json_num(out, "\"max\""), 0);
    cr_assert_gt(json_num(out, "\"gravity\""), 0, "the skirt hangs above y = 0");
    cr_assert_leq(json_num(out, "\"collision_pct\""), 100);
    /* the simulation against LBS: a real distance, cloth that keeps its edges */
    cr_assert_eq(tu_run(out, sizeof out, "%s metrics --model '%s' --garment skirt --betas 0.5,-0.5 --poses '%s' "
                        "--verts '%s' --ref '%s'", bin(), M, r.poses, r.sim, r.lbs), 0, "%s", out);
    cr_log_info("sim: %s", out);
    cr_assert_gt(json_num(out, "\"max\""), 0);
    cr_assert_lt(json_num(out, "\"edge_error\""), 0.02);
    cr_assert_lt(json_num(out, "\"collision_pct\""), 2);
    cr_assert(strstr(out, "\"ref\""), "%s", out);
    /* without --ref there is no "ref" object */
    cr_assert_eq(tu_run(out, sizeof out, "%s metrics --model '%s' --garment skirt --betas 0.5,-0.5 --poses '%s' "
                        "--verts '%s'", bin(), M, r.poses, r.sim), 0, "%s", out);
    cr_assert(!strstr(out, "\"ref\""), "%s", out);
    drape_model_free(r.m);
}

/* a flat sheet has no bending energy and, at rest, no stretch */
Test(sim_garment, metrics_of_the_rest_state)
{
    double X[75];
    int32_t T[96];
    grid(X, T, 5, 1.0);
    float rest[75], moved[75];
    for (int i = 0; i < 75; i++) rest[i] = (float)X[i];
    drape_metrics *mx;
    drape_error e = {0};
    drape_metrics_material mat = drape_metrics_default_material(30);
    cr_assert_eq(drape_metrics_create(&mx, rest, 25, T, 32, NULL, 0, 0, &mat, &e), 0, "%s", e.msg);
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < 75; i++) moved[i] = rest[i] + (i % 3 == 1 ? 0.1f * t : 0); /* rises uniformly */
        cr_assert_eq(drape_metrics_add(mx, moved, NULL, rest, &e), 0, "%s", e.msg);
    }
    drape_metrics_summary s;
    drape_metrics_get(mx, &s);
    cr_assert_eq(s.frames, 3);
    cr_assert_float_eq(s.edge_error, 0, 1e-6);
    cr_assert_float_eq(s.stretch, 0, 1e-6);
    cr_assert_float_eq(s.bending, 0, 1e-12);
    cr_assert_float_eq(s.inertia, 0, 1e-9);          /* constant velocity */
    cr_assert_float_eq(s.gravity, 0.2 * 9.81 * 0.6, 1e-5); /* mass 0.2 kg, mean centroid height 0.5 + 0.1 */
    cr_assert_float_eq(s.ref_max, 0.2, 1e-6);
    cr_assert_eq(drape_metrics_add(mx, moved, NULL, NULL, &e), DRAPE_EINVAL); /* reference for all or none */
    moved[4] = NAN;
    cr_assert_eq(drape_metrics_add(mx, moved, NULL, rest, &e), DRAPE_ENONFINITE);
    drape_metrics_free(mx);
}

/* The automatic substeps with a --max-disp so small that the count passes an
 * int: the most allowed, not (once, an int overflow) the fewest. */
Test(sim_garment, a_tiny_max_disp_takes_the_most_substeps)
{
    char out[4096], p[300];
    snprintf(p, sizeof p, "%s", tu_tmp("walk3.npy"));
    float P[75 * 3];
    drape_garment_walk(P, 3, 30);
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(p, P, 2, (int64_t[]){3, 75}, &e), 0, "%s", e.msg);
    cr_assert_eq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null "
                        "--settle 1 --max-disp 1e-300 --max-substeps 3", bin(), tu_bundle("tiny_random"), p), 0, "%s", out);
    cr_assert(strstr(out, " 3 substeps (at most 3"), "%s", out);
}

Test(sim_garment, commands_reject_bad_input)
{
    char out[4096], p[300], bad[300];
    snprintf(p, sizeof p, "%s", tu_tmp("p.npy"));
    snprintf(bad, sizeof bad, "%s", tu_tmp("bad.npy"));
    float P[75 * 2] = {0};
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(p, P, 2, (int64_t[]){2, 75}, &e), 0);
    cr_assert_eq(drape_npy_write(bad, P, 2, (int64_t[]){2, 74}, &e), 0);
    const char *M = tu_bundle("tiny_random");
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment cape --poses '%s' --out /dev/null", bin(),
                         M, p), 0);
    cr_assert(strstr(out, "garment 'cape' is not in the model (skirt, miniskirt)"), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null", bin(),
                         M, bad), 0);
    cr_assert(strstr(out, "poses must be float32 [T, 75]"), "%s", out);
    P[7] = NAN;
    cr_assert_eq(drape_npy_write(bad, P, 2, (int64_t[]){2, 75}, &e), 0);
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null", bin(),
                         M, bad), 0);
    cr_assert(strstr(out, "NaN"), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null "
                         "--iters 0", bin(), M, p), 0);
    cr_assert(strstr(out, "iters"), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null "
                         "--vertex-margin 0.2", bin(), M, p), 0);
    cr_assert(strstr(out, "reach greater than the margin and the vertex margin"), "%s", out);
    /* --realtime is one set of settings: another option would not be what draped runs */
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null "
                         "--realtime --iters 3", bin(), M, p), 0);
    cr_assert(strstr(out, "--realtime runs the served settings"), "%s", out);
    /* a guide must have the poses' frames and the garment's vertices */
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null "
                         "--realtime --guide '%s'", bin(), M, p, p), 0);
    cr_assert(strstr(out, "guide frames must be [2, "), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null "
                         "--guide-k 5", bin(), M, p), 0);
    cr_assert(strstr(out, "--guide-k takes --guide"), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s sim garment --model '%s' --garment skirt --poses '%s' --out /dev/null "
                         "--betas 99", bin(), M, p), 0);
    cr_assert(strstr(out, "beta"), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s metrics --model '%s' --garment skirt --poses '%s' --verts '%s'", bin(), M, p,
                         p), 0);
    cr_assert(strstr(out, "must be float32 [2, "), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s metrics --model '%s' --garment cape --poses '%s' --verts '%s'", bin(), M, p,
                         p), 0);
    cr_assert(strstr(out, "'cape'"), "%s", out);
    cr_assert_neq(tu_run(out, sizeof out, "%s metrics --model '%s' --garment skirt --poses '%s'", bin(), M, p), 0);
    cr_assert(strstr(out, "usage"), "%s", out);
}

/* ---- the streaming form: a rig shared by runs fed a pose at a time ---- */

#define RFRAMES 12

static float *walk_poses(int T)
{
    float *P = malloc(sizeof(float) * 75 * T);
    drape_garment_walk(P, T, 30);
    return P;
}

static int same_floats(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof *a); }

/* drape_garment_simulate is a loop over a run: the same frames to the bit,
 * with the teacher's settings and the served ones alike */
Test(sim_garment, a_run_fed_pose_by_pose_is_the_simulation)
{
    drape_model *m = tu_load("small_random");
    int gi = drape_model_garment(m, "skirt"), V = m->garments[gi].V;
    float betas[2] = {0.5f, -0.5f}, *P = walk_poses(RFRAMES);
    float *want = malloc(sizeof(float) * 3 * V * RFRAMES), *got = malloc(sizeof(float) * 3 * V * RFRAMES);
    drape_error e = {0};
    drape_garment_sim_params sets[2] = {drape_garment_sim_defaults(), drape_garment_sim_realtime()};
    sets[0].substeps = 3, sets[0].settle = 10, sets[1].settle = 10;
    for (int k = 0; k < 2; k++) {
        drape_garment_sim_params p = sets[k];
        cr_assert_eq(drape_garment_simulate(m, gi, betas, 2, P, RFRAMES, &p, want, NULL, &e), 0, "%s", e.msg);
        drape_garment_rig *r;
        drape_garment_run *s;
        cr_assert_eq(drape_garment_rig_create(&r, m, gi, betas, 2, &p, p.substeps, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_run_create(&s, r, &e), 0, "%s", e.msg);
        for (int t = 0; t < RFRAMES; t++) {
            int reset = -1;
            cr_assert_eq(drape_garment_run_next(s, P + 75 * t, got + (size_t)3 * V * t, &reset, &e), 0, "%s", e.msg);
            cr_assert_eq(reset, 0);
        }
        cr_assert(same_floats(want, got, (size_t)3 * V * RFRAMES), "settings %d: the run differs from the simulation", k);
        drape_garment_run_free(s);
        drape_garment_rig_free(r);
    }
    free(want);
    free(got);
    free(P);
    drape_model_free(m);
}

/* adapt (`drape sim garment --adapt`, a diagnostic): on the served settings
 * with adapt 16 at 2 cm, a frame whose body moves more than 2 cm a substep
 * at 4 takes 8 or 16, and 4 again when it is still. A frame taken at 8 is
 * the frame of a rig made for 8 (adapt off) from the same state, to the
 * bit: only the step changes, not the cloth. The served settings keep it
 * off (docs/training-log.md, "Finer substeps in the served physics"). */
Test(sim_garment, a_fast_frame_takes_more_substeps_and_the_same_cloth)
{
    drape_model *m = tu_load("small_random");
    int gi = drape_model_garment(m, "skirt"), V = m->garments[gi].V;
    size_t n = (size_t)3 * V;
    float P[4][75], *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    drape_garment_walk(P[0], 1, 30);
    memcpy(P[1], P[0], sizeof P[0]);
    P[1][72] += 0.12f; /* the whole body 12 cm: 3 cm a substep at 4, 1.5 at 8 */
    memcpy(P[2], P[1], sizeof P[0]);
    memcpy(P[3], P[2], sizeof P[0]);
    P[3][72] += 0.4f; /* 40 cm: more than 16 would need, 16 at most */
    drape_garment_sim_params p4 = drape_garment_sim_realtime(), pa = p4;
    cr_assert_eq(p4.adapt, 0, "the served settings take a fixed count");
    pa.adapt = 16, pa.max_disp = 0.02;
    pa.settle = p4.settle = 0;
    drape_error e = {0};
    drape_garment_rig *ra, *r8, *r4;
    drape_garment_run *sa, *s8;
    cr_assert_eq(drape_garment_rig_create(&ra, m, gi, NULL, 0, &pa, 4, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_rig_create(&r8, m, gi, NULL, 0, &p4, 8, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_rig_create(&r4, m, gi, NULL, 0, &p4, 4, &e), 0, "%s", e.msg);
    /* one factor each for 4, 8 and 16; two made for one count alike */
    cr_assert_eq(drape_garment_rig_bytes(r8), drape_garment_rig_bytes(r4));
    cr_assert_gt(drape_garment_rig_bytes(ra), drape_garment_rig_bytes(r4), "the rig counts its three factors");
    cr_assert_eq(drape_garment_run_create(&sa, ra, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_create(&s8, r8, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_next(sa, P[0], a, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_next(s8, P[0], b, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_next(sa, P[1], a, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_next(s8, P[1], b, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_frame_substeps(sa), 8);
    cr_assert(same_floats(a, b, n), "the frame taken at 8 differs from the 8-substep rig's");
    cr_assert_eq(drape_garment_run_next(sa, P[2], a, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_frame_substeps(sa), 4, "a still frame takes the run's own 4");
    cr_assert_eq(drape_garment_run_next(sa, P[3], a, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_frame_substeps(sa), 16);
    cr_assert_eq(drape_garment_run_substeps(sa), 4);
    for (size_t i = 0; i < n; i++) cr_assert(isfinite(a[i]));
    drape_garment_run_free(sa), drape_garment_run_free(s8);
    drape_garment_rig_free(ra), drape_garment_rig_free(r8), drape_garment_rig_free(r4);
    free(a), free(b);
    drape_model_free(m);
}

/* The teacher's collider guesses each vertex's nearest triangle from its
 * last one (sim/collide.c, mesh_distance); its frames must be the plain
 * search's to the bit, ties between triangles included: the default
 * model's T-shirt under its teacher's settings (the vertex margin on,
 * substeps of at most 1 cm), hundreds of vertices on the body. */
Test(sim_garment, the_guessed_search_simulates_as_the_plain_one)
{
    drape_model *m;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&m, "models/default.safetensors", &e), 0, "%s", e.msg);
    int gi = drape_model_garment(m, "tshirt"), T = 30;
    cr_assert_geq(gi, 0);
    int V = m->garments[gi].V;
    float *P = walk_poses(T), *out[2];
    drape_garment_sim_stats st[2];
    for (int k = 0; k < 2; k++) {
        drape_garment_sim_params p = drape_garment_sim_defaults();
        p.settle = 20, p.iters = 8, p.max_disp = 0.01, p.vertex_margin = 0.003, p.plain_search = k;
        out[k] = malloc(sizeof(float) * 3 * V * T);
        cr_assert_eq(drape_garment_simulate(m, gi, NULL, 0, P, T, &p, out[k], &st[k], &e), 0, "%s", e.msg);
    }
    cr_log_info("%.1f contacts per frame", st[0].contacts);
    cr_assert_gt(st[0].contacts, 100, "too few contacts for the test to mean anything");
    cr_assert(!memcmp(out[0], out[1], sizeof(float) * 3 * V * T), "the guessed search's frames differ from the plain one's");
    free(out[0]), free(out[1]), free(P);
    drape_model_free(m);
}

/* Two runs over one rig are independent (each its own state, the factor
 * shared), and a run started again is a new run. */
Test(sim_garment, runs_share_a_rig_and_start_again_as_new)
{
    drape_model *m = tu_load("small_random");
    int gi = drape_model_garment(m, "skirt"), V = m->garments[gi].V;
    float betas[1] = {1.0f}, *P = walk_poses(RFRAMES);
    size_t n = (size_t)3 * V;
    float *a = malloc(sizeof(float) * n * RFRAMES), *b = malloc(sizeof(float) * n * RFRAMES), *c = malloc(sizeof(float) * n);
    drape_error e = {0};
    drape_garment_sim_params p = drape_garment_sim_realtime();
    p.settle = 10;
    drape_garment_rig *r;
    drape_garment_run *s1, *s2;
    cr_assert_eq(drape_garment_rig_create(&r, m, gi, betas, 1, &p, p.substeps, &e), 0, "%s", e.msg);
    cr_assert_gt(drape_garment_rig_bytes(r), (size_t)V * 3 * sizeof(float), "the rig counts its factor");
    cr_assert_eq(drape_garment_run_create(&s1, r, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_create(&s2, r, &e), 0, "%s", e.msg);
    /* interleaved: s2 lags s1 by three frames */
    for (int t = 0; t < RFRAMES + 3; t++) {
        if (t < RFRAMES) cr_assert_eq(drape_garment_run_next(s1, P + 75 * t, a + n * t, NULL, &e), 0, "%s", e.msg);
        if (t >= 3) cr_assert_eq(drape_garment_run_next(s2, P + 75 * (t - 3), b + n * (t - 3), NULL, &e), 0, "%s", e.msg);
    }
    cr_assert(same_floats(a, b, n * RFRAMES), "two runs over one rig differ");
    /* s1 starts again at frame 5's pose: from there it is a run opened there */
    cr_assert_eq(drape_garment_run_first(s1, P + 75 * 5, c, &e), 0, "%s", e.msg);
    drape_garment_run *s3;
    cr_assert_eq(drape_garment_run_create(&s3, r, &e), 0, "%s", e.msg);
    float *d = malloc(sizeof(float) * n);
    cr_assert_eq(drape_garment_run_next(s3, P + 75 * 5, d, NULL, &e), 0, "%s", e.msg);
    cr_assert(same_floats(c, d, n), "a restarted run differs from a new one at its first frame");
    for (int t = 6; t < RFRAMES; t++) {
        cr_assert_eq(drape_garment_run_next(s1, P + 75 * t, c, NULL, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_run_next(s3, P + 75 * t, d, NULL, &e), 0, "%s", e.msg);
        cr_assert(same_floats(c, d, n), "frame %d: a restarted run differs from a new one", t);
    }
    drape_garment_run_free(s1);
    drape_garment_run_free(s2);
    drape_garment_run_free(s3);
    drape_garment_rig_free(r);
    free(a);
    free(b);
    free(c);
    free(d);
    free(P);
    drape_model_free(m);
}

/* A state that ran away (a test's kick: every vertex at 1e12 m/s) strays
 * past max_stray in the next frame: the run says so and starts again at
 * that pose, the frame being a new run's first there. With max_stray 0 it
 * is not checked and the garment flies off (or its state is no longer
 * finite). */
Test(sim_garment, a_diverged_run_starts_again_from_skinning)
{
    drape_model *m = tu_load("small_random");
    int gi = drape_model_garment(m, "skirt"), V = m->garments[gi].V;
    float *P = walk_poses(4);
    size_t n = (size_t)3 * V;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    drape_error e = {0};
    drape_garment_sim_params p = drape_garment_sim_realtime();
    p.settle = 5;
    cr_assert_gt(p.max_stray, 0);
    for (int checked = 1; checked >= 0; checked--) {
        if (!checked) p.max_stray = 0;
        drape_garment_rig *r;
        drape_garment_run *s, *fresh;
        cr_assert_eq(drape_garment_rig_create(&r, m, gi, NULL, 0, &p, p.substeps, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_run_create(&s, r, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_run_create(&fresh, r, &e), 0, "%s", e.msg);
        int reset = -1;
        cr_assert_eq(drape_garment_run_next(s, P, x, &reset, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_run_next(s, P + 75, x, &reset, &e), 0, "%s", e.msg);
        cr_assert_eq(reset, 0, "a calm frame is no divergence");
        cr_assert_eq(drape_garment_run_test_kick(s, (double[]){0, 1e12, 0}, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_run_next(s, P + 150, x, &reset, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_garment_run_first(fresh, P + 150, y, &e), 0, "%s", e.msg);
        if (checked) {
            cr_assert_eq(reset, 1, "the kicked run was not reset");
            cr_assert(same_floats(x, y, n), "the reset frame is not a new run's first frame at that pose");
        } else {
            cr_assert_eq(reset, 0);
            int flung = 0; /* far off, or not even finite */
            double far = 0;
            for (size_t i = 0; i < n; i++) flung |= !(fabs(x[i] - y[i]) < 1.0), far = fmax(far, fabs(x[i] - y[i]));
            cr_log_info("unchecked: %.3g m off", far);
            cr_assert(flung, "the kick should have flung the garment");
        }
        drape_garment_run_free(s);
        drape_garment_run_free(fresh);
        drape_garment_rig_free(r);
    }
    free(x);
    free(y);
    free(P);
    drape_model_free(m);
}

/* The served dress on a real pirouette (data/motions, CMU 05_06, its first
 * 45 frames): the hem, lagging up to half a turn behind the spin, stands
 * more than 1 m from its skinned place (as the teacher's does: 1.0 m). That
 * is cloth swinging, not a run gone astray, and the run goes on; a fixed
 * 1 m bound threw it back to skinning at frame 37, a 44-cm jump. The bound
 * is twice the garment's size (sim/garment.c, rig_stray), which a kicked
 * run still passes (the test above). */
Test(sim_garment, a_spinning_dress_that_swings_out_is_not_reset, .timeout = 120)
{
    enum { T = 45 };
    drape_model *m = tu_load("models/default.safetensors");
    int gi = drape_model_garment(m, "dress"), V = m->garments[gi].V;
    drape_npy clip;
    drape_error e = {0};
    cr_assert_eq(drape_npy_read(&clip, "data/motions/cmu_05_06_pirouettes.npy", &e), 0, "%s", e.msg);
    cr_assert(clip.ndim == 2 && clip.shape[0] >= T && clip.shape[1] == 75);
    size_t n = (size_t)3 * V;
    float *x = malloc(sizeof(float) * n * T), *lbs = malloc(sizeof(float) * n * T), *rest = malloc(sizeof(float) * n);
    cr_assert_eq(drape_garment_lbs(m, gi, NULL, 0, clip.data, T, rest, lbs, &e), 0, "%s", e.msg);
    drape_garment_sim_params p = drape_garment_sim_realtime();
    drape_garment_rig *r;
    drape_garment_run *s;
    cr_assert_eq(drape_garment_rig_create(&r, m, gi, NULL, 0, &p, p.substeps, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_create(&s, r, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_first(s, clip.data, x, &e), 0, "%s", e.msg);
    double far = 0;
    int far_at = 0;
    for (int t = 1; t < T; t++) {
        int reset = -1;
        float *xt = x + n * t;
        cr_assert_eq(drape_garment_run_next(s, clip.data + 75 * t, xt, &reset, &e), 0, "%s", e.msg);
        cr_assert_eq(reset, 0, "frame %d: the swinging dress was reset", t);
        for (size_t i = 0; i < n; i += 3) {
            const float *a = xt + i, *b = lbs + n * t + i;
            cr_assert(isfinite(a[0] + a[1] + a[2]), "frame %d: not finite", t);
            double d = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
            if (d > far) far = d, far_at = t;
        }
    }
    cr_log_info("the dress's farthest vertex from its skinned place: %.3f m at frame %d", far, far_at);
    cr_assert_gt(far, 1.0, "the spin should swing the hem past the old 1-m bound (%.3f m)", far);
    cr_assert_lt(far, 2.0, "and no farther than a dress can swing (%.3f m)", far);
    drape_garment_run_free(s);
    drape_garment_rig_free(r);
    free(x);
    free(lbs);
    free(rest);
    drape_npy_free(&clip);
    drape_model_free(m);
}

/* A catch-up restart (drape_garment_run_restart) with the rig's settle is
 * drape_garment_run_first; with fewer steps it is a run whose rig settles
 * that many; with 0 it is the skinned garment at that pose, attached. */
Test(sim_garment, a_restart_settles_the_steps_it_is_given)
{
    drape_model *m = tu_load("small_random");
    int gi = drape_model_garment(m, "skirt"), V = m->garments[gi].V;
    float *P = walk_poses(3);
    size_t n = (size_t)3 * V;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    drape_error e = {0};
    drape_garment_sim_params p = drape_garment_sim_realtime();
    p.settle = 12;
    drape_garment_rig *r, *r4;
    drape_garment_run *s, *s4;
    cr_assert_eq(drape_garment_rig_create(&r, m, gi, NULL, 0, &p, p.substeps, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_create(&s, r, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_substeps(s), p.substeps);
    cr_assert_eq(drape_garment_run_next(s, P, x, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_restart(s, P + 75, p.settle, x, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_first(s, P + 75, y, &e), 0, "%s", e.msg);
    cr_assert(same_floats(x, y, n), "a restart with the rig's settle is not run_first");
    p.settle = 4;
    cr_assert_eq(drape_garment_rig_create(&r4, m, gi, NULL, 0, &p, p.substeps, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_create(&s4, r4, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_restart(s, P + 150, 4, x, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_first(s4, P + 150, y, &e), 0, "%s", e.msg);
    cr_assert(same_floats(x, y, n), "a 4-step restart is not a 4-step settle");
    /* the next frame goes on from the short settle as the 4-step run does */
    cr_assert_eq(drape_garment_run_next(s, P + 75, x, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_next(s4, P + 75, y, NULL, &e), 0, "%s", e.msg);
    cr_assert(same_floats(x, y, n), "the frame after a short restart differs");
    /* 0 steps: the garment as skinned at that pose, moved by nothing */
    cr_assert_eq(drape_garment_run_restart(s, P + 150, 0, x, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_restart(s4, P + 150, 12, y, &e), 0, "%s", e.msg);
    double moved = 0;
    for (size_t i = 0; i < n; i++) moved = fmax(moved, fabs(x[i] - y[i]));
    cr_assert_gt(moved, 1e-6, "settling 12 steps moved nothing from the 0-step restart");
    drape_garment_run_free(s);
    drape_garment_run_free(s4);
    drape_garment_rig_free(r);
    drape_garment_rig_free(r4);
    free(x);
    free(y);
    free(P);
    drape_model_free(m);
}

/* mean distance between two [n,3] frames */
static double mean_dist(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += sqrt((double)(a[3 * i] - b[3 * i]) * (a[3 * i] - b[3 * i]) +
                  (double)(a[3 * i + 1] - b[3 * i + 1]) * (a[3 * i + 1] - b[3 * i + 1]) +
                  (double)(a[3 * i + 2] - b[3 * i + 2]) * (a[3 * i + 2] - b[3 * i + 2]));
    return s / (double)n;
}

/* A guided run (params.guide: `drape sim garment --guide`) pulls the cloth
 * towards its guide frames; the served settings' pull (to the skinned
 * garment when no frames are given) is the same as a guide of the skinned
 * frames, to the bit: guided by skinning lifted 4 cm at a stiff
 * 2,000/s², the skirt keeps within half the plain run's distance of that
 * guide (21 against 62 mm when written: the body, wider higher up, holds
 * the cloth off a guide that lies partly inside it); a run fed pose by pose with its guide frames is the guided
 * simulation to the bit; a rig without a guide refuses a guide frame. */
Test(sim_garment, a_guided_run_follows_its_guide)
{
    drape_model *m = tu_load("small_random");
    int gi = drape_model_garment(m, "skirt"), V = m->garments[gi].V;
    size_t n = (size_t)3 * V * RFRAMES;
    float betas[2] = {0.5f, -0.5f}, *P = walk_poses(RFRAMES);
    float *G = malloc(sizeof(float) * n), *plain = malloc(sizeof(float) * n), *guided = malloc(sizeof(float) * n);
    float *rest = malloc(sizeof(float) * 3 * V), *got = malloc(sizeof(float) * n);
    drape_error e = {0};
    cr_assert_eq(drape_garment_lbs(m, gi, betas, 2, P, RFRAMES, rest, G, &e), 0, "%s", e.msg);
    /* the served settings' pull is a guide to the skinned garment: the same frames to the bit */
    drape_garment_sim_params p = drape_garment_sim_realtime();
    p.settle = 10;
    cr_assert_gt(p.guide, 0);
    cr_assert_eq(drape_garment_simulate(m, gi, betas, 2, P, RFRAMES, &p, plain, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_simulate_guided(m, gi, betas, 2, P, RFRAMES, G, &p, guided, NULL, &e), 0, "%s", e.msg);
    cr_assert(same_floats(plain, guided, n), "the served pull is not a guide to the skinned garment");
    for (size_t i = 1; i < n; i += 3) G[i] += 0.04f;
    p.guide = 0; /* plain: no pull at all */
    cr_assert_eq(drape_garment_simulate(m, gi, betas, 2, P, RFRAMES, &p, plain, NULL, &e), 0, "%s", e.msg);
    p.guide = 2000;
    cr_assert_eq(drape_garment_simulate_guided(m, gi, betas, 2, P, RFRAMES, G, &p, guided, NULL, &e), 0, "%s", e.msg);
    size_t last = (size_t)3 * V * (RFRAMES - 1);
    double d_plain = mean_dist(plain + last, G + last, V), d_guided = mean_dist(guided + last, G + last, V);
    cr_log_info("last frame from the guide: plain %.1f mm, guided %.1f mm", 1e3 * d_plain, 1e3 * d_guided);
    cr_assert_gt(d_plain, 0.03, "the plain run should hang away from a guide lifted 4 cm (%g m)", d_plain);
    cr_assert_lt(d_guided, 0.5 * d_plain, "guided %g m from the guide, plain %g m", d_guided, d_plain);
    drape_garment_rig *r, *r0;
    drape_garment_run *s, *s0;
    cr_assert_eq(drape_garment_rig_create(&r, m, gi, betas, 2, &p, p.substeps, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_create(&s, r, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_first_guided(s, P, G, got, &e), 0, "%s", e.msg);
    for (int t = 1; t < RFRAMES; t++) {
        size_t o = (size_t)3 * V * t;
        cr_assert_eq(drape_garment_run_next_guided(s, P + 75 * t, G + o, got + o, NULL, &e), 0, "%s", e.msg);
    }
    cr_assert(same_floats(guided, got, n), "the guided run differs from the guided simulation");
    p.guide = 0;
    cr_assert_eq(drape_garment_rig_create(&r0, m, gi, betas, 2, &p, p.substeps, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_create(&s0, r0, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_garment_run_first_guided(s0, P, G, got, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "without one"), "%s", e.msg);
    drape_garment_run_free(s0), drape_garment_rig_free(r0);
    drape_garment_run_free(s), drape_garment_rig_free(r);
    free(G), free(plain), free(guided), free(rest), free(got), free(P);
    drape_model_free(m);
}

/* A garment's own pull in the physics mode (the config's "physics"):
 * drape_garment_sim_served gives it that garment and not one without (the
 * dress), and it runs:
 * the shipped T-shirt's frames are the realtime settings' with the guide at
 * the bundle's 640/s², to the bit, and nearer its skinned place than at the
 * served 10/s². */
Test(sim_garment, a_garment_with_its_own_pull_is_served_with_it)
{
    drape_model *m = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&m, "models/default.safetensors", &e), 0, "%s", e.msg);
    int ts = drape_model_garment(m, "tshirt"), sk = drape_model_garment(m, "dress");
    cr_assert(ts >= 0 && sk >= 0 && m->cfg.physics[ts].has_pull && !m->cfg.physics[sk].has_pull);
    drape_garment_sim_params rt = drape_garment_sim_realtime(), served = drape_garment_sim_served(m, ts);
    cr_assert_eq(served.guide, m->cfg.physics[ts].pull);
    cr_assert_neq(served.guide, rt.guide);
    cr_assert_eq(drape_garment_sim_served(m, sk).guide, rt.guide, "a garment without its own pull takes the served one");
    enum { T = 20 };
    int V = m->garments[ts].V;
    size_t n = (size_t)3 * V * T, last = (size_t)3 * V * (T - 1);
    float betas[2] = {0.5f, -0.5f}, *P = walk_poses(T), *lbs = malloc(sizeof(float) * n), *rest = malloc(sizeof(float) * 3 * V);
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n), *c = malloc(sizeof(float) * n);
    cr_assert_eq(drape_garment_lbs(m, ts, betas, 2, P, T, rest, lbs, &e), 0, "%s", e.msg);
    /* the rest of the settings are realtime's: the frames at its pull are the same to the bit */
    drape_garment_sim_params p = drape_garment_sim_served(m, ts), q = rt;
    p.settle = q.settle = 10;
    cr_assert_eq(drape_garment_simulate(m, ts, betas, 2, P, T, &p, a, NULL, &e), 0, "%s", e.msg);
    q.guide = 640;
    cr_assert_eq(drape_garment_simulate(m, ts, betas, 2, P, T, &q, b, NULL, &e), 0, "%s", e.msg);
    cr_assert(same_floats(a, b, n), "the served T-shirt is not the realtime settings at its pull");
    q.guide = rt.guide;
    cr_assert_eq(drape_garment_simulate(m, ts, betas, 2, P, T, &q, c, NULL, &e), 0, "%s", e.msg);
    double d_own = mean_dist(a + last, lbs + last, V), d_served = mean_dist(c + last, lbs + last, V);
    cr_log_info("T-shirt, last frame from its skinned place: its pull %.2f mm, the served one %.2f mm", 1e3 * d_own,
                1e3 * d_served);
    cr_assert_lt(d_own, d_served, "its own pull %g m from skinning, the served one %g m", d_own, d_served);
    free(P), free(lbs), free(rest), free(a), free(b), free(c);
    drape_model_free(m);
}

/* `drape metrics` poses the body a chunk of frames at a time
 * (DRAPE_TOOL_BODY_CHUNK): over a 100-frame walk, a skirt drawn in through
 * the body has the collision % of its first 64 frames and its last 36
 * judged apart, frame-weighted, to the printed digits: each frame met its
 * own body (the last 36 frames against the bodies of the joint angles half
 * a step earlier, at their own places, read otherwise: the test can tell). */
Test(sim_garment, metrics_of_a_long_sequence_meet_each_frames_body)
{
    enum { N = 100, A = 64 };
    drape_model *m = tu_load("small_random");
    int gi = drape_model_garment(m, "skirt"), V = m->garments[gi].V;
    size_t fv = (size_t)3 * V;
    float betas[2] = {0.5f, -0.5f}, *P = walk_poses(N), *X = malloc(sizeof(float) * fv * N), *rest = malloc(sizeof(float) * fv);
    drape_error e = {0};
    cr_assert_eq(drape_garment_lbs(m, gi, betas, 2, P, N, rest, X, &e), 0, "%s", e.msg);
    for (int t = 0; t < N; t++) /* drawn in by 15% towards the root, across x and z */
        for (int i = 0; i < V; i++) {
            float *x = X + t * fv + 3 * (size_t)i;
            x[0] = P[75 * t + 72] + 0.85f * (x[0] - P[75 * t + 72]), x[2] = P[75 * t + 74] + 0.85f * (x[2] - P[75 * t + 74]);
        }
    const char *names[4][2] = {{"lp_all.npy", "lx_all.npy"}, {"lp_a.npy", "lx_a.npy"}, {"lp_b.npy", "lx_b.npy"},
                               {"lp_w.npy", "lx_w.npy"}};
    int from[4] = {0, 0, A, A}, len[4] = {N, A, N - A, N - A};
    float *W = malloc(sizeof(float) * 75 * N); /* [0, N − A): frames A.. with the angles of 15 frames before */
    for (int t = 0; t < N - A; t++) {
        memcpy(W + 75 * t, P + 75 * (A + t - 15), 72 * sizeof *W);
        memcpy(W + 75 * t + 72, P + 75 * (A + t) + 72, 3 * sizeof *W);
    }
    double coll[4];
    for (int k = 0; k < 4; k++) {
        char pp[300], xp[300], out[4096];
        snprintf(pp, sizeof pp, "%s", tu_tmp(names[k][0]));
        snprintf(xp, sizeof xp, "%s", tu_tmp(names[k][1]));
        cr_assert_eq(drape_npy_write(pp, k == 3 ? W : P + 75 * from[k], 2, (int64_t[]){len[k], 75}, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_npy_write(xp, X + fv * from[k], 3, (int64_t[]){len[k], V, 3}, &e), 0, "%s", e.msg);
        cr_assert_eq(tu_run(out, sizeof out, "%s metrics --model '%s' --garment skirt --betas 0.5,-0.5 --poses '%s' "
                            "--verts '%s'", bin(), tu_bundle("small_random"), pp, xp), 0, "%s", out);
        coll[k] = json_num(out, "\"collision_pct\"");
    }
    cr_log_info("collision %% whole %.6f, first %d frames %.6f, last %d %.6f (against other bodies %.6f)", coll[0], A,
                coll[1], N - A, coll[2], coll[3]);
    cr_assert_gt(coll[1], 0.1, "the drawn-in skirt should be inside the body in places");
    cr_assert(fabs(coll[3] - coll[2]) > 1e-3, "against other frames' bodies the last part should read otherwise "
              "(%.6f and %.6f), or the test cannot tell", coll[3], coll[2]);
    double want = (A * coll[1] + (N - A) * coll[2]) / N;
    cr_assert(fabs(coll[0] - want) < 1e-6, "collision %% %.12g over the whole, %.12g frame-weighted from its parts",
              coll[0], want);
    free(P), free(X), free(rest), free(W);
    drape_model_free(m);
}

/* The collision % reads each vertex's nearest body vertex from the last
 * frame's answer: a garment that jumps metres away and back must read as a
 * search from nothing would. A 5 × 5 sheet across an octahedron (vertex
 * normals along the axes): the nine vertices with |x|, |y| ≤ 0.75 are
 * inside, the rest (|x| or |y| = 1.5) outside; moved 3 m and 30 m away,
 * none is. */
Test(sim_garment, metrics_find_the_body_after_the_garment_jumps_away)
{
    double X[75];
    int32_t T[96];
    grid(X, T, 5, 1.0);
    float rest[75], f[75];
    for (int i = 0; i < 25; i++)
        rest[3 * i] = -1.5f + 0.75f * (float)(i % 5), rest[3 * i + 1] = -1.5f + 0.75f * (float)(i / 5), rest[3 * i + 2] = 0.05f;
    const float body[18] = {1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1};
    const int32_t bf[24] = {0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4, 2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5}; /* outward */
    drape_metrics *mx;
    drape_error e = {0};
    drape_metrics_material mat = drape_metrics_default_material(30);
    cr_assert_eq(drape_metrics_create(&mx, rest, 25, T, 32, bf, 8, 6, &mat, &e), 0, "%s", e.msg);
    const float shift[4][3] = {{0, 0, 0}, {3, 0, 0}, {0, -30, 0}, {0, 0, 0}};
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 75; i++) f[i] = rest[i] + shift[t][i % 3];
        cr_assert_eq(drape_metrics_add(mx, f, body, NULL, &e), 0, "%s", e.msg);
    }
    drape_metrics_summary s;
    drape_metrics_get(mx, &s);
    cr_assert_float_eq(s.collision_pct, (36.0 + 0 + 0 + 36.0) / 4, 1e-9, "collision %% %g", s.collision_pct);
    drape_metrics_free(mx);
}
