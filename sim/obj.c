#include "obj.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/outfile.h"

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) return 0;
    int c = *cap ? *cap * 2 : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

int drape_obj_fread(drape_obj *out, FILE *f, const char *path, drape_error *err)
{
    memset(out, 0, sizeof *out);
    char line[4096];
    int vcap = 0, fcap = 0, lineno = 0, rc = DRAPE_OK;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) { rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: line too long", path, lineno); break; }
        if (line[0] == 'v' && line[1] == ' ') {
            double x[3];
            char *p = line + 2, *end;
            for (int k = 0; k < 3; k++, p = end) {
                errno = 0;
                x[k] = strtod(p, &end);
                if (end == p || errno == ERANGE || !isfinite(x[k])) {
                    rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: vertex needs three finite numbers", path, lineno);
                    goto done;
                }
                if (fabs(x[k]) > DRAPE_OBJ_MAX_COORD) {
                    rc = drape_fail(err, DRAPE_ERANGE, "%s:%d: vertex coordinate %g is beyond ±%g", path, lineno, x[k],
                                    DRAPE_OBJ_MAX_COORD);
                    goto done;
                }
            }
            if (out->n >= DRAPE_OBJ_MAX_VERTICES || grow((void **)&out->v, &vcap, 3 * (out->n + 1), sizeof(double))) {
                rc = drape_fail(err, DRAPE_ENOMEM, "%s: too many vertices", path);
                goto done;
            }
            memcpy(out->v + 3 * out->n++, x, sizeof x);
        } else if (line[0] == 'f' && line[1] == ' ') {
            int idx[64], m = 0;
            char *p = line + 2;
            for (;;) {
                while (*p == ' ' || *p == '\t') p++;
                if (*p == '\n' || *p == '\r' || *p == 0) break;
                char *end;
                long i = strtol(p, &end, 10);
                if (end == p || m == 64) {
                    rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: bad face", path, lineno);
                    goto done;
                }
                i = i < 0 ? out->n + i : i - 1; /* OBJ is 1-based; negatives count back */
                if (i < 0 || i >= out->n) {
                    rc = drape_fail(err, DRAPE_ERANGE, "%s:%d: face refers to vertex %ld, %d defined so far", path,
                                    lineno, i + 1, out->n);
                    goto done;
                }
                idx[m++] = (int)i;
                p = end;
                while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') p++; /* skip /vt/vn */
            }
            if (m < 3) { rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: a face needs 3 vertices", path, lineno); goto done; }
            if (out->F + m - 2 > DRAPE_OBJ_MAX_FACES) {
                rc = drape_fail(err, DRAPE_ERANGE, "%s:%d: more than %d triangles", path, lineno, DRAPE_OBJ_MAX_FACES);
                goto done;
            }
            if (grow((void **)&out->faces, &fcap, 3 * (out->F + m - 2), sizeof(int32_t))) {
                rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
                goto done;
            }
            for (int t = 1; t + 1 < m; t++) {
                int32_t *tri = out->faces + 3 * out->F++;
                tri[0] = idx[0], tri[1] = idx[t], tri[2] = idx[t + 1];
            }
        }
    }
    if (!rc && (out->n == 0 || out->F == 0)) rc = drape_fail(err, DRAPE_EFORMAT, "%s: no vertices or no faces", path);
done:
    if (rc) drape_obj_free(out);
    return rc;
}

int drape_obj_read(drape_obj *out, const char *path, drape_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) return drape_fail(err, DRAPE_EIO, "cannot open %s", path);
    int rc = drape_obj_fread(out, f, path, err);
    fclose(f);
    return rc;
}

int drape_obj_write(const char *path, const double *v, int n, const int32_t *faces, int F, drape_error *err)
{
    for (int i = 0; i < 3 * n; i++)
        if (!isfinite(v[i]))
            return drape_fail(err, DRAPE_ENONFINITE, "%s: vertex %d is not finite; nothing written", path, i / 3);
    drape_outfile o;
    int rc = drape_outfile_open(&o, path, "w", err);
    if (rc) return rc;
    int ok = 1;
    for (int i = 0; ok && i < n; i++) ok = fprintf(o.f, "v %.17g %.17g %.17g\n", v[3 * i], v[3 * i + 1], v[3 * i + 2]) > 0;
    for (int i = 0; ok && i < F; i++) ok = fprintf(o.f, "f %d %d %d\n", faces[3 * i] + 1, faces[3 * i + 1] + 1, faces[3 * i + 2] + 1) > 0;
    return drape_outfile_close(&o, ok, err);
}

void drape_obj_free(drape_obj *m)
{
    free(m->v);
    free(m->faces);
    m->v = NULL;
    m->faces = NULL;
}
