/* Vertex formats: round trips within the stated bound, half-float edge
 * cases, corrupt and short input. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/pack.h"
#include "../core/pack16.h"
#include "../core/status.h"
#include "util.h"

/* Packs, checks the bbox and the round trip against the bound; returns the packed size. */
static size_t round_trip(int fmt, const float *xyz, int n)
{
    drape_buf b = {0};
    float bbox[6];
    cr_assert_eq(drape_pack(&b, bbox, fmt, xyz, n), 0, "%s n=%d", drape_format_name(fmt), n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            cr_assert_geq(xyz[3 * i + k], bbox[k]);
            cr_assert_leq(xyz[3 * i + k], bbox[3 + k]);
        }
    float *back = malloc(((size_t)n * 3 + 1) * sizeof *back);
    cr_assert_eq(drape_unpack(back, n, fmt, bbox, b.p, b.len), 0, "%s n=%d", drape_format_name(fmt), n);
    float bound = drape_pack_error_bound(fmt, bbox);
    double err = tu_max_abs_diff(xyz, back, (int64_t)n * 3);
    cr_assert_leq(err, bound, "%s n=%d: error %g > bound %g", drape_format_name(fmt), n, err, bound);
    free(back);
    size_t len = b.len;
    drape_buf_free(&b);
    return len;
}

static float *random_cloud(int n, float scale, float offset, uint64_t seed)
{
    float *x = malloc(((size_t)n * 3 + 1) * sizeof *x);
    uint64_t s = seed;
    for (int i = 0; i < 3 * n; i++) x[i] = offset + scale * tu_rand(&s);
    return x;
}

Test(pack, format_names)
{
    for (int f = 0; f < DRAPE_FMT_COUNT; f++) cr_assert_eq(drape_format_parse(drape_format_name(f)), f);
    cr_assert_eq(drape_format_parse("f64"), -1);
    cr_assert_eq(drape_format_parse(NULL), -1);
    cr_assert_str_eq(drape_format_name(99), "unknown");
}

Test(pack, random_round_trips)
{
    const int sizes[] = {1, 2, 7, 100, 4424};
    for (int f = 0; f < DRAPE_FMT_COUNT; f++)
        for (int s = 0; s < 5; s++) {
            float *x = random_cloud(sizes[s], 0.8f, 0.3f, 11 + (uint64_t)s);
            size_t len = round_trip(f, x, sizes[s]);
            if (f == DRAPE_FMT_F32) cr_assert_eq(len, (size_t)sizes[s] * 12);
            if (f == DRAPE_FMT_F16 || f == DRAPE_FMT_Q16) cr_assert_eq(len, (size_t)sizes[s] * 6);
            free(x);
            x = random_cloud(sizes[s], 300.0f, -1000.0f, 5 + (uint64_t)s); /* far from the origin */
            round_trip(f, x, sizes[s]);
            free(x);
        }
}

Test(pack, q16_bound_is_the_stated_one)
{
    float bbox[6] = {0, 0, 0, 1, 2, 0.5f};
    float b = drape_pack_error_bound(DRAPE_FMT_Q16, bbox);
    cr_assert_geq(b, 2.0f / 131070);
    cr_assert_leq(b, 2.0f / 131070 + 2 * FLT_EPSILON);
    cr_assert_eq(drape_pack_error_bound(DRAPE_FMT_F32, bbox), 0);
}

/* f16's bound is docs/protocol.md's M·2^-11 + 2^-25, M the largest |coordinate|
 * of the box (a negative minimum counts), exactly; infinite from 65520 up,
 * where halves overflow (65519 still rounds down to 65504). */
Test(pack, f16_bound_is_the_stated_one)
{
    float box[6] = {0, 0, 0, 1, 2, 0.5f};
    cr_assert_eq(drape_pack_error_bound(DRAPE_FMT_F16, box), 0x1p-10f + 0x1p-25f, "M = 2: %a",
                 drape_pack_error_bound(DRAPE_FMT_F16, box));
    float neg[6] = {-3, -0.25f, 0, 1, 2, 0.5f}; /* M = 3, from the minimum */
    cr_assert_eq(drape_pack_error_bound(DRAPE_FMT_F16, neg), 3 * 0x1p-11f + 0x1p-25f, "M = 3: %a",
                 drape_pack_error_bound(DRAPE_FMT_F16, neg));
    float zero[6] = {0};
    cr_assert_eq(drape_pack_error_bound(DRAPE_FMT_F16, zero), 0x1p-25f);
    float top[6] = {0, 0, 0, 0, 65519, 0};
    cr_assert_eq(drape_pack_error_bound(DRAPE_FMT_F16, top), 65519 * 0x1p-11f + 0x1p-25f);
    float over[6] = {-65520, 0, 0, 0, 0, 0};
    cr_assert(isinf(drape_pack_error_bound(DRAPE_FMT_F16, over)));
}

