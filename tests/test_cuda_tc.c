/* The CUDA backend's tensor-core UV conv (precisions BF16 and FP16,
 * kernels/cuda/conv_tc.cu) and its device packing, on the CPU: the index
 * math, tables and epilogue it shares with these tests (tc_bodies.h), and an
 * emulation of whole layers (the kernel's tiles filled through the same
 * functions, plain loops for the MMAs, 16-bit rounding) against the CPU
 * backend's conv (kernels/cpu/conv.c). These run everywhere (suite
 * cuda_host); the device tests of the same path are in tests/test_cuda.c
 * (suite cuda). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_backend.h"
#include "../kernels/cpu/ops.h"
#include "../kernels/cuda/bodies.h"
#include "../kernels/cuda/tc_bodies.h"
#include "../core/half.h"
#include "util.h"

static int32_t *positions(const drape_garment *g, int l, int *n)
{
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)(g->active_texels[l] + 1));
    *n = hd_expand_runs(pos, g->spans[l], g->n_spans[l]);
    return pos;
}

static int is_border(int q, int Hu, int Wu)
{
    int pw = Wu + 2, y = q / pw, x = q % pw;
    return y == 0 || y == Hu + 1 || x == 0 || x == pw - 1;
}

/* nbr_l: every tap of every output texel is the input row at that position,
 * or −1 exactly on the border; the centre tap is the texel itself. A gap in
 * the input runs is reported, not read. */
static void neighbours_case(const char *bundle)
{
    drape_model *m = tu_load(bundle);
    const drape_config *c = &m->cfg;
    int Hu = c->uv_h, Wu = c->uv_w, pw = Wu + 2;
    for (int gi = 0; gi < c->n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        for (int l = 0; l < c->n_conv; l++) {
            int ni, no;
            int32_t *pin = positions(g, l, &ni), *pout = positions(g, l + 1, &no);
            int32_t *nbr = malloc(sizeof(int32_t) * 9 * (size_t)(no + 1));
            cr_assert_eq(hd_tc_neighbours(nbr, pout, no, pin, ni, Hu, Wu), -1, "%s layer %d", bundle, l);
            int border = 0;
            for (int r = 0; r < no; r++)
                for (int t = 0; t < 9; t++) {
                    int q = pout[r] + (t / 3 - 1) * pw + (t % 3 - 1), j = nbr[9 * r + t];
                    if (is_border(q, Hu, Wu)) {
                        cr_assert_eq(j, -1, "layer %d row %d tap %d: border not -1", l, r, t);
                        border++;
                    } else {
                        cr_assert(j >= 0 && j < ni && pin[j] == q, "layer %d row %d tap %d: row %d", l, r, t, j);
                    }
                    if (t == 4) cr_assert(j >= 0 && pin[j] == pout[r]);
                }
            cr_log_info("%s garment %d layer %d: %d output rows, %d input rows, %d border taps", bundle, gi, l, no, ni,
                        border);
            /* an input texel missing (the runs broken): the first output texel
             * that reads it is named */
            int gap = ni / 2;
            memmove(pin + gap, pin + gap + 1, sizeof(int32_t) * (size_t)(ni - gap - 1));
            int bad = hd_tc_neighbours(nbr, pout, no, pin, ni - 1, Hu, Wu);
            cr_assert(bad >= 0 && bad < no, "a gap in the input runs went unnoticed (%d)", bad);
            free(pin);
            free(pout);
            free(nbr);
        }
    }
    drape_model_free(m);
}

Test(cuda_host, tc_neighbour_tables_tiny) { neighbours_case("tiny_random"); }
Test(cuda_host, tc_neighbour_tables_small) { neighbours_case("small_random"); }

/* The tiles: over a layer's K chunks, the A vectors copy every (row, tap,
 * channel) of the block exactly once, from the right input element, zeros
 * for rows past the layer and for the border; the B vectors every (tap,
 * channel, output column) once. */
