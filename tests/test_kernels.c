/* CPU kernels, one op at a time, against values worked out independently or
 * against their plain reference loops. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../core/simd.h"
#include "../kernels/cpu/ops.h"
#include "../runtime/uvmap.h"
#include "util.h"

static void assert_near(const float *got, const float *want, int n, float tol)
{
    for (int i = 0; i < n; i++) cr_assert(fabsf(got[i] - want[i]) <= tol, "[%d] got %.7g want %.7g", i, got[i], want[i]);
}

Test(kernels, rot6d_zero_is_identity)
{
    float R[9], r[6] = {0};
    cpu_rot6d(R, r);
    assert_near(R, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 0);
}

/* a1 = (0,1,0), a2 = (−1,0,0): e1 = y, e2 = −x, e3 = e1×e2 = z → R_z(90°) */
Test(kernels, rot6d_known_input)
{
    float R[9];
    cpu_rot6d(R, (float[]){-1, 1, 0, -1, -1, 0});
    assert_near(R, (float[]){0, -1, 0, 1, 0, 0, 0, 0, 1}, 9, 1e-7f);
    /* non-orthogonal input is orthonormalized (Gram–Schmidt) */
    cpu_rot6d(R, (float[]){1, 0, 0, 0.5f, 0, 0}); /* a1 = (2,0,0), a2 = (0.5,1,0) → e2 = y */
    assert_near(R, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 1e-7f);
}

/* A network output whose a1 is zero, or whose a2 is zero or along a1,
 * gave NaN (and the server refused the frame as `internal`): each is now a
 * finite rotation, as is a finite output too large to square. */
Test(kernels, rot6d_degenerate_input_is_a_rotation)
{
    static const float cases[][6] = {
        {-1, 0, 0, 0, -1, 0},              /* a1 = a2 = 0: the identity */
        {-1, 0, 0, 0, 0, 1},               /* a1 = 0 */
        {-1 + 1e-9f, 0, 0, 0, 1, 0},       /* a1 below the epsilon */
        {0, 0, 0, 0, -1, 0},               /* a2 = 0 */
        {0, 0, 0, 1, -1, 0},               /* a2 = a1 = x */
        {-1, 1, 0, 0, 0, 0},               /* a2 = a1 = y: the fallback axis is z */
        {-1, 0, -1, 0, -1, -3},            /* a2 = 3 a1 = −3z */
        {1e30f, 0, 0, 0, 1e30f, 0},        /* finite, squares overflow */
        {3e38f, -3e38f, 3e38f, -3e38f, 3e38f, 3e38f},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        float R[9];
        cpu_rot6d(R, cases[c]);
        for (int i = 0; i < 9; i++) cr_assert(isfinite(R[i]), "case %zu: R[%d] = %g", c, i, R[i]);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                float dot = R[i] * R[j] + R[3 + i] * R[3 + j] + R[6 + i] * R[6 + j]; /* columns i, j */
                cr_assert(fabsf(dot - (i == j)) < 1e-6f, "case %zu: columns %d·%d = %.9g", c, i, j, dot);
            }
        float det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) +
                    R[2] * (R[3] * R[7] - R[4] * R[6]);
        cr_assert(fabsf(det - 1) < 1e-6f, "case %zu: det %.9g", c, det);
    }
    float R[9];
    cpu_rot6d(R, cases[0]);
    assert_near(R, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 0);
}

