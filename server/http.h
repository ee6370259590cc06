/* Inside the HTTP layer: what http.c (the daemon, dispatch and keys) gives
 * the files that answer requests — routes.c, static.c, upgrade.c — and
 * what they give it. */
#ifndef DRAPED_HTTP_H
#define DRAPED_HTTP_H

#include <jansson.h>
#include <microhttpd.h>

#include "../proto/errors.h"
#include "app.h"

/* A request: its URL, method and HTTP version, and the body as it came
 * (too_big: it passed its limit, max_body, and was not kept: --max-message,
 * or --motion-max-bytes for POST /v1/motions/convert; keyless: not kept,
 * the headers named no valid API key; no_memory: not kept, there was no
 * memory for it). */
typedef struct {
    const char *url, *method, *version;
    drape_buf body;
    int too_big, keyless, no_memory;
    size_t max_body;
} draped_req;

typedef enum MHD_Result (*draped_route_fn)(draped *d, struct MHD_Connection *c, const draped_req *rq);

/* Responses, each counted under route (R_*) and its status. data is sent
 * as mode says; j is taken. */
enum MHD_Result draped_http_buf(draped *d, struct MHD_Connection *c, int route, unsigned status, const char *type,
                                void *data, size_t len, enum MHD_ResponseMemoryMode mode);
enum MHD_Result draped_http_json(draped *d, struct MHD_Connection *c, int route, unsigned status, json_t *j);
/* {"error": {"code", "message"}} with the code's HTTP status (proto/errors.h) */
enum MHD_Result draped_http_error(draped *d, struct MHD_Connection *c, int route, drape_errcode code, const char *fmt,
                                  ...) __attribute__((format(printf, 5, 6)));
/* the same with a narrower status than the code's, where the route knows
 * more: 413 for a body over the limit, 503 for a failure that passes */
enum MHD_Result draped_http_error_as(draped *d, struct MHD_Connection *c, int route, unsigned status,
                                     drape_errcode code, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* routes.c */
enum MHD_Result draped_route_healthz(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_readyz(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_metrics(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_model(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_garment(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_body(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_identities(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_frames(draped *d, struct MHD_Connection *c, const draped_req *rq);

/* motions.c: motion files in (docs/motion.md) and the server's clips */
#define DRAPED_MOTION_CONVERT "/v1/motions/convert"
enum MHD_Result draped_route_motion_convert(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_motions(draped *d, struct MHD_Connection *c, const draped_req *rq);
enum MHD_Result draped_route_motion(draped *d, struct MHD_Connection *c, const draped_req *rq);

/* static.c: the viewer's files under --web-root */
enum MHD_Result draped_route_static(draped *d, struct MHD_Connection *c, const draped_req *rq);

/* upgrade.c: GET /v1/stream, the WebSocket handshake */
enum MHD_Result draped_route_stream(draped *d, struct MHD_Connection *c, const draped_req *rq);

/* admit.c: the per-IP connection limit and the header deadline.
 * draped_admit_accept is libmicrohttpd's accept policy, draped_admit_notify
 * its NOTIFY_CONNECTION callback (cls: the draped). draped_admit_mark tells
 * it where a connection's request is: its headers are in (no deadline while
 * it is served), it was answered (a keep-alive connection waits for headers
 * again), or it is becoming a stream (no deadline ever again). */
typedef enum { DRAPED_ADMIT_HEADERS_IN, DRAPED_ADMIT_ANSWERED, DRAPED_ADMIT_UPGRADED } draped_admit_event;
int draped_admit_start(draped *d);
void draped_admit_stop(draped *d);
enum MHD_Result draped_admit_accept(void *cls, const struct sockaddr *sa, socklen_t len);
void draped_admit_notify(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode what);
void draped_admit_mark(draped *d, struct MHD_Connection *c, draped_admit_event ev);

/* tls.c: the PEM certificate and key of --tls-cert and --tls-key (malloc'd);
 * both NULL when TLS is off. -1 (logged) when they cannot be read. */
int draped_tls_load(const draped *d, char **cert, char **key);

#endif