Test(cuda_host, tc_tiles_cover_k_and_rows_once)
{
    /* Cop 128: BN 128, the tiles over 48 KB of shared memory (BK 32, 64) */
    int cips[4] = {16, 48, 64, 128}, cops[5] = {16, 32, 64, 128, 192};
    uint64_t s = 5;
    for (int wide = 0; wide < 2; wide++)
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 5; b++) {
            int Cip = cips[a], Cop = cops[b], BK = hd_tc_bk(Cip, wide), BN = hd_tc_bn(Cop), KC = 9 * (Cip / BK);
            static const int want_bk[2][4] = {{16, 16, 32, 32}, {16, 16, 64, 64}}; /* Cip 16, 48, 64, 128 */
            cr_assert_eq(BK, want_bk[wide][a], "Cip %d wide %d: BK %d", Cip, wide, BK);
            int rows_left = 100 + a * 9; /* a partial block */
            cr_assert(Cip % BK == 0 && Cop % BN == 0 && BN >= 16);
            int32_t nbr[TC_BM * 9];
            for (int i = 0; i < TC_BM * 9; i++) nbr[i] = tu_rand(&s) < -0.8f ? -1 : (int32_t)(1000 + i);
            /* seen[row][tap·Cip + ch] */
            unsigned char *seen = calloc((size_t)TC_BM * 9 * Cip, 1), *wseen = calloc((size_t)9 * Cip * BN, 1);
            for (int kc = 0; kc < KC; kc++) {
                int tap, ci0;
                hd_tc_kchunk(&tap, &ci0, kc, Cip, BK);
                cr_assert(tap >= 0 && tap < 9 && ci0 >= 0 && ci0 + BK <= Cip && ci0 % BK == 0);
                unsigned char tile[TC_BM][64] = {{0}};
                for (int i = 0; i < TC_BM * BK / 8; i++) {
                    int r, c;
                    int64_t src = hd_tc_a_src(&r, &c, nbr, rows_left, i, tap, ci0, Cip, BK);
                    cr_assert(r >= 0 && r < TC_BM && c >= 0 && c + 8 <= BK && c % 8 == 0);
                    for (int j = 0; j < 8; j++) {
                        cr_assert_eq(tile[r][c + j]++, 0, "A tile element (%d, %d) twice", r, c + j);
                        seen[((size_t)r * 9 + tap) * Cip + ci0 + c + j]++;
                    }
                    if (r >= rows_left || nbr[9 * r + tap] < 0) cr_assert_eq(src, -1, "row %d tap %d: zeros", r, tap);
                    else cr_assert_eq(src, (int64_t)nbr[9 * r + tap] * Cip + ci0 + c);
                }
                unsigned char wt[64][128] = {{0}};
                int n0 = BN < Cop ? BN : 0; /* the second column tile when there is one */
                for (int i = 0; i < BK * BN / 8; i++) {
                    int k, c;
                    int64_t src = hd_tc_b_src(&k, &c, i, tap, ci0, Cip, Cop, n0, BN);
                    cr_assert(k >= 0 && k < BK && c >= 0 && c + 8 <= BN);
                    for (int j = 0; j < 8; j++) {
                        cr_assert_eq(wt[k][c + j]++, 0);
                        wseen[((size_t)tap * Cip + ci0 + k) * BN + c + j]++;
                    }
                    cr_assert_eq(src, ((int64_t)tap * Cip + ci0 + k) * Cop + n0 + c);
                }
            }
            for (size_t i = 0; i < (size_t)TC_BM * 9 * Cip; i++) cr_assert_eq(seen[i], 1, "Cip %d: K element %zu", Cip, i);
            for (size_t i = 0; i < (size_t)9 * Cip * BN; i++) cr_assert_eq(wseen[i], 1, "weights element %zu", i);
            free(seen);
            free(wseen);
        }
}