/* the Gram–Schmidt of the 6D form as it was before the fallbacks */
static void rot6d_plain(float *R, const float *r)
{
    float a1[3] = {r[0] + 1.0f, r[1], r[2]}, a2[3] = {r[3], r[4] + 1.0f, r[5]};
    float n1 = sqrtf(a1[0] * a1[0] + a1[1] * a1[1] + a1[2] * a1[2]);
    float e1[3] = {a1[0] / n1, a1[1] / n1, a1[2] / n1};
    float d = e1[0] * a2[0] + e1[1] * a2[1] + e1[2] * a2[2];
    float u[3] = {a2[0] - d * e1[0], a2[1] - d * e1[1], a2[2] - d * e1[2]};
    float n2 = sqrtf(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    float e2[3] = {u[0] / n2, u[1] / n2, u[2] / n2};
    float e3[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    for (int i = 0; i < 3; i++) R[3 * i] = e1[i], R[3 * i + 1] = e2[i], R[3 * i + 2] = e3[i];
}

/* the fallbacks leave every ordinary input as it was, bit for bit */
Test(kernels, rot6d_ordinary_input_is_unchanged)
{
    uint32_t s = 12345;
    for (int n = 0; n < 100000; n++) {
        float r[6], got[9], want[9];
        float scale = n % 4 == 0 ? 0.05f : n % 4 == 1 ? 0.5f : n % 4 == 2 ? 3.0f : 1e6f;
        for (int i = 0; i < 6; i++) {
            s = s * 1664525u + 1013904223u;
            r[i] = scale * ((float)(s >> 8) / 16777216.0f * 2 - 1);
        }
        cpu_rot6d(got, r);
        rot6d_plain(want, r);
        cr_assert(!memcmp(got, want, sizeof got), "input %d (%g %g %g %g %g %g) changed", n, r[0], r[1], r[2], r[3],
                  r[4], r[5]);
    }
}

Test(kernels, bone_correct)
{
    /* T̂ = translation by (1,0,0); q = T̂(c) with c = 0 → q = (1,0,0).
     * ΔR = R_z(90°), τ = (0,0,0.5): x ↦ ΔR (x + (1,0,0) − q) + q + τ = ΔR x + (1,0,0.5) */
    float T[12] = {1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0}, q[3] = {1, 0, 0}, M[12];
    float net[9] = {-1, 1, 0, -1, -1, 0, 0, 0, 0.5f};
    cpu_bone_correct(M, T, q, net, 1);
    assert_near(M, (float[]){0, -1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0.5f}, 12, 1e-6f);
    cpu_bone_correct(M, T, q, NULL, 1);
    assert_near(M, T, 12, 0);
}

/* LBS: a vertex at (1,0,0) with weights 0.25/0.75 on a bone that stays and a
 * bone that translates by (0,2,0): result (1, 1.5, 0). */
Test(kernels, lbs)
{
    float M[24] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 2, 0, 0, 1, 0};
    float g[6] = {1, 0, 0, 0, 0, 1}, out[6];
    int32_t idx[4] = {0, 1, 1, 0};
    float w[4] = {0.25f, 0.75f, 1.0f, 0.0f};
    cpu_skin(out, g, M, idx, w, 2, 2);
    assert_near(out, (float[]){1, 1.5f, 0, 0, 2, 1}, 6, 1e-7f);
}

Test(kernels, skin_weights_softmax)
{
    /* dw = 0: softmax(log(w0 + 1e-8)) ≈ w0 */
    float w0[3] = {0.2f, 0.3f, 0.5f}, dw[4] = {0, 0, 0, 0}, w[3];
    int32_t idx[3] = {3, 0, 2};
    cpu_skin_weights(w, w0, dw, idx, 1, 3, 4);
    assert_near(w, w0, 3, 1e-7f);
    /* dw picks by bone index: +log 2 on bone 0 (second support) doubles it */
    dw[0] = logf(2);
    cpu_skin_weights(w, w0, dw, idx, 1, 3, 4);
    assert_near(w, (float[]){0.2f / 1.3f, 0.6f / 1.3f, 0.5f / 1.3f}, 3, 1e-6f);
}

Test(kernels, linear_and_layernorm)
{
    float W[6] = {1, 2, 3, -1, 0, 1}, b[2] = {0.5f, -0.5f}, x[6] = {1, 1, 1, 2, 0, -1}, y[4], yr[4];
    drape_linear lin = {W, b, 3, 2};
    cpu_linear(y, x, &lin, 2, 2);
    cpu_linear_ref(yr, x, &lin, 2);
    assert_near(y, (float[]){6.5f, -0.5f, -0.5f, -3.5f}, 4, 1e-6f);
    assert_near(y, yr, 4, 1e-6f);
    /* LayerNorm of (1,2,3): mean 2, var 2/3 → (−1.2247, 0, 1.2247), then ·w + b */
    float v[3] = {1, 2, 3}, lw[3] = {1, 2, 1}, lb[3] = {0, 0, 1};
    cpu_layernorm(v, lw, lb, 1, 3);
    float s = 1.0f / sqrtf(2.0f / 3.0f + 1e-5f);
    assert_near(v, (float[]){-s, 0, s + 1}, 3, 1e-5f);
    float h[3] = {1, -1, 2}, dg[3] = {0, 1, -0.5f}, be[3] = {0, 0, -2};
    cpu_film_relu(h, dg, be, 3);
    assert_near(h, (float[]){1, 0, 0}, 3, 0);
}

/* One UV triangle (0,0) (1,0) (0,1) on a 4×4 atlas covers the texels whose
 * centres have u + v <= 1, i.e. i + j <= 3: 10 texels. Texel (0,0) has
 * centre (0.125, 0.125) → λ = (0.75, 0.125, 0.125). */
Test(kernels, raster_known_triangle)
{
    float uv[6] = {0, 0, 1, 0, 0, 1};
    int32_t f[3] = {0, 1, 2}, face[16];
    float bary[48];
    drape_uv_raster(face, bary, uv, f, 1, 4, 4);
    int n = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int covered = face[i * 4 + j] == 0;
            cr_assert_eq(covered, i + j <= 3, "texel (%d,%d)", i, j);
            n += covered;
        }
    cr_assert_eq(n, 10);
    assert_near(bary, (float[]){0.75f, 0.125f, 0.125f}, 3, 1e-7f);
    /* texel (1,2): centre (0.625, 0.375) → λ = (0, 0.625, 0.375) */
    assert_near(bary + 3 * 6, (float[]){0, 0.625f, 0.375f}, 3, 1e-7f);
}

