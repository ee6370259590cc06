/* Latency percentiles and the report of `drape load` (tools/load_cmd.c),
 * kept in the library so that tests can check them. */
#ifndef DRAPE_LOADSTATS_H
#define DRAPE_LOADSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct {
    size_t n;
    double mean, p50, p90, p99, p999, max; /* ms; all 0 when n == 0 */
} drape_latency_stats;

/* Sorts ms[0..n) in place and fills *s. Percentiles by nearest rank: pX is
 * the smallest sample with at least X% of the samples ≤ it. */
void drape_latency_summarize(double *ms, size_t n, drape_latency_stats *s);

typedef struct {
    const char *url, *format, *garment;
    int avatars, connections;
    int opened;                /* avatars the server opened (a refused open is in errors) */
    double fps, duration_s;    /* requested */
    double elapsed_s;          /* the throughput window: first scheduled send to the last frame
                                  received (the drain's idle wait left out; the requested duration
                                  when no frame came) */
    uint64_t sent, received;   /* poses sent, frames received */
    uint64_t dropped;          /* the server's dropped counts, summed over avatars */
    uint64_t missing;          /* sent − received − error replies (lost or still pending at the end) */
    uint64_t errors;           /* stream error messages */
    uint64_t conn_errors;      /* connections that failed or broke */
    drape_latency_stats latency;
} drape_load_report;

/* Appends the report: human-readable lines, or one JSON object. */
int drape_load_report_text(drape_buf *out, const drape_load_report *r);
int drape_load_report_json(drape_buf *out, const drape_load_report *r);

#endif
