/* GET /v1/stream: one thread per WebSocket connection, many avatars each.
 *
 * Per avatar at most one frame is in the batcher; a pose that arrives while
 * one is in flight waits in a single pending slot, and a newer pose replaces
 * it (the newest wins; the replaced one is counted in the avatar's cumulative
 * `dropped` and in drape_dropped_poses_total). The batcher's worker only
 * marks a finished frame ready and wakes the connection (an eventfd); the
 * connection's own thread packs it, queues it for sending, and submits the
 * pending pose, so an avatar's output buffer is never written while it is
 * being packed and frames leave in order.
 *
 * The pose window of a frame is the frames of the model's pose history
 * (cfg.hist: offsets back from t, t−2, t−1, t unless the bundle says more),
 * taken from a ring of the avatar's last hist[0] + 1 poses as received,
 * dropped ones included: they are the motion the client sent. Before an
 * avatar has sent that many, its first pose stands in for the frames
 * before it, as in `drape infer`.
 *
 * A physics avatar (mode physics, server/physics.h) goes the same way with
 * its own job on the physics pool instead of the batcher: one frame in
 * flight, one pending pose, newest wins (a cloth slower than the frame rate
 * skips poses, counted in `dropped`). Its job carries the pose alone, and
 * whether the run starts again there (open, reset, a cut).
 *
 * Over TLS the stream reads and writes the connection's GnuTLS session on
 * its TCP socket itself, on libmicrohttpd's thread for the connection (see
 * on_upgrade): libmicrohttpd's own forwarding of upgraded TLS connections
 * (0.9.75, Debian 12's) gets a 4-byte buffer once the connection's memory
 * pool is spent, which it always is after the request, and so sends a TLS
 * record and makes four system calls per 4 bytes: 30 ms per frame. */
#define _GNU_SOURCE
#include <errno.h>
#include <gnutls/gnutls.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../proto/msg.h"
#include "../proto/ws.h"
#include "app.h"
#include "frame.h"

typedef struct avatar avatar;

struct stream_conn {
    draped *d;
    MHD_socket fd; /* the client's socket: the TCP one, also over TLS */
    gnutls_session_t tls; /* NULL: plain ws */
    int tls_again;        /* a record GnuTLS could not finish sending */
    struct MHD_UpgradeResponseHandle *urh;
    pthread_t th;
    int efd;
    drape_ws_parser *ps;
    drape_buf rx, tx;
    size_t tx_off;
    pthread_mutex_t mu; /* the ready list, written by the batcher's worker */
    avatar *ready;
    avatar *avatars;
    int n_avatars, inflight, errors_in_row;
    int n_closed_inflight; /* closed avatars whose frame is still out: they count against max_avatars */
    int closing; /* a close frame is queued: flush and leave */
    int64_t last_rx_ns;
    stream_conn *next;
};

struct avatar {
    stream_conn *sc;
    drape_avatar_key key;
    drape_idcache_entry *e;
    int V, format, mode, binary;
    uint64_t n_seen; /* poses received: the next one is frame n_seen of the stream */
    drape_job job;
    float jpose[DRAPE_MAX_HISTORY][DRAPE_FRAME_FLOATS]; /* the window of the frame in flight */
    uint64_t jseq, next_seq;
    int64_t j_recv_ns;
    float *out;
    int inflight, status;
    drape_error err;
    int pending;
    float ppose[DRAPE_MAX_HISTORY][DRAPE_FRAME_FLOATS]; /* the window of the pending frame */
    uint64_t pseq;
    int64_t p_recv_ns;
    uint64_t dropped;
    int closed;
    /* physics mode: the avatar's cloth (over its identity's rig), its job,
     * and whether the pending pose starts the run again */
    drape_garment_run *run;
    draped_physics_job pjob;
    int pfirst;
    avatar *next, *rnext;
    /* the last hist[0] + 1 poses (DRAPE_FRAME_FLOATS floats each), frame i
     * at i % that: enough for every offset of the model's history (docs/design.md §2.4) */
    float ring[][DRAPE_FRAME_FLOATS];
};

/* ---- sending ---- */

/* Queues m (made by a drape_msg_* call). A message that could not be made
 * (out of memory: m is empty) or queued is not sent as an empty frame: it
 * is logged, and -1 says so. */
static int tx_msg(stream_conn *sc, int opcode, drape_buf *m)
{
    int rc = !m->len || drape_ws_encode(&sc->tx, opcode, m->p, m->len, NULL) ? -1 : 0;
    m->len = 0;
    if (rc) LOG_ERROR("stream %d: out of memory for a message; it was not sent", sc->fd);
    return rc;
}