Test(kernels, raster_lowest_face_wins)
{
    /* two copies of the same triangle: face 0 owns everything */
    float uv[6] = {0, 0, 1, 0, 0, 1};
    int32_t f[6] = {0, 1, 2, 0, 2, 1}, face[64];
    float bary[192];
    drape_uv_raster(face, bary, uv, f, 2, 8, 8);
    for (int t = 0; t < 64; t++) cr_assert(face[t] == -1 || face[t] == 0);
    /* a degenerate UV face covers nothing */
    float deg[6] = {0.1f, 0.1f, 0.5f, 0.5f, 0.9f, 0.9f};
    drape_uv_raster(face, bary, deg, f, 1, 8, 8);
    for (int t = 0; t < 64; t++) cr_assert_eq(face[t], -1);
}

Test(kernels, bilinear_taps)
{
    int32_t idx[4];
    float w[4];
    /* the centre of texel (i=1, j=2) of a 4×4 map samples it alone */
    drape_uv_taps(idx, w, 2.5f / 4, 1.5f / 4, 4, 4);
    float total = 0;
    for (int t = 0; t < 4; t++) {
        total += w[t];
        if (idx[t] != 1 * 4 + 2) cr_assert_float_eq(w[t], 0, 1e-7f);
    }
    cr_assert_float_eq(total, 1, 1e-6f);
    cr_assert_float_eq(w[0], 1, 1e-6f);
    /* halfway between texel centres (0,0) and (0,1) */
    drape_uv_taps(idx, w, 1.0f / 4, 0.5f / 4, 4, 4);
    cr_assert_eq(idx[0], 0);
    cr_assert_eq(idx[1], 1);
    assert_near(w, (float[]){0.5f, 0.5f, 0, 0}, 4, 1e-6f);
    /* at the map's corner u = v = 0: clamped to texel (0,0) */
    drape_uv_taps(idx, w, 0, 0, 4, 4);
    cr_assert_eq(idx[0], 0);
    cr_assert_float_eq(w[0], 1, 0);
    /* at u = v = 1: clamped to the last texel */
    drape_uv_taps(idx, w, 1, 1, 4, 4);
    cr_assert_eq(idx[0], 15);
    cr_assert_float_eq(w[0], 1, 0);
}

