/* Colliders (sim/collide.c) and the geometry under them (core/geom.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/body.h"
#include "../core/mesh.h"
#include "../sim/cloth.h"
#include "../sim/collide.h"
#include "../sim/garment.h"
#include "../core/geom.h"
#include "util.h"

/* an nx × nx sheet of width w in the y = y0 plane, centred on (cx, cz) */
static void sheet(double *X, int32_t *T, int nx, double w, double cx, double y0, double cz)
{
    drape_grid_mesh(X, T, nx, nx, w, w);
    for (int i = 0; i < nx * nx; i++) {
        double *p = X + 3 * i, x = p[0], y = p[1];
        p[0] = cx + x, p[1] = y0, p[2] = cz + y;
    }
}

static const drape_cloth_params DROP = {.dt = 1.0 / 60, .gravity = 9.81, .iters = 10, .ym = 5, .mass = DRAPE_MASS_AREA,
                                        .density = 0.2, .bend = 0.05, .damping = 0.01, .margin = 0.01,
                                        .friction = 0.3};

/* Drops a free sheet onto the collider for steps; after every step no
 * vertex is closer than the margin (minus tol) by probe (NULL: col itself,
 * for spheres and capsules, whose distance is exact everywhere), and some
 * touched. */
static void drop_and_check(drape_collider *col, const drape_collider *probe, const drape_cloth_params *p, double *X,
                           int32_t *T, int nx, int steps, double tol)
{
    drape_cloth *c;
    drape_error e = {0};
    int n = nx * nx;
    cr_assert_eq(drape_cloth_create(&c, X, n, T, 2 * (nx - 1) * (nx - 1), NULL, 0, p, &e), 0, "%s", e.msg);
    drape_cloth_set_collider(c, col);
    int touched = 0;
    for (int s = 0; s < steps; s++) {
        cr_assert_eq(drape_cloth_step(c, &e), 0, "%s", e.msg);
        touched += drape_cloth_contacts(c) > 0;
        const double *x = drape_cloth_positions(c);
        for (int i = 0; i < n; i++) {
            double q[3], nn[3], d = drape_collider_distance(probe ? probe : col, x + 3 * i, q, nn);
            cr_assert(isfinite(d), "step %d vertex %d: no surface found (the probe reaches the whole body)", s, i);
            cr_assert_geq(d, DROP.margin - tol, "step %d vertex %d: distance %g inside the margin %g", s, i, d,
                          DROP.margin);
        }
    }
    cr_assert_gt(touched, 0, "the sheet never reached the collider");
    drape_cloth_free(c);
}

Test(collision, sheet_on_a_sphere)
{
    int nx = 15;
    double *X = malloc(sizeof(double) * 3 * nx * nx);
    int32_t *T = malloc(sizeof(int32_t) * 6 * (nx - 1) * (nx - 1));
    sheet(X, T, nx, 1.0, 0.05, 0.4, -0.03);
    drape_collider *col;
    drape_error e = {0};
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_add_sphere(col, (double[]){0, 0, 0}, 0.3, &e), 0, "%s", e.msg);
    drop_and_check(col, NULL, &DROP, X, T, nx, 90, 1e-9);
    drape_collider_free(col);
    free(X);
    free(T);
}

Test(collision, sheet_on_a_capsule)
{
    int nx = 15;
    double *X = malloc(sizeof(double) * 3 * nx * nx);
    int32_t *T = malloc(sizeof(int32_t) * 6 * (nx - 1) * (nx - 1));
    sheet(X, T, nx, 1.0, 0.02, 0.3, 0.04);
    drape_collider *col;
    drape_error e = {0};
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_add_capsule(col, (double[]){-0.4, 0, 0}, (double[]){0.4, 0, 0.1}, 0.15, &e), 0, "%s",
                 e.msg);
    drop_and_check(col, NULL, &DROP, X, T, nx, 90, 1e-9);
    drape_collider_free(col);
    free(X);
    free(T);
}

/* The small bundle's body, arms down a bit and turned by yaw (rad), as a
 * mesh collider of reach 5 cm; body [Nb,3] gets its positions, at [3] a
 * point 3 cm over its top at its centre. */
static drape_collider *posed_body_collider(const drape_model *m, float yaw, float *body, double at[3])
{
    float pose[75] = {0};
    pose[16 * 3 + 2] = -0.3f, pose[17 * 3 + 2] = 0.3f;
    pose[0 * 3 + 1] = yaw;
    drape_error e = {0};
    cr_assert_eq(drape_garment_body_frames(m, NULL, 0, pose, 1, body, &e), 0, "%s", e.msg);
    double top = -1e9, cx = 0, cz = 0;
    for (int i = 0; i < m->Nb; i++) top = fmax(top, body[3 * i + 1]), cx += body[3 * i], cz += body[3 * i + 2];
    at[0] = cx / m->Nb, at[1] = top + 0.03, at[2] = cz / m->Nb;
    drape_collider *col;
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_set_mesh(col, m->body_faces, m->Fb, m->Nb, 0.05, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_update_mesh(col, body, &e), 0, "%s", e.msg);
    return col;
}

/* The same body as a collider that checks: the simulation's reach (5 cm)
 * calls a vertex deeper inside than that "no surface", +INFINITY, which a
 * distance >= margin check passes. 1 m finds the surface from anywhere in
 * the body (so a finite distance is expected everywhere near it). */
static drape_collider *deep_probe(const drape_model *m, const float *body)
{
    drape_collider *col;
    drape_error e = {0};
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_set_mesh(col, m->body_faces, m->Fb, m->Nb, 1.0, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_update_mesh(col, body, &e), 0, "%s", e.msg);
    return col;
}

/* The posed body of the small bundle as a mesh collider: a sheet dropped on
 * its shoulders never ends up inside. */
