#include "metrics.h"

static const char *route_names[R_COUNT] = {
#define XX(name, label) label,
    DRAPED_ROUTE_MAP(XX)
#undef XX
};
static const unsigned codes[C_COUNT] = {101, 200, 400, 401, 404, 405, 413, 426, 500, 503, 0};
static const char *limit_names[L_COUNT] = {"connections", "avatars", "message", "body", "send_queue",
                                           "error_flood", "idle", "cache", "per_ip", "header_timeout", "pose",
                                           "motion"};
static const int close_codes[] = {DRAPED_CLOSE_CODES};
_Static_assert(sizeof close_codes / sizeof close_codes[0] == WSC_CODES, "WSC_CODES counts DRAPED_CLOSE_CODES");
static const char *close_classes[WSC_COUNT - WSC_CODES] = {"3xxx", "4xxx", "other"};
static const uint64_t hist_le[DRAPED_HIST_N] = {50, 100, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000,
                                                100000, 250000, 1000000, 5000000};

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

void draped_count_http(draped_metrics *m, int route, unsigned code)
{
    int c = C_OTHER;
    for (int i = 0; i < C_OTHER; i++)
        if (codes[i] == code) c = i;
    COUNT(m->http[route][c]);
}

void draped_count_error(draped_metrics *m, drape_errcode code)
{
    /* a code without a slot would be lost: count it where a reader looks */
    if ((unsigned)code >= DRAPE_EC_COUNT || drape_errcode_metric(code) != DRAPE_EC_METRIC_STREAM)
        code = DRAPE_EC_INTERNAL;
    COUNT(m->stream_errors[code]);
}

void draped_count_close(draped_metrics *m, int code)
{
    int slot = code >= 3000 && code <= 3999 ? WSC_3XXX : code >= 4000 && code <= 4999 ? WSC_4XXX : WSC_OTHER;
    for (int i = 0; i < WSC_CODES; i++)
        if (close_codes[i] == code) slot = i;
    COUNT(m->ws_closes[slot]);
}

void draped_hist_add(draped_hist *h, uint64_t us)
{
    int b = 0;
    while (b < DRAPED_HIST_N && us > hist_le[b]) b++;
    COUNT(h->bucket[b]);
    COUNT(h->count);
    COUNT_N(h->sum_us, us);
}

static int hist(drape_buf *o, const char *name, const char *help, draped_hist *h)
{
    int rc = drape_buf_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int b = 0; b < DRAPED_HIST_N; b++) {
        cum += LOAD(h->bucket[b]);
        rc |= drape_buf_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, (double)hist_le[b] / 1e6,
                               (unsigned long long)cum);
    }
    cum += LOAD(h->bucket[DRAPED_HIST_N]);
    rc |= drape_buf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %g\n%s_count %llu\n", name,
                           (unsigned long long)cum, name, (double)LOAD(h->sum_us) / 1e6, name,
                           (unsigned long long)LOAD(h->count));
    return rc;
}

static int counter(drape_buf *o, const char *name, const char *help, uint64_t v, const char *type)
{
    return drape_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                            (unsigned long long)v);
}

