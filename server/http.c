/* The HTTP control plane on libmicrohttpd (docs/design.md §6).
 *
 * Threading: MHD_USE_THREAD_PER_CONNECTION. POST /v1/identities may run
 * module B (hundreds of ms on the CPU) and POST /v1/frames waits for the
 * batcher; with a thread per connection those waits block only their own
 * client, where a polling thread (or a small pool) would stall every other
 * request that shares it. Streams leave MHD after the upgrade and run on
 * their own threads (stream.c), so the per-connection threads are short
 * lived.
 *
 * This file is the daemon, the keys and the dispatch; the answers are in
 * routes.c, static.c (the viewer) and upgrade.c (GET /v1/stream). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/clock.h"
#include "../proto/ws.h"
#include "http.h"

/* ---- responses ---- */

enum MHD_Result draped_http_buf(draped *d, struct MHD_Connection *c, int route, unsigned status, const char *type,
                                void *data, size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, mode);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "X-Drape-Instance", d->instance);
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    draped_count_http(&d->met, route, status);
    return ok;
}

enum MHD_Result draped_http_json(draped *d, struct MHD_Connection *c, int route, unsigned status, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) return MHD_NO;
    return draped_http_buf(d, c, route, status, "application/json", s, strlen(s), MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result send_error_va(draped *d, struct MHD_Connection *c, int route, unsigned status,
                                     drape_errcode code, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    drape_utf8_scrub(msg); /* it may quote a path or a name the client sent; JSON needs UTF-8 */
    const char *wire = drape_errcode_wire(code);
    LOG_DEBUG("http %u %s: %s", status, wire, msg);
    return draped_http_json(d, c, route, status, json_pack("{s:{s:s,s:s}}", "error", "code", wire, "message", msg));
}

enum MHD_Result draped_http_error(draped *d, struct MHD_Connection *c, int route, drape_errcode code, const char *fmt,
                                  ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result ok = send_error_va(d, c, route, drape_errcode_http(code), code, fmt, ap);
    va_end(ap);
    return ok;
}

enum MHD_Result draped_http_error_as(draped *d, struct MHD_Connection *c, int route, unsigned status,
                                     drape_errcode code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result ok = send_error_va(d, c, route, status, code, fmt, ap);
    va_end(ap);
    return ok;
}

/* ---- auth ---- */

static int ct_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++) diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

int draped_check_key(const draped *d, const char *authorization, const char *token)
{
    if (!d->keys) return 1;
    const char *k = token;
    if (authorization && !strncasecmp(authorization, "Bearer ", 7)) k = authorization + 7;
    if (!k) return 0;
    int ok = 0;
    for (int i = 0; i < d->n_keys; i++) ok |= ct_equal(k, d->keys[i]);
    return ok;
}

/* ---- dispatch ---- */

enum { M_GET = 1, M_POST = 2, M_OTHER = 4, M_ANY = 7 };

/* Every path under /v1/ needs a key, a route or not; the others (the
 * probes, the scraper, the viewer's files) do not. A route that does not
 * take the method answers 405; /v1/stream answers its methods itself. */