Test(pack, smooth_mesh_compresses_with_meshopt)
{
    /* a gridded sheet like a garment: meshopt must beat raw q16 */
    int w = 64, n = w * w;
    float *x = malloc((size_t)n * 3 * sizeof *x);
    for (int i = 0; i < w; i++)
        for (int j = 0; j < w; j++) {
            float *p = x + 3 * (i * w + j);
            p[0] = i * 0.01f, p[1] = 0.1f * sinf(i * 0.1f) * cosf(j * 0.1f), p[2] = j * 0.01f;
        }
    size_t q = round_trip(DRAPE_FMT_Q16, x, n), m = round_trip(DRAPE_FMT_MESHOPT, x, n);
    cr_assert_lt(m, q, "meshopt %zu bytes vs q16 %zu", m, q);
    free(x);
}

Test(pack, degenerate_inputs)
{
    float one[3] = {1.5f, -2, 3};
    float flat[12] = {0, 1, 2, 1, 1, 2, 2, 1, 2, 3, 1, 2}; /* y and z constant */
    for (int f = 0; f < DRAPE_FMT_COUNT; f++) {
        round_trip(f, NULL, 0);
        round_trip(f, one, 1);
        round_trip(f, flat, 4);
    }
    drape_buf b = {0};
    float bbox[6];
    cr_assert_eq(drape_pack(&b, bbox, DRAPE_FMT_F16, NULL, 0), 0);
    for (int k = 0; k < 6; k++) cr_assert_eq(bbox[k], 0);
    cr_assert_eq(drape_pack(&b, bbox, DRAPE_FMT_COUNT, one, 1), DRAPE_EINVAL);
    cr_assert_eq(drape_pack(&b, bbox, DRAPE_FMT_F32, one, -1), DRAPE_EINVAL);
    float bad[3] = {0, NAN, 0};
    cr_assert_eq(drape_pack(&b, bbox, DRAPE_FMT_Q16, bad, 1), DRAPE_ENONFINITE);
    drape_buf_free(&b);
}

Test(pack, corrupt_and_short_input)
{
    float *x = random_cloud(50, 1, 0, 3), y[150];
    for (int f = 0; f < DRAPE_FMT_COUNT; f++) {
        drape_buf b = {0};
        float bbox[6];
        cr_assert_eq(drape_pack(&b, bbox, f, x, 50), 0);
        cr_assert_eq(drape_unpack(y, 50, f, bbox, b.p, b.len - 1), DRAPE_EFORMAT, "%s short", drape_format_name(f));
        /* (meshopt's stream does not record its count: the frame's count does) */
        if (f != DRAPE_FMT_MESHOPT)
            cr_assert_eq(drape_unpack(y, 51, f, bbox, b.p, b.len), DRAPE_EFORMAT, "%s wrong n", drape_format_name(f));
        cr_assert_eq(drape_unpack(y, 50, f, bbox, b.p, 0), DRAPE_EFORMAT, "%s empty", drape_format_name(f));
        if (f == DRAPE_FMT_Q16 || f == DRAPE_FMT_MESHOPT) {
            float inv[6] = {1, 0, 0, 0, 1, 1};
            cr_assert_eq(drape_unpack(y, 50, f, inv, b.p, b.len), DRAPE_EFORMAT, "%s min > max", drape_format_name(f));
        }
        drape_buf_free(&b);
    }
    /* meshopt: a wrong header byte, and garbage */
    drape_buf b = {0};
    float bbox[6];
    cr_assert_eq(drape_pack(&b, bbox, DRAPE_FMT_MESHOPT, x, 50), 0);
    b.p[0] ^= 0xFF;
    cr_assert_eq(drape_unpack(y, 50, DRAPE_FMT_MESHOPT, bbox, b.p, b.len), DRAPE_EFORMAT);
    uint8_t junk[64];
    memset(junk, 0xA0, sizeof junk);
    cr_assert_eq(drape_unpack(y, 50, DRAPE_FMT_MESHOPT, bbox, junk, sizeof junk), DRAPE_EFORMAT);
    drape_buf_free(&b);
    free(x);
}

