/* libdrape-client (see client.h): POSIX sockets, GnuTLS for wss://, our
 * ws.c framing, msg.c messages. Blocking sends with a timeout; receives
 * through poll(). */
#include "client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pack.h"
#include "ws.h"
#include "../core/clock.h"

struct drape_client {
    int fd;
    gnutls_session_t tls; /* wss://; NULL for ws:// */
    gnutls_certificate_credentials_t cred;
    int json;
    int timeout_ms;
    drape_ws_parser *parser;
    drape_buf rx;          /* received, not yet parsed: rx.p[rx_off..rx.len) */
    size_t rx_off;
    drape_buf tx;          /* scratch for one outgoing frame */
    drape_buf msg;         /* scratch for one outgoing message */
    uint64_t rng;          /* for frame masks */
    int close_sent, close_code, broken;
};

/* remaining ms of a deadline, for poll (-1 stays -1: forever) */
static int remaining(int64_t deadline)
{
    if (deadline < 0) return -1;
    int64_t r = deadline - ((int64_t)(drape_now_ns() / 1000000));
    return r < 0 ? 0 : r > 1000000000 ? 1000000000 : (int)r;
}

static uint32_t next_rand(drape_client *c)
{
    /* xorshift64*: masks only need to be unpredictable to intermediaries */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (uint32_t)((c->rng * 2685821657736338717ull) >> 32);
}

static void random_bytes(uint8_t *p, size_t n)
{
    ssize_t got = getrandom(p, n, 0);
    if (got == (ssize_t)n) return;
    /* no getrandom: time and address bits are enough for a nonce and a seed */
    uint64_t x = (uint64_t)((int64_t)(drape_now_ns() / 1000000)) ^ (uint64_t)(uintptr_t)p ^ ((uint64_t)getpid() << 32);
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(x >> 56);
    }
}

/* ---- the connection's bytes, through TLS or not ---- */

enum { IO_AGAIN = -1, IO_FAILED = -2 };

/* > 0 bytes moved; IO_AGAIN: nothing now (*events: what to poll for);
 * IO_FAILED (*why says); recv: 0 when the server closed. A TLS call that
 * would block is repeated with the same arguments (gnutls_record_send(3)). */
static ssize_t io_result(drape_client *c, ssize_t r, short *events, const char **why)
{
    if (!c->tls) {
        if (r >= 0) return r;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return IO_AGAIN;
        *why = strerror(errno);
        return IO_FAILED;
    }
    if (r >= 0) return r;
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
        *events = gnutls_record_get_direction(c->tls) ? POLLOUT : POLLIN;
        return IO_AGAIN;
    }
    *why = gnutls_strerror((int)r);
    return IO_FAILED;
}

static ssize_t io_send(drape_client *c, const uint8_t *p, size_t n, short *events, const char **why)
{
    *events = POLLOUT;
    return io_result(c, c->tls ? gnutls_record_send(c->tls, p, n) : send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT),
                     events, why);
}

static ssize_t io_recv(drape_client *c, uint8_t *p, size_t n, short *events, const char **why)
{
    *events = POLLIN;
    return io_result(c, c->tls ? gnutls_record_recv(c->tls, p, n) : recv(c->fd, p, n, MSG_DONTWAIT), events, why);
}

/* ---- sending ---- */

static int send_all(drape_client *c, const uint8_t *p, size_t n, drape_error *err)
{
    int64_t deadline = ((int64_t)(drape_now_ns() / 1000000)) + c->timeout_ms;
    const char *why = "";
    while (n) {
        short ev;
        ssize_t w = io_send(c, p, n, &ev, &why);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w == IO_FAILED) break;
        struct pollfd pf = {c->fd, ev, 0};
        int r = poll(&pf, 1, remaining(deadline));
        if (r == 0) {
            c->broken = 1;
            return drape_fail(err, DRAPE_EIO, "send: timed out after %d ms (server not reading)", c->timeout_ms);
        }
        if (r < 0 && errno != EINTR) {
            why = strerror(errno);
            break;
        }
    }
    if (n) {
        c->broken = 1;
        return drape_fail(err, DRAPE_EIO, "send: %s", why);
    }
    return DRAPE_OK;
}

