/* RFC 6455 WebSocket framing: the handshake key, an incremental frame parser
 * (server and client side) and the frame encoder. Pure functions over bytes:
 * no sockets here, so every boundary is unit-testable.
 *
 * The parser reassembles fragmented messages, lets control frames arrive
 * between fragments, validates UTF-8 of text messages incrementally, and
 * enforces the limits; each violation maps to the close code the peer must
 * get (1002 protocol error, 1007 invalid UTF-8, 1009 too big). */
#ifndef DRAPE_WS_H
#define DRAPE_WS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum {
    DRAPE_WS_CONT = 0x0,
    DRAPE_WS_TEXT = 0x1,
    DRAPE_WS_BINARY = 0x2,
    DRAPE_WS_CLOSE = 0x8,
    DRAPE_WS_PING = 0x9,
    DRAPE_WS_PONG = 0xA
};

enum {
    DRAPE_WS_CLOSE_NORMAL = 1000,
    DRAPE_WS_CLOSE_GOING_AWAY = 1001,
    DRAPE_WS_CLOSE_PROTOCOL = 1002,
    DRAPE_WS_CLOSE_NO_STATUS = 1005, /* never sent; reported when a close frame had no code */
    DRAPE_WS_CLOSE_BAD_DATA = 1007,  /* invalid UTF-8 in a text message */
    DRAPE_WS_CLOSE_POLICY = 1008,
    DRAPE_WS_CLOSE_TOO_BIG = 1009,
    DRAPE_WS_CLOSE_ERROR = 1011,
    DRAPE_WS_CLOSE_TRY_AGAIN = 1013 /* a server limit that another moment may not hit */
};

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key +
 * GUID)); out gets 28 characters and a NUL. Returns DRAPE_EINVAL when key is
 * not 24 base64 characters (a 16-byte nonce). */
int drape_ws_accept_key(char out[29], const char *client_key);

typedef struct {
    int server;         /* 1: frames must be masked (client→server); 0: must not be */
    size_t max_frame;   /* payload bytes of one frame (control frames: 125 always) */
    size_t max_message; /* bytes of one reassembled data message */
    /* (0 in max_frame or max_message means no limit) */
} drape_ws_limits;

typedef struct drape_ws_parser drape_ws_parser;

typedef struct {
    int opcode;          /* DRAPE_WS_TEXT/BINARY (a whole message), PING, PONG or CLOSE */
    const uint8_t *data; /* payload (unmasked); valid until the next drape_ws_parse call */
    size_t len;
    int close_code;      /* CLOSE: the peer's code (1005 when absent) */
} drape_ws_event;

int drape_ws_parser_create(drape_ws_parser **out, const drape_ws_limits *lim);
void drape_ws_parser_free(drape_ws_parser *p);

/* Consumes bytes from buf[0..n) and stops at the first complete event.
 * Returns 1 with *ev filled (an event), 0 when all of buf was consumed and no
 * event is complete yet, or a negative value on a protocol violation, in
 * which case *close_code is the code to close with (1002, 1007, 1009) and the
 * parser must not be fed again. *used is the number of bytes consumed in every
 * case; call again with buf + *used for the rest. */
int drape_ws_parse(drape_ws_parser *p, const uint8_t *buf, size_t n, size_t *used, drape_ws_event *ev,
                   int *close_code);

/* Appends one whole frame (FIN set) to out. mask: NULL for server frames, 4
 * bytes for client frames (the payload is masked as it is copied). For CLOSE,
 * data/len is the payload after the code: use drape_ws_encode_close. */
int drape_ws_encode(drape_buf *out, int opcode, const void *data, size_t len, const uint8_t *mask);
int drape_ws_encode_close(drape_buf *out, int code, const char *reason, const uint8_t *mask);

/* Added for the client (handshake key) and tests: SHA-1 of n bytes, and
 * standard base64 with padding (out needs 4*ceil(n/3)+1 bytes; returns the
 * length written, without the NUL). */
void drape_sha1(uint8_t out[20], const void *data, size_t n);
size_t drape_base64(char *out, const uint8_t *in, size_t n);

/* Whole-buffer UTF-8 validation (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF). */
int drape_utf8_valid(const uint8_t *s, size_t n);
/* In place: control bytes, and every byte >= 0x80 when s is not valid
 * UTF-8, become '?'. For text built from outside bytes that goes into JSON. */
void drape_utf8_scrub(char *s);

#endif
