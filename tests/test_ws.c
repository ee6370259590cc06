/* RFC 6455 framing: the RFC's own examples, incremental feeding, every
 * protocol violation and its close code, limits, encoder round trips. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/ws.h"
#include "../core/status.h"

typedef struct {
    int opcode, close_code;
    size_t len;
    uint8_t data[70000];
} ev_copy;

typedef struct {
    ev_copy ev[8];
    int n_ev;
    int rc;         /* last parse result: 0, or negative on a violation */
    int close_code; /* on a violation */
} run_result;

/* Feeds bytes in chunks of `chunk` (0: all at once) and collects events. */
static void feed(run_result *r, drape_ws_parser *p, const uint8_t *b, size_t n, size_t chunk)
{
    size_t off = 0;
    r->rc = 0;
    while (off < n) {
        size_t end = chunk ? (off + chunk < n ? off + chunk : n) : n;
        while (off < end) {
            size_t used;
            drape_ws_event ev;
            int cc;
            int rc = drape_ws_parse(p, b + off, end - off, &used, &ev, &cc);
            cr_assert_leq(used, end - off);
            off += used;
            if (rc < 0) {
                r->rc = rc;
                r->close_code = cc;
                return;
            }
            if (rc == 1) {
                cr_assert_lt(r->n_ev, 8);
                ev_copy *c = &r->ev[r->n_ev++];
                c->opcode = ev.opcode;
                c->close_code = ev.close_code;
                c->len = ev.len;
                cr_assert_leq(ev.len, sizeof c->data);
                if (ev.len) memcpy(c->data, ev.data, ev.len);
            } else {
                cr_assert_eq(off, end, "0 means everything was consumed");
            }
        }
    }
}

static run_result *run(int server, const uint8_t *b, size_t n, size_t chunk, size_t max_frame, size_t max_msg)
{
    static run_result r;
    memset(&r, 0, sizeof r);
    drape_ws_parser *p;
    drape_ws_limits lim = {server, max_frame, max_msg};
    cr_assert_eq(drape_ws_parser_create(&p, &lim), 0);
    feed(&r, p, b, n, chunk);
    drape_ws_parser_free(p);
    return &r;
}

static void expect_violation(int server, const uint8_t *b, size_t n, int code, const char *what)
{
    for (size_t chunk = 0; chunk <= 1; chunk++) {
        run_result *r = run(server, b, n, chunk, 1 << 20, 1 << 20);
        cr_assert_lt(r->rc, 0, "%s: should be a violation (chunk %zu)", what, chunk);
        cr_assert_eq(r->close_code, code, "%s: close code %d, want %d", what, r->close_code, code);
    }
}

Test(ws, accept_key_rfc_example)
{
    char out[29];
    cr_assert_eq(drape_ws_accept_key(out, "dGhlIHNhbXBsZSBub25jZQ=="), 0);
    cr_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    cr_assert_eq(drape_ws_accept_key(out, "short"), DRAPE_EINVAL);
    cr_assert_eq(drape_ws_accept_key(out, "dGhlIHNhbXBsZSBub25jZQ="), DRAPE_EINVAL);
    cr_assert_eq(drape_ws_accept_key(out, "dGhlIHNhbXBsZSBub25j*Q=="), DRAPE_EINVAL);
    cr_assert_eq(drape_ws_accept_key(out, NULL), DRAPE_EINVAL);
}