static void send_close(stream_conn *sc, int code, const char *reason)
{
    if (sc->closing) return;
    drape_ws_encode_close(&sc->tx, code, reason, NULL);
    draped_count_close(&sc->d->met, code);
    sc->closing = 1;
    LOG_DEBUG("stream %d: closing %d %s", sc->fd, code, reason);
}

/* An error the server caused (a failed batch, a non-finite frame, shutdown):
 * the client sent nothing wrong, so it does not count toward --error-flood,
 * which would otherwise close every avatar of a connection over one bad one. */
static void send_server_error(stream_conn *sc, int binary, drape_errcode code, const char *message,
                              const drape_avatar_key *av, int has_seq, uint64_t seq)
{
    drape_buf m = {0};
    drape_msg_error(&m, binary, drape_errcode_wire(code), message, av, has_seq, seq);
    tx_msg(sc, binary ? DRAPE_WS_BINARY : DRAPE_WS_TEXT, &m);
    drape_buf_free(&m);
    draped_count_error(&sc->d->met, code);
}

/* An error about a client's message: a flood of them in a row closes (1008). */
static void send_error(stream_conn *sc, int binary, drape_errcode code, const char *message,
                       const drape_avatar_key *av, int has_seq, uint64_t seq)
{
    send_server_error(sc, binary, code, message, av, has_seq, seq);
    if (++sc->errors_in_row >= sc->d->cfg.error_flood) {
        COUNT(sc->d->met.limits[L_ERROR_FLOOD]);
        send_close(sc, DRAPE_WS_CLOSE_POLICY, "too many bad messages in a row");
    }
}

/* The client's bytes, through TLS or not: > 0 bytes moved, 0 none now (it
 * would block), -1 the peer is gone or the connection failed. */
static ssize_t io_send(stream_conn *sc, const uint8_t *p, size_t n)
{
    if (!sc->tls) {
        ssize_t r = send(sc->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
        return r;
    }
    /* a record that would have blocked is finished by a call with NULL, 0
     * (gnutls_record_send(3)); it returns the first call's count */
    ssize_t r = sc->tls_again ? gnutls_record_send(sc->tls, NULL, 0) : gnutls_record_send(sc->tls, p, n);
    sc->tls_again = r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED;
    if (sc->tls_again) return 0;
    return r < 0 ? -1 : r;
}

static ssize_t io_recv(stream_conn *sc, uint8_t *p, size_t n)
{
    ssize_t r;
    if (!sc->tls) {
        r = recv(sc->fd, p, n, MSG_DONTWAIT);
        if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    } else {
        r = gnutls_record_recv(sc->tls, p, n);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) return 0;
    }
    return r > 0 ? r : -1; /* 0: the peer closed (a TLS close_notify too) */
}

/* Writes what the socket takes now. Returns -1 when the peer is gone. */
static int flush(stream_conn *sc)
{
    while (sc->tx_off < sc->tx.len) {
        ssize_t n = io_send(sc, sc->tx.p + sc->tx_off, sc->tx.len - sc->tx_off);
        if (n < 0) return -1;
        if (n == 0) break;
        sc->tx_off += (size_t)n;
        COUNT_N(sc->d->met.bytes_out, (uint64_t)n);
    }
    if (sc->tx_off == sc->tx.len) sc->tx_off = sc->tx.len = 0;
    else if (sc->tx_off > sc->tx.len / 2) {
        memmove(sc->tx.p, sc->tx.p + sc->tx_off, sc->tx.len - sc->tx_off);
        sc->tx.len -= sc->tx_off;
        sc->tx_off = 0;
    }
    return 0;
}

/* ---- avatars ---- */

static avatar *find(stream_conn *sc, const drape_avatar_key *k)
{
    for (avatar *a = sc->avatars; a; a = a->next)
        if (a->key.is_str == k->is_str && (k->is_str ? !strcmp(a->key.str, k->str) : a->key.num == k->num)) return a;
    return NULL;
}

static void avatar_free(stream_conn *sc, avatar *a)
{
    if (a->run) UNCOUNT(sc->d->met.physics_avatars);
    drape_garment_run_free(a->run); /* before the entry that holds its rig */
    drape_idcache_release(sc->d->cache, a->e);
    free(a->out);
    free(a);
    UNCOUNT(sc->d->met.avatars_open);
}