/* a counter with one label: HELP, TYPE and a line per value */
static int labelled(drape_buf *o, const char *name, const char *help, const char *label, const char *const *values,
                    const _Atomic uint64_t *counts, int n)
{
    int rc = drape_buf_printf(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (int i = 0; i < n; i++)
        rc |= drape_buf_printf(o, "%s{%s=\"%s\"} %llu\n", name, label, values[i], (unsigned long long)LOAD(counts[i]));
    return rc;
}

int draped_metrics_render(drape_buf *o, draped_metrics *m)
{
    int rc = drape_buf_printf(o, "# HELP drape_http_requests_total HTTP requests by route and status.\n"
                                 "# TYPE drape_http_requests_total counter\n");
    for (int r = 0; r < R_COUNT; r++)
        for (int c = 0; c < C_COUNT; c++) {
            uint64_t v = LOAD(m->http[r][c]);
            if (!v) continue;
            if (codes[c]) rc |= drape_buf_printf(o, "drape_http_requests_total{route=\"%s\",code=\"%u\"} %llu\n",
                                                 route_names[r], codes[c], (unsigned long long)v);
            else rc |= drape_buf_printf(o, "drape_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
                                        route_names[r], (unsigned long long)v);
        }
    rc |= counter(o, "drape_stream_connections_total", "WebSocket streams accepted.", LOAD(m->stream_conns_total),
                  "counter");
    rc |= counter(o, "drape_stream_connections", "WebSocket streams open now.", LOAD(m->stream_conns_open), "gauge");
    rc |= counter(o, "drape_avatars", "Avatars open now.", LOAD(m->avatars_open), "gauge");
    rc |= counter(o, "drape_poses_total", "Poses received on streams.", LOAD(m->poses_total), "counter");
    rc |= counter(o, "drape_frames_total", "Frames sent on streams.", LOAD(m->frames_total), "counter");
    rc |= counter(o, "drape_http_frames_total", "Frames computed for POST /v1/frames.", LOAD(m->http_frames_total),
                  "counter");
    rc |= counter(o, "drape_dropped_poses_total", "Poses replaced by a newer one before they were computed.",
                  LOAD(m->dropped_total), "counter");
    rc |= counter(o, "drape_frames_lost_on_close_total", "Frames finished after their avatar or stream closed.",
                  LOAD(m->frames_lost_on_close), "counter");
    rc |= counter(o, "drape_frames_nonfinite_total",
                  "Frames (stream and POST /v1/frames) whose model output held NaN or Inf: an internal error went "
                  "instead.",
                  LOAD(m->frames_nonfinite), "counter");
    rc |= counter(o, "drape_sent_bytes_total", "Bytes written to stream sockets.", LOAD(m->bytes_out), "counter");
    rc |= counter(o, "drape_auth_failures_total", "Requests without a valid API key.", LOAD(m->auth_failures),
                  "counter");
    rc |= drape_buf_printf(o, "# HELP drape_stream_errors_total Stream error messages sent, by code.\n"
                              "# TYPE drape_stream_errors_total counter\n");
    for (int i = 0; i < DRAPE_EC_COUNT; i++)
        if (drape_errcode_metric((drape_errcode)i) == DRAPE_EC_METRIC_STREAM)
            rc |= drape_buf_printf(o, "drape_stream_errors_total{code=\"%s\"} %llu\n",
                                   drape_errcode_wire((drape_errcode)i), (unsigned long long)LOAD(m->stream_errors[i]));
    rc |= drape_buf_printf(o, "# HELP drape_ws_closes_total WebSocket closes sent, by close code (a client's "
                              "close is echoed with its code; 3xxx, 4xxx: the application ranges).\n"
                              "# TYPE drape_ws_closes_total counter\n");
    for (int i = 0; i < WSC_CODES; i++)
        rc |= drape_buf_printf(o, "drape_ws_closes_total{code=\"%d\"} %llu\n", close_codes[i],
                               (unsigned long long)LOAD(m->ws_closes[i]));
    for (int i = WSC_CODES; i < WSC_COUNT; i++)
        if (i != WSC_OTHER || LOAD(m->ws_closes[i]))
            rc |= drape_buf_printf(o, "drape_ws_closes_total{code=\"%s\"} %llu\n", close_classes[i - WSC_CODES],
                                   (unsigned long long)LOAD(m->ws_closes[i]));
    static const char *cut_names[DRAPE_CUT_KINDS] = {"", "reset", "seq_gap", "speed", "spin"};
    rc |= labelled(o, "drape_stream_cuts_total",
                   "Cuts in avatars' motion (history restarted), by what told: the client (reset), a seq jump, "
                   "or the root's speed or a joint's spin.",
                   "reason", cut_names + 1, m->cuts + 1, DRAPE_CUT_KINDS - 1);
    rc |= labelled(o, "drape_limit_hits_total", "Hard limits hit, by limit.", "limit", limit_names, m->limits,
                   L_COUNT);
    rc |= hist(o, "drape_frame_queue_seconds", "Time a frame waited in the batcher.", &m->queue_us);
    rc |= hist(o, "drape_frame_compute_seconds", "Batch compute time per frame's batch.", &m->compute_us);
    rc |= hist(o, "drape_frame_pack_seconds", "Time to pack a frame for the wire.", &m->pack_us);
    rc |= hist(o, "drape_frame_server_seconds", "Pose received to frame queued for sending.", &m->server_us);
    rc |= counter(o, "drape_physics_frames_total", "Frames of physics avatars sent.", LOAD(m->physics_frames),
                  "counter");
    rc |= counter(o, "drape_physics_skips_total",
                  "Poses of physics avatars skipped (replaced by a newer one while the cloth was busy).",
                  LOAD(m->physics_skips), "counter");
    rc |= counter(o, "drape_physics_resets_total",
                  "Physics avatars whose cloth diverged and was restarted from skinning (physics_reset).",
                  LOAD(m->physics_resets), "counter");
    rc |= counter(o, "drape_physics_catch_ups_total",
                  "Physics avatars that fell too far behind their poses and started again from skinning.",
                  LOAD(m->physics_catch_ups), "counter");
    rc |= counter(o, "drape_physics_avatars", "Physics avatars open now.", LOAD(m->physics_avatars), "gauge");
    rc |= hist(o, "drape_physics_frame_seconds", "Time to simulate one physics frame.", &m->physics_us);
    return rc ? -1 : 0;
}

int draped_metrics_render_physics(drape_buf *o, int rigs, uint64_t rig_builds, int threads, int busy, int queued)
{
    int rc = counter(o, "drape_physics_rigs", "Identities' physics rigs (factorized cloth systems) in the cache.",
                     (uint64_t)rigs, "gauge");
    rc |= counter(o, "drape_physics_rig_builds_total", "Physics rigs made (once per identity while cached).",
                  rig_builds, "counter");
    rc |= counter(o, "drape_physics_threads", "Physics worker threads.", (uint64_t)threads, "gauge");
    rc |= counter(o, "drape_physics_busy", "Physics workers simulating now.", (uint64_t)busy, "gauge");
    rc |= counter(o, "drape_physics_queued", "Physics frames waiting for a worker.", (uint64_t)queued, "gauge");
    return rc ? -1 : 0;
}

int draped_metrics_render_runtime(drape_buf *o, const drape_idcache_stats *cs, const drape_batcher_stats *bs,
                                  int healthy)
{
    int rc = drape_buf_printf(o,
                           "# TYPE drape_cache_hits_total counter\ndrape_cache_hits_total %llu\n"
                           "# TYPE drape_cache_misses_total counter\ndrape_cache_misses_total %llu\n"
                           "# TYPE drape_cache_encodes_total counter\ndrape_cache_encodes_total %llu\n"
                           "# TYPE drape_cache_evictions_total counter\ndrape_cache_evictions_total %llu\n"
                           "# TYPE drape_cache_refused_total counter\ndrape_cache_refused_total %llu\n"
                           "# TYPE drape_cache_bytes gauge\ndrape_cache_bytes %zu\n"
                           "# TYPE drape_cache_budget_bytes gauge\ndrape_cache_budget_bytes %zu\n"
                           "# TYPE drape_cache_device_bytes gauge\ndrape_cache_device_bytes %zu\n"
                           "# TYPE drape_cache_identities gauge\ndrape_cache_identities %d\n"
                           "# TYPE drape_cache_pinned gauge\ndrape_cache_pinned %d\n"
                           "# TYPE drape_batches_total counter\ndrape_batches_total %llu\n"
                           "# TYPE drape_batch_frames_total counter\ndrape_batch_frames_total %llu\n"
                           "# TYPE drape_batch_failures_total counter\ndrape_batch_failures_total %llu\n"
                           "# TYPE drape_frame_failures_total counter\ndrape_frame_failures_total %llu\n"
                           "# TYPE drape_batcher_queued gauge\ndrape_batcher_queued %d\n"
                           "# TYPE drape_backend_healthy gauge\ndrape_backend_healthy %d\n",
                           (unsigned long long)cs->hits, (unsigned long long)cs->misses,
                           (unsigned long long)cs->encodes, (unsigned long long)cs->evictions,
                           (unsigned long long)cs->refused, cs->bytes, cs->max_bytes, cs->device_bytes, cs->resident, cs->pinned,
                           (unsigned long long)bs->batches, (unsigned long long)bs->frames,
                           (unsigned long long)bs->failed_batches, (unsigned long long)bs->failed_frames, bs->queued,
                           healthy);
    rc |= drape_buf_printf(o, "# HELP drape_batch_size Frames per batch.\n# TYPE drape_batch_size histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < 8; i++) {
        cum += bs->size_hist[i];
        if (i < 7)
            rc |= drape_buf_printf(o, "drape_batch_size_bucket{le=\"%d\"} %llu\n", (2 << i) - 1,
                                   (unsigned long long)cum);
    }
    rc |= drape_buf_printf(o,
                           "drape_batch_size_bucket{le=\"+Inf\"} %llu\ndrape_batch_size_sum %llu\n"
                           "drape_batch_size_count %llu\n",
                           (unsigned long long)cum, (unsigned long long)bs->frames, (unsigned long long)bs->batches);
    return rc ? -1 : 0;
}
