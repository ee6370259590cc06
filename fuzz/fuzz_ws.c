/* libFuzzer harness: the WebSocket frame parser (proto/ws.c), fed the way a
 * socket delivers bytes, in chunks cut at arbitrary points.
 * Input: byte 0 picks the side and the limits, byte 1 seeds the chunk
 * sizes, the rest is the stream. Checks what ws.h promises: bytes consumed
 * never exceed those given, a text message is valid UTF-8, a message keeps
 * to max_message, a close code is one a peer may send, a violation names
 * 1002, 1007, 1009 or 1011, and a data event re-encoded and parsed again is
 * the same event. */
#include <string.h>

#include "../proto/ws.h"
#include "fuzz.h"

static const size_t frame_limits[4] = {0, 125, 4096, 1 << 20};
static const size_t message_limits[4] = {125, 4096, 65536, 1 << 20};

/* the event parsed again from its own encoding */
static void roundtrip(const drape_ws_limits *lim, const drape_ws_event *ev)
{
    static const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
    drape_buf b = {0};
    FUZZ_CHECK(!drape_ws_encode(&b, ev->opcode, ev->data, ev->len, lim->server ? mask : NULL));
    drape_ws_limits one = *lim; /* a reassembled message comes back as one frame */
    one.max_frame = 0;
    drape_ws_parser *p;
    FUZZ_CHECK(!drape_ws_parser_create(&p, &one));
    size_t used;
    int cc;
    drape_ws_event ev2;
    FUZZ_CHECK(drape_ws_parse(p, b.p, b.len, &used, &ev2, &cc) == 1 && used == b.len);
    FUZZ_CHECK(ev2.opcode == ev->opcode && ev2.len == ev->len && (!ev->len || !memcmp(ev2.data, ev->data, ev->len)));
    drape_ws_parser_free(p);
    drape_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 2) return 0;
    drape_ws_limits lim = {data[0] & 1, frame_limits[data[0] >> 1 & 3], message_limits[data[0] >> 3 & 3]};
    uint32_t seed = data[1] * 2654435761u + 1;
    data += 2, len -= 2;

    /* the handshake key a client sends: any short string */
    char key[40], accept[29];
    size_t kl = len < sizeof key - 1 ? len : sizeof key - 1;
    memcpy(key, data, kl);
    key[kl] = 0;
    if (!drape_ws_accept_key(accept, key)) FUZZ_CHECK(strlen(accept) == 28);

    drape_ws_parser *p;
    FUZZ_CHECK(!drape_ws_parser_create(&p, &lim));
    for (size_t off = 0; off < len;) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 16) % 64;
        if (n > len - off) n = len - off;
        const uint8_t *b = data + off;
        off += n;
        for (int calls = 0; n; calls++) {
            FUZZ_CHECK(calls <= 64); /* every event consumes at least its 2 header bytes */
            size_t used = SIZE_MAX;
            int cc = -1;
            drape_ws_event ev;
            int r = drape_ws_parse(p, b, n, &used, &ev, &cc);
            FUZZ_CHECK(used <= n);
            if (r < 0) {
                FUZZ_CHECK(cc == DRAPE_WS_CLOSE_PROTOCOL || cc == DRAPE_WS_CLOSE_BAD_DATA ||
                           cc == DRAPE_WS_CLOSE_TOO_BIG || cc == DRAPE_WS_CLOSE_ERROR);
                goto out;
            }
            if (r == 0) {
                FUZZ_CHECK(used == n);
                break;
            }
            FUZZ_CHECK(r == 1 && used > 0);
            if (ev.opcode == DRAPE_WS_TEXT) FUZZ_CHECK(drape_utf8_valid(ev.data, ev.len));
            if (ev.opcode == DRAPE_WS_TEXT || ev.opcode == DRAPE_WS_BINARY) FUZZ_CHECK(ev.len <= lim.max_message);
            else FUZZ_CHECK(ev.len <= 125);
            if (ev.opcode == DRAPE_WS_CLOSE)
                FUZZ_CHECK(ev.close_code == DRAPE_WS_CLOSE_NO_STATUS || (ev.close_code >= 1000 && ev.close_code < 5000));
            else
                roundtrip(&lim, &ev);
            b += used, n -= used;
        }
    }
out:
    drape_ws_parser_free(p);
    return 0;
}