static int send_frame(drape_client *c, int opcode, const void *data, size_t len, drape_error *err)
{
    if (c->broken) return drape_fail(err, DRAPE_EIO, "send: the connection is closed");
    /* RFC 6455 §5.5.1: nothing after our close frame */
    if (c->close_sent)
        return c->close_code ? drape_fail(err, DRAPE_EIO, "send: the server closed the stream (code %d)", c->close_code)
                             : drape_fail(err, DRAPE_EIO, "send: the stream is closing");
    uint32_t r = next_rand(c);
    uint8_t mask[4] = {(uint8_t)r, (uint8_t)(r >> 8), (uint8_t)(r >> 16), (uint8_t)(r >> 24)};
    c->tx.len = 0;
    int rc = drape_ws_encode(&c->tx, opcode, data, len, mask);
    if (rc) return drape_fail(err, rc, "send: cannot encode a frame of %zu bytes", len);
    return send_all(c, c->tx.p, c->tx.len, err);
}

int drape_client_send_frame(drape_client *c, int opcode, const void *data, size_t len, drape_error *err)
{
    if (!c) return drape_fail(err, DRAPE_EINVAL, "no client");
    return send_frame(c, opcode, data, len, err);
}

static int send_msg(drape_client *c, int rc, const char *what, drape_error *err)
{
    if (rc) return drape_fail(err, rc, "%s: invalid arguments (avatar, names, values)", what);
    return send_frame(c, c->json ? DRAPE_WS_TEXT : DRAPE_WS_BINARY, c->msg.p, c->msg.len, err);
}

int drape_client_open(drape_client *c, const drape_avatar_key *avatar, const char *identity, const char *garment,
                      const float *betas, int n_betas, int format, int mode, drape_error *err)
{
    if (!c) return drape_fail(err, DRAPE_EINVAL, "no client");
    c->msg.len = 0;
    int rc = drape_msg_encode_open(&c->msg, !c->json, avatar, identity, garment, betas, n_betas, format, mode);
    return send_msg(c, rc, "open", err);
}

int drape_client_pose(drape_client *c, const drape_avatar_key *avatar, uint64_t seq, const float pose[72],
                      const float trans[3], drape_error *err)
{
    if (!c) return drape_fail(err, DRAPE_EINVAL, "no client");
    c->msg.len = 0;
    int rc = drape_msg_encode_pose(&c->msg, !c->json, avatar, seq, pose, trans);
    return send_msg(c, rc, "pose", err);
}

int drape_client_close_avatar(drape_client *c, const drape_avatar_key *avatar, drape_error *err)
{
    if (!c) return drape_fail(err, DRAPE_EINVAL, "no client");
    c->msg.len = 0;
    int rc = drape_msg_encode_close(&c->msg, !c->json, avatar);
    return send_msg(c, rc, "close", err);
}

static void send_close(drape_client *c, int code, const char *reason)
{
    if (c->close_sent || c->broken) return;
    c->close_sent = 1;
    uint32_t r = next_rand(c);
    uint8_t mask[4] = {(uint8_t)r, (uint8_t)(r >> 8), (uint8_t)(r >> 16), (uint8_t)(r >> 24)};
    c->tx.len = 0;
    if (!drape_ws_encode_close(&c->tx, code, reason, mask)) send_all(c, c->tx.p, c->tx.len, NULL);
}

/* ---- receiving ---- */

/* Reads what the socket has (waiting up to timeout ms): 1 read something,
 * 0 timeout, negative on EOF or error. */
