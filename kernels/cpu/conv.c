/* 3×3 convolution of the UV stage (docs/design.md §2.4 step 8).
 *
 * Maps are stored padded, [(Hu+2)(Wu+2), C] channels-last with a zero border,
 * so every tap (dy,dx) of a texel is a fixed offset in the flat map. Only the
 * garment's needed texels are computed (runs, see uvmap.c), as a direct
 * convolution: a micro-tile of R consecutive texels × NV 16-wide vectors of
 * output channels is accumulated in registers over the 9 taps and Cin, then
 * goes through the bias/ReLU/residual epilogue. No im2col and no packing:
 * with Cin and Cout of 32–128 those copies cost as much as the arithmetic.
 * Runs are spread over the backend's pool (pool.h) in chunks of about equal
 * texel counts. The tiles are compiled for AVX-512, AVX2+FMA (8 wide, their
 * own sizes) and plain x86-64, chosen at run time (core/simd.h). */
#include <stdint.h>
#include <string.h>

#include "ops.h"
#include "../../core/simd.h"

typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* out[p .. p+R) × channels [co, co + W·NV), in W-wide vectors of type VT, R
 * and NV fixed so that the accumulators live in registers. */
#define CONV_TILE_AS(NAME, ATTR, VT, W, R, NV)                                                             \
    ATTR static void NAME(float *out, const float *in, const cpu_conv *cv, const int64_t *shift, int64_t p, \
                          int co, int mode)                                                                \
    {                                                                                                      \
        const int Ci = cv->in, Co = cv->out;                                                              \
        VT acc[R][NV];                                                                                     \
        _Pragma("GCC unroll 12") for (int r = 0; r < R; r++)                                               \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = (VT){0};                      \
        for (int t = 0; t < 9; t++) {                                                                      \
            const float *x = in + (p + shift[t]) * Ci, *w = cv->taps + (size_t)t * Ci * Co + co;          \
            for (int ci = 0; ci < Ci; ci++, w += Co) {                                                     \
                VT wv[NV];                                                                                 \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) wv[v] = *(const VT##u *)(w + W * v);  \
                _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                                     \
                    VT b = (VT){0} + x[(size_t)r * Ci + ci];                                               \
                    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] += b * wv[v];           \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
        for (int r = 0; r < R; r++)                                                                        \
            for (int v = 0; v < NV; v++) {                                                                 \
                VT y = acc[r][v] + *(const VT##u *)(cv->b + co + W * v);                                   \
                if (mode) y = (VT)((VT##i)y & (y > 0)); /* ReLU */                                       \
                if (mode == 2) y += *(const VT##u *)(in + (p + r) * Ci + co + W * v);                      \
                *(VT##u *)(out + (p + r) * Co + co + W * v) = y;                                           \
            }                                                                                              \
    }

/* 16 wide: AVX-512's 32 registers hold the accumulators; the plain x86-64
 * build splits each vector in four */
#define CONV_TILE(R, NV) \
    CONV_TILE_AS(tile_##R##x##NV, __attribute__((target_clones("avx512f", "default"))), v16, 16, R, NV)
CONV_TILE(6, 4)
CONV_TILE(12, 2)
CONV_TILE(12, 1)
CONV_TILE(1, 4)
CONV_TILE(1, 2)
CONV_TILE(1, 1)

/* 8 wide for AVX2 (x86-64-v3), smaller tiles for its 16 registers: GCC
 * splits a 16-wide vector for AVX2 through the stack, and the tiles above
 * need twice the registers AVX2 has; built that way they ran slower than
 * the plain x86-64 build (docs/conventions.md, "Vector builds") */
#define CONV_TILE8(R, NV) CONV_TILE_AS(tile8_##R##x##NV, __attribute__((target("arch=x86-64-v3"))), v8, 8, R, NV)
CONV_TILE8(2, 4)
CONV_TILE8(1, 4)
CONV_TILE8(6, 2)
CONV_TILE8(1, 2)

/* Channels [co, Co) that do not fill a 16-wide vector (the last layer's 3):
 * per texel and channel, 9 dot products over the input channels, 16 wide. */
DRAPE_CLONES static void tail_channels(
    float *out, const float *in, const cpu_conv *cv, const int64_t *shift, int64_t p, int n, int co, int mode)
{
    const int Ci = cv->in, Co = cv->out, C16 = Ci & ~15;
    for (int64_t q = p; q < p + n; q++)
        for (int o = co; o < Co; o++) {
            v16 acc = {0};
            float s = cv->b[o];
            for (int t = 0; t < 9; t++) {
                const float *x = in + (q + shift[t]) * Ci, *w = cv->wt + ((size_t)o * 9 + t) * Ci;
                for (int ci = 0; ci < C16; ci += 16) acc += *(const v16u *)(x + ci) * *(const v16u *)(w + ci);
                for (int ci = C16; ci < Ci; ci++) s += x[ci] * w[ci];
            }
            for (int k = 0; k < 16; k++) s += acc[k];
            if (mode) s = s > 0 ? s : 0;
            if (mode == 2) s += in[q * Ci + o];
            out[q * Co + o] = s;
        }
}

int cpu__conv_tiles = -1;

/* One run of n texels from flat position p. */
static void conv_run(float *out, const float *in, const cpu_conv *cv, const int64_t *shift, int64_t p, int n,
                     int mode)
{
    int co = 0, nvec = cv->out / 16;
/* blocks of V 16-channel groups: tiles of R texels, then one texel at a time */
#define CONV_BLOCKS(V, R, TILE, ONE)                                                   \
    for (; nvec >= V; nvec -= V, co += 16 * V) {                                        \
        int i = 0;                                                                      \
        for (; i + R <= n; i += R) TILE(out, in, cv, shift, p + i, co, mode);           \
        for (; i < n; i++) ONE(out, in, cv, shift, p + i, co, mode);                    \
    }
    if (cpu__conv_tiles >= 0 ? cpu__conv_tiles : drape_simd_level() == 1) {
        CONV_BLOCKS(2, 2, tile8_2x4, tile8_1x4)
        CONV_BLOCKS(1, 6, tile8_6x2, tile8_1x2)
    }
    CONV_BLOCKS(4, 6, tile_6x4, tile_1x4)
    CONV_BLOCKS(2, 12, tile_12x2, tile_1x2)
    CONV_BLOCKS(1, 12, tile_12x1, tile_1x1)
#undef CONV_BLOCKS
    if (co < cv->out) tail_channels(out, in, cv, shift, p, n, co, mode);
}

static void zero_border(float *out, int Hu, int Wu, int C)
{
    int pw = Wu + 2;
    memset(out, 0, (size_t)pw * C * sizeof *out);
    memset(out + (size_t)(Hu + 1) * pw * C, 0, (size_t)pw * C * sizeof *out);
    for (int i = 1; i <= Hu; i++) {
        memset(out + (size_t)i * pw * C, 0, (size_t)C * sizeof *out);
        memset(out + ((size_t)i * pw + pw - 1) * C, 0, (size_t)C * sizeof *out);
    }
}

void cpu_conv_pack(float *taps, float *wt, const float *w, int in, int out)
{
    for (int o = 0; o < out; o++)
        for (int i = 0; i < in; i++)
            for (int t = 0; t < 9; t++) {
                float x = w[((size_t)o * in + i) * 9 + t];
                taps[((size_t)t * in + i) * out + o] = x;
                wt[((size_t)o * 9 + t) * in + i] = x;
            }
}

int cpu_conv_chunks(int *cut, const drape_span *spans, int n_spans, int want)
{
    int64_t texels = 0, acc = 0;
    for (int s = 0; s < n_spans; s++) texels += spans[s].end - spans[s].begin;
    if (want < 1) want = 1;
    int64_t per = (texels + want - 1) / want;
    int n = 0;
    cut[0] = 0;
    for (int s = 0; s < n_spans; s++) {
        acc += spans[s].end - spans[s].begin;
        if (n < want - 1 && acc >= per * (n + 1)) cut[++n] = s + 1;
    }
    if (cut[n] < n_spans) cut[++n] = n_spans;
    return n;
}

/* A conv layer's job for the pool: chunk k is runs [cut[k], cut[k + 1]). */
typedef struct {
    float *out;
    const float *in;
    const cpu_conv *cv;
    const int64_t *shift;
    const drape_span *spans;
    const int *cut;
    int mode;
} conv_job;

static void conv_chunk(void *arg, int k)
{
    const conv_job *j = arg;
    for (int s = j->cut[k]; s < j->cut[k + 1]; s++)
        conv_run(j->out, j->in, j->cv, j->shift, j->spans[s].begin, j->spans[s].end - j->spans[s].begin, j->mode);
}

void cpu_conv3x3(float *out, const float *in, const cpu_conv *cv, int Hu, int Wu, const drape_span *spans,
                 int n_spans, int mode, cpu_pool *pool, int team)
{
    int64_t shift[9];
    for (int t = 0; t < 9; t++) shift[t] = (int64_t)(t / 3 - 1) * (Wu + 2) + (t % 3 - 1);
    /* the border is the zero padding the next layer reads; the buffer may
     * have held a map of another width, so lay it afresh */
    zero_border(out, Hu, Wu, cv->out);
    /* chunks of about equal texel counts, CONV_CHUNKS per thread: small
     * enough that the threads that run take over the share of one that does
     * not, large enough that claiming one costs nothing */
    enum { CONV_CHUNKS = 16, MAX_CHUNKS = 1024 };
    int want = team > 1 && pool ? (team < MAX_CHUNKS / CONV_CHUNKS ? CONV_CHUNKS * team : MAX_CHUNKS) : 1;
    int cut[MAX_CHUNKS + 1], n = cpu_conv_chunks(cut, spans, n_spans, want);
    conv_job job = {out, in, cv, shift, spans, cut, mode};
    if (pool) cpu_pool_run(pool, team, n, conv_chunk, &job);
    else
        for (int k = 0; k < n; k++) conv_chunk(&job, k);
}

void cpu_conv3x3_ref(float *out, const float *in, const drape_conv *cv, int Hu, int Wu, int mode)
{
    int Ci = cv->in, Co = cv->out;
    for (int y = 0; y < Hu; y++)
        for (int x = 0; x < Wu; x++)
            for (int o = 0; o < Co; o++) {
                double acc = cv->b[o];
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        int yy = y + ky - 1, xx = x + kx - 1;
                        if (yy < 0 || yy >= Hu || xx < 0 || xx >= Wu) continue;
                        for (int i = 0; i < Ci; i++)
                            acc += (double)cv->w[(((size_t)o * Ci + i) * 3 + ky) * 3 + kx] *
                                   in[((size_t)yy * Wu + xx) * Ci + i];
                    }
                float v = (float)acc;
                if (mode) v = v > 0 ? v : 0;
                if (mode == 2) v += in[((size_t)y * Wu + x) * Ci + o];
                out[((size_t)y * Wu + x) * Co + o] = v;
            }
}