Test(collision, sheet_on_the_posed_body)
{
    drape_model *m = tu_load("small_random");
    float *body = malloc(sizeof(float) * 3 * m->Nb);
    double at[3];
    drape_collider *col = posed_body_collider(m, 0.4, body, at);
    int nx = 17;
    double *X = malloc(sizeof(double) * 3 * nx * nx);
    int32_t *T = malloc(sizeof(int32_t) * 6 * (nx - 1) * (nx - 1));
    sheet(X, T, nx, 0.8, at[0], at[1], at[2]); /* over the head, falls onto the shoulders */
    drape_collider *probe = deep_probe(m, body);
    /* 240 Hz, as the garment simulation substeps: at 60 Hz a vertex resting
     * on the head goes in one implicit step to where its hanging neighbours
     * pull it, 10 cm down, past the 5-cm reach, and falls through the body */
    drape_cloth_params fine = DROP;
    fine.dt /= 4;
    drop_and_check(col, probe, &fine, X, T, nx, 240, 1e-3); /* concave spots: a push can end just short of the margin */
    drape_collider_free(probe);
    drape_collider_free(col);
    free(X);
    free(T);
    free(body);
    drape_model_free(m);
}

/* The grid finds what a brute-force search over every triangle finds. */
Test(collision, mesh_distance_matches_brute_force)
{
    drape_model *m = tu_load("small_random");
    float *body = malloc(sizeof(float) * 3 * m->Nb);
    float pose[75] = {0};
    drape_error e = {0};
    cr_assert_eq(drape_garment_body_frames(m, NULL, 0, pose, 1, body, &e), 0, "%s", e.msg);
    drape_collider *col;
    double reach = 0.04;
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_set_mesh(col, m->body_faces, m->Fb, m->Nb, reach, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_update_mesh(col, body, &e), 0, "%s", e.msg);
    uint64_t rng = 7;
    int found = 0;
    for (int s = 0; s < 400; s++) {
        int v = (int)((tu_rand(&rng) * 0.5 + 0.5) * (m->Nb - 1));
        double p[3], q[3], n[3];
        for (int d = 0; d < 3; d++) p[d] = body[3 * v + d] + 0.05 * tu_rand(&rng);
        double best = INFINITY;
        for (int f = 0; f < m->Fb; f++) {
            double a[9], qq[3], w[3];
            for (int k = 0; k < 9; k++) a[k] = body[3 * m->body_faces[3 * f + k / 3] + k % 3];
            best = fmin(best, drape_closest_on_triangle(qq, w, p, a, a + 3, a + 6));
        }
        double d = drape_collider_distance(col, p, q, n);
        if (sqrt(best) < reach) {
            found++;
            cr_assert_float_eq(fabs(d), sqrt(best), 1e-9, "point %d: grid %g, brute force %g", s, fabs(d), sqrt(best));
            cr_assert_float_eq(n[0] * n[0] + n[1] * n[1] + n[2] * n[2], 1.0, 1e-9);
        } else {
            cr_assert(isinf(d), "point %d beyond reach (%g) but found at %g", s, sqrt(best), d);
        }
    }
    cr_assert_gt(found, 100);
    drape_collider_free(col);
    free(body);
    drape_model_free(m);
}

/* The nearest-point searches (growing boxes, and from a hint, as the refine
 * step runs them) find what a brute-force search finds, ties to the lower
 * index, for points inside and outside the grid and cells fine and coarse. */
Test(collision, nearest_point_matches_brute_force)
{
    enum { N = 3000 };
    double *pts = malloc(sizeof(double) * 3 * N);
    uint64_t rng = 11;
    for (int i = 0; i < N; i++) /* a thin shell, as a body surface is, with some duplicate points */
        if (i % 50 == 49) memcpy(pts + 3 * i, pts + 3 * (i - 7), sizeof(double) * 3);
        else {
            double u[3], r = 0;
            for (int d = 0; d < 3; d++) u[d] = tu_rand(&rng), r += u[d] * u[d];
            for (int d = 0; d < 3; d++) pts[3 * i + d] = 0.3 * u[d] / sqrt(r + 1e-12);
        }
    const double cells[3] = {0.005, 0.03, 0.2};
    for (int c = 0; c < 3; c++) {
        drape_grid g = {0};
        cr_assert_eq(drape_grid_build(&g, pts, pts, N, cells[c]), 0);
        for (int s = 0; s < 300; s++) {
            double p[3];
            int at = (int)((tu_rand(&rng) * 0.5 + 0.5) * (N - 1));
            double spread = s % 3 == 0 ? 0.6 : 0.05; /* every third point far, some past the grid */
            for (int d = 0; d < 3; d++) p[d] = pts[3 * at + d] + spread * tu_rand(&rng);
            if (s % 10 == 0) memcpy(p, pts + 3 * 49, sizeof p); /* on a duplicated point: a tie */
            int best = -1;
            double bd = INFINITY;
            for (int i = 0; i < N; i++) {
                double d = 0;
                for (int k = 0; k < 3; k++) d += (p[k] - pts[3 * i + k]) * (p[k] - pts[3 * i + k]);
                if (d < bd) bd = d, best = i;
            }
            int hint = (int)((tu_rand(&rng) * 0.5 + 0.5) * (N - 1));
            cr_assert_eq(drape_grid_nearest(&g, pts, p), best, "cell %g, point %d", cells[c], s);
            cr_assert_eq(drape_grid_nearest_hint(&g, pts, p, hint, NULL), best, "cell %g, point %d, hint %d", cells[c], s, hint);
            cr_assert_eq(drape_grid_nearest_hint(&g, pts, p, best, NULL), best);
        }
        drape_grid_free(&g);
    }
    free(pts);
}