static int fill(drape_client *c, int timeout, drape_error *err)
{
    if (c->rx_off == c->rx.len) c->rx_off = c->rx.len = 0;
    else if (c->rx_off > 65536) { /* keep the unparsed tail at the front */
        memmove(c->rx.p, c->rx.p + c->rx_off, c->rx.len - c->rx_off);
        c->rx.len -= c->rx_off;
        c->rx_off = 0;
    }
    int64_t deadline = timeout < 0 ? -1 : ((int64_t)(drape_now_ns() / 1000000)) + timeout;
    short ev = POLLIN;
    const char *why = "";
    ssize_t n;
    for (;;) {
        /* bytes GnuTLS has decrypted already are not in the socket for poll */
        if (!c->tls || !gnutls_record_check_pending(c->tls)) {
            struct pollfd pf = {c->fd, ev, 0};
            int r;
            do r = poll(&pf, 1, remaining(deadline));
            while (r < 0 && errno == EINTR);
            if (r == 0) return 0;
            if (r < 0) return drape_fail(err, DRAPE_EIO, "poll: %s", strerror(errno));
        }
        if (drape_buf_reserve(&c->rx, 65536)) return drape_fail(err, DRAPE_ENOMEM, "receive buffer");
        n = io_recv(c, c->rx.p + c->rx.len, c->rx.cap - c->rx.len, &ev, &why);
        if (n > 0) {
            c->rx.len += (size_t)n;
            return 1;
        }
        if (n != IO_AGAIN) break;
        if (!remaining(deadline)) return 0; /* a TLS record only part there */
    }
    c->broken = 1;
    if (n == 0) {
        if (c->close_code) return drape_fail(err, DRAPE_EIO, "connection closed (close code %d)", c->close_code);
        return drape_fail(err, DRAPE_EIO, "connection closed by the server without a close frame");
    }
    return drape_fail(err, DRAPE_EIO, "recv: %s", why);
}

int drape_client_recv(drape_client *c, drape_server_msg *m, int timeout_ms, drape_error *err)
{
    if (!c || !m) return drape_fail(err, DRAPE_EINVAL, "no client or message");
    memset(m, 0, sizeof *m);
    int64_t deadline = timeout_ms < 0 ? -1 : ((int64_t)(drape_now_ns() / 1000000)) + timeout_ms;
    for (;;) {
        if (c->close_code && c->rx_off == c->rx.len)
            return drape_fail(err, DRAPE_EIO, "the server closed the stream (code %d)", c->close_code);
        while (c->rx_off < c->rx.len) {
            size_t used;
            drape_ws_event ev;
            int cc;
            int r = drape_ws_parse(c->parser, c->rx.p + c->rx_off, c->rx.len - c->rx_off, &used, &ev, &cc);
            c->rx_off += used;
            if (r < 0) {
                send_close(c, cc, "protocol error");
                c->broken = 1;
                return drape_fail(err, DRAPE_EFORMAT, "server broke the WebSocket protocol (close %d)", cc);
            }
            if (r == 0) break;
            if (ev.opcode == DRAPE_WS_PING) {
                int rc = send_frame(c, DRAPE_WS_PONG, ev.data, ev.len, err);
                if (rc) return rc;
            } else if (ev.opcode == DRAPE_WS_CLOSE) {
                c->close_code = ev.close_code;
                /* echo the code (1005 is never sent: answer with an empty close) */
                send_close(c, ev.close_code == DRAPE_WS_CLOSE_NO_STATUS ? 0 : ev.close_code, NULL);
                return drape_fail(err, DRAPE_EIO, "the server closed the stream (code %d%s%.*s)", ev.close_code,
                                  ev.len ? ": " : "", (int)(ev.len > 120 ? 120 : ev.len), (const char *)ev.data);
            } else if (ev.opcode == DRAPE_WS_TEXT || ev.opcode == DRAPE_WS_BINARY) {
                int rc = drape_server_msg_parse(m, ev.data, ev.len, ev.opcode == DRAPE_WS_BINARY);
                if (rc) return drape_fail(err, rc, "server message: %s", m->message);
                return 1;
            }
        }
        if (c->broken) return drape_fail(err, DRAPE_EIO, "the connection is closed");
        int r = fill(c, remaining(deadline), err);
        if (r < 0) return r;
        if (r == 0) return 0;
    }
}

int drape_client_decode(const drape_server_msg *m, float *xyz)
{
    if (!m || strcmp(m->op, "frame")) return DRAPE_EINVAL;
    return drape_unpack(xyz, m->count, m->format, m->bbox, m->data, m->len);
}

int drape_client_fd(const drape_client *c) { return c ? c->fd : -1; }
int drape_client_close_code(const drape_client *c) { return c ? c->close_code : 0; }

/* ---- connecting ---- */

typedef struct {
    char host[256], port[8], path[1024], hostport[300];
    int tls; /* wss:// */
} url_parts;

