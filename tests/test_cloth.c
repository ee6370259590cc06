/* The fast mass-spring engine (sim/cloth.c) and `drape sim cloth`. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/cloth.h"
#include "../core/geom.h"
#include "../sim/obj.h"
#include "util.h"

/* The notebook's cloth (drape_grid_mesh), allocated; top corners are
 * (ny−1)·nx and ny·nx−1. */
static void grid(double **X, int32_t **T, int *n, int *F, int nx, int ny, double w, double h)
{
    *n = nx * ny;
    *F = 2 * (nx - 1) * (ny - 1);
    *X = malloc(sizeof(double) * 3 * *n);
    *T = malloc(sizeof(int32_t) * 3 * *F);
    drape_grid_mesh(*X, *T, nx, ny, w, h);
}

static const drape_cloth_params NOTEBOOK = {.dt = 1.0 / 30, .gravity = 9.8, .iters = 8, .ym = 80, .mass = DRAPE_MASS_UNIT};

/* a pinned notebook grid (nx × nx) and its cloth */
typedef struct {
    double *X;
    int32_t *T;
    int n, F;
    drape_cloth *c;
} hanging;

static hanging hang(int nx, const drape_cloth_params *p)
{
    hanging h;
    grid(&h.X, &h.T, &h.n, &h.F, nx, nx, 2, 2);
    int32_t pins[2] = {(nx - 1) * nx, nx * nx - 1};
    drape_error e = {0};
    cr_assert_eq(drape_cloth_create(&h.c, h.X, h.n, h.T, h.F, pins, 2, p, &e), 0, "%s", e.msg);
    return h;
}

static void unhang(hanging *h)
{
    drape_cloth_free(h->c);
    free(h->X);
    free(h->T);
}

Test(cloth, notebook_grid_has_its_springs)
{
    hanging h = hang(25, &NOTEBOOK);
    drape_cloth *c = h.c;
    cr_assert_eq(drape_cloth_nodes(c), 625);
    cr_assert_eq(drape_cloth_springs(c), 1776); /* the notebook prints 625 nodes, 1776 springs */
    unhang(&h);
}

/* Block coordinate descent never increases the step's objective. */
Test(cloth, local_global_descends)
{
    drape_cloth_params p = NOTEBOOK;
    p.iters = 12;
    hanging h = hang(15, &p);
    drape_cloth *c = h.c;
    int n = h.n;
    drape_error e = {0};
    double en[12], *x0 = malloc(sizeof(double) * 3 * n);
    for (int s = 0; s < 20; s++) {
        memcpy(x0, drape_cloth_positions(c), sizeof(double) * 3 * n);
        cr_assert_eq(drape_cloth_step_traced(c, en, &e), 0, "%s", e.msg);
        double before = drape_cloth_energy(c, x0);
        cr_assert_leq(en[0], before * (1 + 1e-12) + 1e-12, "step %d: first iteration raised the energy", s);
        for (int i = 1; i < 12; i++)
            cr_assert_leq(en[i], en[i - 1] * (1 + 1e-12) + 1e-12, "step %d iteration %d: %.17g > %.17g", s, i, en[i],
                          en[i - 1]);
    }
    free(x0);
    unhang(&h);
}

/* A vertex with more springs than the right-hand side's fixed-width lists
 * take (a fan of 24 triangles: 24 springs on its hub) goes
 * through the general lists, and the steps still descend and settle. */
