/* Binary glTF writer: the container in C (header, chunks, JSON, accessors),
 * then three.js's GLTFLoader in node opens what we wrote. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/gltf.h"
#include "../core/status.h"
#include "util.h"

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* A w×h grid sheet: positions, UVs, normals, two triangles per cell. */
typedef struct {
    int n, nf;
    float *pos, *uv, *nrm;
    int32_t *faces;
} sheet;

static sheet make_sheet(int w, int h)
{
    sheet s = {w * h, 2 * (w - 1) * (h - 1), NULL, NULL, NULL, NULL};
    s.pos = malloc(sizeof(float) * 3 * (size_t)s.n);
    s.nrm = malloc(sizeof(float) * 3 * (size_t)s.n);
    s.uv = malloc(sizeof(float) * 2 * (size_t)s.n);
    s.faces = malloc(sizeof(int32_t) * 3 * (size_t)s.nf);
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            int v = j * w + i;
            s.pos[3 * v] = i * 0.1f - 0.5f, s.pos[3 * v + 1] = 1.2f - j * 0.05f, s.pos[3 * v + 2] = 0.01f * (float)(i % 3);
            s.nrm[3 * v] = 0, s.nrm[3 * v + 1] = 0, s.nrm[3 * v + 2] = 1;
            s.uv[2 * v] = (float)i / (float)(w - 1), s.uv[2 * v + 1] = (float)j / (float)(h - 1);
        }
    int f = 0;
    for (int j = 0; j + 1 < h; j++)
        for (int i = 0; i + 1 < w; i++) {
            int a = j * w + i, b = a + 1, c = a + w, d = c + 1;
            int32_t t[6] = {a, c, b, b, c, d};
            memcpy(s.faces + 3 * f, t, sizeof t);
            f += 2;
        }
    return s;
}

static void free_sheet(sheet *s)
{
    free(s->pos), free(s->uv), free(s->nrm), free(s->faces);
}

/* Checks the container and returns the parsed JSON chunk. */
static json_t *check_glb(const drape_buf *b)
{
    cr_assert_geq(b->len, 28);
    cr_assert_eq(memcmp(b->p, "glTF", 4), 0, "magic");
    cr_assert_eq(rd32(b->p + 4), 2, "version");
    cr_assert_eq(rd32(b->p + 8), b->len, "total length");
    uint32_t jl = rd32(b->p + 12);
    cr_assert_eq(jl % 4, 0, "JSON chunk aligned");
    cr_assert_eq(memcmp(b->p + 16, "JSON", 4), 0);
    cr_assert_leq(20 + jl + 8, b->len);
    const uint8_t *bc = b->p + 20 + jl;
    uint32_t bl = rd32(bc);
    cr_assert_eq(bl % 4, 0, "BIN chunk aligned");
    cr_assert_eq(memcmp(bc + 4, "BIN\0", 4), 0);
    cr_assert_eq(20 + jl + 8 + bl, b->len, "chunks fill the file");
    json_error_t je;
    json_t *j = json_loadb((const char *)b->p + 20, jl, 0, &je);
    cr_assert(j, "JSON chunk: %s", je.text);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "asset"), "version")), "2.0");
    json_int_t blen = json_integer_value(json_object_get(json_array_get(json_object_get(j, "buffers"), 0), "byteLength"));
    cr_assert_leq(blen, bl);
    cr_assert_geq(blen + 3, bl);
    /* every view lies inside the buffer, 4-aligned */
    json_t *views = json_object_get(j, "bufferViews"), *v;
    size_t i;
    json_array_foreach(views, i, v) {
        json_int_t off = json_integer_value(json_object_get(v, "byteOffset")),
                   len = json_integer_value(json_object_get(v, "byteLength"));
        cr_assert_eq(off % 4, 0);
        cr_assert_leq(off + len, blen);
    }
    return j;
}