Test(ws, sha1_and_base64_vectors)
{
    uint8_t d[20];
    char hex[41], b64[64];
    const char *in[] = {"", "abc", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"};
    const char *want[] = {"da39a3ee5e6b4b0d3255bfef95601890afd80709", "a9993e364706816aba3e25717850c26c9cd0d89d",
                          "84983e441c3bd26ebaae4aa1f95129e5e54670f1"};
    for (int t = 0; t < 3; t++) {
        drape_sha1(d, in[t], strlen(in[t]));
        for (int i = 0; i < 20; i++) sprintf(hex + 2 * i, "%02x", d[i]);
        cr_assert_str_eq(hex, want[t]);
    }
    /* a million 'a' crosses many blocks */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    drape_sha1(d, a, 1000000);
    free(a);
    for (int i = 0; i < 20; i++) sprintf(hex + 2 * i, "%02x", d[i]);
    cr_assert_str_eq(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    cr_assert_eq(drape_base64(b64, (const uint8_t *)"foob", 4), 8);
    cr_assert_str_eq(b64, "Zm9vYg==");
    drape_base64(b64, (const uint8_t *)"fooba", 5);
    cr_assert_str_eq(b64, "Zm9vYmE=");
    drape_base64(b64, (const uint8_t *)"foobar", 6);
    cr_assert_str_eq(b64, "Zm9vYmFy");
}

static const uint8_t rfc_masked_hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
static const uint8_t rfc_hello[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};

Test(ws, rfc_examples_whole_and_byte_by_byte)
{
    for (size_t chunk = 0; chunk <= 1; chunk++) {
        run_result *r = run(1, rfc_masked_hello, sizeof rfc_masked_hello, chunk, 0, 0);
        cr_assert_eq(r->rc, 0);
        cr_assert_eq(r->n_ev, 1);
        cr_assert_eq(r->ev[0].opcode, DRAPE_WS_TEXT);
        cr_assert_eq(r->ev[0].len, 5);
        cr_assert_eq(memcmp(r->ev[0].data, "Hello", 5), 0);

        r = run(0, rfc_hello, sizeof rfc_hello, chunk, 0, 0);
        cr_assert_eq(r->n_ev, 1);
        cr_assert_eq(memcmp(r->ev[0].data, "Hello", 5), 0);

        /* fragmented unmasked "Hel" + "lo", and an unmasked ping */
        const uint8_t frag[] = {0x01, 0x03, 0x48, 0x65, 0x6c, 0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f,
                                0x80, 0x02, 0x6c, 0x6f};
        r = run(0, frag, sizeof frag, chunk, 0, 0);
        cr_assert_eq(r->rc, 0);
        cr_assert_eq(r->n_ev, 2);
        cr_assert_eq(r->ev[0].opcode, DRAPE_WS_PING);
        cr_assert_eq(memcmp(r->ev[0].data, "Hello", 5), 0);
        cr_assert_eq(r->ev[1].opcode, DRAPE_WS_TEXT);
        cr_assert_eq(r->ev[1].len, 5);
        cr_assert_eq(memcmp(r->ev[1].data, "Hello", 5), 0);

        /* the RFC's masked pong */
        const uint8_t pong[] = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
        r = run(1, pong, sizeof pong, chunk, 0, 0);
        cr_assert_eq(r->n_ev, 1);
        cr_assert_eq(r->ev[0].opcode, DRAPE_WS_PONG);
        cr_assert_eq(memcmp(r->ev[0].data, "Hello", 5), 0);
    }
}

Test(ws, lengths_16_and_64_bit)
{
    static uint8_t b[70000 + 14];
    /* 256 bytes: 0x7E + 16-bit length; 65536 bytes: 0x7F + 64-bit length */
    size_t sizes[] = {126, 256, 65535, 65536, 70000};
    for (int s = 0; s < 5; s++) {
        drape_buf out = {0};
        uint8_t *payload = malloc(sizes[s]);
        for (size_t i = 0; i < sizes[s]; i++) payload[i] = (uint8_t)(i * 7);
        cr_assert_eq(drape_ws_encode(&out, DRAPE_WS_BINARY, payload, sizes[s], NULL), 0);
        if (sizes[s] == 256) cr_assert_eq(memcmp(out.p, (uint8_t[]){0x82, 0x7E, 0x01, 0x00}, 4), 0);
        if (sizes[s] == 65536)
            cr_assert_eq(memcmp(out.p, (uint8_t[]){0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}, 10), 0);
        memcpy(b, out.p, out.len);
        run_result *r = run(0, b, out.len, s == 1 ? 1 : 4093, 0, 0);
        cr_assert_eq(r->n_ev, 1);
        cr_assert_eq(r->ev[0].len, sizes[s]);
        cr_assert_eq(memcmp(r->ev[0].data, payload, sizes[s]), 0);
        free(payload);
        drape_buf_free(&out);
    }
}

/* Builds a client (masked) frame by hand: fin/opcode byte and payload. */
static size_t masked_frame(uint8_t *dst, uint8_t b0, const void *payload, size_t len)
{
    drape_buf out = {0};
    static const uint8_t mask[4] = {0x11, 0x22, 0x33, 0x44};
    cr_assert_eq(drape_ws_encode(&out, 1, payload, len, mask), 0);
    out.p[0] = b0;
    memcpy(dst, out.p, out.len);
    size_t n = out.len;
    drape_buf_free(&out);
    return n;
}

Test(ws, fragments_with_ping_between_masked_byte_by_byte)
{
    uint8_t b[256];
    size_t n = 0;
    n += masked_frame(b + n, 0x01, "frag", 4);      /* text, not FIN */
    n += masked_frame(b + n, 0x89, "p1", 2);        /* ping */
    n += masked_frame(b + n, 0x00, "ment", 4);      /* continuation */
    n += masked_frame(b + n, 0x00, "", 0);          /* empty continuation */
    n += masked_frame(b + n, 0x8A, "", 0);          /* empty pong */
    n += masked_frame(b + n, 0x80, "ed \xc3", 4);   /* final, a 2-byte char split... */
    n += masked_frame(b + n, 0x82, "\x00\x01", 2);  /* binary right after */
    /* ...is an error, since it ends the message mid-character */
    run_result *r = run(1, b, n, 1, 0, 0);
    cr_assert_eq(r->close_code, DRAPE_WS_CLOSE_BAD_DATA);

    n = 0;
    n += masked_frame(b + n, 0x01, "frag", 4);
    n += masked_frame(b + n, 0x89, "p1", 2);
    n += masked_frame(b + n, 0x00, "ment", 4);
    n += masked_frame(b + n, 0x00, "", 0);
    n += masked_frame(b + n, 0x8A, "", 0);
    n += masked_frame(b + n, 0x00, "ed \xc3", 4);   /* a character split across fragments */
    n += masked_frame(b + n, 0x80, "\xa9", 1);
    n += masked_frame(b + n, 0x82, "\x00\x01", 2);
    n += masked_frame(b + n, 0x88, "\x03\xe8" "bye", 5);
    for (size_t chunk = 0; chunk <= 3; chunk++) {
        r = run(1, b, n, chunk, 0, 0);
        cr_assert_eq(r->rc, 0);
        cr_assert_eq(r->n_ev, 5);
        cr_assert_eq(r->ev[0].opcode, DRAPE_WS_PING);
        cr_assert_eq(r->ev[1].opcode, DRAPE_WS_PONG);
        cr_assert_eq(r->ev[1].len, 0);
        cr_assert_eq(r->ev[2].opcode, DRAPE_WS_TEXT);
        cr_assert_eq(r->ev[2].len, 13);
        cr_assert_eq(memcmp(r->ev[2].data, "fragmented \xc3\xa9", 13), 0);
        cr_assert_eq(r->ev[3].opcode, DRAPE_WS_BINARY);
        cr_assert_eq(r->ev[3].len, 2);
        cr_assert_eq(r->ev[4].opcode, DRAPE_WS_CLOSE);
        cr_assert_eq(r->ev[4].close_code, 1000);
        cr_assert_eq(r->ev[4].len, 3);
        cr_assert_eq(memcmp(r->ev[4].data, "bye", 3), 0);
    }
}

Test(ws, close_without_code_reports_1005)
{
    uint8_t b[16];
    size_t n = masked_frame(b, 0x88, "", 0);
    run_result *r = run(1, b, n, 0, 0, 0);
    cr_assert_eq(r->n_ev, 1);
    cr_assert_eq(r->ev[0].close_code, DRAPE_WS_CLOSE_NO_STATUS);
}

Test(ws, violations_map_to_close_codes)
{
    uint8_t b[512];
    size_t n;
    static const uint8_t big[200];

    /* masking by side */
    expect_violation(1, rfc_hello, sizeof rfc_hello, 1002, "unmasked client frame");
    expect_violation(0, rfc_masked_hello, sizeof rfc_masked_hello, 1002, "masked server frame");
    /* reserved bits, unknown opcodes */
    for (uint8_t b0 = 0x90; b0 <= 0xC0; b0 += 0x10) {
        n = masked_frame(b, (uint8_t)(b0 | 1), "x", 1);
        expect_violation(1, b, n, 1002, "reserved bit");
    }
    const uint8_t bad_ops[] = {3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF};
    for (size_t i = 0; i < sizeof bad_ops; i++) {
        n = masked_frame(b, (uint8_t)(0x80 | bad_ops[i]), "x", 1);
        expect_violation(1, b, n, 1002, "unknown opcode");
    }
    /* control frames: ≤ 125 bytes and never fragmented */
    n = masked_frame(b, 0x89, big, 126);
    expect_violation(1, b, n, 1002, "ping of 126 bytes");
    n = masked_frame(b, 0x09, "x", 1);
    expect_violation(1, b, n, 1002, "fragmented ping");
    n = masked_frame(b, 0x08, "", 0);
    expect_violation(1, b, n, 1002, "fragmented close");
    /* continuation without a start; a new data frame mid-message */
    n = masked_frame(b, 0x80, "x", 1);
    expect_violation(1, b, n, 1002, "continuation without start");
    n = masked_frame(b, 0x01, "a", 1);
    n += masked_frame(b + n, 0x81, "b", 1);
    expect_violation(1, b, n, 1002, "text frame mid-message");
    n = masked_frame(b, 0x02, "a", 1);
    n += masked_frame(b + n, 0x82, "b", 1);
    expect_violation(1, b, n, 1002, "binary frame mid-message");
    /* 64-bit length with the top bit set; a non-minimal 16-bit length */
    const uint8_t huge[] = {0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4};
    expect_violation(1, huge, sizeof huge, 1002, "64-bit length with MSB set");
    const uint8_t nonmin[] = {0x82, 0xFE, 0x00, 0x05, 1, 2, 3, 4, 0, 0, 0, 0, 0};
    expect_violation(1, nonmin, sizeof nonmin, 1002, "non-minimal length");
    /* invalid UTF-8 in text */
    const char *bad_utf8[] = {"\xff", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80",
                              "ok\x80", "\xc3"};
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++) {
        n = masked_frame(b, 0x81, bad_utf8[i], strlen(bad_utf8[i]));
        expect_violation(1, b, n, 1007, bad_utf8[i]);
    }
    /* invalid UTF-8 in a first fragment fails before the message ends */
    n = masked_frame(b, 0x01, "\xff", 1);
    expect_violation(1, b, n, 1007, "bad fragment");
    /* close payloads: 1 byte, bad codes, bad reason */
    n = masked_frame(b, 0x88, "\x03", 1);
    expect_violation(1, b, n, 1002, "close of 1 byte");
    const int bad_codes[] = {0, 999, 1004, 1005, 1006, 1015, 1100, 2000, 2999, 5000, 65535};
    for (size_t i = 0; i < sizeof bad_codes / sizeof *bad_codes; i++) {
        uint8_t pl[2] = {(uint8_t)(bad_codes[i] >> 8), (uint8_t)bad_codes[i]};
        n = masked_frame(b, 0x88, pl, 2);
        expect_violation(1, b, n, 1002, "bad close code");
    }
    n = masked_frame(b, 0x88, "\x03\xe8\xff", 3);
    expect_violation(1, b, n, 1002, "close reason not UTF-8");
}

Test(ws, valid_close_codes_accepted)
{
    const int ok[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4999};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        drape_buf out = {0};
        cr_assert_eq(drape_ws_encode_close(&out, ok[i], "r", (const uint8_t *)"abcd"), 0);
        run_result *r = run(1, out.p, out.len, 0, 0, 0);
        cr_assert_eq(r->rc, 0);
        cr_assert_eq(r->ev[0].close_code, ok[i]);
        drape_buf_free(&out);
    }
}