/* The padded-GEMM conv over full spans equals the naive loop, every mode. */
static void conv_case(int Hu, int Wu, int Ci, int Co, int mode, uint64_t seed)
{
    uint64_t s = seed;
    float *w = malloc(sizeof(float) * Co * Ci * 9), *b = malloc(sizeof(float) * Co);
    float *taps = malloc(sizeof(float) * Co * Ci * 9), *wt = malloc(sizeof(float) * Co * Ci * 9);
    for (int i = 0; i < Co * Ci * 9; i++) w[i] = 0.3f * tu_rand(&s);
    for (int i = 0; i < Co; i++) b[i] = 0.1f * tu_rand(&s);
    cpu_conv_pack(taps, wt, w, Ci, Co);
    drape_conv cv = {w, b, Ci, Co};
    cpu_conv pc = {b, taps, wt, Ci, Co};
    int pw = Wu + 2, P = (Hu + 2) * pw;
    float *x = malloc(sizeof(float) * Hu * Wu * Ci), *xp = calloc((size_t)P * Ci, sizeof(float));
    float *yr = malloc(sizeof(float) * Hu * Wu * Co), *yp = calloc((size_t)P * Co, sizeof(float));
    for (int i = 0; i < Hu * Wu * Ci; i++) x[i] = tu_rand(&s);
    for (int i = 0; i < Hu; i++)
        memcpy(xp + ((size_t)(i + 1) * pw + 1) * Ci, x + (size_t)i * Wu * Ci, sizeof(float) * Wu * Ci);
    /* every texel: one run per row, one split in two */
    drape_span sp[64];
    int ns = 0;
    for (int i = 0; i < Hu; i++) {
        int b = (i + 1) * pw + 1;
        if (i == 1) sp[ns++] = (drape_span){b, b + 2}, b += 2;
        sp[ns++] = (drape_span){b, (i + 1) * pw + 1 + Wu};
    }
    cpu_conv3x3(yp, xp, &pc, Hu, Wu, sp, ns, mode, NULL, 1);
    cpu_conv3x3_ref(yr, x, &cv, Hu, Wu, mode);
    for (int i = 0; i < Hu; i++)
        for (int j = 0; j < Wu; j++)
            assert_near(yp + ((size_t)(i + 1) * pw + j + 1) * Co, yr + ((size_t)i * Wu + j) * Co, Co, 1e-4f);
    /* border columns stay zero padding */
    for (int i = 1; i <= Hu; i++) {
        for (int c = 0; c < Co; c++) {
            cr_assert_eq(yp[((size_t)i * pw) * Co + c], 0);
            cr_assert_eq(yp[((size_t)i * pw + pw - 1) * Co + c], 0);
        }
    }
    free(w); free(b); free(taps); free(wt); free(x); free(xp); free(yr); free(yp);
}

Test(kernels, conv_matches_naive_loop)
{
    conv_case(7, 5, 4, 6, 0, 1);
    conv_case(6, 9, 5, 3, 1, 2);
    conv_case(8, 8, 6, 6, 2, 3);
    conv_case(5, 19, 20, 80, 1, 4);  /* 4 + 1 vectors of 16, runs of 19 = 3×6 + 1 */
    conv_case(4, 26, 17, 35, 0, 5);  /* 2 vectors + 3 narrow channels; 26 = 2×12 + 2 */
    conv_case(3, 13, 48, 48, 2, 6);  /* residual, 3 vectors */
}