static json_int_t accessor_count(json_t *j, const char *attr)
{
    json_t *prim = json_array_get(json_object_get(json_array_get(json_object_get(j, "meshes"), 0), "primitives"), 0);
    json_t *idx = strcmp(attr, "indices") ? json_object_get(json_object_get(prim, "attributes"), attr)
                                          : json_object_get(prim, "indices");
    if (!idx) return -1;
    json_t *acc = json_array_get(json_object_get(j, "accessors"), (size_t)json_integer_value(idx));
    return json_integer_value(json_object_get(acc, "count"));
}

/* The accessor's data, read back from the BIN chunk through its bufferView:
 * little-endian words that must be want's, bit for bit (floats' bits or
 * int32 indices), and nothing more in the view. */
static void check_data(json_t *j, const drape_buf *b, const char *attr, const void *want, size_t words)
{
    const uint8_t *bin = b->p + 20 + rd32(b->p + 12) + 8;
    json_t *prim = json_array_get(json_object_get(json_array_get(json_object_get(j, "meshes"), 0), "primitives"), 0);
    json_t *idx = strcmp(attr, "indices") ? json_object_get(json_object_get(prim, "attributes"), attr)
                                          : json_object_get(prim, "indices");
    cr_assert_not_null(idx, "%s", attr);
    json_t *acc = json_array_get(json_object_get(j, "accessors"), (size_t)json_integer_value(idx));
    cr_assert_eq(json_integer_value(json_object_get(acc, "componentType")), strcmp(attr, "indices") ? 5126 : 5125, "%s", attr);
    json_t *view = json_array_get(json_object_get(j, "bufferViews"), (size_t)json_integer_value(json_object_get(acc, "bufferView")));
    cr_assert_not_null(view, "%s", attr);
    /* byteOffset may be left out on either (glTF: default 0) */
    size_t off = (size_t)json_integer_value(json_object_get(view, "byteOffset")) +
                 (size_t)json_integer_value(json_object_get(acc, "byteOffset"));
    cr_assert_eq(json_integer_value(json_object_get(view, "byteLength")), (json_int_t)(4 * words), "%s", attr);
    const uint8_t *w = want;
    for (size_t i = 0; i < words; i++) {
        uint32_t u;
        memcpy(&u, w + 4 * i, 4);
        cr_assert_eq(rd32(bin + off + 4 * i), u, "%s word %zu", attr, i);
    }
}

Test(gltf, structure)
{
    sheet s = make_sheet(7, 5);
    drape_buf b = {0};
    cr_assert_eq(drape_gltf_write(&b, s.pos, s.n, s.uv, s.nrm, s.faces, s.nf, "skirt"), 0);
    json_t *j = check_glb(&b);
    cr_assert_eq(accessor_count(j, "POSITION"), 35);
    cr_assert_eq(accessor_count(j, "NORMAL"), 35);
    cr_assert_eq(accessor_count(j, "TEXCOORD_0"), 35);
    cr_assert_eq(accessor_count(j, "indices"), 3 * 48);
    json_t *pacc = json_array_get(json_object_get(j, "accessors"), 0);
    cr_assert_float_eq(json_real_value(json_array_get(json_object_get(pacc, "min"), 0)), -0.5, 1e-6);
    cr_assert_float_eq(json_real_value(json_array_get(json_object_get(pacc, "max"), 1)), 1.2, 1e-6);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "nodes"), 0), "name")), "skirt");
    /* the payload is the input's */
    check_data(j, &b, "POSITION", s.pos, 3 * (size_t)s.n);
    check_data(j, &b, "NORMAL", s.nrm, 3 * (size_t)s.n);
    check_data(j, &b, "TEXCOORD_0", s.uv, 2 * (size_t)s.n);
    check_data(j, &b, "indices", s.faces, 3 * (size_t)s.nf);
    json_decref(j);
    /* without normals and UVs; and appended after existing bytes */
    drape_buf c = {0};
    drape_buf_append(&c, "xyz", 3);
    cr_assert_eq(drape_gltf_write(&c, s.pos, s.n, NULL, NULL, s.faces, s.nf, NULL), 0);
    drape_buf tail = {c.p + 3, c.len - 3, 0};
    j = check_glb(&tail);
    cr_assert_eq(accessor_count(j, "NORMAL"), -1);
    cr_assert_eq(accessor_count(j, "TEXCOORD_0"), -1);
    cr_assert_eq(accessor_count(j, "POSITION"), 35);
    check_data(j, &tail, "POSITION", s.pos, 3 * (size_t)s.n);
    check_data(j, &tail, "indices", s.faces, 3 * (size_t)s.nf);
    json_decref(j);
    drape_buf_free(&c);
    drape_buf_free(&b);
    free_sheet(&s);
}

