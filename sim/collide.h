/* Colliders for the cloth engine: analytic spheres and capsules (tests,
 * simple scenes) and a triangle mesh (the posed body), whose positions change
 * every frame and whose nearest-triangle queries go through a uniform grid
 * rebuilt on every update.
 *
 * Signed distance: for spheres and capsules the exact one; for the mesh
 * d = ±|p − q| with q the closest point on the nearest triangle within the
 * mesh's reach, the sign that of (p − q)·n where n interpolates the vertex
 * normals (outward for counter-clockwise faces) at q. Points farther than the
 * reach from every triangle, on either side, are not in contact (but see
 * the deep check of drape_collider_set_points). */
#ifndef DRAPE_COLLIDE_H
#define DRAPE_COLLIDE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"

typedef struct drape_collider drape_collider;

int drape_collider_create(drape_collider **out, drape_error *err);
void drape_collider_free(drape_collider *c);

int drape_collider_add_sphere(drape_collider *c, const double center[3], double radius, drape_error *err);
/* the segment a–b swept by a sphere of radius */
int drape_collider_add_capsule(drape_collider *c, const double a[3], const double b[3], double radius,
                               drape_error *err);

/* The mesh's topology: faces [F,3] over nv vertices; reach (m) bounds how far
 * from the surface, inside or out, a point is found. Positions come with
 * drape_collider_update_mesh before the first query. */
int drape_collider_set_mesh(drape_collider *c, const int32_t *faces, int F, int nv, double reach, drape_error *err);
/* v [nv,3]: the mesh's positions now; recomputes normals and the grid. */
int drape_collider_update_mesh(drape_collider *c, const float *v, drape_error *err);

/* Also keep points margin (m) above the tangent plane of their nearest mesh
 * vertex: the collision metric's half-space (docs/design.md §4), which on a coarse
 * mesh can lie outside the triangles. Negative: off (the default). The
 * deeper of the two tests decides each push. */
int drape_collider_set_vertex_margin(drape_collider *c, double margin, drape_error *err);

/* A memory for the n points drape_collider_project is given (the same n
 * each time, a cloth's vertices), kept between its calls:
 * - warm: each point's query starts from its last nearest triangle, so only
 *   triangles nearer than that one are looked at (the same nearest, found
 *   in fewer candidates);
 * - track: a point that was outside a triangle and is now behind it, by no
 *   more than that triangle's corners and the point moved since, is taken
 *   back to that triangle's side, whatever surface is nearest now: the body
 *   passed over it in the step (continuous collision for steps longer than
 *   the margin);
 * - cell > 0: the grid's cell edge (m), else a body triangle's width but at
 *   least the reach (smaller cells suit warm queries).
 * - with warm, a bound below each point's distance to the body, kept while
 *   it is known outside and carried across each update by the motion of
 *   the cells around it: a point that cannot have reached the margin is not
 *   queried (each update must be followed by a projection for the bound to
 *   hold: a second update first drops the bounds).
 * Always, the deep check: a point known outside at its last projection
 * (found at the margin or more, or beyond the reach and known before) that
 * now finds no triangle within the reach is known outside still only if
 * it cannot have crossed the surface since: |Δp − u| + M < reach, u the
 * body's mean step and M the largest step of any body vertex besides u.
 * Else it is looked for as far as |Δp − u| + M, and found inside there it
 * is pushed out, and counted, like any point inside.
 * With all three off the memory is kept for that check alone: the results
 * are those without it but where |Δp − u| + M reaches the reach. */
int drape_collider_set_points(drape_collider *c, int n, int warm, int track, double cell, drape_error *err);
/* Without warm, each point's query still starts from its last nearest
 * triangle as a guess, which only makes it cheaper: the answer is the plain
 * search's, bit for bit (mesh_distance). plain != 0 turns the guess off, for
 * the benchmark's peer. */
void drape_collider_set_plain_search(drape_collider *c, int plain);
/* point i's nearest triangle at the last projection (beyond the reach only
 * where the deep check looked there; -1: none found, or no memory for it) */
int drape_collider_point_face(const drape_collider *c, int i);
/* bytes held (mesh, grid, the points' memory) */
size_t drape_collider_bytes(const drape_collider *c);

/* Signed distance of p to the nearest collider surface (+INFINITY if none is
 * within reach); q [3] the surface point, n [3] the outward unit normal
 * there. */
double drape_collider_distance(const drape_collider *c, const double p[3], double q[3], double n[3]);

/* Contact response for x, v [n,3] (only where mask is NULL or mask[i] != 0):
 * a point closer than margin goes to q + margin·n. Its velocity relative to
 * the surface there (the mesh's: its last update's step over dt; dt <= 0 or
 * a sphere or capsule: still) loses its inward normal part, and Coulomb
 * friction takes up to friction × the normal speed removed (or the push over
 * dt, if larger) from its tangential part. Repeated (up to 3 passes) for
 * points that a push moved into another surface. Returns how many points
 * were in contact. Updates the points' memory (drape_collider_set_points). */
int drape_collider_project(drape_collider *c, double *x, double *v, const uint8_t *mask, int n, double margin,
                           double friction, double dt);

#endif
