/* libdrape-client against a small in-process fake server (a thread that
 * speaks the stream protocol with proto/ws.c and proto/msg.c): handshake,
 * messages in both encodings, every vertex format, pings, close handshake,
 * refused and broken upgrades, bad URLs. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "../proto/client.h"
#include "../proto/loadstats.h"
#include "../proto/pack.h"
#include "../proto/ws.h"
#include "util.h"

enum { FAKE_OK, FAKE_403, FAKE_BAD_ACCEPT, FAKE_GOING_AWAY };

typedef struct {
    int listen_fd, port, mode;
    pthread_t th;
    int got_pong, got_close, n_poses;
} fake;

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0) return;
        c += w;
        n -= (size_t)w;
    }
}

static void reply(int fd, drape_buf *msg, int bin)
{
    drape_buf f = {0};
    drape_ws_encode(&f, bin ? DRAPE_WS_BINARY : DRAPE_WS_TEXT, msg->p, msg->len, NULL);
    send_all(fd, f.p, f.len);
    drape_buf_free(&f);
    msg->len = 0;
}

/* vertices the fake "computes" from a pose: 4 points from its first values */
static void fake_vertices(const float *pose, float *xyz)
{
    for (int i = 0; i < 12; i++) xyz[i] = pose[i] * 0.5f + (float)i * 0.01f;
}

