/* `drape load`: an open-loop load generator for GET /v1/stream.
 *   drape load --url ws[s]://HOST:PORT/v1/stream --avatars N --fps F --duration S
 *              [--connections C] [--format f32|f16|q16|meshopt] [--garment NAME]
 *              [--betas b0,b1,...] [--mode neural|lbs|physics] [--text] [--drain S] [--json]
 *              [--cacert FILE] [--insecure]
 * Every avatar has a fixed schedule: pose k is due at t0 + phase + k/fps, and
 * its latency is measured from that due time, not from when it was actually
 * sent, so a server (or a client thread) that falls behind cannot hide it.
 * One thread per connection; avatars are spread over the connections. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../proto/client.h"
#include "../proto/loadstats.h"
#include "../proto/pack.h"
#include "tools.h"
#include "../core/clock.h"

typedef struct {
    const char *url, *garment, *betas_arg, *cacert;
    int avatars, connections, format, mode, text, json, insecure;
    double fps, duration, drain;
    float betas[DRAPE_MSG_BETAS_MAX];
    int n_betas;
} load_opts;

typedef struct {
    const load_opts *o;
    int first, n;            /* global avatar indices first .. first+n-1 */
    uint64_t *next_seq;      /* per avatar: the next pose to send */
    uint64_t *dropped;       /* per avatar: the server's (cumulative) dropped count */
    int *live;               /* per avatar: opened without error */
    double *lat;             /* latencies, ms */
    size_t n_lat, cap_lat;
    uint64_t sent, received, errors, pose_errors;
    double last_rx;          /* time of the last frame, s */
    int conn_error;
    char why[DRAPE_ERRMSG_MAX];
} worker;

static pthread_barrier_t opened_barrier, start_barrier;
static double t0; /* the common start of every schedule (s, CLOCK_MONOTONIC); set between the barriers */

/* When avatar a's pose seq is due: avatars are phased evenly over one period. */
static double due(const load_opts *o, int a, uint64_t seq)
{
    return t0 + ((double)a / o->avatars + (double)seq) / o->fps;
}

/* A smooth sway of a few joints (pelvis turn, hips and knees walking, spine
 * and arms), different per avatar; SMPL axis-angle order, 24 joints × 3. */
static void sway_pose(float pose[72], int a, uint64_t seq, double fps)
{
    memset(pose, 0, 72 * sizeof *pose);
    double t = (double)seq / fps, ph = 0.7 * a, w = 2 * M_PI * (0.5 + 0.05 * (a % 7));
    double s = sin(w * t + ph), c = cos(w * t + ph);
    pose[0 * 3 + 1] = (float)(0.25 * s);   /* pelvis: turn */
    pose[1 * 3 + 0] = (float)(0.45 * s);   /* left hip: swing */
    pose[2 * 3 + 0] = (float)(-0.45 * s);  /* right hip */
    pose[4 * 3 + 0] = (float)(0.3 + 0.3 * c); /* left knee */
    pose[5 * 3 + 0] = (float)(0.3 - 0.3 * c); /* right knee */
    pose[3 * 3 + 2] = (float)(0.08 * c);   /* spine: lean */
    pose[16 * 3 + 2] = (float)(-1.1 + 0.2 * s); /* shoulders: arms down, swinging */
    pose[17 * 3 + 2] = (float)(1.1 + 0.2 * s);
}

static int fail_worker(worker *w, const drape_error *e)
{
    w->conn_error = 1;
    snprintf(w->why, sizeof w->why, "%s", e->msg);
    return -1;
}

static void record_latency(worker *w, double ms)
{
    if (w->n_lat == w->cap_lat) {
        size_t cap = w->cap_lat ? 2 * w->cap_lat : 4096;
        double *p = realloc(w->lat, cap * sizeof *p);
        if (!p) return; /* out of memory: the sample is lost, the run goes on */
        w->lat = p;
        w->cap_lat = cap;
    }
    w->lat[w->n_lat++] = ms;
}

/* The local index of the avatar a message names, or -1. */
static int local_avatar(const worker *w, const drape_server_msg *m)
{
    if (!m->has_avatar || m->avatar.is_str) return -1;
    int64_t i = (int64_t)m->avatar.num - w->first;
    return i >= 0 && i < w->n ? (int)i : -1;
}

