/* Latency percentiles and the `drape load` report (see loadstats.h). */
#include "loadstats.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/status.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* nearest rank: index ceil(p·n) − 1 */
static double rank(const double *sorted, size_t n, double p)
{
    double r = ceil(p * (double)n);
    size_t i = r < 1 ? 0 : (size_t)r - 1;
    return sorted[i < n ? i : n - 1];
}

void drape_latency_summarize(double *ms, size_t n, drape_latency_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (!n) return;
    qsort(ms, n, sizeof *ms, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += ms[i];
    s->mean = sum / (double)n;
    s->p50 = rank(ms, n, 0.50);
    s->p90 = rank(ms, n, 0.90);
    s->p99 = rank(ms, n, 0.99);
    s->p999 = rank(ms, n, 0.999);
    s->max = ms[n - 1];
}

static double throughput(const drape_load_report *r)
{
    return r->elapsed_s > 0 ? (double)r->received / r->elapsed_s : 0;
}

int drape_load_report_text(drape_buf *out, const drape_load_report *r)
{
    const drape_latency_stats *l = &r->latency;
    return drape_buf_printf(out,
                            "target      %s (%s, garment %s)\n"
                            "load        %d avatars (%d opened) on %d connections at %g fps for %g s\n"
                            "throughput  %.1f frames/s over %.2f s\n"
                            "frames      %llu sent, %llu received, %llu dropped by the server, %llu missing\n"
                            "errors      %llu error messages, %llu connection errors\n"
                            "latency ms  p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f  mean %.2f  (n %zu)\n",
                            r->url ? r->url : "?", r->format ? r->format : "?", r->garment ? r->garment : "?",
                            r->avatars, r->opened, r->connections, r->fps, r->duration_s, throughput(r), r->elapsed_s,
                            (unsigned long long)r->sent, (unsigned long long)r->received,
                            (unsigned long long)r->dropped, (unsigned long long)r->missing,
                            (unsigned long long)r->errors, (unsigned long long)r->conn_errors, l->p50, l->p90, l->p99,
                            l->p999, l->max, l->mean, l->n);
}

int drape_load_report_json(drape_buf *out, const drape_load_report *r)
{
    const drape_latency_stats *l = &r->latency;
    json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I,"
                          " s:{s:I, s:f, s:f, s:f, s:f, s:f, s:f}}",
                          "url", r->url ? r->url : "", "format", r->format ? r->format : "", "garment",
                          r->garment ? r->garment : "", "avatars", r->avatars, "opened", r->opened, "connections",
                          r->connections, "fps",
                          r->fps, "duration_s", r->duration_s, "elapsed_s", r->elapsed_s, "throughput_fps",
                          throughput(r), "sent", (json_int_t)r->sent, "received", (json_int_t)r->received, "dropped",
                          (json_int_t)r->dropped, "missing", (json_int_t)r->missing, "errors", (json_int_t)r->errors,
                          "connection_errors", (json_int_t)r->conn_errors, "latency_ms", "n", (json_int_t)l->n,
                          "p50", l->p50, "p90", l->p90, "p99", l->p99, "p99_9", l->p999, "max", l->max, "mean",
                          l->mean);
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(j);
    if (!s) return DRAPE_ENOMEM;
    int rc = drape_buf_printf(out, "%s\n", s);
    free(s);
    return rc;
}