static void job_done(drape_job *j, int status, const drape_error *err)
{
    avatar *a = j->user;
    stream_conn *sc = a->sc;
    pthread_mutex_lock(&sc->mu);
    a->status = status;
    if (err) a->err = *err;
    a->rnext = sc->ready;
    sc->ready = a;
    /* under the lock: once it is released the connection may drain this
     * frame and free itself, its eventfd with it */
    uint64_t one = 1;
    if (write(sc->efd, &one, sizeof one) < 0) LOG_WARN("stream: eventfd write failed");
    pthread_mutex_unlock(&sc->mu);
}

/* the job an avatar's frames go through */
static drape_job *job_of(avatar *a) { return a->run ? &a->pjob.job : &a->job; }

/* pose: the window (the model's history, t last); first: a physics run
 * starts again at t; catch_up: it does so because it fell behind */
static void submit(stream_conn *sc, avatar *a, float (*pose)[DRAPE_FRAME_FLOATS], uint64_t seq,
                   int64_t recv_ns, int first, int catch_up)
{
    int nf = sc->d->model->cfg.n_hist, rc;
    a->jseq = seq;
    a->j_recv_ns = recv_ns;
    if (a->run) {
        memcpy(a->pjob.pose, pose[nf - 1], sizeof a->pjob.pose);
        a->pjob.run = a->run;
        a->pjob.first = first || catch_up;
        a->pjob.catch_up = catch_up && !first;
        a->pjob.job.frame.out = a->out;
        a->pjob.job.done = job_done;
        a->pjob.job.user = a;
        rc = draped_physics_submit(sc->d->physics, &a->pjob, sc);
    } else {
        memcpy(a->jpose, pose, sizeof(float) * DRAPE_FRAME_FLOATS * (size_t)nf);
        draped_frame_job(&a->job, drape_idcache_identity(a->e), a->jpose, nf, a->mode == DRAPE_MODE_LBS, a->format, a->out);
        a->job.key = (uint64_t)(uintptr_t)a;
        a->job.done = job_done;
        a->job.user = a;
        rc = drape_batcher_submit(sc->d->batcher, &a->job);
    }
    if (rc) {
        send_server_error(sc, a->binary, DRAPE_EC_INTERNAL, "the server is shutting down", &a->key, 1, seq);
        return;
    }
    a->inflight = 1;
    sc->inflight++;
}

/* A finished frame: pack and queue it, then start the pending pose. While
 * the server drains (SIGTERM) a pending pose is not computed: it is counted
 * in this frame's `dropped`, or named by an error when no frame goes out. */