static void handle(worker *w, const drape_server_msg *m, int *n_opened)
{
    int i = local_avatar(w, m);
    if (!strcmp(m->op, "opened")) {
        if (i >= 0 && !w->live[i]) w->live[i] = 1, (*n_opened)++;
    } else if (!strcmp(m->op, "frame") && i >= 0) {
        w->received++;
        w->last_rx = drape_now_s();
        record_latency(w, (w->last_rx - due(w->o, w->first + i, m->seq)) * 1e3);
        if (m->dropped > w->dropped[i]) w->dropped[i] = m->dropped;
    } else if (!strcmp(m->op, "error")) {
        w->errors++;
        if (m->has_seq) w->pose_errors++;
        if (w->errors <= 3) fprintf(stderr, "drape load: server error %s: %s\n", m->code, m->message);
        if (i >= 0 && !m->has_seq && !w->live[i]) (*n_opened)++; /* the open failed: stop waiting for it */
    }
}

/* Receives everything already there; waits up to timeout_ms for the first. */
static int pump(worker *w, drape_client *c, int timeout_ms, int *n_opened)
{
    drape_error e = {0};
    for (int wait = timeout_ms;; wait = 0) {
        drape_server_msg m;
        int r = drape_client_recv(c, &m, wait, &e);
        if (r == 1) {
            handle(w, &m, n_opened);
            drape_server_msg_clear(&m);
            continue;
        }
        if (r < 0) return fail_worker(w, &e);
        return 0;
    }
}

static uint64_t outstanding(const worker *w)
{
    uint64_t dropped = 0;
    for (int i = 0; i < w->n; i++) dropped += w->dropped[i];
    uint64_t done = w->received + w->pose_errors + dropped;
    return w->sent > done ? w->sent - done : 0;
}