Test(pack, half_float_edge_cases)
{
    /* exact values */
    cr_assert_eq(drape_f32_to_f16(0.0f), 0x0000);
    cr_assert_eq(drape_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(drape_f32_to_f16(1.0f), 0x3C00);
    cr_assert_eq(drape_f32_to_f16(-2.0f), 0xC000);
    cr_assert_eq(drape_f32_to_f16(65504.0f), 0x7BFF);
    cr_assert_eq(drape_f32_to_f16(0x1p-14f), 0x0400);  /* smallest normal */
    cr_assert_eq(drape_f32_to_f16(0x1p-24f), 0x0001);  /* smallest subnormal */
    cr_assert_eq(drape_f32_to_f16(0x1.ff8p-15f), 0x03FF + 0); /* largest subnormal 1023·2^-24 */
    /* overflow and specials */
    cr_assert_eq(drape_f32_to_f16(65520.0f), 0x7C00);  /* rounds up to inf */
    cr_assert_eq(drape_f32_to_f16(65519.0f), 0x7BFF);
    cr_assert_eq(drape_f32_to_f16(1e10f), 0x7C00);
    cr_assert_eq(drape_f32_to_f16(-INFINITY), 0xFC00);
    cr_assert((drape_f32_to_f16(NAN) & 0x7C00) == 0x7C00 && (drape_f32_to_f16(NAN) & 0x3FF));
    /* round to nearest even: 1 + 2^-11 is a tie → 1; 1 + 3·2^-11 → 1 + 2^-9 */
    cr_assert_eq(drape_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
    cr_assert_eq(drape_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
    cr_assert_eq(drape_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
    /* subnormal ties: 2^-25 → 0, 3·2^-25 → 2·2^-24, just over 2^-25 → 2^-24 */
    cr_assert_eq(drape_f32_to_f16(0x1p-25f), 0x0000);
    cr_assert_eq(drape_f32_to_f16(3 * 0x1p-25f), 0x0002);
    cr_assert_eq(drape_f32_to_f16(0x1.01p-25f), 0x0001);
    cr_assert_eq(drape_f32_to_f16(0x1p-26f), 0x0000);
    /* a subnormal that rounds up into the smallest normal */
    cr_assert_eq(drape_f32_to_f16(0x1.fffp-15f), 0x0400);
    /* decoding */
    cr_assert_eq(drape_f16_to_f32(0x3C00), 1.0f);
    cr_assert_eq(drape_f16_to_f32(0x0001), 0x1p-24f);
    cr_assert_eq(drape_f16_to_f32(0x8001), -0x1p-24f);
    cr_assert_eq(drape_f16_to_f32(0x7BFF), 65504.0f);
    cr_assert(isinf(drape_f16_to_f32(0x7C00)));
    cr_assert(isnan(drape_f16_to_f32(0x7E00)));
    /* every finite half round-trips exactly */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7C00) == 0x7C00) continue;
        cr_assert_eq(drape_f32_to_f16(drape_f16_to_f32((uint16_t)h)), h, "half 0x%04x", h);
    }
}

/* The browser's decoder (meshoptimizer from npm, run in node) reads what
 * drape_pack writes, value for value; skipped without node/web/node_modules. */
Test(pack, meshopt_decodes_in_javascript)
{
    if (tu_run(NULL, 0, "command -v node") != 0 || access("web/node_modules/meshoptimizer", F_OK) != 0)
        cr_skip_test("node or web/node_modules missing (scripts/npm.sh installs it): JavaScript decoder check skipped");
    int n = 300;
    float *x = random_cloud(n, 0.6f, 0.1f, 99);
    drape_buf b = {0};
    float bbox[6];
    cr_assert_eq(drape_pack(&b, bbox, DRAPE_FMT_MESHOPT, x, n), 0);
    const char *path = tu_tmp("v.meshopt");
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(b.p, 1, b.len, f), b.len);
    fclose(f);
    static char out[65536];
    int rc = tu_run(out, sizeof out, "node tests/js/meshopt_check.mjs '%s' %d", path, n);
    cr_assert_eq(rc, 0, "%s", out);
    /* compare with q16 packed in C, padded with the 4th zero */
    drape_buf q = {0};
    cr_assert_eq(drape_pack(&q, bbox, DRAPE_FMT_Q16, x, n), 0);
    const char *p = out;
    cr_assert_eq(*p++, '[', "%s", out);
    for (int i = 0; i < n * 4; i++) {
        char *end;
        long v = strtol(p, &end, 10);
        cr_assert_neq(end, p, "value %d missing", i);
        long want = i % 4 == 3 ? 0 : (long)(q.p[2 * (i / 4 * 3 + i % 4)] | q.p[2 * (i / 4 * 3 + i % 4) + 1] << 8);
        cr_assert_eq(v, want, "value %d: %ld vs %ld", i, v, want);
        p = end + 1;
    }
    drape_buf_free(&q);
    drape_buf_free(&b);
    free(x);
}

