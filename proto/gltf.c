/* Binary glTF 2.0 writer (see gltf.h). Layout of the BIN chunk: positions,
 * normals, UVs, indices, each a bufferView; every piece is a multiple of 4
 * bytes, so no padding is needed between them. */
#include "gltf.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/status.h"
#include "ws.h"

enum {
    GL_FLOAT = 5126,
    GL_UNSIGNED_INT = 5125,
    GL_ARRAY_BUFFER = 34962,
    GL_ELEMENT_ARRAY_BUFFER = 34963,
    GL_TRIANGLES = 4
};

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Appends a bufferView and an accessor over it; returns the accessor index. */
static int add_view(json_t *views, json_t *accessors, size_t offset, size_t bytes, int target, int component,
                    int count, const char *type)
{
    json_array_append_new(views, json_pack("{s:i, s:I, s:I, s:i}", "buffer", 0, "byteOffset", (json_int_t)offset,
                                           "byteLength", (json_int_t)bytes, "target", target));
    json_array_append_new(accessors, json_pack("{s:i, s:i, s:i, s:s}", "bufferView", (int)json_array_size(views) - 1,
                                               "componentType", component, "count", count, "type", type));
    return (int)json_array_size(accessors) - 1;
}

static int append_floats(drape_buf *b, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &f[i], 4);
        uint8_t le[4];
        put_u32(le, u);
        if (drape_buf_append(b, le, 4)) return DRAPE_ENOMEM;
    }
    return DRAPE_OK;
}

static int all_finite(const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(f[i])) return 0;
    return 1;
}

int drape_gltf_write(drape_buf *out, const float *pos, int n_vertices, const float *uv, const float *normals,
                     const int32_t *faces, int n_faces, const char *name)
{
    if (!out || !pos || !faces || n_vertices <= 0 || n_faces <= 0 || n_faces > INT32_MAX / 3) return DRAPE_EINVAL;
    if (name && !drape_utf8_valid((const uint8_t *)name, strlen(name))) return DRAPE_EINVAL;
    size_t n = (size_t)n_vertices, nf = (size_t)n_faces;
    for (size_t i = 0; i < nf * 3; i++)
        if (faces[i] < 0 || faces[i] >= n_vertices) return DRAPE_EINVAL;
    if (!all_finite(pos, n * 3) || (uv && !all_finite(uv, n * 2)) || (normals && !all_finite(normals, n * 3)))
        return DRAPE_ENONFINITE;

    drape_buf bin = {0};
    json_t *views = json_array(), *accessors = json_array(), *attrs = json_object();
    int rc = DRAPE_OK;
    /* positions, with the bounds glTF requires on POSITION */
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) lo[k] = hi[k] = pos[k];
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], pos[3 * i + k]), hi[k] = fmaxf(hi[k], pos[3 * i + k]);
    rc |= append_floats(&bin, pos, n * 3);
    int acc = add_view(views, accessors, 0, n * 12, GL_ARRAY_BUFFER, GL_FLOAT, n_vertices, "VEC3");
    json_object_set_new(json_array_get(accessors, (size_t)acc), "min", json_pack("[f,f,f]", lo[0], lo[1], lo[2]));
    json_object_set_new(json_array_get(accessors, (size_t)acc), "max", json_pack("[f,f,f]", hi[0], hi[1], hi[2]));
    json_object_set_new(attrs, "POSITION", json_integer(acc));
    if (normals) {
        size_t off = bin.len;
        rc |= append_floats(&bin, normals, n * 3);
        acc = add_view(views, accessors, off, n * 12, GL_ARRAY_BUFFER, GL_FLOAT, n_vertices, "VEC3");
        json_object_set_new(attrs, "NORMAL", json_integer(acc));
    }
    if (uv) {
        size_t off = bin.len;
        rc |= append_floats(&bin, uv, n * 2);
        acc = add_view(views, accessors, off, n * 8, GL_ARRAY_BUFFER, GL_FLOAT, n_vertices, "VEC2");
        json_object_set_new(attrs, "TEXCOORD_0", json_integer(acc));
    }
    size_t ioff = bin.len;
    for (size_t i = 0; i < nf * 3 && !rc; i++) {
        uint8_t le[4];
        put_u32(le, (uint32_t)faces[i]);
        rc |= drape_buf_append(&bin, le, 4);
    }
    int idx = add_view(views, accessors, ioff, nf * 12, GL_ELEMENT_ARRAY_BUFFER, GL_UNSIGNED_INT, n_faces * 3, "SCALAR");

    const char *nm = name ? name : "garment";
    json_t *doc = json_pack("{s:{s:s, s:s}, s:i, s:[{s:[i]}], s:[{s:i, s:s}], s:[{s:s, s:[{s:o, s:i, s:i}]}],"
                            " s:[{s:I}], s:o, s:o}",
                            "asset", "version", "2.0", "generator", "drape", "scene", 0, "scenes", "nodes", 0,
                            "nodes", "mesh", 0, "name", nm, "meshes", "name", nm, "primitives", "attributes", attrs,
                            "indices", idx, "mode", GL_TRIANGLES, "buffers", "byteLength", (json_int_t)bin.len,
                            "bufferViews", views, "accessors", accessors);
    char *js = doc && !rc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!js) {
        drape_buf_free(&bin);
        free(js);
        return rc ? rc : DRAPE_ENOMEM;
    }
    size_t jl = strlen(js), jpad = (4 - jl % 4) % 4, bpad = (4 - bin.len % 4) % 4;
    size_t total = 12 + 8 + jl + jpad + 8 + bin.len + bpad;
    size_t start = out->len;
    if (total > UINT32_MAX || drape_buf_reserve(out, total)) {
        rc = total > UINT32_MAX ? DRAPE_EINVAL : DRAPE_ENOMEM;
    } else {
        uint8_t h[12];
        put_u32(h, 0x46546C67u); /* "glTF" */
        put_u32(h + 4, 2);
        put_u32(h + 8, (uint32_t)total);
        drape_buf_append(out, h, 12);
        put_u32(h, (uint32_t)(jl + jpad));
        put_u32(h + 4, 0x4E4F534Au); /* "JSON", padded with spaces */
        drape_buf_append(out, h, 8);
        drape_buf_append(out, js, jl);
        drape_buf_append(out, "   ", jpad);
        put_u32(h, (uint32_t)(bin.len + bpad));
        put_u32(h + 4, 0x004E4942u); /* "BIN\0", padded with zeros */
        drape_buf_append(out, h, 8);
        drape_buf_append(out, bin.p, bin.len);
        drape_buf_append(out, "\0\0\0", bpad);
        if (out->len != start + total) rc = DRAPE_ENOMEM;
    }
    free(js);
    drape_buf_free(&bin);
    return rc;
}
