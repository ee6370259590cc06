/* GET /v1/stream: the WebSocket handshake (RFC 6455, section 4.2). A
 * request that passes gets 101 and its socket goes to stream.c; one that
 * does not gets an HTTP error, or 426 for another protocol version. */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>

#include "../proto/ws.h"
#include "http.h"

/* whether a comma-separated header holds tok (any case, spaces around) */
static int header_has_token(const char *h, const char *tok)
{
    if (!h) return 0;
    size_t n = strlen(tok);
    for (const char *p = h; *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if ((size_t)(t - p) == n && !strncasecmp(p, tok, n)) return 1;
        p = e;
    }
    return 0;
}

enum MHD_Result draped_route_stream(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    if (strcmp(rq->method, "GET"))
        return draped_http_error(d, c, R_STREAM, DRAPE_EC_METHOD_NOT_ALLOWED, "use GET with a WebSocket upgrade");
    /* libmicrohttpd will not upgrade an HTTP/1.0 connection (RFC 6455 §4.1
     * asks for 1.1): say so, where the 101 would fail and leave no answer */
    if (!strcmp(rq->version, MHD_HTTP_VERSION_1_0))
        return draped_http_error(d, c, R_STREAM, DRAPE_EC_BAD_MESSAGE, "a WebSocket handshake needs HTTP/1.1");
    const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
    const char *conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
    const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    if (!up || strcasecmp(up, "websocket") || !header_has_token(conn, "upgrade"))
        return draped_http_error(d, c, R_STREAM, DRAPE_EC_BAD_MESSAGE,
                                 "GET /v1/stream needs 'Upgrade: websocket' and 'Connection: Upgrade'");
    if (!ver || strcmp(ver, "13")) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Sec-WebSocket-Version", "13");
        MHD_add_response_header(r, "X-Drape-Instance", d->instance);
        enum MHD_Result ok = MHD_queue_response(c, 426, r);
        MHD_destroy_response(r);
        draped_count_http(&d->met, R_STREAM, 426);
        return ok;
    }
    char accept[29];
    if (!key || drape_ws_accept_key(accept, key))
        return draped_http_error(d, c, R_STREAM, DRAPE_EC_BAD_MESSAGE, "bad Sec-WebSocket-Key");
    if (atomic_load(&d->stopping))
        return draped_http_error(d, c, R_STREAM, DRAPE_EC_LIMIT, "the server is shutting down");
    pthread_mutex_lock(&d->mu);
    int full = d->n_streams >= d->cfg.max_connections;
    pthread_mutex_unlock(&d->mu);
    if (full) {
        COUNT(d->met.limits[L_CONNECTIONS]);
        return draped_http_error(d, c, R_STREAM, DRAPE_EC_LIMIT, "too many stream connections (limit %lld)",
                                 (long long)d->cfg.max_connections);
    }
    draped_admit_mark(d, c, DRAPED_ADMIT_UPGRADED); /* libmicrohttpd calls the upgrade an answered request */
    return draped_stream_upgrade(d, c, accept) ? MHD_NO : MHD_YES;
}