Test(cloth, high_degree_vertex_descends)
{
    enum { RIM = 24 };
    double X[3 * (RIM + 1)] = {0};
    int32_t T[3 * RIM], pins[2] = {1, 1 + RIM / 2};
    for (int i = 0; i < RIM; i++) {
        double a = 2 * M_PI * i / RIM;
        X[3 * (i + 1)] = cos(a), X[3 * (i + 1) + 2] = sin(a);
        T[3 * i] = 0, T[3 * i + 1] = 1 + i, T[3 * i + 2] = 1 + (i + 1) % RIM;
    }
    drape_cloth_params p = NOTEBOOK;
    p.iters = 10, p.bend = 5;
    drape_cloth *c;
    drape_error e = {0};
    cr_assert_eq(drape_cloth_create(&c, X, RIM + 1, T, RIM, pins, 2, &p, &e), 0, "%s", e.msg);
    double en[10], x0[3 * (RIM + 1)];
    for (int s = 0; s < 1500; s++) {
        memcpy(x0, drape_cloth_positions(c), sizeof x0);
        cr_assert_eq(drape_cloth_step_traced(c, en, &e), 0, "%s", e.msg);
        cr_assert_leq(en[0], drape_cloth_energy(c, x0) * (1 + 1e-12) + 1e-12, "step %d raised the energy", s);
        for (int i = 1; i < 10; i++) cr_assert_leq(en[i], en[i - 1] * (1 + 1e-12) + 1e-12, "step %d iteration %d", s, i);
    }
    const double *x = drape_cloth_positions(c), *v = drape_cloth_velocities(c);
    double vmax = 0;
    for (int i = 0; i < 3 * (RIM + 1); i++) vmax = fmax(vmax, fabs(v[i]));
    cr_assert_lt(vmax, 1e-3, "still moving at %g m/s after 50 s", vmax);
    cr_assert_lt(x[1], -0.1, "the hub should sag below the pins (y %g)", x[1]);
    drape_cloth_free(c);
}

/* Hanging cloth: pins never move, the motion dies out, and the whole run
 * used one factorization. */
Test(cloth, hanging_cloth_settles)
{
    drape_cloth_params p = NOTEBOOK;
    hanging h = hang(11, &p);
    drape_cloth *c = h.c;
    int n = h.n;
    drape_error e = {0};
    int pins[2] = {110, 120};
    double vmax = 0;
    for (int s = 0; s < 1500; s++) {
        cr_assert_eq(drape_cloth_step(c, &e), 0, "%s", e.msg);
        const double *x = drape_cloth_positions(c);
        for (int k = 0; k < 2; k++)
            for (int d = 0; d < 3; d++) cr_assert_eq(x[3 * pins[k] + d], h.X[3 * pins[k] + d], "pin moved");
    }
    const double *v = drape_cloth_velocities(c), *x = drape_cloth_positions(c);
    for (int i = 0; i < 3 * n; i++) vmax = fmax(vmax, fabs(v[i]));
    cr_assert_lt(vmax, 1e-3, "still moving at %g m/s after 50 s", vmax);
    double ymin = 1e9;
    for (int i = 0; i < n; i++) ymin = fmin(ymin, x[3 * i + 1]);
    cr_assert_lt(ymin, -1.0, "the cloth should hang below its rest (lowest y %g)", ymin);
    cr_assert_eq(drape_cloth_factorizations(c), 1);
    unhang(&h);
}

Test(cloth, large_time_steps_stay_finite)
{
    drape_cloth_params p = NOTEBOOK;
    p.dt = 1.0;
    p.ym = 1e5;
    hanging h = hang(9, &p);
    drape_cloth *c = h.c;
    int n = h.n;
    drape_error e = {0};
    for (int s = 0; s < 50; s++) cr_assert_eq(drape_cloth_step(c, &e), 0, "%s", e.msg);
    const double *x = drape_cloth_positions(c);
    for (int i = 0; i < 3 * n; i++) cr_assert(isfinite(x[i]) && fabs(x[i]) < 100, "x[%d] = %g", i, x[i]);
    unhang(&h);
}

/* A cloth whose state went non-finite is, after drape_cloth_reset, a new
 * cloth again: the solve's padding rows, which 0 × NaN once filled for
 * good, are cleared too (the physics mode's restart of a diverged avatar
 * relies on it). */