static int parse_url(url_parts *u, const char *url, drape_error *err)
{
    if (!url) return drape_fail(err, DRAPE_EINVAL, "url: missing");
    u->tls = !strncmp(url, "wss://", 6);
    if (!u->tls && strncmp(url, "ws://", 5))
        return drape_fail(err, DRAPE_EINVAL, "url '%s': must start with ws:// or wss://", url);
    const char *h = url + (u->tls ? 6 : 5), *end = h + strcspn(h, "/?#");
    const char *hend, *pstart = NULL;
    if (*h == '[') {
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb) return drape_fail(err, DRAPE_EINVAL, "url '%s': unterminated [IPv6] host", url);
        hend = rb + 1;
        if (hend < end && *hend == ':') pstart = hend + 1;
        else if (hend != end) return drape_fail(err, DRAPE_EINVAL, "url '%s': junk after the host", url);
    } else {
        const char *colon = memchr(h, ':', (size_t)(end - h));
        hend = colon ? colon : end;
        if (colon) pstart = colon + 1;
    }
    size_t hl = (size_t)(hend - h);
    if (*h == '[') h++, hl -= 2;
    if (hl == 0 || hl >= sizeof u->host) return drape_fail(err, DRAPE_EINVAL, "url '%s': bad host", url);
    memcpy(u->host, h, hl);
    u->host[hl] = 0;
    snprintf(u->port, sizeof u->port, u->tls ? "443" : "80");
    if (pstart) {
        size_t pl = (size_t)(end - pstart);
        char *e;
        long p = pl && pl < 6 ? strtol(pstart, &e, 10) : -1;
        if (p <= 0 || p > 65535 || e != end) return drape_fail(err, DRAPE_EINVAL, "url '%s': bad port", url);
        snprintf(u->port, sizeof u->port, "%ld", p);
    }
    if (*end == '#' || strchr(end, '#')) return drape_fail(err, DRAPE_EINVAL, "url '%s': fragments are not allowed", url);
    snprintf(u->path, sizeof u->path, "%s%s", *end == '/' ? "" : "/", end);
    for (const char *p = u->path; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7F) return drape_fail(err, DRAPE_EINVAL, "url '%s': bad character in the path", url);
    int v6 = strchr(u->host, ':') != NULL;
    snprintf(u->hostport, sizeof u->hostport, "%s%s%s:%s", v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
    return DRAPE_OK;
}

static int tcp_connect(drape_client *c, const url_parts *u, drape_error *err)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(u->host, u->port, &hints, &res);
    if (g) return drape_fail(err, DRAPE_EIO, "resolve %s: %s", u->host, gai_strerror(g));
    int64_t deadline = ((int64_t)(drape_now_ns() / 1000000)) + c->timeout_ms;
    int last = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int r = connect(fd, a->ai_addr, a->ai_addrlen);
        if (r < 0 && errno == EINPROGRESS) {
            struct pollfd pf = {fd, POLLOUT, 0};
            int pr;
            do pr = poll(&pf, 1, remaining(deadline));
            while (pr < 0 && errno == EINTR);
            int soerr = pr == 0 ? ETIMEDOUT : 0;
            socklen_t sl = sizeof soerr;
            if (pr > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            r = soerr ? -1 : 0;
            errno = soerr;
        }
        if (r == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            c->fd = fd;
            freeaddrinfo(res);
            return DRAPE_OK;
        }
        last = errno;
        close(fd);
    }
    freeaddrinfo(res);
    return drape_fail(err, DRAPE_EIO, "connect %s: %s", u->hostport, strerror(last ? last : ECONNREFUSED));
}

/* The TLS handshake of wss:// on the connected socket, within the
 * connect timeout: the server's certificate is checked against the system's
 * trust store (or opts->tls_ca_file) and the URL's host, unless
 * opts->tls_insecure. */
