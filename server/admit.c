/* Who may hold one of libmicrohttpd's connection slots (docs/server.md,
 * "Limits and abuse").
 *
 * A slot is a socket and a thread until the connection closes, and
 * libmicrohttpd's own timeout restarts on every byte, so a client that
 * trickles header bytes (slowloris) could hold slots for ever. Two limits:
 * - at most --max-conn-per-ip connections per client address: one more is
 *   refused at accept (closed unanswered), so one address cannot take every
 *   slot;
 * - a request's headers must all be in within --header-timeout of the
 *   accept (on a keep-alive connection, of the end of the previous
 *   request). A sweep shuts the socket of a late one down and libmicrohttpd
 *   closes it as a client that went away. Bytes do not move the deadline.
 *
 * The registry holds a connection from libmicrohttpd's NOTIFY_CONNECTION
 * STARTED to CLOSED, and libmicrohttpd closes the socket only after CLOSED
 * returns, so a shutdown() under the registry's lock never reaches a reused
 * descriptor. The accept policy and STARTED both run on libmicrohttpd's
 * listening thread, one after the other, so a count checked at accept is
 * the count STARTED adds to. */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "../core/clock.h"
#include "http.h"

#define BUCKETS 1024                 /* client addresses hashed; chains are short at any slot count */
#define SWEEP_NS INT64_C(250000000) /* how late past its deadline a connection may be closed */

typedef struct conn {
    struct conn *prev, *next;
    MHD_socket fd;
    uint32_t ip;         /* IPv4, network order; 0: not counted (not IPv4) */
    int64_t deadline_ns; /* the headers' deadline; 0: none (a request is being served) */
    int answered;        /* it has had a request answered: a deadline now is an idle keep-alive's */
    int upgraded;        /* a stream now: never again a deadline */
} conn;

typedef struct ip_count {
    struct ip_count *next;
    uint32_t ip;
    int n;
} ip_count;

struct draped_admit {
    draped *d;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int stop;
    conn *conns;
    ip_count *by_ip[BUCKETS];
};

static uint32_t ipv4_of(const struct sockaddr *sa, socklen_t len)
{
    if (!sa || sa->sa_family != AF_INET || len < (socklen_t)sizeof(struct sockaddr_in)) return 0;
    return ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr;
}

static ip_count **slot_of(draped_admit *a, uint32_t ip)
{
    ip_count **p = &a->by_ip[(ip * 2654435761u) >> 22]; /* Fibonacci hash to 10 bits */
    while (*p && (*p)->ip != ip) p = &(*p)->next;
    return p;
}

static int64_t header_deadline(const draped *d) { return drape_now_ns() + d->cfg.header_timeout * INT64_C(1000000000); }

enum MHD_Result draped_admit_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
    draped *d = cls;
    uint32_t ip = ipv4_of(sa, len);
    if (!d->cfg.max_conn_per_ip || !ip) return MHD_YES;
    draped_admit *a = d->admit;
    pthread_mutex_lock(&a->mu);
    ip_count *c = *slot_of(a, ip);
    int full = c && c->n >= d->cfg.max_conn_per_ip;
    pthread_mutex_unlock(&a->mu);
    if (full) COUNT(d->met.limits[L_PER_IP]);
    return full ? MHD_NO : MHD_YES;
}

static void add(draped_admit *a, conn *c)
{
    pthread_mutex_lock(&a->mu);
    c->next = a->conns;
    if (a->conns) a->conns->prev = c;
    a->conns = c;
    if (c->ip) {
        ip_count **p = slot_of(a, c->ip);
        if (!*p && (*p = calloc(1, sizeof **p))) (*p)->ip = c->ip;
        if (*p) (*p)->n++;
        else c->ip = 0; /* out of memory: this one goes uncounted */
    }
    pthread_mutex_unlock(&a->mu);
}

static void del(draped_admit *a, conn *c)
{
    pthread_mutex_lock(&a->mu);
    if (c->prev) c->prev->next = c->next;
    else a->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    if (c->ip) {
        ip_count **p = slot_of(a, c->ip), *e = *p;
        if (e && !--e->n) {
            *p = e->next;
            free(e);
        }
    }
    pthread_mutex_unlock(&a->mu);
}

void draped_admit_notify(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_ConnectionNotificationCode what)
{
    draped *d = cls;
    if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (*ctx) del(d->admit, *ctx);
        free(*ctx);
        *ctx = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ad = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    conn *c = fi ? calloc(1, sizeof *c) : NULL;
    *ctx = c;
    if (!c) return; /* unwatched: libmicrohttpd's own timeout still applies */
    c->fd = fi->connect_fd;
    c->ip = ad ? ipv4_of(ad->client_addr, sizeof(struct sockaddr_in)) : 0;
    c->deadline_ns = header_deadline(d);
    add(d->admit, c);
}

void draped_admit_mark(draped *d, struct MHD_Connection *mc, draped_admit_event ev)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn *c = i ? i->socket_context : NULL;
    if (!c) return;
    int64_t dl = ev == DRAPED_ADMIT_ANSWERED ? header_deadline(d) : 0;
    pthread_mutex_lock(&d->admit->mu);
    c->answered |= ev == DRAPED_ADMIT_ANSWERED;
    c->upgraded |= ev == DRAPED_ADMIT_UPGRADED;
    c->deadline_ns = c->upgraded ? 0 : dl;
    pthread_mutex_unlock(&d->admit->mu);
}

static void *sweep(void *arg)
{
    draped_admit *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        int64_t now = drape_now_ns();
        for (conn *c = a->conns; c; c = c->next)
            if (c->deadline_ns && now >= c->deadline_ns) {
                c->deadline_ns = 0;
                shutdown(c->fd, SHUT_RDWR);
                if (!c->answered) COUNT(a->d->met.limits[L_HEADERS]); /* closing idle keep-alives is routine */
            }
        drape_cond_wait_until(&a->cv, &a->mu, now + SWEEP_NS);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

int draped_admit_start(draped *d)
{
    draped_admit *a = calloc(1, sizeof *a);
    if (!a) return -1;
    a->d = d;
    pthread_mutex_init(&a->mu, NULL);
    if (drape_cond_init(&a->cv) || pthread_create(&a->th, NULL, sweep, a)) {
        pthread_mutex_destroy(&a->mu);
        free(a);
        return -1;
    }
    d->admit = a;
    return 0;
}

void draped_admit_stop(draped *d)
{
    draped_admit *a = d->admit;
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->th, NULL);
    /* libmicrohttpd has stopped: every connection has had its CLOSED */
    for (int i = 0; i < BUCKETS; i++)
        while (a->by_ip[i]) {
            ip_count *e = a->by_ip[i];
            a->by_ip[i] = e->next;
            free(e);
        }
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
    d->admit = NULL;
}
