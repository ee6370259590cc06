/* Wavefront OBJ meshes in and out: `v x y z` and `f a b c ...` (polygons are
 * fan-triangulated; `a/b/c` forms and negative indices are accepted). */
#ifndef DRAPE_OBJ_H
#define DRAPE_OBJ_H

#include <stdint.h>
#include <stdio.h>

#include "../core/status.h"

#define DRAPE_OBJ_MAX_VERTICES (1 << 24)

typedef struct {
    int n, F;
    double *v;      /* [n,3] */
    int32_t *faces; /* [F,3] */
} drape_obj;

int drape_obj_read(drape_obj *out, const char *path, drape_error *err);
/* The same from an open stream (fuzz/fuzz_obj.c reads from memory with
 * fmemopen); path only names it in messages. */
int drape_obj_fread(drape_obj *out, FILE *f, const char *path, drape_error *err);
int drape_obj_write(const char *path, const double *v, int n, const int32_t *faces, int F, drape_error *err);
void drape_obj_free(drape_obj *m);

#endif