Test(ws, limits_give_1009)
{
    uint8_t b[512];
    static const uint8_t z[300];
    size_t n = masked_frame(b, 0x82, z, 101);
    run_result *r = run(1, b, n, 0, 100, 1000);
    cr_assert_eq(r->close_code, 1009, "frame over max_frame");
    n = masked_frame(b, 0x82, z, 100);
    r = run(1, b, n, 0, 100, 1000);
    cr_assert_eq(r->rc, 0);
    cr_assert_eq(r->n_ev, 1);
    /* three fragments of 100 pass max_frame but not max_message 250 */
    n = masked_frame(b, 0x02, z, 100);
    n += masked_frame(b + n, 0x00, z, 100);
    n += masked_frame(b + n, 0x80, z, 100);
    r = run(1, b, n, 1, 100, 250);
    cr_assert_eq(r->close_code, 1009, "message over max_message");
    r = run(1, b, n, 1, 100, 300);
    cr_assert_eq(r->n_ev, 1);
    cr_assert_eq(r->ev[0].len, 300);
    /* control frames are limited to 125 whatever max_frame says */
    n = masked_frame(b, 0x89, z, 125);
    r = run(1, b, n, 0, 10, 10);
    cr_assert_eq(r->n_ev, 1);
}

Test(ws, parser_stays_failed)
{
    drape_ws_parser *p;
    drape_ws_limits lim = {1, 0, 0};
    cr_assert_eq(drape_ws_parser_create(&p, &lim), 0);
    size_t used;
    drape_ws_event ev;
    int cc;
    cr_assert_lt(drape_ws_parse(p, rfc_hello, sizeof rfc_hello, &used, &ev, &cc), 0);
    cr_assert_eq(cc, 1002);
    cr_assert_lt(drape_ws_parse(p, rfc_masked_hello, sizeof rfc_masked_hello, &used, &ev, &cc), 0);
    cr_assert_eq(cc, 1002);
    drape_ws_parser_free(p);
}

