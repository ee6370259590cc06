/* Stream messages of GET /v1/stream (docs/design.md §6): parsed from JSON (text
 * frames, jansson) or msgpack (binary frames, msgpack-c) into one C struct,
 * and the server's replies encoded in the same encoding the client used.
 *
 * Client → server (maps with "op"):
 *   open  {avatar, identity | garment [+ betas], format?, mode?}
 *   pose  {avatar, seq, pose[72], trans[3]?, reset?}
 *   close {avatar}
 * Server → client:
 *   opened {avatar, identity, garment, vertices, format, mode}
 *   frame  {avatar, seq, format, count, bbox[6], data, timing{queue,compute,pack}, dropped}
 *   error  {code, message, avatar?, seq?}
 *   closed {avatar}
 * avatar is a client-chosen non-negative integer (< 2^53) or a string of
 * 1..64 bytes; the server echoes it in the form it was given. In JSON, frame
 * "data" is an array of numbers (f32: floats; f16/q16: the uint16 values;
 * meshopt: the bytes); in msgpack it is a bin. Unknown keys are ignored.
 * (Added:) frame "dropped" is cumulative: the poses of this avatar the server
 * has dropped since it was opened (newest wins), so a lost count is never
 * lost for good; clients take the latest value. */
#ifndef DRAPE_MSG_H
#define DRAPE_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "errors.h" /* the codes of `error` messages */

#define DRAPE_MSG_NAME_MAX 64   /* garment names, avatar strings */
#define DRAPE_MSG_ID_MAX 64     /* identity ids (hex) */
#define DRAPE_MSG_BETAS_MAX 16
#define DRAPE_MSG_POSE 72

typedef enum { DRAPE_OP_OPEN = 1, DRAPE_OP_POSE, DRAPE_OP_CLOSE } drape_op;
typedef enum { DRAPE_MODE_NEURAL = 0, DRAPE_MODE_LBS, DRAPE_MODE_PHYSICS } drape_mode;

typedef struct {
    int is_str;                       /* 1: str; 0: num */
    uint64_t num;
    char str[DRAPE_MSG_NAME_MAX + 1];
} drape_avatar_key;

typedef struct {
    int op;
    drape_avatar_key avatar;
    int has_avatar;                      /* (added) 1 once avatar was read, also on errors */
    /* open */
    char identity[DRAPE_MSG_ID_MAX + 1]; /* "" when garment is given instead */
    char garment[DRAPE_MSG_NAME_MAX + 1];
    float betas[DRAPE_MSG_BETAS_MAX];
    int n_betas;                         /* -1: absent */
    int format;                          /* drape_format; default f32 */
    int mode;                            /* drape_mode; default neural */
    /* pose */
    int has_seq;
    uint64_t seq;
    float pose[DRAPE_MSG_POSE];
    float trans[3];                      /* 0 when absent */
    int reset;                           /* a cut: the avatar's history starts again at this pose */
    drape_errcode err;                   /* (added) when parsing failed: the code of *code */
} drape_msg;


/* Parses one message. binary: 1 for msgpack, 0 for JSON text. On failure
 * returns a negative status, sets *code to one of DRAPE_ERR_* and msg to a
 * one-line reason naming the field; m->avatar / m->has_seq are filled as far
 * as they could be read, so the error can name the avatar and seq. Checks
 * types, lengths (pose exactly 72, trans 3, betas ≤ 16) and finiteness; it
 * does not know the model (garment names and beta ranges are the server's). */
int drape_msg_parse(drape_msg *m, const uint8_t *data, size_t len, int binary, const char **code, char *msg,
                    size_t msg_cap);

typedef struct {
    uint32_t queue_us, compute_us, pack_us;
} drape_timing;

/* Encoders: append one whole message to out, JSON (binary = 0) or msgpack. */
int drape_msg_opened(drape_buf *out, int binary, const drape_avatar_key *avatar, const char *identity,
                     const char *garment, int vertices, int format, int mode);
int drape_msg_frame(drape_buf *out, int binary, const drape_avatar_key *avatar, uint64_t seq, int format,
                    int count, const float bbox[6], const uint8_t *data, size_t len, const drape_timing *t,
                    uint64_t dropped);
int drape_msg_error(drape_buf *out, int binary, const char *code, const char *message,
                    const drape_avatar_key *avatar /* NULL: none */, int has_seq, uint64_t seq);
int drape_msg_closed(drape_buf *out, int binary, const drape_avatar_key *avatar);

/* Client side (libdrape-client, tests): encode client messages, parse server ones. */
int drape_msg_encode_open(drape_buf *out, int binary, const drape_avatar_key *avatar, const char *identity,
                          const char *garment, const float *betas, int n_betas, int format, int mode);
int drape_msg_encode_pose(drape_buf *out, int binary, const drape_avatar_key *avatar, uint64_t seq,
                          const float pose[72], const float trans[3]);
int drape_msg_encode_close(drape_buf *out, int binary, const drape_avatar_key *avatar);

typedef struct {
    char op[16];                 /* "opened", "frame", "error", "closed" */
    drape_avatar_key avatar;
    int has_avatar;
    uint64_t seq;
    int has_seq;
    int format, count, vertices;
    float bbox[6];
    uint8_t *data;               /* malloc'd copy of the vertex data (JSON arrays re-packed to bytes) */
    size_t len;
    drape_timing timing;
    uint64_t dropped;
    char code[32];
    char message[256];
    char identity[DRAPE_MSG_ID_MAX + 1];
    char garment[DRAPE_MSG_NAME_MAX + 1];
    int mode;                    /* (added) opened: drape_mode */
} drape_server_msg;

/* Fills *m (it need not be cleared first: it is overwritten, so clear a
 * previous message's data before reusing it). On failure returns a negative
 * status, op is "" and message holds the reason. */
int drape_server_msg_parse(drape_server_msg *m, const uint8_t *data, size_t len, int binary);
void drape_server_msg_clear(drape_server_msg *m); /* frees data */

#endif
