/* The error codes of the wire, one row each, in the way of libuv's
 * UV_ERRNO_MAP: everything about a code lives in its row, so the server's
 * HTTP statuses, its metrics and the protocol cannot drift apart.
 *
 *   XX(name, wire, message, http, metric)
 *   name     DRAPE_EC_<name>, the enum below
 *   wire     the "code" string of stream `error` messages and of HTTP error
 *            bodies (docs/protocol.md, docs/server.md). Clients match these:
 *            never change one.
 *   message  what the code means, one line
 *   http     the status an HTTP route answers with it (a route may answer a
 *            narrower one where it knows more: 413 for a body over the limit,
 *            503 for a failure that passes, such as memory)
 *   metric   STREAM: it has a slot in drape_stream_errors_total{code};
 *            NONE: HTTP only, counted by drape_http_requests_total{route,code}
 *
 * The order is the enum's and the metric's: new codes go at the end of
 * their group. */
#ifndef DRAPE_ERRORS_H
#define DRAPE_ERRORS_H

#define DRAPE_ERRCODE_MAP(XX)                                                                                      \
    XX(BAD_MESSAGE, "bad_message", "not JSON or msgpack, not a map, op missing or unknown", 400, STREAM)          \
    XX(BAD_FIELD, "bad_field", "a field missing, of the wrong type or length, not finite or out of range", 400,   \
       STREAM)                                                                                                     \
    XX(UNKNOWN_GARMENT, "unknown_garment", "a garment the model does not have", 404, STREAM)                       \
    XX(UNKNOWN_IDENTITY, "unknown_identity", "an identity this server does not know", 404, STREAM)                 \
    XX(BAD_BETAS, "bad_betas", "too many betas, or outside the model's range", 400, STREAM)                        \
    XX(NOT_OPEN, "not_open", "pose or close for an avatar that is not open", 400, STREAM)                          \
    XX(ALREADY_OPEN, "already_open", "open for an avatar that is already open", 400, STREAM)                      \
    XX(LIMIT, "limit", "a limit of the server was reached", 503, STREAM)                                           \
    XX(INTERNAL, "internal", "a server failure", 500, STREAM)                                                      \
    XX(PHYSICS_RESET, "physics_reset", "a physics avatar's cloth diverged and was restarted from skinning", 500,     \
       STREAM)                                                                                                     \
    XX(MODE_UNAVAILABLE, "mode_unavailable", "a mode the garment does not have (neural before its network is trained)", \
       400, STREAM)                                                                                                \
    XX(NOT_FOUND, "not_found", "no such route or file", 404, NONE)                                                 \
    XX(UNAUTHORIZED, "unauthorized", "a valid API key is required", 401, NONE)                                     \
    XX(METHOD_NOT_ALLOWED, "method_not_allowed", "the route does not take this method", 405, NONE)              \
    XX(BAD_MOTION, "bad_motion", "a motion file (BVH or npz) that cannot be read", 400, NONE)                     \
    XX(UNKNOWN_MOTION, "unknown_motion", "a motion clip the server does not have", 404, NONE)

typedef enum {
#define XX(name, wire, message, http, metric) DRAPE_EC_##name,
    DRAPE_ERRCODE_MAP(XX)
#undef XX
    DRAPE_EC_COUNT
} drape_errcode;

enum { DRAPE_EC_METRIC_NONE, DRAPE_EC_METRIC_STREAM };

typedef struct {
    const char *name, *wire, *message;
    unsigned http;
    int metric; /* DRAPE_EC_METRIC_* */
} drape_errcode_info;

/* the map's rows, by code (errors.c) */
extern const drape_errcode_info drape_errcodes[DRAPE_EC_COUNT];

/* The row of c; an out-of-range c reads as DRAPE_EC_INTERNAL's. */
static inline const drape_errcode_info *drape_errcode_row(drape_errcode c)
{
    return &drape_errcodes[(unsigned)c < DRAPE_EC_COUNT ? c : DRAPE_EC_INTERNAL];
}
static inline const char *drape_errcode_wire(drape_errcode c) { return drape_errcode_row(c)->wire; }
static inline const char *drape_errcode_message(drape_errcode c) { return drape_errcode_row(c)->message; }
static inline unsigned drape_errcode_http(drape_errcode c) { return drape_errcode_row(c)->http; }
static inline int drape_errcode_metric(drape_errcode c) { return drape_errcode_row(c)->metric; }

/* The code of a wire string; DRAPE_EC_COUNT for one the map lacks (or NULL). */
drape_errcode drape_errcode_parse(const char *wire);

/* The wire strings by their old names (tests and clients compare with them). */
#define DRAPE_ERR_BAD_MESSAGE drape_errcode_wire(DRAPE_EC_BAD_MESSAGE)
#define DRAPE_ERR_BAD_FIELD drape_errcode_wire(DRAPE_EC_BAD_FIELD)
#define DRAPE_ERR_UNKNOWN_GARMENT drape_errcode_wire(DRAPE_EC_UNKNOWN_GARMENT)
#define DRAPE_ERR_UNKNOWN_IDENTITY drape_errcode_wire(DRAPE_EC_UNKNOWN_IDENTITY)
#define DRAPE_ERR_BAD_BETAS drape_errcode_wire(DRAPE_EC_BAD_BETAS)
#define DRAPE_ERR_NOT_OPEN drape_errcode_wire(DRAPE_EC_NOT_OPEN)
#define DRAPE_ERR_ALREADY_OPEN drape_errcode_wire(DRAPE_EC_ALREADY_OPEN)
#define DRAPE_ERR_LIMIT drape_errcode_wire(DRAPE_EC_LIMIT)
#define DRAPE_ERR_INTERNAL drape_errcode_wire(DRAPE_EC_INTERNAL)

#endif