Test(ws, round_trip_both_sides)
{
    uint64_t s = 12345;
    for (int t = 0; t < 50; t++) {
        size_t len = (size_t)(t * t * 31) % 70000;
        uint8_t *pl = malloc(len + 1);
        for (size_t i = 0; i < len; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            pl[i] = (uint8_t)(s >> 56);
        }
        for (int server = 0; server <= 1; server++) {
            drape_buf out = {0};
            uint8_t mask[4] = {(uint8_t)t, 0xA5, 0x5A, (uint8_t)(t * 3)};
            cr_assert_eq(drape_ws_encode(&out, DRAPE_WS_BINARY, pl, len, server ? mask : NULL), 0);
            cr_assert_eq(drape_ws_encode(&out, DRAPE_WS_PING, pl, len < 125 ? len : 125, server ? mask : NULL), 0);
            run_result *r = run(server, out.p, out.len, (size_t)t % 7, 0, 0);
            cr_assert_eq(r->rc, 0);
            cr_assert_eq(r->n_ev, 2);
            cr_assert_eq(r->ev[0].opcode, DRAPE_WS_BINARY);
            cr_assert_eq(r->ev[0].len, len);
            cr_assert(len == 0 || !memcmp(r->ev[0].data, pl, len));
            cr_assert_eq(r->ev[1].opcode, DRAPE_WS_PING);
            drape_buf_free(&out);
        }
        free(pl);
    }
}