static void run_schedule(worker *w, drape_client *c)
{
    const load_opts *o = w->o;
    uint64_t k = (uint64_t)floor(o->duration * o->fps);
    if (k == 0) k = 1;
    double end = t0 + o->duration + 1.0 / o->fps + o->drain;
    float pose[72];
    int dummy = 0;
    for (;;) {
        double now = drape_now_s(), next = INFINITY;
        for (int i = 0; i < w->n; i++) {
            if (!w->live[i]) continue;
            /* everything due goes now, however late */
            while (w->next_seq[i] < k && due(o, w->first + i, w->next_seq[i]) <= now) {
                drape_error e = {0};
                sway_pose(pose, w->first + i, w->next_seq[i], o->fps);
                drape_avatar_key a = {0, (uint64_t)(w->first + i), ""};
                if (drape_client_pose(c, &a, w->next_seq[i], pose, NULL, &e)) {
                    fail_worker(w, &e);
                    return;
                }
                w->sent++;
                w->next_seq[i]++;
            }
            if (w->next_seq[i] < k) next = fmin(next, due(o, w->first + i, w->next_seq[i]));
        }
        if (next == INFINITY && (outstanding(w) == 0 || now >= end)) return;
        double until = next == INFINITY ? end : next;
        int ms = (int)ceil((until - drape_now_s()) * 1e3);
        if (pump(w, c, ms < 0 ? 0 : ms, &dummy)) return;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    const load_opts *o = w->o;
    drape_client *c = NULL;
    drape_error e = {0};
    drape_client_opts co = {o->text, 10000, 0, NULL, o->cacert, o->insecure};
    int n_opened = 0;
    if (drape_client_connect(&c, o->url, &co, &e)) {
        fail_worker(w, &e);
    } else {
        for (int i = 0; i < w->n && !w->conn_error; i++) {
            drape_avatar_key a = {0, (uint64_t)(w->first + i), ""};
            if (drape_client_open(c, &a, NULL, o->garment, o->betas, o->n_betas, o->format, o->mode, &e))
                fail_worker(w, &e);
        }
        double give_up = drape_now_s() + 30;
        while (!w->conn_error && n_opened < w->n && drape_now_s() < give_up)
            if (pump(w, c, 100, &n_opened)) break;
    }
    pthread_barrier_wait(&opened_barrier);
    pthread_barrier_wait(&start_barrier);
    if (c && !w->conn_error) run_schedule(w, c);
    if (c) drape_client_close(c, 1000);
    return NULL;
}

/* ---- arguments ---- */

static const char *const format_names[] = {"f32", "f16", "q16", "meshopt", NULL};
static const char *const mode_names[] = {"neural", "lbs", "physics", NULL};
static const drape_opt load_opts_table[] = {
    DRAPE_OPT_S(load_opts, url, "url", NULL, "ws[s]://HOST:PORT/v1/stream", DRAPE_OPT_REQUIRED, "draped's stream"),
    DRAPE_OPT_I(load_opts, avatars, "avatars", NULL, 1, 100000, "N", DRAPE_OPT_REQUIRED, "avatars streamed"),
    DRAPE_OPT_D(load_opts, fps, "fps", NULL, 0.01, 1000, "F", DRAPE_OPT_REQUIRED, "poses per second per avatar"),
    DRAPE_OPT_D(load_opts, duration, "duration", NULL, 0.001, 86400, "S", DRAPE_OPT_REQUIRED,
                "seconds of poses sent"),
    DRAPE_OPT_I(load_opts, connections, "connections", "1", 1, 1024, "C", 0,
                "WebSocket connections (one thread each), the avatars spread over them"),
    DRAPE_OPT_E(load_opts, format, "format", "f32", format_names, "the vertices' encoding"),
    DRAPE_OPT_S(load_opts, garment, "garment", "skirt", "NAME", 0, "the garment every avatar wears"),
    DRAPE_OPT_S(load_opts, betas_arg, "betas", NULL, "b0,b1,...", 0, "body shape (default: the server's)"),
    DRAPE_OPT_E(load_opts, mode, "mode", "neural", mode_names, "what the server computes"),
    DRAPE_OPT_F(load_opts, text, "text", "JSON text messages instead of msgpack"),
    DRAPE_OPT_D(load_opts, drain, "drain", "5", 0, 600, "S", 0, "after the last pose, how long to wait for its frames"),
    DRAPE_OPT_F(load_opts, json, "json", "print the report as JSON"),
    DRAPE_OPT_S(load_opts, cacert, "cacert", NULL, "FILE", 0, "wss: PEM certificates to trust (default: the system's)"),
    DRAPE_OPT_F(load_opts, insecure, "insecure", "wss: accept any certificate (a self-signed test server)"),
};
static const drape_cmd_spec load_spec = {
    "load",
    "An open-loop load generator for draped's /v1/stream: avatar a's pose k is due at t0 + (a/N + k)/F, and its\n"
    "latency counts from then, so a server that falls behind shows it.",
    NULL, 0, load_opts_table, sizeof load_opts_table / sizeof *load_opts_table,
};

static int parse_betas(const char *v, load_opts *o)
{
    o->n_betas = 0;
    for (const char *s = v; *s;) {
        char *end;
        errno = 0;
        float b = strtof(s, &end);
        if (end == s || errno == ERANGE || !isfinite(b) || (*end && *end != ','))
            return drape_opts_fail(&load_spec, "--betas: '%s' is not a comma-separated list of numbers", v);
        if (o->n_betas == DRAPE_MSG_BETAS_MAX)
            return drape_opts_fail(&load_spec, "--betas: more than 16 values in '%s'", v);
        o->betas[o->n_betas++] = b;
        s = *end ? end + 1 : end;
    }
    return 0;
}

static int parse_args(int argc, char **argv, load_opts *o)
{
    memset(o, 0, sizeof *o);
    o->n_betas = -1;
    int rc = drape_opts_parse(&load_spec, o, argc, argv);
    if (rc) return rc;
    if (strncmp(o->url, "ws://", 5) && strncmp(o->url, "wss://", 6))
        return drape_opts_fail(&load_spec, "--url: '%s' must start with ws:// or wss://", o->url);
    if (o->betas_arg && (rc = parse_betas(o->betas_arg, o))) return rc;
    if (!*o->garment || strlen(o->garment) > DRAPE_MSG_NAME_MAX)
        return drape_opts_fail(&load_spec, "--garment: '%s' must be 1..64 bytes", o->garment);
    o->format = drape_format_parse(format_names[o->format]);
    o->mode = o->mode == 1 ? DRAPE_MODE_LBS : o->mode == 2 ? DRAPE_MODE_PHYSICS : DRAPE_MODE_NEURAL;
    if (o->connections > o->avatars)
        return drape_opts_fail(&load_spec, "--connections %d is more than --avatars %d", o->connections, o->avatars);
    return 0;
}

int drape_cmd_load(int argc, char **argv)
{
    load_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return drape_opts_status(rc);
    int nc = o.connections;
    worker *w = calloc((size_t)nc, sizeof *w);
    pthread_t *th = calloc((size_t)nc, sizeof *th);
    if (!w || !th) {
        fprintf(stderr, "drape load: out of memory\n");
        free(w), free(th);
        return 1;
    }
    pthread_barrier_init(&opened_barrier, NULL, (unsigned)nc + 1);
    pthread_barrier_init(&start_barrier, NULL, (unsigned)nc + 1);
    int started = 0;
    for (int c = 0; c < nc; c++) {
        w[c].o = &o;
        w[c].first = (int)((int64_t)c * o.avatars / nc);
        w[c].n = (int)((int64_t)(c + 1) * o.avatars / nc) - w[c].first;
        w[c].next_seq = calloc((size_t)w[c].n, sizeof *w[c].next_seq);
        w[c].dropped = calloc((size_t)w[c].n, sizeof *w[c].dropped);
        w[c].live = calloc((size_t)w[c].n, sizeof *w[c].live);
        if (!w[c].next_seq || !w[c].dropped || !w[c].live || pthread_create(&th[c], NULL, worker_main, &w[c])) {
            fprintf(stderr, "drape load: cannot start connection %d\n", c);
            break;
        }
        started++;
    }
    if (started < nc) {
        /* the barriers count every connection: stand in for the missing ones */
        fprintf(stderr, "drape load: aborting\n");
        exit(1);
    }
    pthread_barrier_wait(&opened_barrier);
    t0 = drape_now_s() + 0.05; /* every schedule starts together, shortly after all opens */
    pthread_barrier_wait(&start_barrier);
    for (int c = 0; c < nc; c++) pthread_join(th[c], NULL);

    drape_load_report r = {0};
    r.url = o.url, r.format = drape_format_name(o.format), r.garment = o.garment;
    r.avatars = o.avatars, r.connections = nc, r.fps = o.fps, r.duration_s = o.duration;
    size_t n_lat = 0;
    double last = t0;
    for (int c = 0; c < nc; c++) n_lat += w[c].n_lat;
    double *lat = malloc((n_lat + 1) * sizeof *lat);
    n_lat = 0;
    for (int c = 0; c < nc; c++) {
        worker *x = &w[c];
        r.sent += x->sent, r.received += x->received, r.errors += x->errors, r.missing += outstanding(x);
        for (int i = 0; i < x->n; i++) r.dropped += x->dropped[i], r.opened += x->live[i];
        if (x->conn_error) {
            r.conn_errors++;
            fprintf(stderr, "drape load: connection %d: %s\n", c, x->why);
        }
        if (x->last_rx > last) last = x->last_rx;
        if (lat && x->n_lat) memcpy(lat + n_lat, x->lat, x->n_lat * sizeof *lat);
        if (lat) n_lat += x->n_lat;
        free(x->lat), free(x->next_seq), free(x->dropped), free(x->live);
    }
    r.elapsed_s = r.received ? last - t0 : o.duration;
    drape_latency_summarize(lat, lat ? n_lat : 0, &r.latency);
    drape_buf out = {0};
    rc = o.json ? drape_load_report_json(&out, &r) : drape_load_report_text(&out, &r);
    if (!rc) fwrite(out.p, 1, out.len, stdout);
    drape_buf_free(&out);
    free(lat), free(w), free(th);
    pthread_barrier_destroy(&opened_barrier);
    pthread_barrier_destroy(&start_barrier);
    /* failure only when nothing worked at all (no avatar opened, no frame):
     * partial results are results, a connection that broke part way (the
     * server draining, say) among them */
    return rc || r.opened == 0 || r.received == 0 ? 1 : 0;
}
