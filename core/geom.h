/* Geometry shared by the cloth engine, the colliders, the metrics and the
 * refine step: a uniform grid over boxes (rebuilt per frame without
 * reallocating) with nearest-point queries, interior edges with their two
 * opposite vertices (bending springs, dihedral angles), and the closest point
 * on a triangle. */
#ifndef DRAPE_GEOM_H
#define DRAPE_GEOM_H

#include <stdint.h>

/* Items (boxes) bucketed into cubic cells; an item sits in every cell its box
 * overlaps. Storage grows as needed and is kept across rebuilds. */
typedef struct {
    double lo[3], cell;
    int dim[3];
    int32_t *start;      /* [cells+1] CSR over items */
    int32_t *items;
    int64_t cap_cells, cap_items;
    float *ibox;         /* [items,6] each item's box in item order (drape_grid_keep_boxes), or NULL */
    float *cbox;         /* [cells,6] the union of each cell's item boxes (empty: inverted) */
    int64_t cap_ibox, cap_cbox;
    int n;               /* items (boxes) the grid was built on */
    int32_t *range;      /* [n,6] each box's first and last cell per axis, from the build's first pass */
    float *nbox;         /* [n,6] each box in float, rounded outward (drape_grid_keep_boxes) */
    int64_t cap_range, cap_nbox;
} drape_grid;

/* lo, hi [n,3]: item boxes. cell > 0: edge of a cell (grown when the grid
 * would exceed about 2M cells, whatever the span). Returns 0, DRAPE_ENOMEM,
 * DRAPE_ERANGE for a non-finite box or DRAPE_EINVAL for cell <= 0. */
int drape_grid_build(drape_grid *g, const double *lo, const double *hi, int n, double cell);
void drape_grid_free(drape_grid *g);
/* Calls visit(ctx, item) for every item in the cells overlapping [lo, hi]
 * (an item spanning several of those cells is visited more than once). */
void drape_grid_visit(const drape_grid *g, const double lo[3], const double hi[3], void (*visit)(void *, int),
                      void *ctx);

/* Copies the boxes the grid was just built on (the same lo, hi) beside its
 * items, in float rounded outward, for drape_grid_visit_near. Returns 0 or
 * DRAPE_ENOMEM. */
int drape_grid_keep_boxes(drape_grid *g, const double *lo, const double *hi);
/* drape_grid_visit for a nearest-item search around p: an item whose box
 * is at least *best (a squared distance, read before each item, so the
 * search may shrink it) from p is not visited, nor is a cell whose items'
 * boxes all are. The
 * copied boxes are never nearer than the true ones, so every item the
 * caller would have kept is visited, in drape_grid_visit's order: the same
 * answer, without reading the skipped items' own data. Needs
 * drape_grid_keep_boxes after each build. */
void drape_grid_visit_near(const drape_grid *g, const double lo[3], const double hi[3], const double p[3],
                           const double *best, void (*visit)(void *, int), void *ctx);

/* The first cell in drape_grid_visit's order over [qlo, qhi] that holds an
 * item with box [lo, hi] (the box it was built with): where that visit
 * first gives the item. -1: none. */
int64_t drape_grid_first_cell(const drape_grid *g, const double lo[3], const double hi[3], const double qlo[3],
                              const double qhi[3]);

/* The nearest of the points pts [n,3] to p, for a grid built on those points
 * (lo = hi = pts): found by growing boxes, ties to the lower index; -1 when
 * the grid holds none. */
int drape_grid_nearest(const drape_grid *g, const double *pts, const double p[3]);
/* The same nearest point, found from a guess: hint, one of the grid's points
 * (the nearer it is, the fewer cells are visited). budget (NULL: none) is
 * how many cells the caller still lets queries visit, decreased by each:
 * once spent, a query answers the nearest it has seen (the hint when it
 * could not start), so a caller's work stays bounded whatever the points. */
int drape_grid_nearest_hint(const drape_grid *g, const double *pts, const double p[3], int hint, int64_t *budget);

/* Interior edges of faces [F,3]: hinges [n,4] = (i, j, k, l) for an edge i–j
 * shared by exactly two triangles, k and l their opposite vertices; edges of
 * more than two triangles (non-manifold) and pairs with k == l are skipped.
 * *hinges is malloc'ed. Returns 0 or DRAPE_ENOMEM. */
int drape_hinges(int32_t **hinges, int *n, const int32_t *faces, int F);

/* Closest point q [3] on triangle (a, b, c) to p; w [3] its barycentric
 * weights (q = w0 a + w1 b + w2 c). Returns |p − q|². */
double drape_closest_on_triangle(double q[3], double w[3], const double p[3], const double a[3], const double b[3],
                                 const double c[3]);

#endif