/* The 8-wide AVX2 tiles and the 16-wide ones, each against the naive loop,
 * whichever the machine would pick. */
Test(kernels, conv_both_tile_families_match_naive_loop)
{
    if (drape_simd_level() < 1) cr_skip_test("this CPU lacks AVX2+FMA: the 8-wide tiles cannot run here");
    for (int tiles = 0; tiles < 2; tiles++) {
        cpu__conv_tiles = tiles;
        conv_case(5, 19, 20, 80, 1, 4); /* 16 wide: 4 + 1 vectors; 8 wide: 2 + 1 blocks, runs of 19 = 9×2 + 1 = 3×6 + 1 */
        conv_case(4, 26, 17, 35, 0, 5); /* + 3 narrow channels */
        conv_case(3, 13, 48, 48, 2, 6); /* residual */
        conv_case(7, 5, 4, 6, 0, 1);    /* narrower than a vector: the tail alone */
    }
    cpu__conv_tiles = -1;
}

/* Skipping texels is exact: with the garment's spans the sampled output of a
 * conv stack equals the same stack computed on the whole map. */
Test(kernels, conv_spans_are_exact)
{
    drape_model *m = tu_load("small_random");
    const drape_garment *g = &m->garments[0];
    const drape_config *c = &m->cfg;
    int Hu = c->uv_h, Wu = c->uv_w, pw = Wu + 2, P = (Hu + 2) * pw, L = c->n_conv, Cmax = 0;
    for (int l = 0; l < L; l++) Cmax = c->conv[l] > Cmax ? c->conv[l] : Cmax;
    int C0 = m->net.conv[0].in;
    float *in = calloc((size_t)P * C0, sizeof(float));
    float *a[2] = {calloc((size_t)P * Cmax, sizeof(float)), calloc((size_t)P * Cmax, sizeof(float))};
    float *f[2] = {calloc((size_t)P * Cmax, sizeof(float)), calloc((size_t)P * Cmax, sizeof(float))};
    uint64_t s = 7;
    for (int i = 1; i <= Hu; i++)
        for (int j = 1; j <= Wu; j++)
            for (int ch = 0; ch < C0; ch++) in[((size_t)i * pw + j) * C0 + ch] = tu_rand(&s);
    /* poison the sparse buffers, border included: skipped texels must not
     * matter, and the conv must lay its own zero border */
    for (size_t i = 0; i < (size_t)P * Cmax; i++) a[0][i] = a[1][i] = 1e3f;
    drape_span *full = malloc(sizeof *full * Hu);
    for (int i = 0; i < Hu; i++) full[i] = (drape_span){(i + 1) * pw + 1, (i + 1) * pw + 1 + Wu};
    cpu_conv pc[DRAPE_MAX_CONV];
    float *packed[DRAPE_MAX_CONV];
    for (int l = 0; l < L; l++) {
        const drape_conv *cv = &m->net.conv[l];
        packed[l] = malloc(sizeof(float) * 18 * cv->in * cv->out);
        cpu_conv_pack(packed[l], packed[l] + 9 * cv->in * cv->out, cv->w, cv->in, cv->out);
        pc[l] = (cpu_conv){cv->b, packed[l], packed[l] + 9 * cv->in * cv->out, cv->in, cv->out};
    }
    const float *xs = in, *xf = in;
    for (int l = 0; l < L; l++) {
        int mode = l == L - 1 ? 0 : m->net.conv[l].in == m->net.conv[l].out ? 2 : 1;
        cpu_conv3x3(a[l & 1], xs, &pc[l], Hu, Wu, g->spans[l + 1], g->n_spans[l + 1], mode, NULL, 1);
        cpu_conv3x3(f[l & 1], xf, &pc[l], Hu, Wu, full, Hu, mode, NULL, 1);
        xs = a[l & 1];
        xf = f[l & 1];
    }
    float *ds = malloc(sizeof(float) * 3 * g->V), *df = malloc(sizeof(float) * 3 * g->V);
    cpu_uv_sample(ds, g, xs, Hu, Wu);
    cpu_uv_sample(df, g, xf, Hu, Wu);
    assert_near(ds, df, 3 * g->V, 1e-5f);
    cr_assert_lt(g->active_texels[1], (int64_t)Hu * Wu, "the runs should skip something on this atlas");
    for (int l = 0; l < L; l++) free(packed[l]);
    free(full);
    free(in); free(a[0]); free(a[1]); free(f[0]); free(f[1]); free(ds); free(df);
    drape_model_free(m);
}