Test(ws, encode_rejects_bad_control)
{
    drape_buf out = {0};
    static const uint8_t z[126];
    cr_assert_eq(drape_ws_encode(&out, DRAPE_WS_PING, z, 126, NULL), DRAPE_EINVAL);
    cr_assert_eq(out.len, 0);
    /* long close reasons are cut at a character boundary to fit 125 bytes */
    char reason[200];
    for (int i = 0; i < 199; i += 2) reason[i] = '\xc3', reason[i + 1] = '\xa9';
    reason[198] = 0;
    cr_assert_eq(drape_ws_encode_close(&out, 1000, reason, NULL), 0);
    run_result *r = run(0, out.p, out.len, 0, 0, 0);
    cr_assert_eq(r->rc, 0);
    cr_assert_eq(r->n_ev, 1);
    cr_assert_eq(r->ev[0].opcode, DRAPE_WS_CLOSE);
    cr_assert_eq(r->ev[0].close_code, 1000);
    /* 61 two-byte characters: 122 bytes, the most whole ones in 123 */
    cr_assert_eq(r->ev[0].len, 122);
    cr_assert(drape_utf8_valid(r->ev[0].data, r->ev[0].len));
    drape_buf_free(&out);
}

Test(ws, utf8_validator)
{
    cr_assert(drape_utf8_valid((const uint8_t *)"", 0));
    cr_assert(drape_utf8_valid((const uint8_t *)"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", 20));
    cr_assert(drape_utf8_valid((const uint8_t *)"\xed\x9f\xbf", 3)); /* U+D7FF */
    cr_assert(drape_utf8_valid((const uint8_t *)"\xee\x80\x80", 3)); /* U+E000 */
    cr_assert_not(drape_utf8_valid((const uint8_t *)"\xed\xbf\xbf", 3));
    cr_assert_not(drape_utf8_valid((const uint8_t *)"\xe2\x82", 2));
    cr_assert_not(drape_utf8_valid((const uint8_t *)"\xc1\xbf", 2));
    cr_assert_not(drape_utf8_valid((const uint8_t *)"\xf5\x80\x80\x80", 4));
    cr_assert_not(drape_utf8_valid((const uint8_t *)"\xe2\x28\xa1", 3));
}
