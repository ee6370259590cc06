/* draped's counters, and all of the Prometheus text GET /metrics serves.
 * Everything is a relaxed atomic: counting never takes a lock. Cache and
 * batcher figures are read from their own stats at scrape time. */
#ifndef DRAPED_METRICS_H
#define DRAPED_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "../proto/buf.h"
#include "../proto/errors.h"
#include "../runtime/batcher.h"
#include "../runtime/idcache.h"
#include "../runtime/sequence.h"

/* The routes drape_http_requests_total counts by: R_<name>, its label. */
#define DRAPED_ROUTE_MAP(XX)                                                                                       \
    XX(HEALTHZ, "healthz")                                                                                         \
    XX(READYZ, "readyz")                                                                                           \
    XX(METRICS, "metrics")                                                                                         \
    XX(MODEL, "model")                                                                                             \
    XX(GARMENT, "garment")                                                                                         \
    XX(BODY, "body")                                                                                               \
    XX(IDENTITIES, "identities")                                                                                   \
    XX(FRAMES, "frames")                                                                                           \
    XX(MOTIONS, "motions")                                                                                         \
    XX(STREAM, "stream")                                                                                           \
    XX(STATIC, "static")                                                                                           \
    XX(OTHER, "other")

enum {
#define XX(name, label) R_##name,
    DRAPED_ROUTE_MAP(XX)
#undef XX
    R_COUNT
};
enum { C_101, C_200, C_400, C_401, C_404, C_405, C_413, C_426, C_500, C_503, C_OTHER, C_COUNT };

/* drape_ws_closes_total's labels: each code a close may carry (those
 * proto/ws.c accepts from a peer, whose close the server echoes), the
 * application ranges 3000-3999 and 4000-4999 as two classes so that
 * clients cannot grow the label set, and "other" (never expected). */
#define DRAPED_CLOSE_CODES 1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014
enum { WSC_CODES = 12, WSC_3XXX = WSC_CODES, WSC_4XXX, WSC_OTHER, WSC_COUNT };

/* hard limits, counted when hit (L_PER_IP: refused at accept; L_HEADERS: no
 * complete headers in time; L_MOTION: a motion file over --motion-max-bytes) */
enum { L_CONNECTIONS, L_AVATARS, L_MESSAGE, L_BODY, L_SEND_QUEUE, L_ERROR_FLOOD, L_IDLE, L_CACHE, L_PER_IP, L_HEADERS,
       L_POSE, L_MOTION, L_COUNT };

/* latency histogram buckets (µs) */
#define DRAPED_HIST_N 14

typedef struct {
    _Atomic uint64_t count, sum_us, bucket[DRAPED_HIST_N + 1];
} draped_hist;

typedef struct {
    _Atomic uint64_t http[R_COUNT][C_COUNT];
    _Atomic uint64_t stream_conns_total, stream_conns_open, avatars_open;
    _Atomic uint64_t poses_total, frames_total, dropped_total, frames_lost_on_close;
    _Atomic uint64_t cuts[DRAPE_CUT_KINDS]; /* by drape_pose_cut's reasons, plus reset and seq_gap */
    _Atomic uint64_t frames_failed, frames_nonfinite; /* computed but not packed: an error went instead */
    _Atomic uint64_t stream_errors[DRAPE_EC_COUNT]; /* by code; only the map's STREAM codes are rendered */
    _Atomic uint64_t ws_closes[WSC_COUNT]; /* by DRAPED_CLOSE_CODES, then the classes */
    _Atomic uint64_t limits[L_COUNT];
    _Atomic uint64_t bytes_out, http_frames_total, auth_failures;
    draped_hist queue_us, compute_us, pack_us, server_us;
    /* physics mode (server/physics.h) */
    _Atomic uint64_t physics_frames, physics_skips, physics_resets, physics_catch_ups, physics_avatars;
    draped_hist physics_us; /* a frame's simulation */
} draped_metrics;

void draped_count_http(draped_metrics *m, int route, unsigned code);
void draped_count_error(draped_metrics *m, drape_errcode code);
void draped_count_close(draped_metrics *m, int code);
void draped_hist_add(draped_hist *h, uint64_t us);
/* Append the metrics text (every Prometheus line draped serves): the
 * counters above, then the identity cache's and the batcher's figures and
 * the backend's health, read by the caller at scrape time. */
int draped_metrics_render(drape_buf *out, draped_metrics *m);
int draped_metrics_render_runtime(drape_buf *out, const drape_idcache_stats *cs, const drape_batcher_stats *bs,
                                  int healthy);
/* the physics pool's figures and the cache's rigs, read at scrape time */
int draped_metrics_render_physics(drape_buf *out, int rigs, uint64_t rig_builds, int threads, int busy, int queued);

#define COUNT(x) atomic_fetch_add_explicit(&(x), 1, memory_order_relaxed)
#define COUNT_N(x, n) atomic_fetch_add_explicit(&(x), (n), memory_order_relaxed)
#define UNCOUNT(x) atomic_fetch_sub_explicit(&(x), 1, memory_order_relaxed)

#endif
