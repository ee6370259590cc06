#include "garment_mesh.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void drape_gmesh_free(drape_gmesh *m)
{
    free(m->v);
    free(m->faces);
    free(m->uv);
    free(m->uv_faces);
    memset(m, 0, sizeof *m);
}

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) return 0;
    int c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ---- OBJ ---- */

static int parse_floats(const char *p, float *out, int n)
{
    for (int k = 0; k < n; k++) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno == ERANGE || !isfinite(x) || !isfinite((float)x)) return -1; /* 1e300 is inf as a float */
        out[k] = (float)x;
        p = end;
    }
    return 0;
}

static int obj_parse(drape_gmesh *m, const unsigned char *buf, size_t len, const char *path, drape_error *err)
{
    float *vt = NULL;
    int n_vt = 0, vcap = 0, vtcap = 0, fcap = 0, lineno = 0, rc = DRAPE_OK, with_uv = -1;
    int32_t *fuv = NULL; /* vt index per face corner, before the unused ones are dropped */
    char line[4096];
    for (size_t at = 0; at < len;) {
        size_t e = at;
        while (e < len && buf[e] != '\n') e++;
        lineno++;
        if (e - at >= sizeof line) { rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: line too long", path, lineno); goto done; }
        memcpy(line, buf + at, e - at);
        line[e - at] = 0;
        at = e + 1;
        if (line[0] == 'v' && (line[1] == ' ' || line[1] == '\t')) {
            float x[3];
            if (parse_floats(line + 2, x, 3)) {
                rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: a vertex needs three finite numbers", path, lineno);
                goto done;
            }
            for (int k = 0; k < 3; k++)
                if (fabsf(x[k]) > DRAPE_GMESH_MAX_COORD) {
                    rc = drape_fail(err, DRAPE_ERANGE, "%s:%d: coordinate %g is beyond ±%g m", path, lineno, x[k],
                                    DRAPE_GMESH_MAX_COORD);
                    goto done;
                }
            if (m->V >= DRAPE_GMESH_MAX_VERTICES) {
                rc = drape_fail(err, DRAPE_ERANGE, "%s: over %d vertices", path, DRAPE_GMESH_MAX_VERTICES);
                goto done;
            }
            if (grow((void **)&m->v, &vcap, 3 * (m->V + 1), sizeof(float))) goto oom;
            memcpy(m->v + 3 * m->V++, x, sizeof x);
        } else if (line[0] == 'v' && line[1] == 't' && (line[2] == ' ' || line[2] == '\t')) {
            float t[2];
            if (parse_floats(line + 3, t, 2)) {
                rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: a texture coordinate needs two finite numbers", path, lineno);
                goto done;
            }
            if (n_vt >= DRAPE_GMESH_MAX_VERTICES) {
                rc = drape_fail(err, DRAPE_ERANGE, "%s: over %d texture coordinates", path, DRAPE_GMESH_MAX_VERTICES);
                goto done;
            }
            if (grow((void **)&vt, &vtcap, 2 * (n_vt + 1), sizeof(float))) goto oom;
            memcpy(vt + 2 * n_vt++, t, sizeof t);
        } else if (line[0] == 'f' && (line[1] == ' ' || line[1] == '\t')) {
            int idx[64], tix[64], n = 0, has_t = 0;
            char *p = line + 2;
            for (;;) {
                while (*p == ' ' || *p == '\t' || *p == '\r') p++;
                if (!*p) break;
                char *end;
                long i = strtol(p, &end, 10), t = 0;
                if (end == p || n == 64) { rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: bad face", path, lineno); goto done; }
                p = end;
                int corner_t = 0;
                if (*p == '/') {
                    p++;
                    if (*p != '/') {
                        t = strtol(p, &end, 10);
                        if (end == p) { rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: bad face", path, lineno); goto done; }
                        p = end;
                        corner_t = 1;
                    }
                    if (*p == '/') { p++; strtol(p, &end, 10); p = end; } /* the normal: not used */
                }
                if (*p && *p != ' ' && *p != '\t' && *p != '\r') {
                    rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: bad face", path, lineno);
                    goto done;
                }
                i = i < 0 ? m->V + i : i - 1; /* 1-based; negatives count back */
                if (i < 0 || i >= m->V) {
                    rc = drape_fail(err, DRAPE_ERANGE, "%s:%d: face refers to vertex %ld, %d defined so far", path, lineno,
                                    i + 1, m->V);
                    goto done;
                }
                if (corner_t) {
                    t = t < 0 ? n_vt + t : t - 1;
                    if (t < 0 || t >= n_vt) {
                        rc = drape_fail(err, DRAPE_ERANGE, "%s:%d: face refers to texture coordinate %ld, %d defined so far",
                                        path, lineno, t + 1, n_vt);
                        goto done;
                    }
                }
                if (n && corner_t != has_t) {
                    rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: some corners of the face have a UV (vt) and some not", path,
                                    lineno);
                    goto done;
                }
                has_t = corner_t;
                idx[n] = (int)i, tix[n++] = (int)t;
            }
            if (n < 3) { rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: a face needs 3 vertices", path, lineno); goto done; }
            if (with_uv >= 0 && with_uv != has_t) {
                rc = drape_fail(err, DRAPE_EFORMAT, "%s:%d: this face %s UVs (vt) and an earlier one %s", path, lineno,
                                has_t ? "has" : "has no", has_t ? "has none" : "has");
                goto done;
            }
            with_uv = has_t;
            if (m->F + n - 2 > DRAPE_GMESH_MAX_FACES) {
                rc = drape_fail(err, DRAPE_ERANGE, "%s: over %d faces", path, DRAPE_GMESH_MAX_FACES);
                goto done;
            }
            int fc = fcap;
            if (grow((void **)&m->faces, &fcap, 3 * (m->F + n - 2), sizeof(int32_t))) goto oom;
            if (grow((void **)&fuv, &fc, 3 * (m->F + n - 2), sizeof(int32_t))) goto oom;
            for (int k = 1; k + 1 < n; k++) {
                int32_t *f = m->faces + 3 * m->F, *ft = fuv + 3 * m->F++;
                f[0] = idx[0], f[1] = idx[k], f[2] = idx[k + 1];
                ft[0] = tix[0], ft[1] = tix[k], ft[2] = tix[k + 1];
            }
        }
    }
    if (!m->V || !m->F) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: no vertices or no faces", path); goto done; }
    if (with_uv == 1) { /* keep the texture coordinates faces use, in their order */
        int32_t *map = malloc(sizeof *map * (size_t)(n_vt ? n_vt : 1));
        m->uv_faces = malloc(sizeof *m->uv_faces * 3 * (size_t)m->F);
        m->uv = malloc(sizeof *m->uv * 2 * (size_t)(n_vt ? n_vt : 1));
        if (!map || !m->uv_faces || !m->uv) { free(map); goto oom; }
        for (int t = 0; t < n_vt; t++) map[t] = -1;
        for (int c = 0; c < 3 * m->F; c++) {
            int t = fuv[c];
            if (map[t] < 0) {
                map[t] = m->Nuv;
                memcpy(m->uv + 2 * m->Nuv++, vt + 2 * t, 2 * sizeof(float));
            }
            m->uv_faces[c] = map[t];
        }
        free(map);
    }
    goto done;
oom:
    rc = drape_fail(err, DRAPE_ENOMEM, "%s: out of memory", path);
done:
    free(vt);
    free(fuv);
    if (rc) drape_gmesh_free(m);
    return rc;
}

/* ---- GLB ---- */

static uint32_t le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

typedef struct {
    const unsigned char *data; /* first element */
    size_t count, stride;
    int comp, ncomp;            /* componentType, components per element */
} accessor;

static int comp_size(int c) { return c == 5121 ? 1 : c == 5123 ? 2 : c == 5125 || c == 5126 ? 4 : 0; }

/* Resolves accessor a of the document against the binary chunk. */
static int get_accessor(accessor *out, json_t *doc, json_int_t a, const unsigned char *bin, size_t bin_len,
                        const char *path, const char *what, drape_error *err)
{
    json_t *acc = json_array_get(json_object_get(doc, "accessors"), (size_t)a);
    if (a < 0 || !json_is_object(acc)) return drape_fail(err, DRAPE_EFORMAT, "%s: %s: no accessor %lld", path, what, (long long)a);
    if (json_object_get(acc, "sparse"))
        return drape_fail(err, DRAPE_ENOTSUP, "%s: %s: sparse accessors are not supported", path, what);
    const char *type = json_string_value(json_object_get(acc, "type"));
    int ncomp = !type ? 0 : !strcmp(type, "SCALAR") ? 1 : !strcmp(type, "VEC2") ? 2 : !strcmp(type, "VEC3") ? 3 : 0;
    json_int_t comp = json_integer_value(json_object_get(acc, "componentType"));
    json_int_t count = json_integer_value(json_object_get(acc, "count"));
    json_int_t bv_i = json_integer_value(json_object_get(acc, "bufferView"));
    json_int_t off = json_integer_value(json_object_get(acc, "byteOffset"));
    json_t *bv = json_array_get(json_object_get(doc, "bufferViews"), (size_t)bv_i);
    if (!ncomp || !comp_size((int)comp) || count < 1 || count > DRAPE_GMESH_MAX_FACES * 3LL || off < 0 ||
        !json_is_integer(json_object_get(acc, "bufferView")) || bv_i < 0 || !json_is_object(bv))
        return drape_fail(err, DRAPE_EFORMAT, "%s: %s: accessor %lld is not a plain SCALAR/VEC2/VEC3 of a buffer view",
                          path, what, (long long)a);
    if (json_integer_value(json_object_get(bv, "buffer")) != 0 || json_object_get(json_array_get(json_object_get(doc, "buffers"), 0), "uri"))
        return drape_fail(err, DRAPE_ENOTSUP, "%s: %s: only the GLB's own binary chunk is read (no external buffers)",
                          path, what);
    json_int_t v_off = json_integer_value(json_object_get(bv, "byteOffset"));
    json_int_t v_len = json_integer_value(json_object_get(bv, "byteLength"));
    json_int_t stride = json_integer_value(json_object_get(bv, "byteStride"));
    size_t elem = (size_t)comp_size((int)comp) * ncomp;
    if (!stride) stride = (json_int_t)elem;
    /* signed compares first: a negative stride cast to size_t would wrap the
     * sum below round to a small number */
    if (v_off < 0 || v_len < 0 || stride < (json_int_t)elem || stride > 252 || (size_t)v_off > bin_len ||
        (size_t)v_len > bin_len - (size_t)v_off || off > v_len ||
        (size_t)off + (size_t)(count - 1) * (size_t)stride + elem > (size_t)v_len)
        return drape_fail(err, DRAPE_EFORMAT, "%s: %s: accessor %lld lies outside its buffer view or the file", path,
                          what, (long long)a);
    *out = (accessor){bin + v_off + off, (size_t)count, (size_t)stride, (int)comp, ncomp};
    return DRAPE_OK;
}

static double acc_get(const accessor *a, size_t i, int c)
{
    const unsigned char *p = a->data + i * a->stride + (size_t)c * comp_size(a->comp);
    switch (a->comp) {
    case 5121: return p[0];
    case 5123: return p[0] | p[1] << 8;
    case 5125: return le32(p);
    default: {
        uint32_t u = le32(p);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    }
}

/* true when a node's transform is the identity (absent, or written out as one) */
static int node_identity(const json_t *node)
{
    static const double I[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, R[4] = {0, 0, 0, 1}, S[3] = {1, 1, 1};
    const json_t *mx = json_object_get(node, "matrix"), *t = json_object_get(node, "translation"),
                 *r = json_object_get(node, "rotation"), *s = json_object_get(node, "scale");
    for (size_t i = 0; mx && i < 16; i++)
        if (json_number_value(json_array_get(mx, i)) != I[i] || json_array_size(mx) != 16) return 0;
    for (size_t i = 0; t && i < 3; i++)
        if (json_number_value(json_array_get(t, i)) != 0 || json_array_size(t) != 3) return 0;
    for (size_t i = 0; r && i < 4; i++)
        if (json_number_value(json_array_get(r, i)) != R[i] || json_array_size(r) != 4) return 0;
    for (size_t i = 0; s && i < 3; i++)
        if (json_number_value(json_array_get(s, i)) != S[i] || json_array_size(s) != 3) return 0;
    return 1;
}

typedef struct { float x[3]; int32_t i; } weld_key;

static int cmp_weld(const void *a, const void *b)
{
    const weld_key *p = a, *q = b;
    int c = memcmp(p->x, q->x, sizeof p->x);
    return c ? c : (p->i > q->i) - (p->i < q->i);
}

static int glb_parse(drape_gmesh *m, const unsigned char *buf, size_t len, const char *path, drape_error *err)
{
    if (len < 20 || le32(buf + 4) != 2 || le32(buf + 8) != len)
        return drape_fail(err, DRAPE_EFORMAT, "%s: not a glTF 2.0 binary (GLB) of this length", path);
    uint32_t jlen = le32(buf + 12);
    if (le32(buf + 16) != 0x4E4F534Au || jlen > len - 20)
        return drape_fail(err, DRAPE_EFORMAT, "%s: the GLB's first chunk is not its JSON", path);
    const unsigned char *bin = NULL;
    size_t bin_len = 0, at = 20 + (size_t)jlen;
    if (at + 8 <= len && le32(buf + at + 4) == 0x004E4942u) {
        bin_len = le32(buf + at);
        bin = buf + at + 8;
        if (bin_len > len - at - 8) return drape_fail(err, DRAPE_EFORMAT, "%s: the GLB's binary chunk runs past the file", path);
    }
    json_error_t je;
    json_t *doc = json_loadb((const char *)buf + 20, jlen, 0, &je);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return drape_fail(err, DRAPE_EFORMAT, "%s: the GLB's JSON is not valid: %s", path, je.text);
    }
    int rc = DRAPE_OK, vcap = 0, fcap = 0, n_corner = 0, ccap = 0, with_uv = -1;
    float *pos = NULL, *tex = NULL; /* per glTF vertex, all primitives */
    int32_t *tri = NULL;            /* glTF vertex per corner */
    weld_key *keys = NULL;
    int32_t *weld = NULL;
    json_t *mesh = json_array_get(json_object_get(doc, "meshes"), 0);
    json_t *prims = json_object_get(mesh, "primitives");
    if (!json_is_array(prims) || !json_array_size(prims)) {
        rc = drape_fail(err, DRAPE_EFORMAT, "%s: the GLB has no mesh with primitives", path);
        goto done;
    }
    json_t *nodes = json_object_get(doc, "nodes");
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        if (json_is_integer(json_object_get(n, "mesh")) && json_integer_value(json_object_get(n, "mesh")) == 0 &&
            !node_identity(n)) {
            rc = drape_fail(err, DRAPE_ENOTSUP, "%s: node %zu moves the mesh (a transform): apply it before export", path, i);
            goto done;
        }
    }
    int nv = 0;
    for (size_t p = 0; p < json_array_size(prims); p++) {
        json_t *pr = json_array_get(prims, p), *attrs = json_object_get(pr, "attributes");
        json_t *mode = json_object_get(pr, "mode");
        if (mode && json_integer_value(mode) != 4) {
            rc = drape_fail(err, DRAPE_ENOTSUP, "%s: primitive %zu is not triangles (mode %lld)", path, p,
                            (long long)json_integer_value(mode));
            goto done;
        }
        json_t *pa = json_object_get(attrs, "POSITION"), *ta = json_object_get(attrs, "TEXCOORD_0");
        if (!json_is_integer(pa)) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: primitive %zu has no POSITION", path, p); goto done; }
        accessor P, T = {0}, I = {0};
        if ((rc = get_accessor(&P, doc, json_integer_value(pa), bin, bin_len, path, "POSITION", err))) goto done;
        if (P.comp != 5126 || P.ncomp != 3) { rc = drape_fail(err, DRAPE_ENOTSUP, "%s: POSITION must be float VEC3", path); goto done; }
        int has_t = json_is_integer(ta);
        if (with_uv >= 0 && has_t != with_uv) {
            rc = drape_fail(err, DRAPE_EFORMAT, "%s: some primitives have TEXCOORD_0 and some not", path);
            goto done;
        }
        with_uv = has_t;
        if (has_t) {
            if ((rc = get_accessor(&T, doc, json_integer_value(ta), bin, bin_len, path, "TEXCOORD_0", err))) goto done;
            if (T.comp != 5126 || T.ncomp != 2 || T.count != P.count) {
                rc = drape_fail(err, DRAPE_ENOTSUP, "%s: TEXCOORD_0 must be float VEC2, one per vertex", path);
                goto done;
            }
        }
        json_t *ia = json_object_get(pr, "indices");
        size_t ncorner = P.count;
        if (ia) {
            if ((rc = get_accessor(&I, doc, json_integer_value(ia), bin, bin_len, path, "indices", err))) goto done;
            if (I.ncomp != 1 || I.comp == 5126) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: indices must be unsigned SCALAR", path); goto done; }
            ncorner = I.count;
        }
        if (ncorner % 3 || (size_t)nv + P.count > DRAPE_GMESH_MAX_VERTICES ||
            (size_t)n_corner + ncorner > 3 * (size_t)DRAPE_GMESH_MAX_FACES) {
            rc = drape_fail(err, DRAPE_ERANGE, "%s: primitive %zu: %zu corners (a multiple of 3, within the limits of "
                                               "%d vertices and %d faces)", path, p, ncorner, DRAPE_GMESH_MAX_VERTICES,
                            DRAPE_GMESH_MAX_FACES);
            goto done;
        }
        int vc = vcap;
        if (grow((void **)&pos, &vcap, 3 * (nv + (int)P.count), sizeof(float)) ||
            grow((void **)&tex, &vc, 3 * (nv + (int)P.count), sizeof(float)) ||
            grow((void **)&tri, &ccap, n_corner + (int)ncorner, sizeof(int32_t)))
            goto oom;
        for (size_t i = 0; i < P.count; i++) {
            for (int c = 0; c < 3; c++) {
                double x = acc_get(&P, i, c);
                if (!isfinite(x) || fabs(x) > DRAPE_GMESH_MAX_COORD) {
                    rc = drape_fail(err, DRAPE_ERANGE, "%s: POSITION %zu is not finite or beyond ±%g m", path, i,
                                    DRAPE_GMESH_MAX_COORD);
                    goto done;
                }
                pos[3 * (nv + i) + c] = (float)x + 0.0f; /* -0 welds with +0 */
            }
            for (int c = 0; has_t && c < 2; c++) {
                double t = acc_get(&T, i, c);
                if (!isfinite(t)) { rc = drape_fail(err, DRAPE_ENONFINITE, "%s: TEXCOORD_0 %zu is not finite", path, i); goto done; }
                tex[2 * (nv + i) + c] = c ? (float)(1 - t) : (float)t;
            }
        }
        for (size_t c = 0; c < ncorner; c++) {
            double i = ia ? acc_get(&I, c, 0) : (double)c;
            if (i >= (double)P.count) {
                rc = drape_fail(err, DRAPE_ERANGE, "%s: primitive %zu: index %.0f past its %zu vertices", path, p, i, P.count);
                goto done;
            }
            tri[n_corner + c] = nv + (int32_t)i;
        }
        nv += (int)P.count, n_corner += (int)ncorner;
    }
    (void)fcap;
    /* weld: one vertex per distinct position, numbered by first appearance */
    keys = malloc(sizeof *keys * (size_t)nv);
    weld = malloc(sizeof *weld * (size_t)nv);
    if (!keys || !weld) goto oom;
    for (int i = 0; i < nv; i++) memcpy(keys[i].x, pos + 3 * i, sizeof keys[i].x), keys[i].i = i;
    qsort(keys, (size_t)nv, sizeof *keys, cmp_weld);
    for (int s = 0; s < nv;) { /* each run of equal positions points at its first (lowest) member */
        int t = s;
        while (t < nv && !memcmp(keys[t].x, keys[s].x, sizeof keys[s].x)) weld[keys[t++].i] = keys[s].i;
        s = t;
    }
    int32_t *num = (int32_t *)keys; /* reused: the welded number of each first member */
    for (int i = 0; i < nv; i++) num[i] = -1;
    m->v = malloc(sizeof *m->v * 3 * (size_t)nv);
    m->faces = malloc(sizeof *m->faces * (size_t)n_corner);
    if (!m->v || !m->faces) goto oom;
    for (int i = 0; i < nv; i++)
        if (weld[i] == i) num[i] = m->V, memcpy(m->v + 3 * m->V++, pos + 3 * i, 3 * sizeof(float));
    m->F = n_corner / 3;
    for (int c = 0; c < n_corner; c++) m->faces[c] = num[weld[tri[c]]];
    if (with_uv == 1) {
        m->uv = malloc(sizeof *m->uv * 2 * (size_t)nv);
        m->uv_faces = malloc(sizeof *m->uv_faces * (size_t)n_corner);
        if (!m->uv || !m->uv_faces) goto oom;
        memcpy(m->uv, tex, sizeof *m->uv * 2 * (size_t)nv);
        memcpy(m->uv_faces, tri, sizeof *m->uv_faces * (size_t)n_corner);
        m->Nuv = nv;
    }
    if (!m->F) rc = drape_fail(err, DRAPE_EFORMAT, "%s: no faces", path);
    goto done;
oom:
    rc = drape_fail(err, DRAPE_ENOMEM, "%s: out of memory", path);
done:
    json_decref(doc);
    free(pos), free(tex), free(tri), free(keys), free(weld);
    if (rc) drape_gmesh_free(m);
    return rc;
}

int drape_gmesh_parse(drape_gmesh *out, const unsigned char *buf, size_t len, const char *path, drape_error *err)
{
    memset(out, 0, sizeof *out);
    if (len >= 4 && !memcmp(buf, "glTF", 4)) return glb_parse(out, buf, len, path, err);
    return obj_parse(out, buf, len, path, err);
}

int drape_gmesh_read(drape_gmesh *out, const char *path, drape_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return drape_fail(err, DRAPE_EIO, "cannot open %s: %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = DRAPE_OK;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            if (cap > (size_t)DRAPE_GMESH_MAX_BYTES + 1) cap = (size_t)DRAPE_GMESH_MAX_BYTES + 1;
            unsigned char *nb = len < cap ? realloc(buf, cap) : NULL;
            if (!nb) {
                rc = len > DRAPE_GMESH_MAX_BYTES ? drape_fail(err, DRAPE_ERANGE, "%s: over %u bytes", path, DRAPE_GMESH_MAX_BYTES)
                                                 : drape_fail(err, DRAPE_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (!got) break;
    }
    if (!rc && ferror(f)) rc = drape_fail(err, DRAPE_EIO, "cannot read %s", path);
    fclose(f);
    if (!rc) rc = drape_gmesh_parse(out, buf, len, path, err);
    free(buf);
    return rc;
}