static void *serve(void *arg)
{
    fake *f = arg;
    int fd = accept(f->listen_fd, NULL, NULL); /* (10 s at most: SO_RCVTIMEO) */
    if (fd < 0) return NULL;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char head[4096];
    size_t hl = 0;
    while (hl < sizeof head - 1) {
        ssize_t n = recv(fd, head + hl, sizeof head - 1 - hl, 0);
        if (n <= 0) break;
        hl += (size_t)n;
        head[hl] = 0;
        if (strstr(head, "\r\n\r\n")) break;
    }
    char *k = strstr(head, "Sec-WebSocket-Key: ");
    char key[64] = "", acc[29] = "";
    if (k) sscanf(k + 19, "%63[^\r]", key);
    drape_ws_accept_key(acc, key);
    char resp[512];
    if (f->mode == FAKE_403)
        snprintf(resp, sizeof resp, "HTTP/1.1 403 Forbidden\r\nContent-Length: 22\r\n\r\n{\"error\":\"forbidden\"}\n");
    else
        snprintf(resp, sizeof resp, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Accept: %s\r\n\r\n", f->mode == FAKE_BAD_ACCEPT ? "AAAAAAAAAAAAAAAAAAAAAAAAAAA=" : acc);
    send_all(fd, resp, strlen(resp));
    if (f->mode == FAKE_403 || f->mode == FAKE_BAD_ACCEPT) {
        close(fd);
        return NULL;
    }
    drape_buf out = {0}, msg = {0};
    if (f->mode == FAKE_GOING_AWAY) {
        /* the server leaves first: the client must echo the code */
        drape_ws_encode_close(&out, DRAPE_WS_CLOSE_GOING_AWAY, "shutting down", NULL);
    } else {
        /* a ping up front: the client must answer it while waiting for messages */
        drape_ws_encode(&out, DRAPE_WS_PING, "hi", 2, NULL);
    }
    send_all(fd, out.p, out.len);
    drape_ws_parser *p;
    drape_ws_limits lim = {1, 1 << 20, 1 << 20};
    drape_ws_parser_create(&p, &lim);
    int fmt = DRAPE_FMT_F32;
    uint8_t buf[65536];
    for (int done = 0; !done;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        size_t off = 0;
        while (off < (size_t)n && !done) {
            size_t used;
            drape_ws_event ev;
            int cc;
            int r = drape_ws_parse(p, buf + off, (size_t)n - off, &used, &ev, &cc);
            off += used;
            if (r < 0) {
                done = 1;
                break;
            }
            if (r == 0) break;
            if (ev.opcode == DRAPE_WS_PONG) f->got_pong = ev.len == 2 && !memcmp(ev.data, "hi", 2);
            if (ev.opcode == DRAPE_WS_CLOSE) {
                f->got_close = ev.close_code;
                out.len = 0;
                drape_ws_encode_close(&out, ev.close_code, "bye", NULL);
                send_all(fd, out.p, out.len);
                done = 1;
            }
            if (ev.opcode != DRAPE_WS_TEXT && ev.opcode != DRAPE_WS_BINARY) continue;
            int bin = ev.opcode == DRAPE_WS_BINARY;
            drape_msg m;
            const char *code;
            char why[256];
            if (drape_msg_parse(&m, ev.data, ev.len, bin, &code, why, sizeof why)) {
                drape_msg_error(&msg, bin, code, why, m.has_avatar ? &m.avatar : NULL, m.has_seq, m.seq);
                reply(fd, &msg, bin);
                continue;
            }
            if (m.op == DRAPE_OP_OPEN) {
                fmt = m.format;
                drape_msg_opened(&msg, bin, &m.avatar, "beef", m.garment, 4, fmt, m.mode);
            } else if (m.op == DRAPE_OP_POSE) {
                float xyz[12], bbox[6];
                fake_vertices(m.pose, xyz);
                drape_buf packed = {0};
                drape_pack(&packed, bbox, fmt, xyz, 4);
                drape_timing t = {1, 2, 3};
                drape_msg_frame(&msg, bin, &m.avatar, m.seq, fmt, 4, bbox, packed.p, packed.len, &t, 0);
                drape_buf_free(&packed);
                f->n_poses++;
            } else {
                drape_msg_closed(&msg, bin, &m.avatar);
            }
            reply(fd, &msg, bin);
        }
    }
    drape_ws_parser_free(p);
    drape_buf_free(&out);
    drape_buf_free(&msg);
    close(fd);
    return NULL;
}

static void fake_start(fake *f, int mode)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(f->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(f->listen_fd, 4), 0);
    /* no test can hang on the fake: accept and recv give up after 10 s (no
     * Criterion .timeout: its timers leak under ASan when tests overlap) */
    struct timeval tv = {10, 0};
    setsockopt(f->listen_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    socklen_t sl = sizeof a;
    getsockname(f->listen_fd, (struct sockaddr *)&a, &sl);
    f->port = ntohs(a.sin_port);
    pthread_create(&f->th, NULL, serve, f);
}

static void fake_stop(fake *f)
{
    pthread_join(f->th, NULL);
    close(f->listen_fd);
}

static drape_server_msg expect_msg(drape_client *c, const char *op)
{
    drape_server_msg m;
    drape_error e = {0};
    int r = drape_client_recv(c, &m, 5000, &e);
    cr_assert_eq(r, 1, "recv: %d %s", r, e.msg);
    cr_assert_str_eq(m.op, op, "%s: %s", m.op, m.message);
    return m;
}

/* Starts a fake in `mode` and connects a client to it. */
static drape_client *connect_fake(fake *f, int mode, int json)
{
    fake_start(f, mode);
    char url[128];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/v1/stream?x=1", f->port);
    drape_client *c;
    drape_error e = {0};
    drape_client_opts o = {.json = json, .timeout_ms = 5000};
    cr_assert_eq(drape_client_connect(&c, url, &o, &e), 0, "%s", e.msg);
    cr_assert_geq(drape_client_fd(c), 0);
    return c;
}

Test(client, streams_every_format_in_both_encodings)
{
    for (int json = 0; json <= 1; json++)
        for (int fmt = 0; fmt < DRAPE_FMT_COUNT; fmt++) {
            fake f;
            drape_client *c = connect_fake(&f, FAKE_OK, json);
            drape_error e = {0};
            drape_avatar_key a = {1, 0, "av"};
            cr_assert_eq(drape_client_open(c, &a, NULL, "skirt", (float[]){1, 2}, 2, fmt, DRAPE_MODE_NEURAL, &e), 0, "%s", e.msg);
            drape_server_msg m = expect_msg(c, "opened");
            cr_assert_str_eq(m.garment, "skirt");
            cr_assert_eq(m.vertices, 4);
            cr_assert_eq(m.format, fmt);
            drape_server_msg_clear(&m);
            float pose[72];
            for (int i = 0; i < 72; i++) pose[i] = 0.01f * (float)i - 0.3f;
            for (uint64_t seq = 1; seq <= 3; seq++) {
                pose[0] = (float)seq * 0.1f;
                cr_assert_eq(drape_client_pose(c, &a, seq, pose, (float[]){0, 0, 1}, &e), 0, "%s", e.msg);
                m = expect_msg(c, "frame");
                cr_assert_eq(m.seq, seq);
                cr_assert_eq(m.count, 4);
                cr_assert_eq(m.timing.compute_us, 2);
                float xyz[12], want[12];
                cr_assert_eq(drape_client_decode(&m, xyz), 0);
                fake_vertices(pose, want);
                float bound = drape_pack_error_bound(fmt, m.bbox);
                for (int i = 0; i < 12; i++)
                    cr_assert_leq(fabsf(xyz[i] - want[i]), bound, "%s[%d]", drape_format_name(fmt), i);
                drape_server_msg_clear(&m);
            }
            /* a bad message gets an error, and the stream goes on */
            cr_assert_eq(drape_client_send_frame(c, json ? DRAPE_WS_TEXT : DRAPE_WS_BINARY, "{}", json ? 2 : 1, &e), 0);
            m = expect_msg(c, "error");
            cr_assert_str_eq(m.code, DRAPE_ERR_BAD_MESSAGE);
            drape_server_msg_clear(&m);
            cr_assert_eq(drape_client_close_avatar(c, &a, &e), 0);
            m = expect_msg(c, "closed");
            cr_assert_str_eq(m.avatar.str, "av");
            drape_server_msg_clear(&m);
            cr_assert_eq(drape_client_close(c, 2000), 0, "the server answered the close");
            fake_stop(&f);
            cr_assert(f.got_pong, "the client answered the ping");
            cr_assert_eq(f.got_close, 1000);
            cr_assert_eq(f.n_poses, 3);
        }
}

Test(client, server_initiated_close)
{
    fake f;
    drape_client *c = connect_fake(&f, FAKE_GOING_AWAY, 0);
    drape_error e = {0};
    drape_server_msg m;
    cr_assert_eq(drape_client_recv(c, &m, 5000, &e), DRAPE_EIO);
    cr_assert(strstr(e.msg, "1001") && strstr(e.msg, "shutting down"), "%s", e.msg);
    cr_assert_eq(drape_client_close_code(c), 1001);
    /* sending after the close is a clear error, not a crash */
    drape_avatar_key a = {0, 1, ""};
    cr_assert_lt(drape_client_recv(c, &m, 0, &e), 0);
    e = (drape_error){0};
    cr_assert_lt(drape_client_pose(c, &a, 1, (float[72]){0}, NULL, &e), 0);
    cr_assert(strstr(e.msg, "closed the stream (code 1001)"), "%s", e.msg);
    cr_assert_eq(drape_client_close(c, 1000), 0, "the close was already answered");
    fake_stop(&f);
    cr_assert_eq(f.got_close, 1001, "the client echoed the server's code");
}

/* A WebSocket server nobody here wrote: Python's websockets (Debian's
 * python3-websockets). It checks our pong, and sends a 64-bit-length frame. */
static const char py_server[] =
    "import asyncio, json, sys\n"
    "import websockets\n"
    "done = None\n"
    "async def h(ws, *a):\n"
    "    waiter = await ws.ping(b'x')\n"
    "    async for m in ws:\n"
    "        if isinstance(m, str):\n"
    "            d = json.loads(m)\n"
    "            await asyncio.wait_for(waiter, 5)\n"
    "            await ws.send(json.dumps({'op': 'error', 'code': 'limit', 'message': 'x' * 70000, 'avatar': d['avatar']}))\n"
    "        else:\n"
    "            await ws.send(b'\\x82\\xa2op\\xa6closed\\xa6avatar\\x05')\n"
    "    done.set()\n"
    "async def main():\n"
    "    global done\n"
    "    done = asyncio.Event()\n"
    "    async with websockets.serve(h, '127.0.0.1', 0) as s:\n"
    "        print(s.sockets[0].getsockname()[1], flush=True)\n"
    "        await asyncio.wait_for(done.wait(), 20)\n"
    "asyncio.run(main())\n";

Test(client, interoperates_with_python_websockets)
{
    const char *py = getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3";
    if (tu_run(NULL, 0, "%s -c 'import websockets' 2>/dev/null", py) != 0)
        cr_skip_test("%s has no websockets module (python3-websockets): interop check skipped", py);
    const char *script = tu_tmp("ws_server.py");
    FILE *sf = fopen(script, "w");
    cr_assert(sf);
    fputs(py_server, sf);
    fclose(sf);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s '%s' </dev/null", py, script);
    FILE *pp = popen(cmd, "r");
    cr_assert(pp);
    int port = 0;
    cr_assert_eq(fscanf(pp, "%d", &port), 1, "the Python server did not start");
    char url[128];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/v1/stream", port);
    drape_client *c;
    drape_error e = {0};
    cr_assert_eq(drape_client_connect(&c, url, NULL, &e), 0, "%s", e.msg);
    drape_avatar_key a = {0, 5, ""};
    cr_assert_eq(drape_client_close_avatar(c, &a, &e), 0, "%s", e.msg); /* msgpack */
    drape_server_msg m = expect_msg(c, "closed");
    cr_assert_eq(m.avatar.num, 5);
    drape_server_msg_clear(&m);
    drape_buf j = {0};
    drape_msg_encode_close(&j, 0, &a);
    cr_assert_eq(drape_client_send_frame(c, DRAPE_WS_TEXT, j.p, j.len, &e), 0, "%s", e.msg);
    drape_buf_free(&j);
    m = expect_msg(c, "error"); /* only sent once our pong arrived */
    cr_assert_str_eq(m.code, "limit");
    cr_assert_eq(strlen(m.message), sizeof m.message - 1, "a 70 kB message, truncated to the field");
    drape_server_msg_clear(&m);
    cr_assert_eq(drape_client_close(c, 5000), 0, "Python answered our close");
    cr_assert_eq(pclose(pp), 0, "the Python server saw a clean session");
}

Test(client, refused_and_bad_handshakes)
{
    fake f;
    char url[128];
    drape_client *c;
    drape_error e = {0};
    fake_start(&f, FAKE_403);
    snprintf(url, sizeof url, "ws://localhost:%d/v1/stream", f.port);
    cr_assert_eq(drape_client_connect(&c, url, NULL, &e), DRAPE_EIO);
    cr_assert(strstr(e.msg, "403 Forbidden") && strstr(e.msg, "forbidden"), "%s", e.msg);
    cr_assert_null(c);
    fake_stop(&f);

    fake_start(&f, FAKE_BAD_ACCEPT);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", f.port);
    cr_assert_eq(drape_client_connect(&c, url, NULL, &e), DRAPE_EFORMAT);
    cr_assert(strstr(e.msg, "Sec-WebSocket-Accept"), "%s", e.msg);
    fake_stop(&f);

    /* nobody listening: the port of a socket we bind and close */
    int port = f.port;
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/v1/stream", port);
    cr_assert_eq(drape_client_connect(&c, url, NULL, &e), DRAPE_EIO);
    cr_assert(strstr(e.msg, "connect"), "%s", e.msg);
}

Test(client, rejects_bad_urls)
{
    const char *bad[] = {"http://127.0.0.1/", "ws://", "ws://:80/", "ws://host:0/", "ws://host:99999/", "ws://host:80x/",
                         "ws://[::1/", "ws://h/a b", NULL};
    drape_client *c;
    drape_error e = {0};
    for (int i = 0; bad[i]; i++) {
        cr_assert_eq(drape_client_connect(&c, bad[i], NULL, &e), DRAPE_EINVAL, "%s: %s", bad[i], e.msg);
        cr_assert(strstr(e.msg, "url"), "%s", e.msg);
    }
    cr_assert_eq(drape_client_connect(&c, "wss://", NULL, &e), DRAPE_EINVAL);
    /* wss:// is understood: here it fails at the TCP connect */
    cr_assert_eq(drape_client_connect(&c, "wss://127.0.0.1:9/", NULL, &e), DRAPE_EIO);
    cr_assert(strstr(e.msg, "connect 127.0.0.1:9"), "%s", e.msg);
    cr_assert_eq(drape_client_connect(&c, NULL, NULL, &e), DRAPE_EINVAL);
}

/* ---- drape load: the report helpers and the command line ---- */

Test(load, percentiles_by_nearest_rank)
{
    double ms[1000];
    for (int i = 0; i < 1000; i++) ms[i] = (double)(1000 - i); /* unsorted on purpose */
    drape_latency_stats s;
    drape_latency_summarize(ms, 1000, &s);
    cr_assert_eq(s.n, 1000);
    cr_assert_float_eq(s.p50, 500, 0);
    cr_assert_float_eq(s.p90, 900, 0);
    cr_assert_float_eq(s.p99, 990, 0);
    cr_assert_float_eq(s.p999, 999, 0);
    cr_assert_float_eq(s.max, 1000, 0);
    cr_assert_float_eq(s.mean, 500.5, 1e-9);
    double one = 3.5;
    drape_latency_summarize(&one, 1, &s);
    cr_assert(s.p50 == 3.5 && s.p999 == 3.5 && s.max == 3.5);
    drape_latency_summarize(NULL, 0, &s);
    cr_assert(s.n == 0 && s.p99 == 0 && s.max == 0);
    /* 10 samples: p90 is the 9th, p99 and p99.9 the 10th */
    double ten[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 100};
    drape_latency_summarize(ten, 10, &s);
    cr_assert(s.p50 == 5 && s.p90 == 9 && s.p99 == 100 && s.p999 == 100);
}

Test(load, report_text_and_json)
{
    drape_load_report r = {"ws://h:1/v1/stream", "q16", "skirt", 64, 4, 62, 30, 10, 10.5, 19200, 19100, 50, 50, 2, 0,
                           {0, 0, 0, 0, 0, 0, 0}};
    double ms[4] = {1, 2, 3, 4};
    drape_latency_summarize(ms, 4, &r.latency);
    drape_buf b = {0};
    cr_assert_eq(drape_load_report_text(&b, &r), 0);
    drape_buf_append(&b, "", 1);
    cr_assert(strstr((char *)b.p, "64 avatars (62 opened) on 4 connections at 30 fps"), "%s", (char *)b.p);
    cr_assert(strstr((char *)b.p, "p99.9 4.00"), "%s", (char *)b.p);
    cr_assert(strstr((char *)b.p, "50 dropped"), "%s", (char *)b.p);
    b.len = 0;
    cr_assert_eq(drape_load_report_json(&b, &r), 0);
    json_error_t je;
    json_t *j = json_loadb((const char *)b.p, b.len, 0, &je);
    cr_assert(j, "%s", je.text);
    cr_assert_eq(json_integer_value(json_object_get(j, "received")), 19100);
    cr_assert_eq(json_integer_value(json_object_get(j, "opened")), 62);
    cr_assert_float_eq(json_real_value(json_object_get(j, "throughput_fps")), 19100 / 10.5, 0.01);
    cr_assert_float_eq(json_real_value(json_object_get(json_object_get(j, "latency_ms"), "p99_9")), 4, 0);
    json_decref(j);
    drape_buf_free(&b);
}

static const char *drape_bin(void)
{
    const char *b = getenv("DRAPE_BIN");
    return b ? b : "build/drape";
}

static void load_fails(const char *args, const char *needle)
{
    char out[4096];
    int rc = tu_run(out, sizeof out, "%s load %s", drape_bin(), args);
    cr_assert_eq(rc, 2, "drape load %s: exit %d, want 2: %s", args, rc, out);
    cr_assert(strstr(out, needle), "drape load %s: '%s' should mention '%s'", args, out, needle);
}

Test(load, rejects_bad_arguments)
{
    const char *u = "--url ws://127.0.0.1:9/v1/stream";
    char a[512];
    load_fails("--avatars 2 --fps 30 --duration 1", "--url is required");
    load_fails("--url http://x --avatars 2 --fps 30 --duration 1", "must start with ws:// or wss://");
#define BAD(extra, needle)                                        \
    snprintf(a, sizeof a, "%s %s", u, extra);                     \
    load_fails(a, needle)
    BAD("--fps 30 --duration 1", "--avatars is required");
    BAD("--avatars 2 --duration 1", "--fps is required");
    BAD("--avatars 2 --fps 30", "--duration is required");
    BAD("--avatars 0 --fps 30 --duration 1", "--avatars: 0 is out of range");
    BAD("--avatars 2.5 --fps 30 --duration 1", "--avatars: '2.5' is not a valid number");
    BAD("--avatars many --fps 30 --duration 1", "not a valid number");
    BAD("--avatars 2 --fps -1 --duration 1", "--fps: -1 is out of range");
    BAD("--avatars 2 --fps nan --duration 1", "--fps: 'nan' is not a valid number");
    BAD("--avatars 2 --fps 30 --duration 0", "--duration: 0 is out of range");
    BAD("--avatars 2 --fps 30 --duration 1 --connections 3", "--connections 3 is more than --avatars 2");
    BAD("--avatars 2 --fps 30 --duration 1 --format png", "--format: 'png' is not one of");
    BAD("--avatars 2 --fps 30 --duration 1 --mode magic", "--mode: 'magic'");
    BAD("--avatars 2 --fps 30 --duration 1 --betas 1,x", "--betas");
    BAD("--avatars 2 --fps 30 --duration 1 --betas 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "more than 16");
    BAD("--avatars 2 --fps 30 --duration 1 --garment ''", "--garment");
    BAD("--avatars 2 --fps 30 --duration 1 --bogus 1", "unknown option '--bogus'");
    BAD("--avatars 2 --fps 30 --duration", "--duration needs a value");
#undef BAD
}

/* drape load --json's report in its output (after any line it wrote on stderr) */
static json_t *load_report(const char *out)
{
    const char *report = strstr(out, "{\"url\"");
    cr_assert_not_null(report, "no report in:\n%s", out);
    json_error_t je;
    json_t *j = json_loads(report, 0, &je);
    cr_assert(j, "%s: %s", out, je.text);
    return j;
}

Test(load, runs_against_the_fake_server)
{
    fake f;
    fake_start(&f, FAKE_OK);
    char out[8192];
    int rc = tu_run(out, sizeof out,
                    "%s load --url ws://127.0.0.1:%d/v1/stream --avatars 3 --fps 20 --duration 0.5 --format q16 --json "
                    "2>/dev/null",
                    drape_bin(), f.port);
    fake_stop(&f);
    cr_assert_eq(rc, 0, "%s", out);
    json_t *j = load_report(out);
    cr_assert_eq(json_integer_value(json_object_get(j, "sent")), 30, "%s", out);
    cr_assert_eq(json_integer_value(json_object_get(j, "received")), 30, "%s", out);
    cr_assert_eq(json_integer_value(json_object_get(j, "errors")), 0, "%s", out);
    cr_assert_eq(json_integer_value(json_object_get(j, "connection_errors")), 0, "%s", out);
    cr_assert_eq(json_integer_value(json_object_get(j, "opened")), 3, "%s", out);
    json_t *lat = json_object_get(j, "latency_ms");
    cr_assert_eq(json_integer_value(json_object_get(lat, "n")), 30);
    cr_assert_geq(json_real_value(json_object_get(lat, "p50")), 0);
    cr_assert_geq(json_real_value(json_object_get(lat, "max")), json_real_value(json_object_get(lat, "p99")));
    cr_assert_eq(f.n_poses, 30);
    cr_assert_eq(f.got_close, 1000);
    json_decref(j);
}

/* A server that refuses one of two avatars (--max-avatars 1): the report
 * says one opened, and the run is a result (exit 0), not a failure. */
Test(load, a_refused_avatar_shows_in_opened)
{
    tu_server s = tu_draped_start("tiny_random", "--max-avatars 1");
    char out[8192];
    int rc = tu_run(out, sizeof out, "%s load --url %s --avatars 2 --fps 20 --duration 0.5 --json", drape_bin(), s.ws);
    cr_assert_eq(tu_draped_stop(&s), 0);
    cr_assert_eq(rc, 0, "%s", out);
    json_t *j = load_report(out);
    cr_assert_eq(json_integer_value(json_object_get(j, "avatars")), 2, "%s", out);
    cr_assert_eq(json_integer_value(json_object_get(j, "opened")), 1, "%s", out);
    cr_assert_geq(json_integer_value(json_object_get(j, "errors")), 1, "%s", out);
    cr_assert_gt(json_integer_value(json_object_get(j, "received")), 0, "%s", out);
    json_decref(j);
}

Test(load, unreachable_server_is_a_clear_failure)
{
    char out[4096];
    int rc = tu_run(out, sizeof out, "%s load --url ws://127.0.0.1:9/v1/stream --avatars 1 --fps 10 --duration 0.1",
                    drape_bin());
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "connection 0: connect 127.0.0.1:9"), "%s", out);
}