Test(cuda_host, tc_epilogue_and_rounding)
{
    uint64_t s = 9;
    for (int i = 0; i < 3000; i++) {
        float acc = 3 * tu_rand(&s), b = tu_rand(&s), r = tu_rand(&s);
        for (int mode = 0; mode < 3; mode++) {
            float want = hd_conv_out(acc, b, r, mode), got = hd_tc_out(acc, b, r, mode);
            cr_assert(memcmp(&want, &got, 4) == 0, "mode %d", mode);
        }
    }
    /* bf16: round to nearest, ties to even; the value it names */
    cr_assert_eq(hd_bf16_bits(1.0f), 0x3f80);
    cr_assert_eq(hd_bf16_bits(1.0f + 0x1p-8f), 0x3f80);     /* halfway, to even (down) */
    cr_assert_eq(hd_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82); /* halfway, to even (up) */
    cr_assert_eq(hd_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    cr_assert_eq(hd_bf16_bits(-2.5f), 0xc020);
    cr_assert_eq(hd_bf16_bits(3.4e38f), 0x7f80); /* past the largest bf16: infinity */
    for (int i = 0; i < 100000; i++) {
        float x = ldexpf(tu_rand(&s), (int)(20 * tu_rand(&s)));
        float r = hd_bf16_value(hd_bf16_bits(x));
        double ulp = ldexp(1.0, ilogb(x) - 7), d = fabs((double)r - x);
        cr_assert(d <= ulp / 2, "bf16(%a) = %a, %g ulp off", x, r, d / ulp);
        float h = drape_f16_to_f32(hd_tc_bits(x, 0));
        if (fabsf(x) < 65000 && fabsf(x) > 1e-4f)
            cr_assert(fabs((double)h - x) <= ldexp(1.0, ilogb(x) - 10) / 2, "f16(%a) = %a", x, h);
    }
}

/* The input map a channel at a time is the texel body's, bias included, and
 * zero in the padding */
static void input_case(const char *bundle)
{
    drape_model *m = tu_load(bundle);
    const drape_config *c = &m->cfg;
    int df = c->feat_dim, dp = c->pose_dim, C = 4 + df + dp, Cp = hd_tc_pad(C);
    for (int gi = 0; gi < c->n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        float *p = malloc(sizeof(float) * 3 * g->V), *F = malloc(sizeof(float) * ((size_t)g->n_cov * df + 1));
        float phi[1024], bias[1024], phib[1024], x[2100];
        uint64_t s = 30 + gi;
        for (int i = 0; i < 3 * g->V; i++) p[i] = tu_rand(&s);
        for (int64_t i = 0; i < (int64_t)g->n_cov * df; i++) F[i] = tu_rand(&s);
        for (int i = 0; i < dp; i++) {
            phi[i] = tu_rand(&s);
            bias[i] = tu_rand(&s);
            phib[i] = phi[i] + bias[i];
        }
        int n;
        int32_t *pos = positions(g, 0, &n), *in_cov = malloc(sizeof(int32_t) * (size_t)(n + 1));
        hd_input_cov(in_cov, pos, n, g->cov_texel, g->n_cov, c->uv_w);
        for (int i = 0; i < n; i++) {
            hd_uv_input_texel(x, in_cov[i], g->faces, g->texel_face, g->texel_bary, g->cov_texel, p, F, phib, df, dp);
            for (int ch = 0; ch < Cp; ch++) {
                float got = hd_uv_input_at(ch, in_cov[i], g->faces, g->texel_face, g->texel_bary, g->cov_texel, p, F, phi,
                                           bias, df, dp);
                float want = ch < C ? x[ch] : 0.0f;
                cr_assert(memcmp(&got, &want, 4) == 0, "texel %d channel %d: %g, want %g", i, ch, got, want);
            }
        }
        free(p); free(F); free(pos); free(in_cov);
    }
    drape_model_free(m);
}

Test(cuda_host, tc_input_channels_match_the_texel_body_tiny) { input_case("tiny_random"); }
Test(cuda_host, tc_input_channels_match_the_texel_body_small) { input_case("small_random"); }

/* Sampling the compact last map through the table gives, bit for bit, what
 * sampling the padded map gives (hd_uv_sample_vertex, held to the CPU by
 * tests/test_cuda.c) */
static void sample_case(const char *bundle)
{
    drape_model *m = tu_load(bundle);
    const drape_config *c = &m->cfg;
    int Hu = c->uv_h, Wu = c->uv_w, L = c->n_conv;
    for (int gi = 0; gi < c->n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        int n, copies = g->copy_start[g->V];
        int32_t *pos = positions(g, L, &n), *row = malloc(sizeof(int32_t) * 4 * (size_t)copies);
        float *w = malloc(sizeof(float) * 4 * (size_t)copies), *dense = calloc((size_t)(Hu + 2) * (Wu + 2) * 3, 4);
        float *compact = malloc(sizeof(float) * 3 * (size_t)n);
        cr_assert_eq(hd_tc_sample_table(row, w, g->uv, g->copy_uv, copies, pos, n, Hu, Wu), -1);
        uint64_t s = 40;
        for (int i = 0; i < n; i++)
            for (int d = 0; d < 3; d++) dense[(size_t)pos[i] * 3 + d] = compact[3 * i + d] = tu_rand(&s);
        for (int v = 0; v < g->V; v++) {
            float a[3], b[3];
            hd_uv_sample_vertex(a, g->copy_start, g->copy_uv, g->uv, dense, v, Hu, Wu);
            hd_tc_sample_vertex(b, g->copy_start, row, w, compact, v);
            cr_assert(memcmp(a, b, sizeof a) == 0, "vertex %d: %g %g %g, want %g %g %g", v, b[0], b[1], b[2], a[0], a[1],
                      a[2]);
        }
        /* the last map without one of the texels sampled: reported */
        int victim = row[0];
        memmove(pos + victim, pos + victim + 1, sizeof(int32_t) * (size_t)(n - victim - 1));
        cr_assert_eq(hd_tc_sample_table(row, w, g->uv, g->copy_uv, copies, pos, n - 1, Hu, Wu), 0);
        free(pos); free(row); free(w); free(dense); free(compact);
    }
    drape_model_free(m);
}

Test(cuda_host, tc_sampling_table_matches_the_padded_map_tiny) { sample_case("tiny_random"); }
Test(cuda_host, tc_sampling_table_matches_the_padded_map_small) { sample_case("small_random"); }

static float round16(float x, int bf16) { return bf16 ? hd_bf16_value(hd_bf16_bits(x)) : drape_f16_to_f32(hd_f32_to_f16(x)); }

/* One layer as conv_tc.cu computes it, on the CPU: per block of TC_BM output
 * rows and column tile of BN, its neighbour rows, then per K chunk the A and
 * B tiles filled through hd_tc_a_src / hd_tc_b_src from the compact map and
 * the packed 16-bit weights, multiplied in FP32; the epilogue hd_tc_out,
 * rounded to the map's type (last layer: FP32, 3 channels). pre: the
 * epilogue's value before that rounding. */
static void emulate_layer(float *out, float *pre, const float *in, const float *wp, const float *bp,
                          const int32_t *nbr, int rows, int Cip, int Cop, int mode, int last, int bf16)
{
    int BK = hd_tc_bk(Cip, 0), BN = last ? 16 : hd_tc_bn(Cop), KC = 9 * (Cip / BK);
    float *As = malloc(sizeof(float) * TC_BM * BK), *Bs = malloc(sizeof(float) * BK * BN);
    float *acc = malloc(sizeof(float) * TC_BM * BN);
    int32_t nbr_s[TC_BM * 9];
    for (int row0 = 0; row0 < rows; row0 += TC_BM)
        for (int n0 = 0; n0 < Cop; n0 += BN) {
            int rows_left = rows - row0 < TC_BM ? rows - row0 : TC_BM;
            for (int i = 0; i < TC_BM * 9; i++) nbr_s[i] = i < rows_left * 9 ? nbr[(int64_t)row0 * 9 + i] : -1;
            memset(acc, 0, sizeof(float) * TC_BM * BN);
            for (int kc = 0; kc < KC; kc++) {
                int tap, ci0;
                hd_tc_kchunk(&tap, &ci0, kc, Cip, BK);
                for (int i = 0; i < TC_BM * BK / 8; i++) {
                    int r, c;
                    int64_t src = hd_tc_a_src(&r, &c, nbr_s, rows_left, i, tap, ci0, Cip, BK);
                    for (int j = 0; j < 8; j++) As[r * BK + c + j] = src >= 0 ? in[src + j] : 0.0f;
                }
                for (int i = 0; i < BK * BN / 8; i++) {
                    int k, c;
                    int64_t src = hd_tc_b_src(&k, &c, i, tap, ci0, Cip, Cop, n0, BN);
                    for (int j = 0; j < 8; j++) Bs[k * BN + c + j] = wp[src + j];
                }
                for (int r = 0; r < TC_BM; r++)
                    for (int k = 0; k < BK; k++) {
                        float a = As[r * BK + k];
                        if (a != 0)
                            for (int nn = 0; nn < BN; nn++) acc[r * BN + nn] += a * Bs[k * BN + nn];
                    }
            }
            for (int r = 0; r < rows_left; r++)
                for (int nn = 0; nn < BN; nn++) {
                    int col = n0 + nn;
                    float res = mode == 2 ? in[(int64_t)nbr_s[r * 9 + 4] * Cip + col] : 0.0f;
                    float y = hd_tc_out(acc[r * BN + nn], bp[col], res, mode);
                    if (last) {
                        if (col < 3) out[(int64_t)(row0 + r) * 3 + col] = pre[(int64_t)(row0 + r) * 3 + col] = y;
                    } else {
                        pre[(int64_t)(row0 + r) * Cop + col] = y;
                        out[(int64_t)(row0 + r) * Cop + col] = round16(y, bf16);
                    }
                }
        }
    free(As);
    free(Bs);
    free(acc);
}

/* Every layer of a garment's stack: random inputs on the layer's input
 * texels rounded to the 16-bit type, the layer's weights likewise; the
 * emulation against kernels/cpu/conv.c on the same rounded numbers (only
 * the summation order differs) and on the unrounded ones (the precision's
 * cost). */
static void layer_case(const char *bundle, int gi, int bf16)
{
    drape_model *m = tu_load(bundle);
    const drape_config *c = &m->cfg;
    const drape_garment *g = &m->garments[gi];
    int Hu = c->uv_h, Wu = c->uv_w, L = c->n_conv, C0 = 4 + c->feat_dim + c->pose_dim;
    size_t P = (size_t)(Hu + 2) * (Wu + 2);
    double worst_same = 0, worst_exact = 0;
    for (int l = 0; l < L; l++) {
        const drape_conv *cv = &m->net.conv[l];
        int Ci = cv->in, Co = cv->out, Cip = hd_tc_pad(l ? c->conv[l - 1] : C0), Cop = hd_tc_pad(Co);
        int last = l == L - 1, mode = last ? 0 : Ci == Co ? 2 : 1;
        cr_assert_eq(Ci, l ? c->conv[l - 1] : C0);
        int ni, no;
        int32_t *pin = positions(g, l, &ni), *pout = positions(g, l + 1, &no);
        int32_t *nbr = malloc(sizeof(int32_t) * 9 * (size_t)(no + 1));
        cr_assert_eq(hd_tc_neighbours(nbr, pout, no, pin, ni, Hu, Wu), -1);
        /* inputs: compact 16-bit (as floats) and dense padded, rounded and exact */
        float *compact = calloc((size_t)ni * Cip, 4), *dr = calloc(P * Ci, 4), *dx = calloc(P * Ci, 4);
        uint64_t s = 100 + 10 * l + bf16;
        for (int i = 0; i < ni; i++)
            for (int ch = 0; ch < Ci; ch++) {
                float x = tu_rand(&s);
                dx[(size_t)pin[i] * Ci + ch] = x;
                dr[(size_t)pin[i] * Ci + ch] = compact[(size_t)i * Cip + ch] = round16(x, bf16);
            }
        /* weights: rounded copies, packed both ways */
        size_t nw = (size_t)9 * Ci * Co;
        float *w_r = malloc(sizeof(float) * nw), *taps_r = malloc(sizeof(float) * nw), *wt_r = malloc(sizeof(float) * nw);
        float *taps_x = malloc(sizeof(float) * nw), *wt_x = malloc(sizeof(float) * nw);
        for (size_t i = 0; i < nw; i++) w_r[i] = round16(cv->w[i], bf16);
        cpu_conv_pack(taps_r, wt_r, w_r, Ci, Co);
        cpu_conv_pack(taps_x, wt_x, cv->w, Ci, Co);
        float *wp = malloc(sizeof(float) * 9 * (size_t)Cip * Cop), bp[4096];
        hd_tc_pack_weights(wp, bp, taps_r, cv->b, Ci, Co, Cip, Cop);
        /* the kernel's weights are the 16-bit values: packing rounded ones loses nothing */
        for (size_t i = 0; i < (size_t)9 * Cip * Cop; i++) cr_assert_eq(round16(wp[i], bf16), wp[i]);
        int oc = last ? 3 : Cop;
        float *got = calloc((size_t)no * oc + 1, 4), *pre = calloc((size_t)no * oc + 1, 4);
        emulate_layer(got, pre, compact, wp, bp, nbr, no, Cip, Cop, mode, last, bf16);
        float *want_r = malloc(sizeof(float) * P * Co), *want_x = malloc(sizeof(float) * P * Co);
        cpu_conv cr = {.b = cv->b, .taps = taps_r, .wt = wt_r, .in = Ci, .out = Co};
        cpu_conv cx = {.b = cv->b, .taps = taps_x, .wt = wt_x, .in = Ci, .out = Co};
        cpu_conv3x3(want_r, dr, &cr, Hu, Wu, g->spans[l + 1], g->n_spans[l + 1], mode, NULL, 1);
        cpu_conv3x3(want_x, dx, &cx, Hu, Wu, g->spans[l + 1], g->n_spans[l + 1], mode, NULL, 1);
        double scale = 0;
        for (int r = 0; r < no; r++)
            for (int ch = 0; ch < Co; ch++) scale = fmax(scale, fabs(want_x[(size_t)pout[r] * Co + ch]));
        for (int r = 0; r < no; r++) {
            for (int ch = 0; ch < Co; ch++) {
                double wr = want_r[(size_t)pout[r] * Co + ch], wx = want_x[(size_t)pout[r] * Co + ch];
                double d_same = fabs(pre[(size_t)r * oc + ch] - wr), d_exact = fabs(got[(size_t)r * oc + ch] - wx);
                worst_same = fmax(worst_same, d_same / scale);
                worst_exact = fmax(worst_exact, d_exact / scale);
                cr_assert(d_same <= 1e-4 * scale, "%s layer %d texel %d ch %d: emulated %.8g, the CPU's %.8g on the same "
                          "numbers", bundle, l, r, ch, pre[(size_t)r * oc + ch], wr);
                cr_assert(d_exact <= (bf16 ? 4e-2 : 5e-3) * scale, "%s layer %d texel %d ch %d: %.6g, exact %.6g",
                          bundle, l, r, ch, got[(size_t)r * oc + ch], wx);
            }
            for (int ch = Co; ch < oc; ch++) cr_assert_eq(got[(size_t)r * oc + ch], 0.0f, "padding channel %d", ch);
        }
        free(pin); free(pout); free(nbr); free(compact); free(dr); free(dx); free(w_r); free(taps_r); free(wt_r);
        free(taps_x); free(wt_x); free(wp); free(got); free(pre); free(want_r); free(want_x);
    }
    cr_log_info("%s garment %d %s: max |emulated − CPU| / scale: %.3g on the same numbers, %.3g against FP32", bundle,
                gi, bf16 ? "bf16" : "fp16", worst_same, worst_exact);
    drape_model_free(m);
}

Test(cuda_host, tc_layers_match_cpu_conv_tiny_fp16) { layer_case("tiny_random", 0, 0); }
Test(cuda_host, tc_layers_match_cpu_conv_tiny_bf16) { layer_case("tiny_random", 1, 1); }
Test(cuda_host, tc_layers_match_cpu_conv_small_fp16, .timeout = 120) { layer_case("small_random", 0, 0); }
Test(cuda_host, tc_layers_match_cpu_conv_small_bf16, .timeout = 120) { layer_case("small_random", 1, 1); }

/* The whole UV stage (docs/design.md §2.4 steps 7–9) as the backend chains it
 * on tensor cores (uv_chunk_tc): the input map a channel at a time in the
 * 16-bit type, the layers through the two compact buffers (their padded
 * widths, modes, the last one in FP32), the sampling table; against the CPU
 * backend's stage (cpu_uv_input, cpu_conv3x3, cpu_uv_sample) on a real
 * identity's F_UV, the garment posed at rest and a random φ. */
static void stage_case(const char *bundle, int bf16)
{
    drape_model *m = tu_load(bundle);
    const drape_config *c = &m->cfg;
    drape_backend *cpu = tu_backend(m);
    int Hu = c->uv_h, Wu = c->uv_w, L = c->n_conv, df = c->feat_dim, dp = c->pose_dim, C0 = 4 + df + dp;
    size_t P = (size_t)(Hu + 2) * (Wu + 2);
    for (int gi = 0; gi < c->n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        float betas[2] = {0.7f, -0.4f};
        drape_identity *id = tu_identity(cpu, gi, betas, 2);
        const float *F = ((const cpu_identity *)id)->F_cov;
        float phi[1024], bias[1024], phib[1024];
        uint64_t s = 60 + gi;
        for (int i = 0; i < dp; i++) {
            phi[i] = tu_rand(&s);
            bias[i] = m->net.pose_embed.b[i];
            phib[i] = phi[i] + bias[i];
        }
        /* CPU */
        int Cmax = C0;
        for (int l = 0; l < L; l++) Cmax = c->conv[l] > Cmax ? c->conv[l] : Cmax;
        float *maps[3] = {calloc(P * Cmax, 4), calloc(P * Cmax, 4), calloc(P * Cmax, 4)};
        float *want = malloc(sizeof(float) * 3 * g->V), *got = malloc(sizeof(float) * 3 * g->V);
        cpu_uv_input(maps[0], g, g->rest, F, phib, df, dp, Hu, Wu);
        int cur = 0;
        for (int l = 0; l < L; l++) {
            const drape_conv *cv = &m->net.conv[l];
            float *taps = malloc(sizeof(float) * 9 * cv->in * cv->out), *wt = malloc(sizeof(float) * 9 * cv->in * cv->out);
            cpu_conv_pack(taps, wt, cv->w, cv->in, cv->out);
            cpu_conv cc = {.b = cv->b, .taps = taps, .wt = wt, .in = cv->in, .out = cv->out};
            int mode = l == L - 1 ? 0 : cv->in == cv->out ? 2 : 1, o = l % 2 ? 2 : 1;
            cpu_conv3x3(maps[o], maps[cur], &cc, Hu, Wu, g->spans[l + 1], g->n_spans[l + 1], mode, NULL, 1);
            cur = o;
            free(taps);
            free(wt);
        }
        cpu_uv_sample(want, g, maps[cur], Hu, Wu);
        /* tensor cores, emulated */
        int n0, Cp0 = hd_tc_pad(C0);
        int32_t *pos = positions(g, 0, &n0), *in_cov = malloc(sizeof(int32_t) * (size_t)(n0 + 1));
        hd_input_cov(in_cov, pos, n0, g->cov_texel, g->n_cov, Wu);
        float *buf[2] = {malloc(sizeof(float) * P * (Cmax + 16)), malloc(sizeof(float) * P * (Cmax + 16))};
        for (int i = 0; i < n0; i++)
            for (int ch = 0; ch < Cp0; ch++)
                buf[0][(size_t)i * Cp0 + ch] = round16(hd_uv_input_at(ch, in_cov[i], g->faces, g->texel_face,
                                                                      g->texel_bary, g->cov_texel, g->rest, F, phi, bias,
                                                                      df, dp), bf16);
        float *last = NULL, *pre = malloc(sizeof(float) * P * (Cmax + 16));
        for (int l = 0; l < L; l++) {
            const drape_conv *cv = &m->net.conv[l];
            int Cip = hd_tc_pad(cv->in), Cop = hd_tc_pad(cv->out), islast = l == L - 1;
            int mode = islast ? 0 : cv->in == cv->out ? 2 : 1, ni, no;
            int32_t *pin = positions(g, l, &ni), *pout = positions(g, l + 1, &no);
            int32_t *nbr = malloc(sizeof(int32_t) * 9 * (size_t)(no + 1));
            cr_assert_eq(hd_tc_neighbours(nbr, pout, no, pin, ni, Hu, Wu), -1);
            float *taps = malloc(sizeof(float) * 9 * cv->in * cv->out), *wt = malloc(sizeof(float) * 9 * cv->in * cv->out);
            float *wp = malloc(sizeof(float) * 9 * (size_t)Cip * Cop), bp[4096];
            cpu_conv_pack(taps, wt, cv->w, cv->in, cv->out);
            hd_tc_pack_weights(wp, bp, taps, cv->b, cv->in, cv->out, Cip, Cop);
            for (size_t i = 0; i < (size_t)9 * Cip * Cop; i++) wp[i] = round16(wp[i], bf16);
            float *dst = islast ? (last = malloc(sizeof(float) * 3 * (size_t)(no + 1))) : buf[(l + 1) & 1];
            emulate_layer(dst, pre, buf[l & 1], wp, bp, nbr, no, Cip, Cop, mode, islast, bf16);
            free(pin); free(pout); free(nbr); free(taps); free(wt); free(wp);
        }
        int nl, copies = g->copy_start[g->V];
        int32_t *posl = positions(g, L, &nl), *row = malloc(sizeof(int32_t) * 4 * (size_t)copies);
        float *w = malloc(sizeof(float) * 4 * (size_t)copies);
        cr_assert_eq(hd_tc_sample_table(row, w, g->uv, g->copy_uv, copies, posl, nl, Hu, Wu), -1);
        for (int v = 0; v < g->V; v++) hd_tc_sample_vertex(got + 3 * v, g->copy_start, row, w, last, v);
        double scale = 0, worst = 0;
        for (int i = 0; i < 3 * g->V; i++) scale = fmax(scale, fabs(want[i]));
        for (int i = 0; i < 3 * g->V; i++) worst = fmax(worst, fabs(got[i] - want[i]));
        cr_log_info("%s garment %d %s: displacements up to %.3g m, the tensor-core stage %.3g m off the CPU's", bundle,
                    gi, bf16 ? "bf16" : "fp16", scale, worst);
        cr_assert(scale > 1e-4, "the random network should displace (%g)", scale);
        cr_assert_leq(worst, (bf16 ? 5e-2 : 1e-2) * scale, "%s garment %d: %g m of %g", bundle, gi, worst, scale);
        for (int i = 0; i < 3; i++) free(maps[i]);
        free(want); free(got); free(pos); free(in_cov); free(buf[0]); free(buf[1]); free(last); free(pre);
        free(posl); free(row); free(w);
        drape_identity_free(cpu, id);
    }
    drape_backend_free(cpu);
    drape_model_free(m);
}

Test(cuda_host, tc_uv_stage_matches_cpu_tiny_fp16) { stage_case("tiny_random", 0); }
Test(cuda_host, tc_uv_stage_matches_cpu_tiny_bf16) { stage_case("tiny_random", 1); }
Test(cuda_host, tc_uv_stage_matches_cpu_small_fp16, .timeout = 120) { stage_case("small_random", 0); }
