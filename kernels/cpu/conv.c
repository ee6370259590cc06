/* 3×3 convolution of the UV stage (DESIGN 2.4 step 8).
 *
 * Maps are stored padded, [(Hu+2)(Wu+2), C] channels-last with a zero border,
 * so that for a run of flat positions every tap (dy,dx) reads a contiguous
 * run shifted by dy·(Wu+2)+dx: the conv is 9 GEMMs [n,Cin]·[Cin,Cout] with no
 * im2col copy. Only the spans the garment needs are computed (uvmap.c). */
#include <cblas.h>
#include <string.h>

#include "ops.h"

static void epilogue(float *out, const float *in, const float *bias, int64_t b, int64_t e, int C, int pw, int mode)
{
    for (int64_t p = b; p < e; p++) {
        float *o = out + p * C;
        int col = (int)(p % pw);
        if (col == 0 || col == pw - 1) { /* border column: stays zero padding */
            memset(o, 0, (size_t)C * sizeof *o);
            continue;
        }
        if (mode == 0) {
            for (int c = 0; c < C; c++) o[c] += bias[c];
        } else {
            const float *x = in + p * C;
            for (int c = 0; c < C; c++) {
                float v = o[c] + bias[c];
                v = v > 0 ? v : 0;
                o[c] = mode == 2 ? x[c] + v : v;
            }
        }
    }
}

void cpu_conv3x3(float *out, const float *in, const drape_conv *cv, int Hu, int Wu, const drape_span *spans,
                 int n_spans, int mode)
{
    int pw = Wu + 2, Ci = cv->in, Co = cv->out;
    /* The border is the zero padding the next layer reads. The buffer may have
     * held a map of another width, so lay it afresh: (2·pw + 2·Hu)·Co floats. */
    memset(out, 0, (size_t)pw * Co * sizeof *out);
    memset(out + (size_t)(Hu + 1) * pw * Co, 0, (size_t)pw * Co * sizeof *out);
    for (int i = 1; i <= Hu; i++) {
        memset(out + (size_t)i * pw * Co, 0, (size_t)Co * sizeof *out);
        memset(out + ((size_t)i * pw + pw - 1) * Co, 0, (size_t)Co * sizeof *out);
    }
    for (int s = 0; s < n_spans; s++) {
        int64_t b = spans[s].begin, e = spans[s].end;
        int n = (int)(e - b);
        for (int t = 0; t < 9; t++) {
            int64_t shift = (int64_t)(t / 3 - 1) * pw + (t % 3 - 1);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, Co, Ci, 1.0f, in + (b + shift) * Ci, Ci,
                        cv->taps + (size_t)t * Ci * Co, Co, t ? 1.0f : 0.0f, out + b * Co, Co);
        }
        epilogue(out, in, cv->b, b, e, Co, pw, mode);
    }
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