Test(kernels, graph_gather_scatter)
{
    float h[6] = {1, 2, 3, 4, 5, 6}, e[4] = {10, 20, 30, 40}, cat[12], agg[6];
    int32_t snd[2] = {0, 2}, rcv[2] = {1, 1};
    cpu_edge_concat(cat, e, h, snd, rcv, 2, 2);
    assert_near(cat, (float[]){10, 20, 1, 2, 3, 4, 30, 40, 5, 6, 3, 4}, 12, 0);
    cpu_scatter_add(agg, e, rcv, 2, 3, 2);
    assert_near(agg, (float[]){0, 0, 40, 60, 0, 0}, 6, 0);
}

/* The pool runs every chunk of a job exactly once, whatever the team (also
 * larger than the pool, or than the job) and however jobs follow each other:
 * a worker that wakes late must not take a chunk of the next job. */
static void count_chunk(void *arg, int k) { atomic_fetch_add(&((atomic_int *)arg)[k], 1); }

Test(kernels, pool_runs_every_chunk_once)
{
    enum { N = 1000 };
    static atomic_int hits[N + 8];
    cpu_pool *p;
    cr_assert_eq(cpu_pool_create(&p, 3), DRAPE_OK);
    const int ns[] = {0, 1, 2, 7, 64, N};
    for (int rep = 0; rep < 40; rep++)
        for (int team = 1; team <= 5; team++)
            for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
                int n = ns[i];
                for (int k = 0; k < N + 8; k++) atomic_store(&hits[k], 0);
                cpu_pool_run(p, team, n, count_chunk, hits);
                for (int k = 0; k < N + 8; k++)
                    cr_assert_eq(atomic_load(&hits[k]), k < n, "team %d, n %d: chunk %d ran %d times", team, n, k,
                                 atomic_load(&hits[k]));
                if (team == 1) cr_assert_eq(cpu_pool_caller_chunks(p), n);
            }
    cpu_pool_free(p);
    /* a pool without workers runs everything on the caller */
    cr_assert_eq(cpu_pool_create(&p, 0), DRAPE_OK);
    cpu_pool_run(p, 4, 9, count_chunk, hits);
    cr_assert_eq(cpu_pool_caller_chunks(p), 9);
    cpu_pool_free(p);
}

/* The conv stack of a garment gives bit-identical maps on the pool with any
 * team and on the caller alone: chunks cut runs, never a texel's sum. */