Test(cloth, reset_recovers_from_a_non_finite_state)
{
    drape_cloth_params p = NOTEBOOK;
    hanging h = hang(7, &p), fresh = hang(7, &p);
    drape_error e = {0};
    double *v = malloc(sizeof(double) * 3 * h.n);
    for (int i = 0; i < 3 * h.n; i++) v[i] = 1e308;
    cr_assert_eq(drape_cloth_set_state(h.c, h.X, v, &e), 0, "%s", e.msg);
    drape_cloth_step(h.c, &e); /* may fail: it is the state after that counts */
    int bad = 0;
    for (int i = 0; i < 3 * h.n; i++) bad += !isfinite(drape_cloth_positions(h.c)[i]);
    cr_assert_gt(bad, 0, "the test needs a state that went non-finite");
    drape_cloth_reset(h.c);
    for (int s = 0; s < 3; s++) {
        cr_assert_eq(drape_cloth_step(h.c, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_cloth_step(fresh.c, &e), 0, "%s", e.msg);
    }
    const double *x = drape_cloth_positions(h.c), *y = drape_cloth_positions(fresh.c);
    for (int i = 0; i < 3 * h.n; i++) cr_assert_eq(x[i], y[i], "x[%d] = %g after the reset, a new cloth's %g", i, x[i], y[i]);
    free(v);
    unhang(&h);
    unhang(&fresh);
}

Test(cloth, area_mass_is_density_times_area)
{
    /* a free-falling unpinned triangle: with any mass the fall is g t² */
    double X[9] = {0, 0, 0, 1, 0, 0, 0, 0, 1};
    int32_t T[3] = {0, 1, 2};
    drape_cloth_params p = NOTEBOOK;
    p.mass = DRAPE_MASS_AREA;
    p.density = 0.3;
    drape_cloth *c = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_cloth_create(&c, X, 3, T, 1, NULL, 0, &p, &e), 0, "%s", e.msg);
    for (int s = 0; s < 30; s++) cr_assert_eq(drape_cloth_step(c, &e), 0);
    const double *x = drape_cloth_positions(c);
    /* implicit Euler: y_n = −g h² n(n+1)/2 */
    double want = -9.8 / 900.0 * 30 * 31 / 2;
    for (int i = 0; i < 3; i++) cr_assert_float_eq(x[3 * i + 1], want, 1e-9, "%g vs %g", x[3 * i + 1], want);
    drape_cloth_free(c);
}

