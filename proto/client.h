/* libdrape-client: a small blocking WebSocket client for GET /v1/stream.
 * One client per thread; every call returns DRAPE_OK (or a count) or a
 * negative drape_status with err (may be NULL) naming what went wrong.
 *
 *   drape_client *c;
 *   drape_client_connect(&c, "ws://127.0.0.1:8080/v1/stream", NULL, &err);
 *   drape_client_open(c, &avatar, NULL, "skirt", NULL, -1, DRAPE_FMT_Q16, DRAPE_MODE_NEURAL, &err);
 *   drape_client_pose(c, &avatar, seq, pose, NULL, &err);
 *   drape_server_msg m;
 *   if (drape_client_recv(c, &m, 1000, &err) == 1 && !strcmp(m.op, "frame"))
 *       drape_client_decode(&m, xyz);            (xyz holds m.count*3 floats)
 *   drape_server_msg_clear(&m);
 *   drape_client_close(c, 1000);                  (close handshake, then frees) */
#ifndef DRAPE_CLIENT_H
#define DRAPE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"
#include "msg.h"

typedef struct drape_client drape_client;

typedef struct {
    int json;               /* 1: JSON in text frames; 0 (default): msgpack in binary frames */
    int timeout_ms;         /* connect + handshake, and each blocking send; 0: 5000 */
    size_t max_message;     /* largest server message accepted; 0: 64 MiB */
    const char *api_key;    /* sent as "Authorization: Bearer KEY"; NULL: none */
    const char *tls_ca_file; /* wss: PEM certificates to trust; NULL: the system's */
    int tls_insecure;       /* wss: accept any certificate (self-signed test servers) */
} drape_client_opts;

/* url: ws://HOST[:PORT][/PATH][?QUERY] or wss:// (TLS through GnuTLS, port
 * 443 by default; the certificate must be trusted and name HOST unless
 * tls_insecure); HOST may be [v6]. Resolves, connects, upgrades with a
 * random key and checks Sec-WebSocket-Accept. A refused upgrade is
 * DRAPE_EIO with the status line; so is an untrusted certificate. */
int drape_client_connect(drape_client **out, const char *url, const drape_client_opts *opts, drape_error *err);

/* Stream messages (encoding per opts.json). identity, garment, or both (the
 * recipe re-creates the id on a replica that does not know it); betas only
 * with garment; n_betas -1: none. Once the stream is closing (either side
 * sent its close frame) they send nothing and return DRAPE_EIO. */
int drape_client_open(drape_client *c, const drape_avatar_key *avatar, const char *identity, const char *garment,
                      const float *betas, int n_betas, int format, int mode, drape_error *err);
int drape_client_pose(drape_client *c, const drape_avatar_key *avatar, uint64_t seq, const float pose[72],
                      const float trans[3] /* or NULL */, drape_error *err);
int drape_client_close_avatar(drape_client *c, const drape_avatar_key *avatar, drape_error *err);

/* Sends one raw frame (tests, and anything the helpers above do not cover). */
int drape_client_send_frame(drape_client *c, int opcode, const void *data, size_t len, drape_error *err);

/* Waits up to timeout_ms (-1: forever, 0: only what is already there) for
 * the next server message. Answers pings and a server close on the way.
 * Returns 1 with *m filled (clear it with drape_server_msg_clear), 0 on
 * timeout, DRAPE_EIO when the connection is closed or broken (see
 * drape_client_close_code), DRAPE_EFORMAT on a protocol violation or an
 * unparseable message. */
int drape_client_recv(drape_client *c, drape_server_msg *m, int timeout_ms, drape_error *err);

/* A frame's vertices: xyz gets m->count * 3 floats. */
int drape_client_decode(const drape_server_msg *m, float *xyz);

/* The socket, for poll() in callers that multiplex (readable: call recv with
 * 0). Over wss, received bytes may wait decrypted in the client where poll
 * does not see them: call recv with 0 until it returns 0 before polling. */
int drape_client_fd(const drape_client *c);
/* The close code the server sent (1005: none given), or 0 while open. */
int drape_client_close_code(const drape_client *c);

/* Close handshake (code 1000), waiting up to timeout_ms for the server's
 * close; then frees c. Returns DRAPE_OK when the server answered. */
int drape_client_close(drape_client *c, int timeout_ms);
/* Frees without a handshake (the socket is just closed). NULL is fine. */
void drape_client_free(drape_client *c);

#endif