static void complete(stream_conn *sc, avatar *a)
{
    draped *d = sc->d;
    int stopping = atomic_load(&d->stopping);
    a->inflight = 0;
    sc->inflight--;
    if (a->closed) {
        COUNT(d->met.frames_lost_on_close);
        sc->n_closed_inflight--;
        avatar_free(sc, a);
        return;
    }
    if (sc->closing) { /* a close frame is queued and nothing may follow it */
        COUNT(d->met.frames_lost_on_close);
        return;
    }
    if (a->status && a->run) {
        /* this avatar's cloth only (the pool is fine): its next pose starts it again */
        LOG_WARN("physics frame failed: %s", a->err.msg);
        a->pfirst = 1;
        send_server_error(sc, a->binary, DRAPE_EC_INTERNAL, a->err.msg, &a->key, 1, a->jseq);
    } else if (a->status) {
        /* not ready only once the backend is unusable (a device error): a
         * batch that failed for want of memory leaves it serving */
        if (!drape_backend_healthy(d->be)) atomic_store(&d->healthy, 0);
        LOG_ERROR("backend failed a batch: %s", a->err.msg);
        send_server_error(sc, a->binary, DRAPE_EC_INTERNAL, a->err.msg, &a->key, 1, a->jseq);
    } else {
        drape_buf pk = {0}, m = {0};
        float bbox[6];
        drape_timing t;
        drape_error err = {0};
        if (a->run && a->pjob.reset) {
            /* the cloth diverged and was started again from skinning at
             * this pose: said once, as information; the frame follows */
            char msg[160];
            snprintf(msg, sizeof msg, "the simulation diverged at seq %llu and was restarted from the skinned garment",
                     (unsigned long long)a->jseq);
            COUNT(d->met.physics_resets);
            send_server_error(sc, a->binary, DRAPE_EC_PHYSICS_RESET, msg, &a->key, 0, 0);
        }
        if (draped_frame_pack(&pk, bbox, &t, job_of(a), a->format, a->V, &err)) {
            /* this avatar's pose only: the others, and this one's next pose, go on */
            draped_frame_failed(&d->met, &err);
            send_server_error(sc, a->binary, DRAPE_EC_INTERNAL, err.msg, &a->key, 1, a->jseq);
        } else {
            if (a->pending && stopping) {
                a->pending = 0;
                a->dropped++;
                COUNT(d->met.dropped_total);
                if (a->run) COUNT(d->met.physics_skips);
            }
            drape_msg_frame(&m, a->binary, &a->key, a->jseq, a->format, a->V, bbox, pk.p, pk.len, &t, a->dropped);
            if (!tx_msg(sc, a->binary ? DRAPE_WS_BINARY : DRAPE_WS_TEXT, &m)) COUNT(d->met.frames_total);
            draped_hist_add(&d->met.queue_us, t.queue_us);
            draped_hist_add(&d->met.compute_us, t.compute_us);
            draped_hist_add(&d->met.pack_us, t.pack_us);
            draped_hist_add(&d->met.server_us, (uint64_t)((drape_now_ns() - a->j_recv_ns) / 1000));
            if (a->run) {
                COUNT(d->met.physics_frames);
                draped_hist_add(&d->met.physics_us, t.compute_us);
            }
        }
        drape_buf_free(&pk);
        drape_buf_free(&m);
    }
    if (a->pending) {
        a->pending = 0;
        if (stopping)
            send_server_error(sc, a->binary, DRAPE_EC_INTERNAL, "the server is shutting down; this pose was not computed",
                              &a->key, 1, a->pseq);
        else {
            /* a cloth cannot be dragged across more than DRAPED_PHYSICS_MAX_BEHIND s
             * of skipped poses in one frame's substeps: it starts again from
             * skinning at the newest pose, settled for one frame's substeps
             * only (a full settle costs more than the lag it cures on a loaded
             * machine, and the avatar would restart again and again) */
            int behind = a->run && !a->pfirst &&
                         (double)(a->pseq - a->jseq) > DRAPED_PHYSICS_MAX_BEHIND * d->model->cfg.fps;
            if (behind) COUNT(d->met.physics_catch_ups);
            submit(sc, a, a->ppose, a->pseq, a->p_recv_ns, a->pfirst, behind);
        }
        a->pfirst = 0;
    }
}

static void drain_ready(stream_conn *sc)
{
    uint64_t v;
    if (read(sc->efd, &v, sizeof v) < 0 && errno != EAGAIN) LOG_WARN("stream: eventfd read failed");
    pthread_mutex_lock(&sc->mu);
    avatar *r = sc->ready;
    sc->ready = NULL;
    pthread_mutex_unlock(&sc->mu);
    /* the list is newest first; answer in completion order */
    avatar *rev = NULL;
    while (r) {
        avatar *n = r->rnext;
        r->rnext = rev;
        rev = r;
        r = n;
    }
    while (rev) {
        avatar *n = rev->rnext;
        complete(sc, rev);
        rev = n;
    }
}

/* ---- messages ---- */