Test(collision, closest_point_on_triangle)
{
    double a[3] = {0, 0, 0}, b[3] = {1, 0, 0}, c[3] = {0, 1, 0}, q[3], w[3];
    /* above the face, beyond a vertex, beyond an edge */
    cr_assert_float_eq(drape_closest_on_triangle(q, w, (double[]){0.2, 0.2, 0.5}, a, b, c), 0.25, 1e-12);
    cr_assert_float_eq(q[0], 0.2, 1e-12);
    cr_assert_float_eq(w[0], 0.6, 1e-12);
    cr_assert_float_eq(drape_closest_on_triangle(q, w, (double[]){2, -1, 0}, a, b, c), 2.0, 1e-12);
    cr_assert_eq(w[1], 1.0);
    cr_assert_float_eq(drape_closest_on_triangle(q, w, (double[]){1, 1, 0}, a, b, c), 0.5, 1e-12);
    cr_assert_float_eq(q[0], 0.5, 1e-12);
    cr_assert_float_eq(q[1], 0.5, 1e-12);
    /* random points: never farther than a dense sampling of the triangle */
    uint64_t rng = 3;
    for (int s = 0; s < 200; s++) {
        double p[3] = {2 * tu_rand(&rng), 2 * tu_rand(&rng), tu_rand(&rng)}, best = INFINITY;
        double r = drape_closest_on_triangle(q, w, p, a, b, c);
        for (int i = 0; i <= 60; i++)
            for (int j = 0; i + j <= 60; j++) {
                double x = i / 60.0, y = j / 60.0;
                best = fmin(best, (p[0] - x) * (p[0] - x) + (p[1] - y) * (p[1] - y) + p[2] * p[2]);
            }
        cr_assert_leq(r, best + 1e-12);
        cr_assert_geq(sqrt(r), sqrt(best) - 0.02);
    }
}

Test(collision, bad_inputs_are_rejected)
{
    drape_collider *col;
    drape_error e = {0};
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_add_sphere(col, (double[]){0, NAN, 0}, 1, &e), DRAPE_ENONFINITE);
    cr_assert_eq(drape_collider_add_sphere(col, (double[]){0, 0, 0}, -1, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "radius"), "%s", e.msg);
    int32_t f[3] = {0, 1, 5};
    cr_assert_eq(drape_collider_set_mesh(col, f, 1, 3, 0.1, &e), DRAPE_ERANGE);
    float v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    cr_assert_eq(drape_collider_update_mesh(col, v, &e), DRAPE_EINVAL); /* no mesh yet */
    int32_t g[3] = {0, 1, 2};
    cr_assert_eq(drape_collider_set_mesh(col, g, 1, 3, 0.1, &e), 0, "%s", e.msg);
    v[4] = INFINITY;
    cr_assert_eq(drape_collider_update_mesh(col, v, &e), DRAPE_ENONFINITE);
    drape_collider_free(col);
}

/* A 4 m square floor at y = 0 (normal +y), shifted by dx along x. */
static void floor_at(float v[12], double dx)
{
    const float q[12] = {-2, 0, -2, -2, 0, 2, 2, 0, 2, 2, 0, -2};
    for (int i = 0; i < 12; i++) v[i] = q[i] + (i % 3 == 0 ? (float)dx : 0);
}

/* One contact on the floor: a point 1 mm inside it with velocity u, the
 * floor having moved by vfloor·dt since its last update. */
static void contact(double u[3], double vfloor, double friction)
{
    static const int32_t faces[6] = {0, 1, 2, 0, 2, 3}; /* counter-clockwise seen from +y */
    double dt = 0.01, x[3] = {0.3, -0.001, 0.1};
    float v[12];
    drape_collider *col;
    drape_error e = {0};
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_set_mesh(col, faces, 2, 4, 0.1, &e), 0, "%s", e.msg);
    floor_at(v, 0);
    cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
    floor_at(v, vfloor * dt);
    cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_project(col, x, u, NULL, 1, 0.005, friction, dt), 1);
    cr_assert_float_eq(x[1], 0.005, 1e-9, "pushed to the margin: y %g", x[1]);
    drape_collider_free(col);
}

/* Coulomb friction: the tangential speed lost is friction × the normal speed
 * the contact removed (or the push over dt), not a fixed share of it */
Test(collision, friction_is_coulomb)
{
    /* sliding at 1 m/s, arriving at 0.8 m/s: loses 0.3 × 0.8 */
    double u[3] = {1, -0.8, 0};
    contact(u, 0, 0.3);
    cr_assert_float_eq(u[0], 1 - 0.3 * 0.8, 1e-9, "tangential %g", u[0]);
    cr_assert_float_eq(u[1], 0, 1e-9, "the inward normal part is removed: %g", u[1]);
    /* barely arriving: the push (6 mm over 10 ms = 0.6 m/s) bounds it */
    double w[3] = {1, -0.01, 0};
    contact(w, 0, 0.3);
    cr_assert_float_eq(w[0], 1 - 0.3 * 0.6, 1e-9, "tangential %g", w[0]);
    /* slow enough to stick */
    double s[3] = {0.1, -1, 0.05};
    contact(s, 0, 0.3);
    cr_assert_float_eq(s[0], 0, 1e-9);
    cr_assert_float_eq(s[2], 0, 1e-9);
    /* no friction: tangential motion untouched; leaving: the normal part stays */
    double f[3] = {1, 0.2, -0.5};
    contact(f, 0, 0);
    cr_assert_float_eq(f[0], 1, 1e-12);
    cr_assert_float_eq(f[1], 0.2, 1e-12);
    cr_assert_float_eq(f[2], -0.5, 1e-12);
}

/* Friction acts on the velocity relative to the moving surface: cloth moving
 * with the body keeps its speed, cloth at rest on it is dragged along (the
 * surface's velocity comes from float positions: within 1e-4 m/s) */
Test(collision, friction_follows_the_moving_surface)
{
    double with[3] = {2, -0.5, 0};
    contact(with, 2, 0.3);
    cr_assert_float_eq(with[0], 2, 1e-4, "moving with the floor at 2 m/s: %g", with[0]);
    double still[3] = {0, -0.5, 0};
    contact(still, 2, 0.3);
    /* relative −2 m/s, friction takes 0.3 × 0.6 (the push over dt) */
    cr_assert_float_eq(still[0], 2 - (2 - 0.3 * 0.6), 1e-4, "dragged by the floor: %g", still[0]);
    cr_assert_float_eq(still[1], 0, 1e-9);
}

/* A sheet resting on a floor that slides at constant speed rides along with
 * it (static friction under gravity); without friction it stays behind. */
