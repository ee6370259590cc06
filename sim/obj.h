/* Wavefront OBJ meshes in and out: `v x y z` and `f a b c ...` (polygons are
 * fan-triangulated; `a/b/c` forms and negative indices are accepted). */
#ifndef DRAPE_OBJ_H
#define DRAPE_OBJ_H

#include <stdint.h>
#include <stdio.h>

#include "../core/status.h"

#define DRAPE_OBJ_MAX_VERTICES (1 << 24)
#define DRAPE_OBJ_MAX_FACES (1 << 25) /* triangles, after fans: 3·F indices stay far inside an int */
/* |coordinate| at most, in the mesh's units (metres): a cloth's solve mixes
 * every vertex, so one at 1e308 turns all of them into NaN */
#define DRAPE_OBJ_MAX_COORD 1e6

typedef struct {
    int n, F;
    double *v;      /* [n,3] */
    int32_t *faces; /* [F,3] */
} drape_obj;

int drape_obj_read(drape_obj *out, const char *path, drape_error *err);
/* The same from an open stream (fuzz/fuzz_obj.c reads from memory with
 * fmemopen); path only names it in messages. */
int drape_obj_fread(drape_obj *out, FILE *f, const char *path, drape_error *err);
/* Refuses (DRAPE_ENONFINITE, nothing written) a vertex that is not finite. */
int drape_obj_write(const char *path, const double *v, int n, const int32_t *faces, int F, drape_error *err);
void drape_obj_free(drape_obj *m);

#endif