static void on_open(stream_conn *sc, drape_msg *m, int binary)
{
    draped *d = sc->d;
    if (find(sc, &m->avatar)) {
        send_error(sc, binary, DRAPE_EC_ALREADY_OPEN, "this avatar is already open on this connection", &m->avatar,
                   0, 0);
        return;
    }
    /* a closed avatar is freed when its frame comes back: until then it
     * counts, or open/pose/close cycles could queue frames without bound */
    if (sc->n_avatars + sc->n_closed_inflight >= d->cfg.max_avatars) {
        COUNT(d->met.limits[L_AVATARS]);
        char msg[96];
        snprintf(msg, sizeof msg, "too many avatars on this connection (limit %lld)", (long long)d->cfg.max_avatars);
        send_error(sc, binary, DRAPE_EC_LIMIT, msg, &m->avatar, 0, 0);
        return;
    }
    drape_idcache_entry *e = NULL;
    drape_error err = {0};
    drape_errcode code = DRAPE_EC_INTERNAL;
    if (draped_identity_resolve(d, m->identity, m->garment, m->betas, m->n_betas, &e, &code, &err)) {
        if (code == DRAPE_EC_LIMIT) COUNT(d->met.limits[L_CACHE]);
        send_error(sc, binary, code, err.msg, &m->avatar, 0, 0);
        return;
    }
    char why[DRAPE_ERRMSG_MAX];
    if (draped_mode_refused(d, drape_idcache_entry_garment(e), m->mode, why, sizeof why)) {
        drape_idcache_release(d->cache, e);
        send_error(sc, binary, DRAPE_EC_MODE_UNAVAILABLE, why, &m->avatar, 0, 0);
        return;
    }
    drape_garment_run *run = NULL;
    if (m->mode == DRAPE_MODE_PHYSICS) {
        /* the identity's rig (made by its first physics avatar), then this
         * avatar's cloth over it; settled at its first pose */
        int rc = draped_physics_run_create(d->physics, d->cache, e, &run, &err);
        if (rc) {
            if (rc == DRAPE_ERANGE) COUNT(d->met.limits[L_CACHE]);
            drape_idcache_release(d->cache, e);
            send_error(sc, binary, rc == DRAPE_ERANGE ? DRAPE_EC_LIMIT : DRAPE_EC_INTERNAL, err.msg, &m->avatar, 0, 0);
            return;
        }
    }
    avatar *a = calloc(1, sizeof *a + sizeof(float[DRAPE_FRAME_FLOATS]) * (size_t)(d->model->cfg.hist[0] + 1));
    int g = drape_idcache_entry_garment(e);
    int V = d->model->garments[g].V;
    if (a) a->out = malloc(sizeof(float) * 3 * (size_t)V);
    if (!a || !a->out) {
        if (a) free(a);
        drape_garment_run_free(run);
        drape_idcache_release(d->cache, e);
        send_error(sc, binary, DRAPE_EC_INTERNAL, "out of memory", &m->avatar, 0, 0);
        return;
    }
    a->run = run;
    if (run) COUNT(d->met.physics_avatars);
    a->sc = sc;
    a->key = m->avatar;
    a->e = e;
    a->V = V;
    a->format = m->format;
    a->mode = m->mode;
    a->binary = binary;
    a->next = sc->avatars;
    sc->avatars = a;
    sc->n_avatars++;
    COUNT(d->met.avatars_open);
    drape_buf out = {0};
    drape_msg_opened(&out, binary, &a->key, drape_idcache_entry_key(e), d->model->garments[g].name, V, a->format,
                     a->mode);
    tx_msg(sc, binary ? DRAPE_WS_BINARY : DRAPE_WS_TEXT, &out);
    drape_buf_free(&out);
}

static void on_pose(stream_conn *sc, drape_msg *m, int binary, int64_t now)
{
    avatar *a = find(sc, &m->avatar);
    if (!a) {
        send_error(sc, binary, DRAPE_EC_NOT_OPEN, "pose for an avatar that is not open", &m->avatar, m->has_seq,
                   m->seq);
        return;
    }
    float frame[DRAPE_FRAME_FLOATS];
    drape_pose_limits lim = draped_pose_limits(sc->d);
    if (a->run) { /* the cloth engine keeps the built-in limits (sim/garment.c): above them, say so here */
        lim.max_angle = fmin(lim.max_angle, DRAPE_POSE_MAX_ANGLE);
        lim.max_trans = fmin(lim.max_trans, DRAPE_POSE_MAX_TRANS);
    }
    drape_error why = {0};
    memcpy(frame, m->pose, sizeof(float) * DRAPE_MSG_POSE);
    memcpy(frame + DRAPE_MSG_POSE, m->trans, sizeof(float) * 3);
    if (drape_pose_validate(frame, &lim, &why)) {
        COUNT(sc->d->met.limits[L_POSE]);
        send_error(sc, binary, DRAPE_EC_BAD_FIELD, why.msg, &m->avatar, m->has_seq, m->seq);
        return;
    }
    COUNT(sc->d->met.poses_total);
    uint64_t seq = m->has_seq ? m->seq : a->next_seq;
    const drape_config *c = &sc->d->model->cfg;
    int span = c->hist[0] + 1;
    /* a cut (docs/protocol.md): the history starts again at this pose, as
     * for an avatar opened here, so a loop or a teleport is no velocity */
    int first = a->n_seen == 0; /* for a physics run: it starts (again) here */
    if (a->n_seen > 0) {
        int cut = m->reset ? DRAPE_CUT_RESET
                : seq > a->next_seq ? DRAPE_CUT_SEQ_GAP
                : drape_pose_cut(a->ring[(a->n_seen - 1) % (uint64_t)span], frame, (double)sc->d->cfg.cut_speed,
                                 (double)sc->d->cfg.cut_spin, c->fps);
        if (cut) {
            COUNT(sc->d->met.cuts[cut]);
            a->n_seen = 0;
            first = 1;
        }
    }
    a->next_seq = seq + 1;
    /* the pose joins the ring; the window takes the model's history offsets
     * back from it, the first pose standing in for frames before it */
    long long t = (long long)a->n_seen++;
    memcpy(a->ring[t % span], frame, sizeof frame);
    float win[DRAPE_MAX_HISTORY][DRAPE_FRAME_FLOATS];
    for (int k = 0; k < c->n_hist; k++)
        memcpy(win[k], a->ring[drape_history_index(t, c->hist[k]) % span], sizeof win[k]);
    if (!a->inflight) {
        submit(sc, a, win, seq, now, first || a->pfirst, 0);
        a->pfirst = 0;
        return;
    }
    if (a->pending) {
        a->dropped++;
        COUNT(sc->d->met.dropped_total);
        if (a->run) COUNT(sc->d->met.physics_skips);
    }
    /* a start replaced by a newer pose still starts the run there */
    a->pfirst = a->pfirst || first;
    a->pending = 1;
    memcpy(a->ppose, win, sizeof(float) * DRAPE_FRAME_FLOATS * (size_t)c->n_hist);
    a->pseq = seq;
    a->p_recv_ns = now;
}

