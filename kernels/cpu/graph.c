/* Message-passing gathers and scatters of module B's encoder. */
#include <string.h>

#include "ops.h"

void cpu_edge_concat(float *cat, const float *e, const float *h, const int32_t *snd, const int32_t *rcv, int E, int d)
{
    size_t row = (size_t)d * sizeof *cat;
    for (int i = 0; i < E; i++) {
        float *c = cat + (size_t)i * 3 * d;
        memcpy(c, e + (size_t)i * d, row);
        memcpy(c + d, h + (size_t)snd[i] * d, row);
        memcpy(c + 2 * d, h + (size_t)rcv[i] * d, row);
    }
}

void cpu_scatter_add(float *agg, const float *e, const int32_t *rcv, int E, int N, int d)
{
    memset(agg, 0, (size_t)N * d * sizeof *agg);
    for (int i = 0; i < E; i++) {
        float *a = agg + (size_t)rcv[i] * d;
        const float *x = e + (size_t)i * d;
        for (int k = 0; k < d; k++) a[k] += x[k];
    }
}