/* The 16-bit formats' shared body (core/pack16.h), which the CUDA backend
 * packs frames with: drape_pack16 writes drape_pack's bytes and bbox, also in
 * place over the positions, and refuses NaN/Inf; and the device's parallel
 * box (threads over strided vertices, then a shuffle tree, hd_bbox_pick's tie
 * rule) is the host loop's bit for bit, ±0 included. */
Test(pack, pack16_is_the_wire_packer)
{
    const int sizes[] = {1, 3, 100, 4424};
    for (int si = 0; si < 4; si++) {
        int n = sizes[si];
        float *x = random_cloud(n, 0.8f, 0.1f, 70 + (uint64_t)si);
        /* ties between +0 and −0 at the box, in both orders */
        if (n >= 3) {
            x[0] = 0.0f, x[3] = -0.0f;
            x[4] = -0.0f, x[7] = 0.0f;
            for (int i = 0; i < 3 * n; i++)
                if (i % 3 != 2 && x[i] < 0) x[i] = -x[i]; /* x and y ≥ ±0: the minima are the zeros */
        }
        for (int f = DRAPE_FMT_F16; f <= DRAPE_FMT_Q16; f++) {
            drape_buf b = {0};
            float bbox[6], bb[6], bb2[6];
            cr_assert_eq(drape_pack(&b, bbox, f, x, n), 0);
            int pf = f == DRAPE_FMT_F16 ? DRAPE_PACK_F16 : DRAPE_PACK_Q16;
            uint8_t *out = malloc((size_t)n * 6);
            cr_assert_eq(drape_pack16(out, bb, pf, x, n), 0);
            cr_assert(memcmp(out, b.p, (size_t)n * 6) == 0 && memcmp(bb, bbox, sizeof bb) == 0, "%s n=%d",
                      drape_format_name(f), n);
            float *y = malloc(sizeof(float) * 3 * (size_t)n);
            memcpy(y, x, sizeof(float) * 3 * (size_t)n);
            cr_assert_eq(drape_pack16((uint8_t *)y, bb2, pf, y, n), 0);
            cr_assert(memcmp(y, b.p, (size_t)n * 6) == 0 && memcmp(bb2, bbox, sizeof bb) == 0, "in place n=%d", n);
            /* the device's box: 96 threads (3 warps) over strided vertices */
            enum { T = 96 };
            float tv[T][6];
            int ti[T][6];
            for (int t = 0; t < T; t++)
                for (int k = 0; k < 6; k++) {
                    tv[t][k] = 0;
                    ti[t][k] = -1;
                    for (int v = t; v < n; v += T) hd_bbox_pick(&tv[t][k], &ti[t][k], x[3 * v + k % 3], v, k >= 3);
                }
            for (int w = 0; w < T / 32; w++) /* __shfl_down_sync within each warp */
                for (int o = 16; o > 0; o >>= 1)
                    for (int l = 0; l + o < 32; l++)
                        for (int k = 0; k < 6; k++)
                            hd_bbox_pick(&tv[32 * w + l][k], &ti[32 * w + l][k], tv[32 * w + l + o][k],
                                         ti[32 * w + l + o][k], k >= 3);
            for (int k = 0; k < 6; k++) {
                float v = tv[0][k];
                int i = ti[0][k];
                for (int w = 1; w < T / 32; w++) hd_bbox_pick(&v, &i, tv[32 * w][k], ti[32 * w][k], k >= 3);
                cr_assert(memcmp(&v, &bbox[k], 4) == 0, "n=%d box %d: %a, the host's %a", n, k, v, bbox[k]);
            }
            free(out);
            free(y);
            drape_buf_free(&b);
        }
        x[3 * n - 1] = NAN;
        float bb[6];
        uint8_t *out = malloc((size_t)n * 6);
        cr_assert_eq(drape_pack16(out, bb, DRAPE_PACK_Q16, x, n), DRAPE_ENONFINITE);
        cr_assert_eq(drape_pack16(out, bb, 7, x, n), DRAPE_EINVAL);
        free(out);
        free(x);
    }
}