static void on_close_avatar(stream_conn *sc, drape_msg *m, int binary)
{
    avatar **pp = &sc->avatars;
    while (*pp && *pp != find(sc, &m->avatar)) pp = &(*pp)->next;
    avatar *a = *pp;
    if (!a) {
        send_error(sc, binary, DRAPE_EC_NOT_OPEN, "close for an avatar that is not open", &m->avatar, 0, 0);
        return;
    }
    *pp = a->next;
    sc->n_avatars--;
    drape_buf out = {0};
    drape_msg_closed(&out, binary, &a->key);
    tx_msg(sc, binary ? DRAPE_WS_BINARY : DRAPE_WS_TEXT, &out);
    drape_buf_free(&out);
    if (a->pending) {
        a->dropped++;
        COUNT(sc->d->met.dropped_total);
        if (a->run) COUNT(sc->d->met.physics_skips);
    }
    if (a->inflight) a->closed = 1, sc->n_closed_inflight++; /* freed when its frame comes back */
    else avatar_free(sc, a);
}

static void on_message(stream_conn *sc, const uint8_t *data, size_t len, int binary)
{
    drape_msg m;
    char msg[256];
    memset(&m, 0, sizeof m);
    if (drape_msg_parse(&m, data, len, binary, NULL, msg, sizeof msg)) {
        /* only an avatar the message named validly: a missing one is not avatar 0 */
        send_error(sc, binary, m.err, msg, m.has_avatar && m.op ? &m.avatar : NULL, m.has_seq, m.seq);
        return;
    }
    sc->errors_in_row = 0;
    int64_t now = drape_now_ns();
    if (m.op == DRAPE_OP_OPEN) on_open(sc, &m, binary);
    else if (m.op == DRAPE_OP_POSE) on_pose(sc, &m, binary, now);
    else on_close_avatar(sc, &m, binary);
}

/* Feeds received bytes to the parser and acts on every event. */
static void on_bytes(stream_conn *sc, const uint8_t *buf, size_t n)
{
    while (n && !sc->closing) {
        size_t used = 0;
        drape_ws_event ev;
        int close_code = 0;
        int rc = drape_ws_parse(sc->ps, buf, n, &used, &ev, &close_code);
        buf += used;
        n -= used;
        if (rc < 0) {
            if (close_code == DRAPE_WS_CLOSE_TOO_BIG) COUNT(sc->d->met.limits[L_MESSAGE]);
            send_close(sc, close_code, close_code == DRAPE_WS_CLOSE_TOO_BIG   ? "message too big"
                                       : close_code == DRAPE_WS_CLOSE_BAD_DATA ? "invalid UTF-8 in a text message"
                                                                               : "protocol error");
            return;
        }
        if (rc == 0) return;
        sc->last_rx_ns = drape_now_ns();
        switch (ev.opcode) {
        case DRAPE_WS_TEXT:
        case DRAPE_WS_BINARY: on_message(sc, ev.data, ev.len, ev.opcode == DRAPE_WS_BINARY); break;
        case DRAPE_WS_PING: drape_ws_encode(&sc->tx, DRAPE_WS_PONG, ev.data, ev.len, NULL); break;
        case DRAPE_WS_CLOSE:
            send_close(sc, ev.close_code == DRAPE_WS_CLOSE_NO_STATUS ? DRAPE_WS_CLOSE_NORMAL : ev.close_code, "");
            return;
        default: break; /* pong */
        }
    }
}