static const struct {
    const char *path;
    int prefix, methods;
    draped_route_fn fn;
} routes[] = {
    {"/healthz", 0, M_ANY, draped_route_healthz},
    {"/readyz", 0, M_ANY, draped_route_readyz},
    {"/metrics", 0, M_ANY, draped_route_metrics},
    {"/v1/stream", 0, M_ANY, draped_route_stream},
    {"/v1/model", 0, M_GET, draped_route_model},
    {"/v1/body", 0, M_GET, draped_route_body},
    {"/v1/garments/", 1, M_GET, draped_route_garment},
    {"/v1/identities", 0, M_POST, draped_route_identities},
    {"/v1/frames", 0, M_POST, draped_route_frames},
    {DRAPED_MOTION_CONVERT, 0, M_POST, draped_route_motion_convert},
    {"/v1/motions", 0, M_GET, draped_route_motions},
    {"/v1/motions/", 1, M_GET, draped_route_motion},
};

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
    draped *d = cls;
    draped_req *rq = *req_cls;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq) return MHD_NO;
        *req_cls = rq;
        rq->max_body = (size_t)(strcmp(url, DRAPED_MOTION_CONVERT) ? d->cfg.max_message : d->cfg.motion_max_bytes);
        /* the headers are in: a body without a valid key is not kept (the
         * answer, 401, comes when it has been read) */
        rq->keyless = !strncmp(url, "/v1/", 4) &&
                      !draped_check_key(d, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"), NULL);
        draped_admit_mark(d, c, DRAPED_ADMIT_HEADERS_IN);
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rq->keyless && !rq->too_big && !rq->no_memory) {
            if (rq->body.len + *upload_size > rq->max_body) rq->too_big = 1;
            else if (drape_buf_append(&rq->body, upload, *upload_size)) rq->no_memory = 1;
            if (rq->too_big || rq->no_memory) drape_buf_free(&rq->body);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    rq->url = url;
    rq->method = method;
    rq->version = version;
    int m = !strcmp(method, "GET") || !strcmp(method, "HEAD") ? M_GET : !strcmp(method, "POST") ? M_POST : M_OTHER;
    int r = 0, n = (int)(sizeof routes / sizeof routes[0]);
    while (r < n && (routes[r].prefix ? strncmp(url, routes[r].path, strlen(routes[r].path))
                                      : strcmp(url, routes[r].path)))
        r++;
    int v1 = !strncmp(url, "/v1/", 4);
    if (v1) {
        /* ?token= only where a client cannot send a header, a browser's
         * WebSocket handshake: elsewhere a key in the URL would go into
         * access logs, histories and Referer headers for nothing */
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        const char *tok = r < n && routes[r].fn == draped_route_stream
                              ? MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token")
                              : NULL;
        if (!draped_check_key(d, auth, tok)) {
            COUNT(d->met.auth_failures);
            return draped_http_error(d, c, R_OTHER, DRAPE_EC_UNAUTHORIZED,
                                     "a valid API key is required (Authorization: Bearer KEY; ?token=KEY on "
                                     "/v1/stream only)");
        }
        if (rq->no_memory) return draped_http_error(d, c, R_OTHER, DRAPE_EC_LIMIT, "no memory for the request body; try again");
        if (rq->too_big) {
            int motion = !strcmp(url, DRAPED_MOTION_CONVERT);
            COUNT(d->met.limits[motion ? L_MOTION : L_BODY]);
            return draped_http_error_as(d, c, motion ? R_MOTIONS : R_OTHER, 413, DRAPE_EC_LIMIT,
                                        "request body over %zu bytes%s", rq->max_body,
                                        motion ? " (--motion-max-bytes)" : "");
        }
    }
    if (r < n) {
        if (routes[r].methods & m) return routes[r].fn(d, c, rq);
        return draped_http_error(d, c, R_OTHER, DRAPE_EC_METHOD_NOT_ALLOWED, "%s does not take %s", url, method);
    }
    if (!v1 && m == M_GET) return draped_route_static(d, c, rq);
    return draped_http_error(d, c, R_OTHER, DRAPE_EC_NOT_FOUND, "no route %s %s", method, url);
}

static void completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe)
{
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) draped_admit_mark(cls, c, DRAPED_ADMIT_ANSWERED);
    draped_req *rq = *req_cls;
    if (!rq) return;
    drape_buf_free(&rq->body);
    free(rq);
    *req_cls = NULL;
}

/* libmicrohttpd speaks once per failed connection, so a flood of bad
 * clients (a slowloris that admit.c cuts) would flood the log: at most
 * MHD_LOG_PER_S lines a second, the ones left out counted in the next. */
#define MHD_LOG_PER_S 20
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int64_t second;
    static int lines, skipped;
    int64_t now = drape_now_ns() / 1000000000;
    pthread_mutex_lock(&mu);
    if (now != second) second = now, lines = 0;
    int quiet = ++lines > MHD_LOG_PER_S, left_out = quiet ? 0 : skipped;
    skipped = quiet ? skipped + 1 : 0;
    pthread_mutex_unlock(&mu);
    if (quiet) return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n') line[--n] = 0;
    if (left_out) LOG_WARN("libmicrohttpd: %s (and %d messages left out)", line, left_out);
    else LOG_WARN("libmicrohttpd: %s", line);
}

int draped_http_start(draped *d)
{
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)d->cfg.port);
    if (inet_pton(AF_INET, d->cfg.bind, &sa.sin_addr) != 1) {
        LOG_ERROR("--bind: '%s' is not an IPv4 address", d->cfg.bind);
        return -1;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_UPGRADE |
                     MHD_USE_ERROR_LOG | MHD_USE_POLL;
    char *cert, *key;
    if (draped_tls_load(d, &cert, &key)) return -1;
    if (draped_admit_start(d)) {
        LOG_ERROR("out of memory");
        free(cert);
        free(key);
        return -1;
    }
    if (cert) flags |= MHD_USE_TLS;
    unsigned limit = (unsigned)d->cfg.max_connections + 64;
    /* without TLS the option list ends before the certificate */
    d->mhd = MHD_start_daemon(flags, 0, draped_admit_accept, d, handler, d, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, d,
                              MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed, d,
                              MHD_OPTION_NOTIFY_CONNECTION, draped_admit_notify, d,
                              MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                              cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
                              MHD_OPTION_END);
    free(cert);
    free(key);
    if (!d->mhd) {
        LOG_ERROR("cannot listen on %s:%lld: %s", d->cfg.bind, (long long)d->cfg.port, strerror(errno));
        draped_admit_stop(d);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_BIND_PORT);
    d->port = info ? info->port : (int)d->cfg.port;
    return 0;
}

void draped_http_stop(draped *d)
{
    if (d->mhd) MHD_stop_daemon(d->mhd);
    d->mhd = NULL;
    draped_admit_stop(d); /* after the daemon: its connections are all closed */
}