/* ---- libdrape-client against a real draped ---- */

static void wave_pose(float pose[72], uint64_t seq)
{
    for (int i = 0; i < 72; i++) pose[i] = 0.2f * sinf(0.5f * (float)i + 0.8f * (float)seq);
}

/* Two connections (msgpack and JSON), 16 avatars each, four per format (number
 * and string keys). Every round sends one pose per avatar and collects the
 * 16 frames; each format's decoded vertices agree with the f32 avatar of its
 * group of four within the documented bound, plus the spread measured among
 * the round's f32 avatars (frames of one round may land in different
 * batches). */
Test(client_draped, every_format_many_avatars)
{
    tu_server s = tu_draped_start("tiny_random", "");
    enum { NC = 2, NA = 16, ROUNDS = 3 };
    drape_client *c[NC];
    drape_error e = {0};
    int V = 0;
    for (int k = 0; k < NC; k++) {
        drape_client_opts o = {.json = k, .timeout_ms = 5000};
        cr_assert_eq(drape_client_connect(&c[k], s.ws, &o, &e), 0, "%s", e.msg);
        for (int a = 0; a < NA; a++) {
            drape_avatar_key key = {a % 2, (uint64_t)a, ""};
            snprintf(key.str, sizeof key.str, "av%d", a);
            cr_assert_eq(drape_client_open(c[k], &key, NULL, "skirt", (float[]){0.3f}, 1, a % DRAPE_FMT_COUNT,
                                           DRAPE_MODE_NEURAL, &e), 0, "%s", e.msg);
        }
        for (int a = 0; a < NA; a++) {
            drape_server_msg m = expect_msg(c[k], "opened");
            cr_assert_gt(m.vertices, 0);
            V = m.vertices;
            drape_server_msg_clear(&m);
        }
    }
    float *xyz = malloc(sizeof(float) * 3 * (size_t)V * NA);
    int *fmt_of = calloc(NA, sizeof *fmt_of);
    float bounds[NA];
    for (int r = 1; r <= ROUNDS; r++) {
        float pose[72];
        wave_pose(pose, (uint64_t)r);
        for (int k = 0; k < NC; k++) {
            for (int a = 0; a < NA; a++) {
                drape_avatar_key key = {a % 2, (uint64_t)a, ""};
                snprintf(key.str, sizeof key.str, "av%d", a);
                cr_assert_eq(drape_client_pose(c[k], &key, (uint64_t)r, pose, NULL, &e), 0, "%s", e.msg);
            }
            for (int n = 0; n < NA; n++) {
                drape_server_msg m = expect_msg(c[k], "frame");
                int a = m.avatar.is_str ? atoi(m.avatar.str + 2) : (int)m.avatar.num;
                cr_assert(a >= 0 && a < NA && m.seq == (uint64_t)r && m.count == V && m.dropped == 0,
                          "avatar %d seq %llu count %d dropped %llu", a, (unsigned long long)m.seq, m.count,
                          (unsigned long long)m.dropped);
                cr_assert_eq(m.format, a % DRAPE_FMT_COUNT);
                cr_assert_eq(drape_client_decode(&m, xyz + (size_t)a * 3 * V), 0);
                fmt_of[a] = m.format;
                bounds[a] = drape_pack_error_bound(m.format, m.bbox);
                drape_server_msg_clear(&m);
            }
            /* the f32 avatars of this round among themselves: how much the
             * batches they happened to share changed the float results */
            double spread = 0;
            for (int a = DRAPE_FMT_COUNT; a < NA; a += DRAPE_FMT_COUNT)
                spread = fmax(spread, tu_max_abs_diff(xyz + (size_t)a * 3 * V, xyz, 3 * V));
            cr_assert_leq(spread, 1e-4, "the same pose and identity gave f32 results %g apart", spread);
            for (int a = 0; a < NA; a++) {
                int ref = a - fmt_of[a]; /* the f32 avatar of its group of four */
                double d = tu_max_abs_diff(xyz + (size_t)a * 3 * V, xyz + (size_t)ref * 3 * V, 3 * V);
                cr_assert_leq(d, bounds[a] + spread, "conn %d avatar %d (%s) round %d: %g from f32, bound %g + %g", k,
                              a, drape_format_name(fmt_of[a]), r, d, bounds[a], spread);
            }
        }
    }
    free(xyz);
    free(fmt_of);
    for (int k = 0; k < NC; k++) cr_assert_eq(drape_client_close(c[k], 2000), 0);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

static void expect_error(drape_client *c, const char *code)
{
    drape_server_msg m = expect_msg(c, "error");
    cr_assert_str_eq(m.code, code, "%s: %s", m.code, m.message);
    cr_assert(m.message[0], "an error names what is wrong");
    drape_server_msg_clear(&m);
}

/* unknown garment, out-of-range betas, pose before open, a second open:
 * each gets its error code, and the stream keeps serving */
Test(client_draped, error_codes)
{
    tu_server s = tu_draped_start("tiny_random", "");
    drape_client *c;
    drape_error e = {0};
    cr_assert_eq(drape_client_connect(&c, s.ws, NULL, &e), 0, "%s", e.msg);
    drape_avatar_key a = {0, 1, ""}, b = {0, 2, ""};
    float pose[72] = {0};
    cr_assert_eq(drape_client_open(c, &a, NULL, "ballgown", NULL, -1, DRAPE_FMT_F32, DRAPE_MODE_NEURAL, &e), 0);
    expect_error(c, DRAPE_ERR_UNKNOWN_GARMENT);
    cr_assert_eq(drape_client_open(c, &a, NULL, "skirt", (float[]){99}, 1, DRAPE_FMT_F32, DRAPE_MODE_NEURAL, &e), 0);
    expect_error(c, DRAPE_ERR_BAD_BETAS);
    cr_assert_eq(drape_client_pose(c, &b, 1, pose, NULL, &e), 0);
    expect_error(c, DRAPE_ERR_NOT_OPEN);
    cr_assert_eq(drape_client_open(c, &a, NULL, "miniskirt", NULL, -1, DRAPE_FMT_Q16, DRAPE_MODE_LBS, &e), 0);
    drape_server_msg m = expect_msg(c, "opened");
    cr_assert_eq(m.mode, DRAPE_MODE_LBS);
    drape_server_msg_clear(&m);
    cr_assert_eq(drape_client_open(c, &a, NULL, "miniskirt", NULL, -1, DRAPE_FMT_Q16, DRAPE_MODE_NEURAL, &e), 0);
    expect_error(c, DRAPE_ERR_ALREADY_OPEN);
    cr_assert_eq(drape_client_pose(c, &a, 7, pose, NULL, &e), 0);
    m = expect_msg(c, "frame");
    cr_assert_eq(m.seq, 7);
    drape_server_msg_clear(&m);
    cr_assert_eq(drape_client_close(c, 2000), 0);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* the server goes away under an open stream: recv reports DRAPE_EIO with
 * the close code (1001, shutting down), sending fails cleanly (no SIGPIPE),
 * and a new connection is a clear connect error */
Test(client_draped, server_gone)
{
    tu_server s = tu_draped_start("tiny_random", "");
    char url[80];
    snprintf(url, sizeof url, "%s", s.ws);
    drape_client *c;
    drape_error e = {0};
    cr_assert_eq(drape_client_connect(&c, url, NULL, &e), 0, "%s", e.msg);
    drape_avatar_key a = {1, 0, "solo"};
    cr_assert_eq(drape_client_open(c, &a, NULL, "skirt", NULL, -1, DRAPE_FMT_MESHOPT, DRAPE_MODE_NEURAL, &e), 0);
    drape_server_msg m = expect_msg(c, "opened");
    drape_server_msg_clear(&m);
    cr_assert_eq(tu_draped_stop(&s), 0);
    int r;
    while ((r = drape_client_recv(c, &m, 5000, &e)) == 1) drape_server_msg_clear(&m);
    cr_assert_eq(r, DRAPE_EIO, "recv after shutdown: %d %s", r, e.msg);
    cr_assert_eq(drape_client_close_code(c), 1001);
    float pose[72] = {0};
    int failed = 0; /* the first send may still land in the kernel's buffer */
    for (int i = 0; i < 3 && !failed; i++) failed = drape_client_pose(c, &a, (uint64_t)i + 1, pose, NULL, &e) < 0;
    cr_assert(failed, "sending on a closed stream fails");
    drape_client_free(c);
    cr_assert_eq(drape_client_connect(&c, url, NULL, &e), DRAPE_EIO);
    cr_assert(strstr(e.msg, "connect"), "%s", e.msg);
    cr_assert_null(c);
}

/* wss:// against draped with a self-signed certificate for 127.0.0.1: it
 * is refused as untrusted by default, accepted when named as the CA or with
 * tls_insecure, and then streams every format; `drape load` likewise. */
Test(client_draped, wss)
{
    char out[8192], crt[512], extra[1200], url[96];
    tu_tls_flags(extra, sizeof extra, crt, sizeof crt);
    tu_server s = tu_draped_start("tiny_random", extra);
    snprintf(url, sizeof url, "wss://127.0.0.1:%d/v1/stream", s.port);
    drape_client *c;
    drape_error e = {0};
    cr_assert_eq(drape_client_connect(&c, url, NULL, &e), DRAPE_EIO);
    cr_assert(strstr(e.msg, "not trusted"), "%s", e.msg);
    drape_client_opts trust = {.tls_ca_file = crt}, any = {.json = 1, .tls_insecure = 1};
    const drape_client_opts *ways[2] = {&trust, &any};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(drape_client_connect(&c, url, ways[k], &e), 0, "%s", e.msg);
        for (int f = 0; f < DRAPE_FMT_COUNT; f++) {
            drape_avatar_key a = {0, (uint64_t)f, ""};
            cr_assert_eq(drape_client_open(c, &a, NULL, "skirt", NULL, -1, f, DRAPE_MODE_NEURAL, &e), 0, "%s", e.msg);
        }
        for (int f = 0; f < DRAPE_FMT_COUNT; f++) {
            drape_server_msg m = expect_msg(c, "opened");
            drape_server_msg_clear(&m);
        }
        float pose[72], xyz[3 * 240];
        for (uint64_t t = 1; t <= 3; t++) {
            wave_pose(pose, t);
            for (int f = 0; f < DRAPE_FMT_COUNT; f++) {
                drape_avatar_key a = {0, (uint64_t)f, ""};
                cr_assert_eq(drape_client_pose(c, &a, t, pose, NULL, &e), 0, "%s", e.msg);
            }
            for (int f = 0; f < DRAPE_FMT_COUNT; f++) {
                drape_server_msg m = expect_msg(c, "frame");
                cr_assert(m.seq == t && m.count == 240, "seq %llu count %d", (unsigned long long)m.seq, m.count);
                cr_assert_eq(drape_client_decode(&m, xyz), 0);
                drape_server_msg_clear(&m);
            }
        }
        cr_assert_eq(drape_client_close(c, 2000), 0);
    }
    int rc = tu_run(out, sizeof out, "%s load --url %s --avatars 4 --fps 30 --duration 1 --insecure --json 2>/dev/null",
                    drape_bin(), url);
    cr_assert_eq(rc, 0, "%s", out);
    /* every pose answered: a frame, or counted in the server's dropped
     * (latest wins when a loaded machine falls behind, design §6) */
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    cr_assert(j, "%s: %s", out, je.text);
    json_int_t sent = json_integer_value(json_object_get(j, "sent"));
    json_int_t got = json_integer_value(json_object_get(j, "received"));
    json_int_t dropped = json_integer_value(json_object_get(j, "dropped"));
    cr_assert(sent == 120 && got > 0 && got + dropped == sent, "%s", out);
    cr_assert(json_integer_value(json_object_get(j, "errors")) == 0 && json_integer_value(json_object_get(j, "missing")) == 0 &&
                  json_integer_value(json_object_get(j, "connection_errors")) == 0,
              "%s", out);
    json_decref(j);
    rc = tu_run(out, sizeof out, "%s load --url %s --avatars 1 --fps 10 --duration 0.1 2>&1", drape_bin(), url);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "not trusted"), "%s", out);
    cr_assert_eq(tu_draped_stop(&s), 0);
}