/* ---- the connection thread ---- */

static void *stream_main(void *arg)
{
    stream_conn *sc = arg;
    draped *d = sc->d;
    int64_t drain_deadline = 0, close_deadline = 0;
    uint8_t buf[65536];
    if (sc->rx.len) on_bytes(sc, sc->rx.p, sc->rx.len);
    for (;;) {
        int64_t now = drape_now_ns();
        if (atomic_load(&d->stopping) && !sc->closing) {
            /* drain: stop reading, wait for the frames in flight, then 1001 */
            if (!drain_deadline) drain_deadline = now + d->cfg.drain_ms * 1000000;
            if (sc->inflight == 0 || now >= drain_deadline) send_close(sc, DRAPE_WS_CLOSE_GOING_AWAY, "server shutting down");
        }
        if (!sc->closing && now - sc->last_rx_ns > d->cfg.idle_timeout * 1000000000) {
            COUNT(d->met.limits[L_IDLE]);
            send_close(sc, DRAPE_WS_CLOSE_POLICY, "idle timeout");
        }
        if (sc->tx.len - sc->tx_off > (size_t)d->cfg.send_queue && !sc->closing) {
            /* a reader this slow only falls further behind: cut it off */
            COUNT(d->met.limits[L_SEND_QUEUE]);
            LOG_INFO("stream %d: client stopped reading (%zu bytes queued); closing", sc->fd, sc->tx.len - sc->tx_off);
            break;
        }
        if (flush(sc)) break;
        if (sc->closing) {
            if (sc->tx_off == sc->tx.len) break;
            if (!close_deadline) close_deadline = now + 2000000000LL;
            if (now >= close_deadline) break;
        }
        struct pollfd p[2] = {{sc->fd, 0, 0}, {sc->efd, POLLIN, 0}};
        int reading = !sc->closing && !atomic_load(&d->stopping);
        if (reading) p[0].events |= POLLIN;
        if (sc->tx_off < sc->tx.len) p[0].events |= POLLOUT;
        /* bytes GnuTLS has decrypted already are not in the socket for poll to see */
        int tls_pending = reading && sc->tls && gnutls_record_check_pending(sc->tls) > 0;
        if (poll(p, 2, tls_pending ? 0 : 200) < 0 && errno != EINTR) break;
        if (tls_pending) p[0].revents |= POLLIN;
        if (p[1].revents & POLLIN) drain_ready(sc);
        if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL) && !(p[0].revents & POLLIN)) break;
        if (p[0].revents & POLLIN) {
            ssize_t n = io_recv(sc, buf, sizeof buf);
            if (n < 0) break; /* peer closed */
            if (n > 0) on_bytes(sc, buf, (size_t)n);
        }
    }
    /* the batcher may still hold frames of ours: wait for them */
    for (avatar *a = sc->avatars; a;) {
        avatar *n = a->next;
        a->pending = 0;
        if (a->inflight) a->closed = 1, sc->n_closed_inflight++;
        else avatar_free(sc, a);
        a = n;
    }
    sc->avatars = NULL;
    while (sc->inflight > 0) {
        struct pollfd p = {sc->efd, POLLIN, 0};
        poll(&p, 1, 100);
        drain_ready(sc);
    }
    /* over TLS libmicrohttpd sends the close_notify and closes the socket */
    if (!sc->tls) shutdown(sc->fd, SHUT_RDWR);
    MHD_upgrade_action(sc->urh, MHD_UPGRADE_ACTION_CLOSE);
    pthread_mutex_lock(&d->mu);
    stream_conn **pp = &d->streams;
    while (*pp != sc) pp = &(*pp)->next;
    *pp = sc->next;
    d->n_streams--;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    UNCOUNT(d->met.stream_conns_open);
    drape_ws_parser_free(sc->ps);
    drape_buf_free(&sc->rx);
    drape_buf_free(&sc->tx);
    close(sc->efd);
    pthread_mutex_destroy(&sc->mu);
    free(sc);
    return NULL;
}

typedef struct {
    draped *d;
} upgrade_ctx;