static int tls_connect(drape_client *c, const url_parts *u, const drape_client_opts *o, drape_error *err)
{
    const char *ca = o ? o->tls_ca_file : NULL;
    int insecure = o && o->tls_insecure;
    int r = gnutls_certificate_allocate_credentials(&c->cred);
    if (r < 0) return drape_fail(err, DRAPE_ENOMEM, "tls: %s", gnutls_strerror(r));
    if (!insecure) {
        r = ca ? gnutls_certificate_set_x509_trust_file(c->cred, ca, GNUTLS_X509_FMT_PEM)
               : gnutls_certificate_set_x509_system_trust(c->cred);
        if (r <= 0)
            return drape_fail(err, DRAPE_EIO, "tls: no trusted certificates from %s%s%s", ca ? ca : "the system",
                              r < 0 ? ": " : "", r < 0 ? gnutls_strerror(r) : "");
    }
    if ((r = gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL)) < 0) {
        c->tls = NULL;
        return drape_fail(err, DRAPE_ENOMEM, "tls: %s", gnutls_strerror(r));
    }
    unsigned char ip[16];
    int literal = inet_pton(AF_INET, u->host, ip) == 1 || inet_pton(AF_INET6, u->host, ip) == 1;
    if ((r = gnutls_set_default_priority(c->tls)) < 0 ||
        (r = gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cred)) < 0 ||
        (!literal && (r = gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, u->host, strlen(u->host))) < 0))
        return drape_fail(err, DRAPE_EIO, "tls: %s", gnutls_strerror(r));
    if (!insecure) gnutls_session_set_verify_cert(c->tls, u->host, 0);
    gnutls_transport_set_int(c->tls, c->fd);
    int64_t deadline = ((int64_t)(drape_now_ns() / 1000000)) + c->timeout_ms;
    while ((r = gnutls_handshake(c->tls)) < 0) {
        if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
            gnutls_datum_t why = {0};
            unsigned status = gnutls_session_get_verify_cert_status(c->tls);
            gnutls_certificate_verification_status_print(status, gnutls_certificate_type_get(c->tls), &why, 0);
            drape_fail(err, DRAPE_EIO, "tls: the certificate of %s is not trusted: %s", u->hostport,
                       why.data ? (const char *)why.data : "unknown reason");
            gnutls_free(why.data);
            return DRAPE_EIO;
        }
        if (gnutls_error_is_fatal(r)) return drape_fail(err, DRAPE_EIO, "tls handshake with %s: %s", u->hostport,
                                                        gnutls_strerror(r));
        struct pollfd pf = {c->fd, gnutls_record_get_direction(c->tls) ? POLLOUT : POLLIN, 0};
        int pr = poll(&pf, 1, remaining(deadline));
        if (pr == 0) return drape_fail(err, DRAPE_EIO, "tls handshake with %s: no answer within %d ms", u->hostport,
                                       c->timeout_ms);
        if (pr < 0 && errno != EINTR) return drape_fail(err, DRAPE_EIO, "poll: %s", strerror(errno));
    }
    return DRAPE_OK;
}

/* Finds header `name` in the response head (case-insensitive); copies its
 * trimmed value. */
static int header_value(const char *head, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (!strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ' || *v == '\t') v++;
            size_t vl = strcspn(v, "\r\n");
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
            if (vl >= cap) vl = cap - 1;
            memcpy(out, v, vl);
            out[vl] = 0;
            return 1;
        }
    }
    return 0;
}