Test(collision, a_sheet_rides_a_moving_floor)
{
    static const int32_t faces[6] = {0, 1, 2, 0, 2, 3};
    int nx = 6;
    double *X = malloc(sizeof(double) * 3 * nx * nx);
    int32_t *T = malloc(sizeof(int32_t) * 6 * (nx - 1) * (nx - 1));
    double moved[2];
    for (int run = 0; run < 2; run++) {
        sheet(X, T, nx, 0.3, 0, 0.01, 0);
        drape_cloth_params p = DROP;
        p.friction = run ? 0 : 0.5;
        p.damping = 0;
        drape_cloth *c;
        drape_collider *col;
        drape_error e = {0};
        float v[12];
        cr_assert_eq(drape_cloth_create(&c, X, nx * nx, T, 2 * (nx - 1) * (nx - 1), NULL, 0, &p, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_collider_create(&col, &e), 0);
        cr_assert_eq(drape_collider_set_mesh(col, faces, 2, 4, 0.1, &e), 0, "%s", e.msg);
        floor_at(v, 0);
        cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
        drape_cloth_set_collider(c, col);
        for (int s = 0; s < 30; s++) cr_assert_eq(drape_cloth_step(c, &e), 0, "%s", e.msg); /* settle */
        double x0 = drape_cloth_positions(c)[0], speed = 0.5;
        for (int s = 1; s <= 60; s++) {
            floor_at(v, speed * p.dt * s);
            cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
            cr_assert_eq(drape_cloth_step(c, &e), 0, "%s", e.msg);
        }
        moved[run] = drape_cloth_positions(c)[0] - x0;
        drape_cloth_free(c);
        drape_collider_free(col);
    }
    double floor_moved = 0.5 * DROP.dt * 60;
    cr_assert_float_eq(moved[0], floor_moved, 0.1 * floor_moved, "with friction the sheet moved %g m, the floor %g m",
                       moved[0], floor_moved);
    cr_assert_lt(fabs(moved[1]), 0.01, "without friction the sheet moved %g m", moved[1]);
    free(X);
    free(T);
}

/* nearest vertex of x among v [n,3] (brute force) */
static int nearest_vertex(const float *v, int n, const double x[3])
{
    int best = 0;
    double bd = INFINITY;
    for (int i = 0; i < n; i++) {
        double d = 0;
        for (int k = 0; k < 3; k++) d += (x[k] - v[3 * i + k]) * (x[k] - v[3 * i + k]);
        if (d < bd) bd = d, best = i;
    }
    return best;
}

/* The vertex margin: on a coarse mesh (an octahedron) a point 1 cm over a
 * face's centre is outside the triangle margin but under the tangent plane
 * of its nearest vertex, the collision metric's "inside" (docs/design.md §4). Off,
 * nothing moves it; on, it ends the vertex margin above that plane. */
Test(collision, vertex_margin_keeps_points_out_of_the_metric_half_space)
{
    static const float v[18] = {1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1};
    static const int32_t f[24] = {0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4, 2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5};
    drape_collider *col;
    drape_error e = {0};
    cr_assert_eq(drape_collider_create(&col, &e), 0);
    cr_assert_eq(drape_collider_set_mesh(col, f, 8, 6, 2.0, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
    double r = 1 / sqrt(3.0) + 0.01, x[3] = {r / sqrt(3.0), r / sqrt(3.0) + 1e-4, r / sqrt(3.0) + 2e-4}, u[3] = {0};
    double q[3], n[3], x0[3];
    memcpy(x0, x, sizeof x);
    cr_assert_float_eq(drape_collider_distance(col, x, q, n), 0.01, 1e-3, "1 cm outside the face");
    int b = nearest_vertex(v, 6, x);
    cr_assert_eq(b, 4, "nearest: the +z vertex");
    cr_assert_lt(x[2] - 1, 0, "under its tangent plane (z = 1)");
    cr_assert_eq(drape_collider_project(col, x, u, NULL, 1, 0.005, 0, 0.01), 0, "off: no contact");
    cr_assert(!memcmp(x, x0, sizeof x), "off: the point did not move");
    cr_assert_eq(drape_collider_set_vertex_margin(col, NAN, &e), DRAPE_EINVAL);
    cr_assert_eq(drape_collider_set_vertex_margin(col, 0.003, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_project(col, x, u, NULL, 1, 0.005, 0, 0.01), 1, "on: a contact");
    cr_assert_eq(nearest_vertex(v, 6, x), 4, "pushed along the +z vertex's normal");
    cr_assert_float_eq(x[2] - 1, 0.003, 1e-9, "at the vertex margin over its plane: %g", x[2] - 1);
    cr_assert_float_eq(x[0], x0[0], 1e-12, "and only along that normal");
    cr_assert_geq(drape_collider_distance(col, x, q, n), 0.005, "and still out of the triangles' margin");
    cr_assert_eq(drape_collider_set_vertex_margin(col, -1, &e), 0);
    memcpy(x, x0, sizeof x);
    cr_assert_eq(drape_collider_project(col, x, u, NULL, 1, 0.005, 0, 0.01), 0, "off again");
    drape_collider_free(col);
}

/* A sheet dropped on the posed body with the vertex margin on: no vertex
 * ever reads as inside by the collision metric's test (nearest body vertex,
 * its normal), which the triangle margin alone does not promise. */
Test(collision, sheet_on_the_body_passes_the_metric_test)
{
    drape_model *m = tu_load("small_random");
    float *body = malloc(sizeof(float) * 3 * m->Nb), *bn = malloc(sizeof(float) * 3 * m->Nb);
    double at[3];
    drape_collider *col = posed_body_collider(m, 0, body, at), *probe = deep_probe(m, body);
    drape_mesh_normals(bn, body, m->Nb, m->body_faces, m->Fb);
    drape_error e = {0};
    cr_assert_eq(drape_collider_set_vertex_margin(col, 0.003, &e), 0, "%s", e.msg);
    int nx = 17, n = nx * nx;
    double *X = malloc(sizeof(double) * 3 * n);
    int32_t *T = malloc(sizeof(int32_t) * 6 * (nx - 1) * (nx - 1));
    sheet(X, T, nx, 0.8, at[0], at[1], at[2]);
    drape_cloth *c;
    drape_cloth_params thin = DROP;
    thin.margin = 0.002; /* the triangles' margin alone lets vertices under the metric's planes */
    thin.dt /= 4;        /* 240 Hz: at 60 Hz the centre falls through the head (sheet_on_the_posed_body) */
    cr_assert_eq(drape_cloth_create(&c, X, n, T, 2 * (nx - 1) * (nx - 1), NULL, 0, &thin, &e), 0, "%s", e.msg);
    drape_cloth_set_collider(c, col);
    int touched = 0;
    for (int s = 0; s < 240; s++) {
        cr_assert_eq(drape_cloth_step(c, &e), 0, "%s", e.msg);
        const double *x = drape_cloth_positions(c);
        for (int i = 0; i < n; i++) {
            const double *p = x + 3 * i;
            int b = nearest_vertex(body, m->Nb, p);
            double h = 0, d2 = 0;
            for (int k = 0; k < 3; k++)
                h += bn[3 * b + k] * (p[k] - body[3 * b + k]), d2 += (p[k] - body[3 * b + k]) * (p[k] - body[3 * b + k]);
            /* the plane test holds near the body only; anywhere, the deep
             * probe sees a vertex that went through (its nearest body
             * vertex more than 5 cm off) */
            double q[3], nq[3], sd = drape_collider_distance(probe, p, q, nq);
            cr_assert(isfinite(sd), "step %d vertex %d: no surface found (the probe reaches the whole body)", s, i);
            cr_assert_geq(sd, thin.margin - 1e-3, "step %d vertex %d: %g m from the body's surface", s, i, sd);
            if (d2 > 0.05 * 0.05) continue; /* beyond the collider's reach: not near the body */
            touched += h < 0.01;
            cr_assert_geq(h, 0.003 - 1e-3, "step %d vertex %d: %g over its nearest body vertex's plane", s, i, h);
        }
    }
    cr_assert_gt(touched, 0, "the sheet never came near the body");
    drape_cloth_free(c);
    drape_collider_free(probe);
    drape_collider_free(col);
    free(X);
    free(T);
    free(body);
    free(bn);
    drape_model_free(m);
}

/* A hostile span (points 1e12 m apart, a 1 cm cell) or a non-finite box must
 * give a grid of bounded size or a clear refusal, never a wild index. */
Test(collision, grid_bounds_its_size_whatever_the_span)
{
    double pts[4 * 3] = {0, 0, 0, 1e12, -1e12, 5e11, -3e11, 2e12, 1, 0.01, 0.02, 0.03};
    drape_grid g = {0};
    cr_assert_eq(drape_grid_build(&g, pts, pts, 4, 0.01), 0);
    int64_t cells = (int64_t)g.dim[0] * g.dim[1] * g.dim[2];
    cr_assert(g.dim[0] >= 1 && g.dim[1] >= 1 && g.dim[2] >= 1 && cells <= (1 << 21), "dims %d %d %d", g.dim[0],
              g.dim[1], g.dim[2]);
    for (int i = 0; i < 4; i++) cr_assert_eq(drape_grid_nearest(&g, pts, pts + 3 * i), i);
    double bad[3] = {0, NAN, 0}, inf[3] = {INFINITY, 0, 0};
    cr_assert_eq(drape_grid_build(&g, bad, bad, 1, 0.01), DRAPE_ERANGE);
    cr_assert_eq(drape_grid_build(&g, inf, inf, 1, 0.01), DRAPE_ERANGE);
    /* finite ends whose span is not (it once looped for ever, the cell NaN) */
    double far[6] = {-1e308, 0, 0, 1e308, 0, 0};
    cr_assert_eq(drape_grid_build(&g, far, far, 2, 0.01), DRAPE_ERANGE);
    cr_assert_eq(drape_grid_build(&g, pts, pts, 4, 0), DRAPE_EINVAL);
    drape_grid_free(&g);
}

/* the small bundle's body walking: [T, Nb, 3] */
static float *walking_body(const drape_model *m, int T)
{
    float *P = malloc(sizeof(float) * 75 * T), *body = malloc(sizeof(float) * 3 * m->Nb * T);
    drape_garment_walk(P, T, 30);
    drape_error e = {0};
    cr_assert_eq(drape_garment_body_frames(m, NULL, 0, P, T, body, &e), 0, "%s", e.msg);
    free(P);
    return body;
}

/* The points' memory (drape_collider_set_points) with warm queries, the plane
 * test and the motion bound that skips points: on the small bundle's body
 * walking for 20 updates, points scattered around it and jittering, every
 * projection equals the plain collider's (to rounding: only a tie between
 * two triangles at the same distance may be broken the other way). */
Test(collision, the_points_memory_projects_as_a_plain_collider_does)
{
    drape_model *m = tu_load("small_random");
    int Nb = m->Nb, T = 20, n = 600;
    float *body = walking_body(m, T);
    drape_error e = {0};
    drape_collider *cold, *warm;
    cr_assert_eq(drape_collider_create(&cold, &e), 0);
    cr_assert_eq(drape_collider_create(&warm, &e), 0);
    cr_assert_eq(drape_collider_set_mesh(cold, m->body_faces, m->Fb, Nb, 0.08, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_set_mesh(warm, m->body_faces, m->Fb, Nb, 0.08, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_collider_set_points(warm, n, 1, 0, 0.03, &e), 0, "%s", e.msg);
    double *x = malloc(sizeof(double) * 3 * n), *v = calloc(3 * (size_t)n, sizeof(double));
    double *xw = malloc(sizeof(double) * 3 * n), *vw = malloc(sizeof(double) * 3 * n);
    uint64_t rng = 7;
    for (int i = 0; i < n; i++) { /* near a body vertex, up to 12 cm off in any direction */
        int b = (int)((tu_rand(&rng) * 0.5f + 0.5f) * (Nb - 1));
        for (int d = 0; d < 3; d++) x[3 * i + d] = body[3 * b + d] + 0.12 * tu_rand(&rng);
    }
    int contacts = 0;
    double worst = 0;
    for (int t = 0; t < T; t++) {
        cr_assert_eq(drape_collider_update_mesh(cold, body + (size_t)3 * Nb * t, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_collider_update_mesh(warm, body + (size_t)3 * Nb * t, &e), 0, "%s", e.msg);
        for (int i = 0; i < 3 * n; i++) x[i] += 0.004 * tu_rand(&rng), v[i] = 0.1 * tu_rand(&rng);
        memcpy(xw, x, sizeof(double) * 3 * n);
        memcpy(vw, v, sizeof(double) * 3 * n);
        int kc = drape_collider_project(cold, x, v, NULL, n, 0.005, 0.3, 1.0 / 30);
        int kw = drape_collider_project(warm, xw, vw, NULL, n, 0.005, 0.3, 1.0 / 30);
        cr_assert_eq(kw, kc, "update %d: %d contacts with the memory, %d without", t, kw, kc);
        for (int i = 0; i < 3 * n; i++) worst = fmax(worst, fmax(fabs(xw[i] - x[i]), fabs(vw[i] - v[i])));
        contacts += kc;
    }
    cr_log_info("%d contacts over %d updates; largest difference %.3g", contacts, T, worst);
    cr_assert_gt(contacts, 20, "too few contacts for the test to mean anything");
    cr_assert_lt(worst, 1e-9);
    drape_collider_free(cold);
    drape_collider_free(warm);
    free(x), free(v), free(xw), free(vw), free(body);
    drape_model_free(m);
}

/* The teacher's collider (no warm queries) guesses each point's nearest
 * triangle from its last one; the answer must still be the plain search's,
 * to the bit: same contacts, same positions and velocities, with the vertex
 * margin on (its nearest-vertex search goes through a grid of its own). */
Test(collision, guessed_queries_answer_as_the_plain_search)
{
    drape_model *m = tu_load("small_random");
    int Nb = m->Nb, T = 20, n = 600;
    float *body = walking_body(m, T);
    drape_error e = {0};
    drape_collider *col[2];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(drape_collider_create(&col[k], &e), 0);
        cr_assert_eq(drape_collider_set_mesh(col[k], m->body_faces, m->Fb, Nb, 0.08, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_collider_set_points(col[k], n, 0, 0, 0, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_collider_set_vertex_margin(col[k], 0.003, &e), 0, "%s", e.msg);
    }
    drape_collider_set_plain_search(col[1], 1);
    double *x[2], *v[2];
    for (int k = 0; k < 2; k++) x[k] = malloc(sizeof(double) * 3 * n), v[k] = malloc(sizeof(double) * 3 * n);
    uint64_t rng = 11;
    for (int i = 0; i < n; i++) { /* near a body vertex, up to 6 cm off: inside, outside, past the reach */
        int b = (int)((tu_rand(&rng) * 0.5f + 0.5f) * (Nb - 1));
        for (int d = 0; d < 3; d++) x[0][3 * i + d] = body[3 * b + d] + 0.06 * tu_rand(&rng);
    }
    int contacts = 0;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < 3 * n; i++) x[0][i] += 0.004 * tu_rand(&rng), v[0][i] = 0.1 * tu_rand(&rng);
        memcpy(x[1], x[0], sizeof(double) * 3 * n);
        memcpy(v[1], v[0], sizeof(double) * 3 * n);
        int k0 = -1, k1 = -1;
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(drape_collider_update_mesh(col[k], body + (size_t)3 * Nb * t, &e), 0, "%s", e.msg);
            int kc = drape_collider_project(col[k], x[k], v[k], NULL, n, 0.005, 0.3, 1.0 / 30);
            *(k ? &k1 : &k0) = kc;
        }
        cr_assert_eq(k0, k1, "update %d: %d contacts guessed, %d plain", t, k0, k1);
        cr_assert(!memcmp(x[0], x[1], sizeof(double) * 3 * n), "update %d: positions differ", t);
        cr_assert(!memcmp(v[0], v[1], sizeof(double) * 3 * n), "update %d: velocities differ", t);
        contacts += k0;
    }
    cr_log_info("%d contacts over %d updates", contacts, T);
    cr_assert_gt(contacts, 100, "too few contacts for the test to mean anything");
    for (int k = 0; k < 2; k++) drape_collider_free(col[k]), free(x[k]), free(v[k]);
    free(body);
    drape_model_free(m);
}

/* Ties: a point right above a vertex of a flat sheet is equally near every
 * triangle around it. The plain search answers the first of them in the
 * grid's order (its earliest cell, then the lower index); a guessed query
 * must too, even when its guess (the triangle the point was over before) is
 * another of them. With the triangles listed backwards, the lower index is
 * no longer the earlier cell. Returns how many guesses lost their tie. */
static int tie_case(int backwards)
{
    enum { NX = 7, NV = NX * NX, NF = 2 * (NX - 1) * (NX - 1) };
    double X[3 * NV];
    int32_t F[3 * NF];
    float Xf[3 * NV];
    sheet(X, F, NX, 0.3, 0, 0, 0);
    for (int f = 0; backwards && f < NF / 2; f++)
        for (int k = 0; k < 3; k++) {
            int32_t t = F[3 * f + k];
            F[3 * f + k] = F[3 * (NF - 1 - f) + k], F[3 * (NF - 1 - f) + k] = t;
        }
    for (int i = 0; i < 3 * NV; i++) Xf[i] = (float)X[i];
    /* the side the triangles face (their normals' y) */
    const double *a = X + 3 * F[0], *b = X + 3 * F[1], *c = X + 3 * F[2];
    double ny = (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2]), off = ny > 0 ? 0.01 : -0.01;
    int n = 0, vid[NV], last[NV];
    for (int v = 0; v < NV; v++) { /* interior vertices, and the last triangle around each */
        int x = v % NX, y = v / NX;
        if (x == 0 || y == 0 || x == NX - 1 || y == NX - 1) continue;
        vid[n] = v, last[n] = -1;
        for (int f = 0; f < NF; f++)
            if (F[3 * f] == v || F[3 * f + 1] == v || F[3 * f + 2] == v) last[n] = f;
        n++;
    }
    drape_error e = {0};
    drape_collider *col[2];
    double *x[2];
    int faces[2][NV];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(drape_collider_create(&col[k], &e), 0);
        cr_assert_eq(drape_collider_set_mesh(col[k], F, NF, NV, 0.08, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_collider_set_points(col[k], n, 0, 0, 0, &e), 0, "%s", e.msg);
        drape_collider_set_plain_search(col[k], k);
        x[k] = malloc(sizeof(double) * 3 * n);
        double *v = calloc(3 * (size_t)n, sizeof(double));
        for (int step = 0; step < 2; step++) {
            cr_assert_eq(drape_collider_update_mesh(col[k], Xf, &e), 0, "%s", e.msg);
            for (int i = 0; i < n; i++)
                for (int d = 0; d < 3; d++) {
                    const int32_t *t = F + 3 * last[i];
                    double over = step == 0 ? (Xf[3 * t[0] + d] + Xf[3 * t[1] + d] + Xf[3 * t[2] + d]) / 3 : Xf[3 * vid[i] + d];
                    x[k][3 * i + d] = over + (d == 1 ? off : 0);
                }
            cr_assert_eq(drape_collider_project(col[k], x[k], v, NULL, n, 0.005, 0.3, 1.0 / 30), 0);
            if (step == 0)
                for (int i = 0; i < n; i++) cr_assert_eq(drape_collider_point_face(col[k], i), last[i]);
        }
        for (int i = 0; i < n; i++) faces[k][i] = drape_collider_point_face(col[k], i);
        free(v);
    }
    int moved = 0;
    for (int i = 0; i < n; i++) {
        cr_assert_eq(faces[0][i], faces[1][i],
                     "listing %d, vertex %d: the guessed query answers triangle %d, the plain search %d", backwards,
                     vid[i], faces[0][i], faces[1][i]);
        moved += faces[0][i] != last[i];
    }
    for (int k = 0; k < 2; k++) drape_collider_free(col[k]), free(x[k]);
    return moved;
}

Test(collision, a_tie_goes_to_the_plain_search_first_not_the_guess)
{
    for (int backwards = 0; backwards < 2; backwards++) {
        int moved = tie_case(backwards);
        cr_assert_gt(moved, 10, "listing %d: the guess should rarely be the plain search's first (%d lost)", backwards,
                     moved);
    }
}

typedef struct { int n, cap, *seen; } visit_log;

static void log_visit(void *ctx, int i)
{
    visit_log *l = ctx;
    if (l->n < l->cap) l->seen[l->n] = i;
    l->n++;
}

/* drape_grid_visit_near skips only items the caller's own box test would
 * skip: the items drape_grid_visit gives, whose box is nearer than the
 * bound, come in the same order, and nothing much farther comes at all. */
Test(collision, grid_visit_near_keeps_what_the_plain_visit_keeps)
{
    enum { N = 400, CAP = 4096 };
    double lo[3 * N], hi[3 * N];
    uint64_t rng = 5;
    for (int i = 0; i < N; i++)
        for (int d = 0; d < 3; d++) {
            double c = 0.5 * tu_rand(&rng), w = 0.02 + 0.02 * tu_rand(&rng);
            lo[3 * i + d] = c - w, hi[3 * i + d] = c + w;
        }
    drape_grid g = {0};
    cr_assert_eq(drape_grid_build(&g, lo, hi, N, 0.08), 0);
    cr_assert_eq(drape_grid_keep_boxes(&g, lo, hi), 0);
    int a[CAP], b[CAP];
    int kept = 0;
    for (int q = 0; q < 200; q++) {
        double p[3], qlo[3], qhi[3], best = 0.003 * (1 + tu_rand(&rng));
        for (int d = 0; d < 3; d++) p[d] = 0.5 * tu_rand(&rng), qlo[d] = p[d] - 0.08, qhi[d] = p[d] + 0.08;
        visit_log all = {0, CAP, a}, near = {0, CAP, b};
        drape_grid_visit(&g, qlo, qhi, log_visit, &all);
        drape_grid_visit_near(&g, qlo, qhi, p, &best, log_visit, &near);
        cr_assert(all.n <= CAP && near.n <= all.n);
        int j = 0;
        for (int k = 0; k < all.n; k++) {
            int i = a[k];
            double gap = 0;
            for (int d = 0; d < 3; d++) {
                double s = lo[3 * i + d] - p[d] > p[d] - hi[3 * i + d] ? lo[3 * i + d] - p[d] : p[d] - hi[3 * i + d];
                if (s > 0) gap += s * s;
            }
            int shown = j < near.n && b[j] == i;
            if (gap < best) cr_assert(shown, "query %d: item %d (gap %g < %g) skipped or out of order", q, i, gap, best);
            if (shown) {
                cr_assert_lt(gap, best * (1 + 1e-5) + 1e-12, "query %d: item %d visited at gap %g", q, i, gap);
                j++, kept++;
            }
        }
        cr_assert_eq(j, near.n, "query %d: visited an item the plain visit did not give there", q);
    }
    cr_assert_gt(kept, 200, "too few items kept for the test to mean anything");
    drape_grid_free(&g);
}

/* A closed box [lo, hi] (8 vertices, 12 triangles facing out) */
static void box_mesh(float v[24], int32_t f[36], const double lo[3], const double hi[3])
{
    static const int32_t q[6][4] = {{0, 2, 6, 4}, {1, 5, 7, 3}, {0, 4, 5, 1}, {2, 3, 7, 6}, {0, 1, 3, 2}, {4, 6, 7, 5}};
    for (int i = 0; i < 8; i++)
        for (int d = 0; d < 3; d++) v[3 * i + d] = (float)((i >> d & 1) ? hi[d] : lo[d]);
    for (int k = 0; k < 6; k++) {
        int32_t *t = f + 6 * k;
        t[0] = q[k][0], t[1] = q[k][1], t[2] = q[k][2], t[3] = q[k][0], t[4] = q[k][2], t[5] = q[k][3];
        for (int h = 0; h < 2; h++) { /* face out: flip a triangle whose normal points at the centre */
            int32_t *u = t + 3 * h;
            double a[3], b[3], c[3], n[3], dot = 0;
            for (int d = 0; d < 3; d++) a[d] = v[3 * u[1] + d] - v[3 * u[0] + d], b[d] = v[3 * u[2] + d] - v[3 * u[0] + d];
            n[0] = a[1] * b[2] - a[2] * b[1], n[1] = a[2] * b[0] - a[0] * b[2], n[2] = a[0] * b[1] - a[1] * b[0];
            for (int d = 0; d < 3; d++) c[d] = v[3 * u[0] + d] - 0.5 * (lo[d] + hi[d]), dot += n[d] * c[d];
            if (dot < 0) {
                int32_t s = u[1];
                u[1] = u[2], u[2] = s;
            }
        }
    }
}

/* A 2 cm slab sweeps 3 cm across a point 5 mm in front of it in one
 * update. The plain collider then finds the point 5 mm behind the slab,
 * outside the margin, and leaves it there: the body passed through the
 * cloth. With tracking the point crossed the front face and goes back in
 * front of it, carried at the slab's speed. */
Test(collision, tracking_keeps_a_point_on_the_side_it_was)
{
    drape_error e = {0};
    double end[2], speed[2];
    for (int track = 0; track < 2; track++) {
        float v[24];
        int32_t f[36];
        drape_collider *col;
        cr_assert_eq(drape_collider_create(&col, &e), 0);
        box_mesh(v, f, (double[]){-0.02, -0.3, -0.3}, (double[]){0, 0.3, 0.3});
        cr_assert_eq(drape_collider_set_mesh(col, f, 12, 8, 0.05, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_collider_set_points(col, 1, 1, track, 0, &e), 0, "%s", e.msg);
        cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
        double x[3] = {0.005, 0.01, -0.02}, u[3] = {0, 0, 0}, dt = 1.0 / 120;
        cr_assert_eq(drape_collider_project(col, x, u, NULL, 1, 0.002, 0, dt), 0, "5 mm out: no contact yet");
        box_mesh(v, f, (double[]){0.01, -0.3, -0.3}, (double[]){0.03, 0.3, 0.3});
        cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
        int k = drape_collider_project(col, x, u, NULL, 1, 0.002, 0, dt);
        cr_assert_eq(k, track, "track %d: %d contacts", track, k);
        end[track] = x[0], speed[track] = u[0];
        drape_collider_free(col);
    }
    cr_assert_float_eq(end[0], 0.005, 1e-12, "without tracking the point stays behind the slab (%g)", end[0]);
    cr_assert_float_eq(end[1], 0.032, 1e-9, "with tracking the point is back in front (%g)", end[1]);
    cr_assert_float_eq(speed[1], 0.03 * 120, 1e-6, "and moves with the slab (%g m/s)", speed[1]);
}

/* A point 1 cm outside a 40 cm box goes 14 cm deep in one step (relative to
 * the box: the point moves, or the box moves over it), more than the 8 cm
 * reach from every face. The points' memory knew it outside; the collider
 * must not keep reading it so (the old rule: no triangle within reach, was
 * outside, so still outside), but find it and push it out, as a contact.
 * With and without warm queries (the teacher keeps the memory too). */
Test(collision, a_point_that_jumps_past_the_reach_deep_inside_is_pushed_out)
{
    drape_error e = {0};
    const double margin = 0.005, reach = 0.08, dt = 1.0 / 30;
    for (int warm = 0; warm < 2; warm++)
        for (int body_moves = 0; body_moves < 2; body_moves++) {
            float v[24];
            int32_t f[36];
            drape_collider *col;
            cr_assert_eq(drape_collider_create(&col, &e), 0);
            box_mesh(v, f, (double[]){-0.2, -0.2, -0.2}, (double[]){0.2, 0.2, 0.2});
            cr_assert_eq(drape_collider_set_mesh(col, f, 12, 8, reach, &e), 0, "%s", e.msg);
            cr_assert_eq(drape_collider_set_points(col, 1, warm, 0, 0, &e), 0, "%s", e.msg);
            cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
            double x[3] = {0.21, 0.01, 0.02}, u[3] = {0, 0, 0};
            cr_assert_eq(drape_collider_project(col, x, u, NULL, 1, margin, 0, dt), 0, "1 cm out: no contact");
            double face_x = 0.2; /* the +x face the point came through (in float: 1e-6 below) */
            if (body_moves) {
                box_mesh(v, f, (double[]){-0.05, -0.2, -0.2}, (double[]){0.35, 0.2, 0.2});
                cr_assert_eq(drape_collider_update_mesh(col, v, &e), 0, "%s", e.msg);
                face_x = 0.35;
            } else {
                x[0] = 0.06;
            }
            double q[3], n[3];
            cr_assert(isinf(drape_collider_distance(col, x, q, n)), "14 cm deep: beyond the reach of every face");
            int k = drape_collider_project(col, x, u, NULL, 1, margin, 0, dt);
            cr_log_info("warm %d, body moves %d: %d contacts, x = %.4f", warm, body_moves, k, x[0]);
            cr_expect_eq(k, 1, "warm %d, body moves %d: the deep point is a contact (%d)", warm, body_moves, k);
            cr_expect_float_eq(x[0], face_x + margin, 1e-6, "warm %d, body moves %d: pushed out of the face it "
                               "crossed, to the margin (x = %g)", warm, body_moves, x[0]);
            /* (each case reports, pass or fail) then outside again: still, it
             * stays put, no contact */
            cr_expect_eq(drape_collider_project(col, x, u, NULL, 1, margin, 0, dt), 0);
            cr_expect_float_eq(x[0], face_x + margin, 1e-6);
            /* a jump as long that stays outside (10 cm off the face, along
             * it) is no contact and goes where it went */
            double y[3] = {face_x + 0.1, -0.05, 0.02}, w[3] = {0, 0, 0};
            cr_assert_eq(drape_collider_project(col, y, w, NULL, 1, margin, 0, dt), 0, "10 cm off the face");
            y[1] = 0.1;
            cr_assert_eq(drape_collider_project(col, y, w, NULL, 1, margin, 0, dt), 0, "15 cm along it: no contact");
            cr_assert(y[0] == face_x + 0.1 && y[1] == 0.1 && y[2] == 0.02, "left where it went");
            drape_collider_free(col);
        }
}