Test(gltf, rejects_bad_input)
{
    sheet s = make_sheet(3, 3);
    drape_buf b = {0};
    cr_assert_eq(drape_gltf_write(&b, s.pos, 0, NULL, NULL, s.faces, s.nf, NULL), DRAPE_EINVAL);
    cr_assert_eq(drape_gltf_write(&b, s.pos, s.n, NULL, NULL, s.faces, 0, NULL), DRAPE_EINVAL);
    cr_assert_eq(drape_gltf_write(&b, s.pos, s.n, NULL, NULL, s.faces, s.nf, "bad\xff"), DRAPE_EINVAL);
    s.faces[4] = s.n;
    cr_assert_eq(drape_gltf_write(&b, s.pos, s.n, NULL, NULL, s.faces, s.nf, NULL), DRAPE_EINVAL);
    s.faces[4] = -1;
    cr_assert_eq(drape_gltf_write(&b, s.pos, s.n, NULL, NULL, s.faces, s.nf, NULL), DRAPE_EINVAL);
    s.faces[4] = 0;
    s.uv[3] = NAN;
    cr_assert_eq(drape_gltf_write(&b, s.pos, s.n, s.uv, NULL, s.faces, s.nf, NULL), DRAPE_ENONFINITE);
    cr_assert_eq(b.len, 0);
    drape_buf_free(&b);
    free_sheet(&s);
}

/* three.js opens it: run tests/js/gltf_check.mjs under node when node and
 * web/node_modules are there (scripts/npm.sh installs them if npm can). */
Test(gltf, three_js_loader_opens_it)
{
    if (tu_run(NULL, 0, "command -v node") != 0) cr_skip_test("node not installed: three.js check skipped");
    if (access("web/node_modules/three", F_OK) != 0) {
        char out[4096];
        if (access("scripts/npm.sh", X_OK) != 0 ||
            tu_run(out, sizeof out, "timeout 150 scripts/npm.sh") != 0 || access("web/node_modules/three", F_OK) != 0)
            cr_skip_test("web/node_modules missing and scripts/npm.sh could not install it: three.js check skipped");
    }
    sheet s = make_sheet(9, 6);
    drape_buf b = {0};
    cr_assert_eq(drape_gltf_write(&b, s.pos, s.n, s.uv, s.nrm, s.faces, s.nf, "skirt"), 0);
    const char *path = tu_tmp("sheet.glb");
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(b.p, 1, b.len, f), b.len);
    fclose(f);
    char out[4096];
    int rc = tu_run(out, sizeof out, "node tests/js/gltf_check.mjs '%s'", path);
    cr_assert_eq(rc, 0, "gltf_check failed: %s", out);
    cr_assert(strstr(out, "\"vertices\":54"), "%s", out);
    cr_assert(strstr(out, "\"triangles\":80"), "%s", out);
    cr_assert(strstr(out, "\"meshes\":1"), "%s", out);
    cr_assert(strstr(out, "\"attributes\":[\"normal\",\"position\",\"uv\"]"), "%s", out);
    drape_buf_free(&b);
    free_sheet(&s);
}