Test(cloth, bad_inputs_are_rejected)
{
    double X[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0};
    int32_t T[6] = {0, 1, 3, 0, 3, 2}, pins_bad[1] = {7};
    drape_cloth *c = (drape_cloth *)1;
    drape_error e = {0};
    cr_assert_eq(drape_cloth_create(&c, X, 4, T, 2, pins_bad, 1, &NOTEBOOK, &e), DRAPE_ERANGE);
    cr_assert_null(c);
    cr_assert(strstr(e.msg, "pin 7"), "%s", e.msg);
    double Xn[12];
    memcpy(Xn, X, sizeof X);
    Xn[4] = NAN;
    cr_assert_eq(drape_cloth_create(&c, Xn, 4, T, 2, NULL, 0, &NOTEBOOK, &e), DRAPE_ENONFINITE);
    int32_t Tdeg[3] = {0, 1, 1};
    cr_assert_eq(drape_cloth_create(&c, X, 4, Tdeg, 1, NULL, 0, &NOTEBOOK, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "degenerate"), "%s", e.msg);
    /* vertex 3 on vertex 0: the edge 0-3 has zero length (its triangle has no area) */
    double Xz[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
    int32_t Tz[6] = {0, 1, 2, 1, 0, 3};
    cr_assert_eq(drape_cloth_create(&c, Xz, 4, Tz, 2, NULL, 0, &NOTEBOOK, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "triangle 1"), "%s", e.msg);
    int32_t Tr[3] = {0, 1, 9};
    cr_assert_eq(drape_cloth_create(&c, X, 4, Tr, 1, NULL, 0, &NOTEBOOK, &e), DRAPE_ERANGE);
    drape_cloth_params bad = NOTEBOOK;
    bad.dt = -1;
    cr_assert_eq(drape_cloth_create(&c, X, 4, T, 2, NULL, 0, &bad, &e), DRAPE_EINVAL);
}

/* A guide (params.guide, 1/s²) pulls every free vertex towards its target:
 * a free cloth without gravity goes to targets moved 10 cm from its rest
 * (its springs at rest there); a hanging one held by a guide at its rest
 * sags about g/k, not the metre it falls without one; the steps descend on
 * the objective with the guide's term; a cloth made without a guide, or a
 * target that is not finite, is refused. */
Test(cloth, a_guide_holds_the_cloth_at_its_targets)
{
    drape_cloth_params p = NOTEBOOK;
    p.gravity = 0, p.guide = 100, p.iters = 10;
    double *X, *G;
    int32_t *T;
    int n, F;
    grid(&X, &T, &n, &F, 9, 9, 2, 2);
    G = malloc(sizeof(double) * 3 * n);
    for (int i = 0; i < 3 * n; i++) G[i] = X[i] + (i % 3 == 2 ? 0.1 : 0);
    drape_cloth *c;
    drape_error e = {0};
    cr_assert_eq(drape_cloth_create(&c, X, n, T, F, NULL, 0, &p, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_set_guide(c, G, &e), 0, "%s", e.msg);
    double en[10];
    for (int s = 0; s < 300; s++) {
        cr_assert_eq(drape_cloth_step_traced(c, en, &e), 0, "%s", e.msg);
        for (int i = 1; i < 10; i++) cr_assert_leq(en[i], en[i - 1] * (1 + 1e-12) + 1e-12, "step %d iteration %d", s, i);
    }
    double dmax = 0;
    const double *x = drape_cloth_positions(c);
    for (int i = 0; i < 3 * n; i++) dmax = fmax(dmax, fabs(x[i] - G[i]));
    cr_assert_lt(dmax, 1e-4, "the free cloth is %g m from its guide after 10 s", dmax);
    G[5] = NAN;
    cr_assert_eq(drape_cloth_set_guide(c, G, &e), DRAPE_ENONFINITE);
    cr_assert(strstr(e.msg, "guide of vertex 1"), "%s", e.msg);
    drape_cloth_free(c);
    /* hanging: pins at the top corners, the guide at rest (a new cloth's) */
    p = NOTEBOOK, p.guide = 400;
    hanging h = hang(9, &p);
    for (int s = 0; s < 600; s++) cr_assert_eq(drape_cloth_step(h.c, &e), 0, "%s", e.msg);
    double sag = 0;
    x = drape_cloth_positions(h.c);
    for (int i = 0; i < h.n; i++) sag = fmax(sag, h.X[3 * i + 1] - x[3 * i + 1]);
    cr_assert(sag > 0.5 * 9.8 / 400 && sag < 1.5 * 9.8 / 400, "sagged %g m under a guide of 400/s², g/k is %g", sag,
              9.8 / 400);
    unhang(&h);
    hanging u = hang(9, &NOTEBOOK);
    cr_assert_eq(drape_cloth_set_guide(u.c, G, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "without a guide"), "%s", e.msg);
    unhang(&u);
    free(X), free(T), free(G);
}

/* A cloth moved onto the same mesh's system at half the step steps as a
 * cloth made on that system from the same state does, to the bit; a system
 * of another mesh is refused and the cloth goes on as it was. */
Test(cloth, a_cloth_steps_over_another_system_of_its_mesh)
{
    drape_cloth_params p = NOTEBOOK, half = NOTEBOOK, other = NOTEBOOK;
    half.dt = p.dt / 2, half.damping = 0.01;
    double *X, *X2;
    int32_t *T, *T2, pins[2];
    int n, F, n2, F2;
    grid(&X, &T, &n, &F, 9, 9, 2, 2);
    grid(&X2, &T2, &n2, &F2, 8, 8, 2, 2);
    pins[0] = 8 * 9, pins[1] = 9 * 9 - 1;
    drape_cloth_system *sp, *sh, *so;
    drape_error e = {0};
    cr_assert_eq(drape_cloth_system_create(&sp, X, n, T, F, pins, 2, NULL, 0, &p, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_system_create(&sh, X, n, T, F, pins, 2, NULL, 0, &half, &e), 0, "%s", e.msg);
    int32_t pins2[2] = {7 * 8, 8 * 8 - 1};
    cr_assert_eq(drape_cloth_system_create(&so, X2, n2, T2, F2, pins2, 2, NULL, 0, &other, &e), 0, "%s", e.msg);
    drape_cloth *a, *b;
    cr_assert_eq(drape_cloth_create_on(&a, sp, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_create_on(&b, sh, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_use_system(a, so, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "not laid out"), "%s", e.msg);
    cr_assert_eq(drape_cloth_get_system(a), sp, "a refused system was taken");
    for (int k = 0; k < 20; k++) cr_assert_eq(drape_cloth_step(a, &e), 0, "%s", e.msg);
    /* b takes a's state, then both step at the half step */
    const double *xa = drape_cloth_positions(a), *va = drape_cloth_velocities(a);
    cr_assert_eq(drape_cloth_set_state(b, xa, va, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_use_system(a, sh, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_cloth_get_system(a), sh);
    for (int k = 0; k < 20; k++) {
        cr_assert_eq(drape_cloth_step(a, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_cloth_step(b, &e), 0, "%s", e.msg);
    }
    cr_assert(!memcmp(drape_cloth_positions(a), drape_cloth_positions(b), sizeof(double) * 3 * n),
              "the cloth moved onto the half step's system differs from one made on it");
    drape_cloth_free(a), drape_cloth_free(b);
    drape_cloth_system_free(sp), drape_cloth_system_free(sh), drape_cloth_system_free(so);
    free(X), free(T), free(X2), free(T2);
}

static const char *bin(void)
{
    const char *b = getenv("DRAPE_BIN");
    return b ? b : "build/drape";
}

/* `drape sim cloth` on the notebook's 625-node cloth against the NumPy/SciPy
 * port of the notebook (bench/fms_port.py): same vertices to 1e-6 m after 240
 * steps. */
Test(cloth, matches_the_notebook_port)
{
    char grid_p[300], c_p[300], py_p[300], log[2048];
    snprintf(grid_p, sizeof grid_p, "%s", tu_tmp("grid.obj"));
    snprintf(c_p, sizeof c_p, "%s", tu_tmp("c.obj"));
    snprintf(py_p, sizeof py_p, "%s", tu_tmp("py.obj"));
    const char *py = getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3";
    cr_assert_eq(tu_run(log, sizeof log, "%s bench/fms_port.py grid --out '%s'", py, grid_p), 0, "%s", log);
    cr_assert_str_eq(log, "600,624\n");
    cr_assert_eq(tu_run(log, sizeof log, "%s bench/fms_port.py run --mesh '%s' --pin 600,624 --out '%s'", py, grid_p, py_p),
                 0, "%s", log);
    cr_assert_eq(tu_run(log, sizeof log, "%s sim cloth --mesh '%s' --pin 600,624 --ym 80 --dt 0.0333333333333333333 "
                        "--steps 240 --iters 8 --gravity 9.8 --mass unit --out '%s'", bin(), grid_p, c_p), 0, "%s", log);
    cr_assert(strstr(log, "ms per step"), "%s", log);
    drape_obj a, b, g;
    drape_error e = {0};
    cr_assert_eq(drape_obj_read(&a, c_p, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_obj_read(&b, py_p, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_obj_read(&g, grid_p, &e), 0, "%s", e.msg);
    cr_assert_eq(a.n, 625);
    double d = 0, moved = 0;
    for (int i = 0; i < 3 * a.n; i++) {
        d = fmax(d, fabs(a.v[i] - b.v[i]));
        moved = fmax(moved, fabs(a.v[i] - g.v[i]));
    }
    cr_log_info("C vs notebook port after 240 steps: max %.3g m (the cloth moved up to %.3f m)", d, moved);
    cr_assert_leq(d, 1e-6);
    cr_assert_gt(moved, 0.1);
    drape_obj_free(&a);
    drape_obj_free(&b);
    drape_obj_free(&g);
}

Test(cloth, command_rejects_bad_input)
{
    char log[1024], bad[300];
    snprintf(bad, sizeof bad, "%s", tu_tmp("bad.obj"));
    FILE *f = fopen(bad, "w");
    fputs("v 0 0 0\nv 1 0 0\nv 0 nan 0\nf 1 2 3\n", f);
    fclose(f);
    cr_assert_neq(tu_run(log, sizeof log, "%s sim cloth --mesh '%s' --out /dev/null", bin(), bad), 0);
    cr_assert(strstr(log, "finite"), "%s", log);
    cr_assert_neq(tu_run(log, sizeof log, "%s sim cloth --mesh /nonexistent.obj --out /dev/null", bin()), 0);
    cr_assert(strstr(log, "cannot open"), "%s", log);
    f = fopen(bad, "w");
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", f);
    fclose(f);
    cr_assert_neq(tu_run(log, sizeof log, "%s sim cloth --mesh '%s' --pin 5 --out /dev/null", bin(), bad), 0);
    cr_assert(strstr(log, "pin 5"), "%s", log);
    cr_assert_neq(tu_run(log, sizeof log, "%s sim cloth --mesh '%s' --pin x --out /dev/null", bin(), bad), 0);
    cr_assert(strstr(log, "--pin"), "%s", log);
    /* an unused vertex at 1e308 once turned every output vertex into NaN, exit 0 */
    f = fopen(bad, "w");
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1e308 0 0\nf 1 2 3\n", f);
    fclose(f);
    cr_assert_neq(tu_run(log, sizeof log, "%s sim cloth --mesh '%s' --out /dev/null", bin(), bad), 0);
    cr_assert(strstr(log, ":4: vertex coordinate 1e+308 is beyond"), "%s", log);
}