static int handshake(drape_client *c, const url_parts *u, const char *api_key, drape_error *err)
{
    uint8_t nonce[16];
    random_bytes(nonce, sizeof nonce);
    char key[32], want[29];
    drape_base64(key, nonce, sizeof nonce);
    drape_ws_accept_key(want, key);
    drape_buf req = {0};
    int rc = drape_buf_printf(&req,
                              "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nUser-Agent: libdrape-client\r\n",
                              u->path, u->hostport, key);
    if (!rc && api_key) rc = drape_buf_printf(&req, "Authorization: Bearer %s\r\n", api_key);
    if (!rc) rc = drape_buf_append(&req, "\r\n", 2);
    if (!rc) rc = send_all(c, req.p, req.len, err);
    else drape_fail(err, rc, "handshake request");
    drape_buf_free(&req);
    if (rc) return rc;

    /* read the response head; what follows it is WebSocket data */
    int64_t deadline = ((int64_t)(drape_now_ns() / 1000000)) + c->timeout_ms;
    char *end = NULL;
    while (!end) {
        if (c->rx.len > 16384) return drape_fail(err, DRAPE_EFORMAT, "handshake: response head over 16 KiB");
        int r = fill(c, remaining(deadline), err);
        if (r < 0) return drape_fail(err, DRAPE_EIO, "handshake: connection closed before the response");
        if (r == 0) return drape_fail(err, DRAPE_EIO, "handshake: no response within %d ms", c->timeout_ms);
        if (drape_buf_reserve(&c->rx, 1)) return drape_fail(err, DRAPE_ENOMEM, "handshake");
        c->rx.p[c->rx.len] = 0; /* (a NUL after the data, not counted) */
        end = strstr((char *)c->rx.p, "\r\n\r\n");
    }
    size_t head_len = (size_t)(end - (char *)c->rx.p) + 4;
    char *head = strndup((char *)c->rx.p, head_len - 2);
    if (!head) return drape_fail(err, DRAPE_ENOMEM, "handshake");
    char status[128], val[128];
    snprintf(status, sizeof status, "%.*s", (int)strcspn(head, "\r\n"), head);
    if (strncmp(head, "HTTP/1.1 101", 12)) {
        /* show the status and the start of the body: the server explains there */
        const char *body = (char *)c->rx.p + head_len;
        rc = drape_fail(err, DRAPE_EIO, "handshake refused: %s%s%.*s", status, *body ? ": " : "",
                        (int)strcspn(body, "\r\n") > 160 ? 160 : (int)strcspn(body, "\r\n"), body);
    } else if (!header_value(head, "Upgrade", val, sizeof val) || strcasecmp(val, "websocket")) {
        rc = drape_fail(err, DRAPE_EFORMAT, "handshake: no 'Upgrade: websocket' in the response");
    } else if (!header_value(head, "Sec-WebSocket-Accept", val, sizeof val) || strcmp(val, want)) {
        rc = drape_fail(err, DRAPE_EFORMAT, "handshake: Sec-WebSocket-Accept is wrong or missing");
    }
    free(head);
    c->rx_off = head_len;
    return rc;
}

int drape_client_connect(drape_client **out, const char *url, const drape_client_opts *opts, drape_error *err)
{
    *out = NULL;
    url_parts u;
    int rc = parse_url(&u, url, err);
    if (rc) return rc;
    drape_client *c = calloc(1, sizeof *c);
    if (!c) return drape_fail(err, DRAPE_ENOMEM, "client");
    c->fd = -1;
    c->json = opts ? opts->json : 0;
    c->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 5000;
    size_t maxm = opts && opts->max_message ? opts->max_message : (size_t)64 << 20;
    drape_ws_limits lim = {0, maxm, maxm};
    random_bytes((uint8_t *)&c->rng, sizeof c->rng);
    c->rng |= 1;
    if ((rc = drape_ws_parser_create(&c->parser, &lim))) {
        drape_client_free(c);
        return drape_fail(err, rc, "client");
    }
    if ((rc = tcp_connect(c, &u, err)) || (u.tls && (rc = tls_connect(c, &u, opts, err))) ||
        (rc = handshake(c, &u, opts ? opts->api_key : NULL, err))) {
        drape_client_free(c);
        return rc;
    }
    *out = c;
    return DRAPE_OK;
}

int drape_client_close(drape_client *c, int timeout_ms)
{
    if (!c) return DRAPE_EINVAL;
    int answered = c->close_code != 0;
    if (!c->broken) {
        send_close(c, DRAPE_WS_CLOSE_NORMAL, NULL);
        int64_t deadline = ((int64_t)(drape_now_ns() / 1000000)) + timeout_ms;
        while (!c->close_code && !c->broken) {
            drape_server_msg m;
            int r = drape_client_recv(c, &m, remaining(deadline), NULL);
            if (r == 1) drape_server_msg_clear(&m);
            else if (r == 0) break;
        }
        answered = c->close_code != 0;
    }
    drape_client_free(c);
    return answered ? DRAPE_OK : DRAPE_EIO;
}

void drape_client_free(drape_client *c)
{
    if (!c) return;
    if (c->tls) {
        if (!c->broken) gnutls_bye(c->tls, GNUTLS_SHUT_WR); /* close_notify, if the socket takes it now */
        gnutls_deinit(c->tls);
    }
    if (c->cred) gnutls_certificate_free_credentials(c->cred);
    if (c->fd >= 0) close(c->fd);
    drape_ws_parser_free(c->parser);
    drape_buf_free(&c->rx);
    drape_buf_free(&c->tx);
    drape_buf_free(&c->msg);
    free(c);
}