Test(kernels, conv_on_the_pool_is_bit_identical)
{
    drape_model *m = tu_load("small_random");
    const drape_garment *g = &m->garments[0];
    const drape_config *c = &m->cfg;
    int Hu = c->uv_h, Wu = c->uv_w, pw = Wu + 2, P = (Hu + 2) * pw, L = c->n_conv, Cmax = 0;
    for (int l = 0; l < L; l++) Cmax = c->conv[l] > Cmax ? c->conv[l] : Cmax;
    int C0 = m->net.conv[0].in;
    float *in = calloc((size_t)P * C0, sizeof(float)), *maps[4][2];
    uint64_t s = 11;
    for (int i = 1; i <= Hu; i++)
        for (int j = 1; j <= Wu; j++)
            for (int ch = 0; ch < C0; ch++) in[((size_t)i * pw + j) * C0 + ch] = tu_rand(&s);
    cpu_conv pc[DRAPE_MAX_CONV];
    float *packed[DRAPE_MAX_CONV];
    for (int l = 0; l < L; l++) {
        const drape_conv *cv = &m->net.conv[l];
        packed[l] = malloc(sizeof(float) * 18 * cv->in * cv->out);
        cpu_conv_pack(packed[l], packed[l] + 9 * cv->in * cv->out, cv->w, cv->in, cv->out);
        pc[l] = (cpu_conv){cv->b, packed[l], packed[l] + 9 * cv->in * cv->out, cv->in, cv->out};
    }
    cpu_pool *pool;
    cr_assert_eq(cpu_pool_create(&pool, 3), DRAPE_OK);
    for (int team = 1; team <= 4; team++) { /* team 1 alone, 2..4 on the pool */
        float **a = maps[team - 1];
        a[0] = calloc((size_t)P * Cmax, sizeof(float));
        a[1] = calloc((size_t)P * Cmax, sizeof(float));
        const float *x = in;
        for (int l = 0; l < L; l++) {
            int mode = l == L - 1 ? 0 : m->net.conv[l].in == m->net.conv[l].out ? 2 : 1;
            cpu_conv3x3(a[l & 1], x, &pc[l], Hu, Wu, g->spans[l + 1], g->n_spans[l + 1], mode,
                        team > 1 ? pool : NULL, team);
            x = a[l & 1];
        }
        if (team > 1)
            for (int k = 0; k < 2; k++)
                cr_assert(!memcmp(a[k], maps[0][k], sizeof(float) * (size_t)P * Cmax), "team %d differs", team);
    }
    cpu_pool_free(pool);
    for (int t = 0; t < 4; t++) free(maps[t][0]), free(maps[t][1]);
    for (int l = 0; l < L; l++) free(packed[l]);
    free(in);
    drape_model_free(m);
}

/* The conv's chunks on a garment's real runs: every run in exactly one
 * chunk, in order, at most `want` of them, none over its share of texels
 * by more than one run. */
Test(kernels, conv_chunks_cover_runs_evenly)
{
    drape_model *m = tu_load("small_random");
    const drape_garment *g = &m->garments[0];
    static int cut[1025];
    const int wants[] = {1, 2, 3, 16, 32, 64, 1024};
    for (int l = 1; l <= m->cfg.n_conv; l++) {
        const drape_span *sp = g->spans[l];
        int ns = g->n_spans[l], longest = 0;
        int64_t total = 0;
        for (int s = 0; s < ns; s++) {
            total += sp[s].end - sp[s].begin;
            if (sp[s].end - sp[s].begin > longest) longest = sp[s].end - sp[s].begin;
        }
        cr_assert_gt(ns, 64, "layer %d: too few runs to cut", l);
        for (size_t w = 0; w < sizeof wants / sizeof *wants; w++) {
            int want = wants[w], n = cpu_conv_chunks(cut, sp, ns, want);
            cr_assert(n >= 1 && n <= want, "layer %d, want %d: %d chunks", l, want, n);
            if (want * 4 <= ns) cr_assert_geq(n, want / 2 + 1, "layer %d, want %d: only %d chunks", l, want, n);
            cr_assert_eq(cut[0], 0);
            cr_assert_eq(cut[n], ns);
            int64_t per = (total + want - 1) / want, sum = 0;
            for (int k = 0; k < n; k++) {
                cr_assert_lt(cut[k], cut[k + 1], "layer %d, want %d: chunk %d is empty", l, want, k);
                int64_t texels = 0;
                for (int s = cut[k]; s < cut[k + 1]; s++) texels += sp[s].end - sp[s].begin;
                cr_assert_leq(texels, per + longest, "layer %d, want %d: chunk %d has %lld texels", l, want, k,
                              (long long)texels);
                sum += texels;
            }
            cr_assert_eq(sum, total);
        }
    }
    cr_assert_eq(cpu_conv_chunks(cut, NULL, 0, 8), 0);
    drape_model_free(m);
}
