/* Vertex formats on the wire (see pack.h). */
#include "pack.h"

#include <float.h>
#include <math.h>
#include <meshoptimizer.h>
#include <stdlib.h>
#include <string.h>

#include "../core/pack16.h"
#include "../core/status.h"

static const char *const format_names[DRAPE_FMT_COUNT] = {"f32", "f16", "q16", "meshopt"};

int drape_format_parse(const char *name)
{
    for (int i = 0; name && i < DRAPE_FMT_COUNT; i++)
        if (!strcmp(name, format_names[i])) return i;
    return -1;
}

const char *drape_format_name(int fmt)
{
    return fmt >= 0 && fmt < DRAPE_FMT_COUNT ? format_names[fmt] : "unknown";
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- pack / unpack ---- */

static uint16_t get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* the q16 value: core/pack16.h, the one copy the CUDA packer shares */
static uint16_t quantize(float x, float lo, float hi) { return hd_quantize16(x, lo, hi); }

static float dequantize(uint16_t q, float lo, float hi)
{
    return (float)(lo + (double)q / 65535.0 * ((double)hi - lo));
}

/* the q16 values of vertex i, axis k */
static void quantize_all(uint16_t *q, int stride, const float *xyz, int n, const float bbox[6])
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) q[(size_t)i * stride + k] = quantize(xyz[3 * (size_t)i + k], bbox[k], bbox[3 + k]);
}

int drape_pack(drape_buf *out, float bbox[6], int fmt, const float *xyz, int n)
{
    if (n < 0 || fmt < 0 || fmt >= DRAPE_FMT_COUNT || (n && !xyz)) return DRAPE_EINVAL;
    int rc = drape_pack_bbox(bbox, xyz, n);
    if (rc) return rc;
    size_t nv = (size_t)n;
    switch (fmt) {
    case DRAPE_FMT_F32: {
        if (drape_buf_reserve(out, nv * 12)) return DRAPE_ENOMEM;
        for (size_t i = 0; i < nv * 3; i++) {
            uint32_t u = f32_bits(xyz[i]);
            uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
            drape_buf_append(out, b, 4);
        }
        return DRAPE_OK;
    }
    case DRAPE_FMT_F16:
    case DRAPE_FMT_Q16: {
        /* the CUDA backend's packer writes the same bytes (core/pack16.h) */
        if (drape_buf_reserve(out, nv * 6)) return DRAPE_ENOMEM;
        int rc = drape_pack16(out->p + out->len, bbox, fmt == DRAPE_FMT_F16 ? DRAPE_PACK_F16 : DRAPE_PACK_Q16, xyz, n);
        if (!rc) out->len += nv * 6;
        return rc;
    }
    default: { /* meshopt: the codec reads native uint16, which is little-endian on our targets */
        uint16_t *q = calloc(nv ? nv * 4 : 1, sizeof *q);
        if (!q) return DRAPE_ENOMEM;
        quantize_all(q, 4, xyz, n, bbox);
        size_t bound = meshopt_encodeVertexBufferBound(nv, 8);
        int rc = drape_buf_reserve(out, bound);
        if (!rc) {
            size_t w = meshopt_encodeVertexBuffer(out->p + out->len, bound, q, nv, 8);
            if (w == 0) rc = DRAPE_EINVAL;
            out->len += w;
        }
        free(q);
        return rc;
    }
    }
}

int drape_unpack(float *xyz, int n, int fmt, const float bbox[6], const uint8_t *data, size_t len)
{
    if (n < 0 || fmt < 0 || fmt >= DRAPE_FMT_COUNT || (n && !xyz) || (len && !data)) return DRAPE_EINVAL;
    size_t nv = (size_t)n;
    if (fmt == DRAPE_FMT_Q16 || fmt == DRAPE_FMT_MESHOPT) {
        if (!bbox) return DRAPE_EINVAL;
        for (int k = 0; k < 3; k++)
            if (!isfinite(bbox[k]) || !isfinite(bbox[3 + k]) || bbox[k] > bbox[3 + k]) return DRAPE_EFORMAT;
    }
    switch (fmt) {
    case DRAPE_FMT_F32:
        if (len != nv * 12) return DRAPE_EFORMAT;
        for (size_t i = 0; i < nv * 3; i++) {
            const uint8_t *p = data + 4 * i;
            xyz[i] = bits_f32((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        }
        return DRAPE_OK;
    case DRAPE_FMT_F16:
    case DRAPE_FMT_Q16:
        if (len != nv * 6) return DRAPE_EFORMAT;
        for (size_t i = 0; i < nv * 3; i++) {
            uint16_t v = get_u16(data + 2 * i);
            xyz[i] = fmt == DRAPE_FMT_F16 ? drape_f16_to_f32(v) : dequantize(v, bbox[i % 3], bbox[3 + i % 3]);
        }
        return DRAPE_OK;
    default: {
        uint16_t *q = malloc(nv ? nv * 8 : 1);
        if (!q) return DRAPE_ENOMEM;
        int rc = meshopt_decodeVertexBuffer(q, nv, 8, data, len) == 0 ? DRAPE_OK : DRAPE_EFORMAT;
        for (size_t i = 0; !rc && i < nv; i++)
            for (int k = 0; k < 3; k++) xyz[3 * i + k] = dequantize(q[4 * i + k], bbox[k], bbox[3 + k]);
        free(q);
        return rc;
    }
    }
}

float drape_pack_error_bound(int fmt, const float bbox[6])
{
    float m = 0, ext = 0;
    for (int k = 0; k < 3; k++) {
        m = fmaxf(m, fmaxf(fabsf(bbox[k]), fabsf(bbox[3 + k])));
        ext = fmaxf(ext, bbox[3 + k] - bbox[k]);
    }
    switch (fmt) {
    case DRAPE_FMT_F32:
        return 0;
    case DRAPE_FMT_F16:
        /* half an ulp: 2^-11 relative for normals, 2^-25 absolute for subnormals */
        if (m >= 65520.0f) return INFINITY;
        return m * 0x1p-11f + 0x1p-25f;
    default:
        /* half a quantization step, plus the float rounding of the decode (½ ulp,
         * doubled for margin) */
        return ext / 131070.0f + FLT_EPSILON * m;
    }
}