static void on_upgrade(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra, size_t extra_len,
                       MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)req_cls;
    draped *d = cls;
    /* over TLS, sock is libmicrohttpd's end of its forwarding socketpair:
     * the stream uses the TLS session and its TCP socket instead */
    const union MHD_ConnectionInfo *tls = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    const union MHD_ConnectionInfo *tcp = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (tls && tls->tls_session && tcp) sock = tcp->connect_fd;
    else tls = NULL;
    stream_conn *sc = calloc(1, sizeof *sc);
    if (sc) sc->efd = -1;
    drape_ws_limits lim = {1, (size_t)d->cfg.max_message, (size_t)d->cfg.max_message};
    if (!sc || drape_ws_parser_create(&sc->ps, &lim) || (sc->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
        drape_buf_append(&sc->rx, extra, extra_len)) {
        LOG_ERROR("stream: out of resources; dropping the connection");
        if (sc) {
            drape_ws_parser_free(sc->ps);
            drape_buf_free(&sc->rx);
            if (sc->efd >= 0) close(sc->efd);
            free(sc);
        }
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        return;
    }
    sc->d = d;
    sc->fd = sock;
    sc->tls = tls ? (gnutls_session_t)tls->tls_session : NULL;
    sc->urh = urh;
    sc->last_rx_ns = drape_now_ns();
    /* a modest kernel buffer: a client that stops reading shows up in our
     * own bounded queue soon, not after megabytes of kernel memory */
    int sndbuf = 256 << 10, one = 1;
    setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    /* every write is whole messages: a frame must not wait for the ACK of
     * the one before it (Nagle's algorithm) */
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_mutex_init(&sc->mu, NULL);
    /* the handshake's check ran on this connection's thread beside others:
     * the slot is taken here, and a stream past the limit only says so
     * (1013) and closes, before reading anything */
    pthread_mutex_lock(&d->mu);
    int over = d->n_streams >= d->cfg.max_connections;
    sc->next = d->streams;
    d->streams = sc;
    d->n_streams++;
    pthread_mutex_unlock(&d->mu);
    COUNT(d->met.stream_conns_total);
    COUNT(d->met.stream_conns_open);
    if (over) {
        char reason[80];
        snprintf(reason, sizeof reason, "too many stream connections (limit %lld)", (long long)d->cfg.max_connections);
        COUNT(d->met.limits[L_CONNECTIONS]);
        sc->rx.len = 0;
        send_close(sc, DRAPE_WS_CLOSE_TRY_AGAIN, reason);
    }
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* over TLS (or without a thread) it runs here: MHD's thread for this
     * connection is ours until we return, and its forwarding starts after */
    if (sc->tls || pthread_create(&sc->th, &at, stream_main, sc)) stream_main(sc);
    pthread_attr_destroy(&at);
}

int draped_stream_upgrade(draped *d, struct MHD_Connection *c, const char *accept)
{
    struct MHD_Response *r = MHD_create_response_for_upgrade(on_upgrade, d);
    if (!r) return -1;
    MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "websocket");
    MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
    MHD_add_response_header(r, "X-Drape-Instance", d->instance);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
    MHD_destroy_response(r);
    draped_count_http(&d->met, R_STREAM, 101);
    return ok == MHD_YES ? 0 : -1;
}

void draped_streams_init(draped *d)
{
    pthread_mutex_init(&d->mu, NULL);
    /* the shutdown's deadline is on drape_now_ns's clock, which a change
     * of the wall clock does not move */
    drape_cond_init(&d->cv);
}

void draped_streams_shutdown(draped *d)
{
    atomic_store(&d->stopping, 1);
    int64_t deadline = drape_now_ns() + (d->cfg.drain_ms + 3000) * 1000000;
    pthread_mutex_lock(&d->mu);
    for (stream_conn *s = d->streams; s; s = s->next) {
        uint64_t one = 1;
        if (write(s->efd, &one, sizeof one) < 0) LOG_WARN("stream: eventfd write failed");
    }
    pthread_mutex_unlock(&d->mu);
    int left = draped_streams_wait(d, (deadline - drape_now_ns()) / 1000000);
    if (left) LOG_WARN("%d streams did not close in time", left);
}

int draped_streams_wait(draped *d, int64_t ms)
{
    int64_t deadline = drape_now_ns() + ms * 1000000;
    pthread_mutex_lock(&d->mu);
    /* every stream that leaves broadcasts */
    while (d->n_streams > 0 && drape_now_ns() < deadline) drape_cond_wait_until(&d->cv, &d->mu, deadline);
    int left = d->n_streams;
    pthread_mutex_unlock(&d->mu);
    return left;
}
