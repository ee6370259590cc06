/* RFC 6455 framing: handshake key (own SHA-1 and base64), an incremental
 * parser and the encoder. See ws.h for the contract. */
#include "ws.h"

#include <stdlib.h>
#include <string.h>

#include "../core/status.h"

/* ---- SHA-1 (FIPS 180-4), only for the 60-byte handshake input ---- */

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *blk)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 | (uint32_t)blk[4 * i + 2] << 8 |
               blk[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999u;
        else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1u;
        else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDCu;
        else f = b ^ c ^ d, k = 0xCA62C1D6u;
        uint32_t t = rol32(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol32(b, 30);
        b = a;
        a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void drape_sha1(uint8_t out[20], const void *data, size_t n)
{
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    const uint8_t *p = data;
    size_t left = n;
    for (; left >= 64; left -= 64, p += 64) sha1_block(h, p);
    /* the tail, 0x80, zeros and the 64-bit bit length: one or two blocks */
    uint8_t blk[128] = {0};
    memcpy(blk, p, left);
    blk[left] = 0x80;
    size_t tot = left + 9 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) blk[tot - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha1_block(h, blk);
    if (tot == 128) sha1_block(h, blk + 64);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(h[i] >> (24 - 8 * j));
}

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t drape_base64(char *out, const uint8_t *in, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n) v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n) v |= in[i + 2];
        out[o++] = b64_chars[v >> 18 & 63];
        out[o++] = b64_chars[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64_chars[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64_chars[v & 63] : '=';
    }
    out[o] = 0;
    return o;
}

int drape_ws_accept_key(char out[29], const char *client_key)
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    if (!client_key || strlen(client_key) != 24 || strcmp(client_key + 22, "==")) return DRAPE_EINVAL;
    for (int i = 0; i < 22; i++)
        if (!strchr(b64_chars, client_key[i]) || !client_key[i]) return DRAPE_EINVAL;
    char cat[24 + sizeof guid];
    memcpy(cat, client_key, 24);
    memcpy(cat + 24, guid, sizeof guid);
    uint8_t dig[20];
    drape_sha1(dig, cat, 24 + sizeof guid - 1);
    drape_base64(out, dig, 20);
    return DRAPE_OK;
}

/* ---- UTF-8: a streaming validator, so text can be checked per fragment ---- */

typedef struct {
    int need;        /* continuation bytes still expected */
    uint8_t lo, hi;  /* allowed range of the next one (narrow after E0, ED, F0, F4) */
} utf8_state;

static int utf8_feed(utf8_state *s, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (s->need) {
            if (c < s->lo || c > s->hi) return 0;
            s->need--;
            s->lo = 0x80, s->hi = 0xBF;
            continue;
        }
        if (c < 0x80) continue;
        s->lo = 0x80, s->hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) s->need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            s->need = 2;
            if (c == 0xE0) s->lo = 0xA0;      /* overlong */
            else if (c == 0xED) s->hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            s->need = 3;
            if (c == 0xF0) s->lo = 0x90;      /* overlong */
            else if (c == 0xF4) s->hi = 0x8F; /* > U+10FFFF */
        } else return 0;
    }
    return 1;
}

int drape_utf8_valid(const uint8_t *s, size_t n)
{
    utf8_state st = {0, 0x80, 0xBF};
    return utf8_feed(&st, s, n) && st.need == 0;
}

void drape_utf8_scrub(char *s)
{
    size_t n = strlen(s);
    int utf8 = drape_utf8_valid((const uint8_t *)s, n);
    for (size_t i = 0; i < n; i++)
        if ((!utf8 && (unsigned char)s[i] >= 0x80) || (unsigned char)s[i] < 0x20) s[i] = '?';
}

/* ---- parser ---- */

struct drape_ws_parser {
    drape_ws_limits lim;
    int failed;
    /* the frame being read */
    uint8_t hdr[14];
    size_t hdr_len;     /* bytes of hdr read */
    size_t hdr_need;    /* 2 until the length byte is known */
    int in_payload;
    int fin, opcode;
    uint8_t mask[4];
    int masked;
    uint64_t plen, pgot;
    uint8_t ctrl[125];  /* a control frame's payload (they may sit between fragments) */
    /* the message being reassembled */
    int msg_opcode;     /* 0: none in progress */
    drape_buf msg;
    utf8_state utf8;
    int reset_msg;      /* the last event handed out msg: drop it on the next call */
};

int drape_ws_parser_create(drape_ws_parser **out, const drape_ws_limits *lim)
{
    *out = NULL;
    if (!lim) return DRAPE_EINVAL;
    drape_ws_parser *p = calloc(1, sizeof *p);
    if (!p) return DRAPE_ENOMEM;
    p->lim = *lim;
    /* 0 means "no limit" */
    if (!p->lim.max_frame) p->lim.max_frame = SIZE_MAX;
    if (!p->lim.max_message) p->lim.max_message = SIZE_MAX;
    p->hdr_need = 2;
    *out = p;
    return DRAPE_OK;
}

void drape_ws_parser_free(drape_ws_parser *p)
{
    if (!p) return;
    drape_buf_free(&p->msg);
    free(p);
}

static int fail(drape_ws_parser *p, int *close_code, int code)
{
    p->failed = code;
    *close_code = code;
    return DRAPE_EFORMAT;
}

static int close_code_valid(int c)
{
    return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
}

/* Checks what the first two header bytes say; 0 or the close code. */
static int check_first_bytes(drape_ws_parser *p)
{
    uint8_t b0 = p->hdr[0], b1 = p->hdr[1];
    int op = b0 & 0x0F, fin = b0 >> 7, len7 = b1 & 0x7F;
    if (b0 & 0x70) return DRAPE_WS_CLOSE_PROTOCOL; /* no extension negotiated */
    if ((b1 >> 7) != (p->lim.server ? 1 : 0)) return DRAPE_WS_CLOSE_PROTOCOL;
    if (op >= 0x8) {
        if (op > DRAPE_WS_PONG) return DRAPE_WS_CLOSE_PROTOCOL;
        if (!fin || len7 > 125) return DRAPE_WS_CLOSE_PROTOCOL;
    } else if (op == DRAPE_WS_CONT) {
        if (!p->msg_opcode) return DRAPE_WS_CLOSE_PROTOCOL;
    } else if (op == DRAPE_WS_TEXT || op == DRAPE_WS_BINARY) {
        if (p->msg_opcode) return DRAPE_WS_CLOSE_PROTOCOL;
    } else {
        return DRAPE_WS_CLOSE_PROTOCOL;
    }
    return 0;
}

/* The whole header is in: length, mask, limits. 0 or the close code. */
static int finish_header(drape_ws_parser *p)
{
    uint8_t len7 = p->hdr[1] & 0x7F;
    size_t at = 2;
    uint64_t len = len7;
    if (len7 == 126) {
        len = (uint64_t)p->hdr[2] << 8 | p->hdr[3];
        at = 4;
        if (len < 126) return DRAPE_WS_CLOSE_PROTOCOL; /* not the minimal encoding */
    } else if (len7 == 127) {
        len = 0;
        for (int i = 0; i < 8; i++) len = len << 8 | p->hdr[2 + i];
        at = 10;
        if (len >> 63) return DRAPE_WS_CLOSE_PROTOCOL;
        if (len <= 0xFFFF) return DRAPE_WS_CLOSE_PROTOCOL;
    }
    p->masked = p->hdr[1] >> 7;
    if (p->masked) memcpy(p->mask, p->hdr + at, 4);
    p->fin = p->hdr[0] >> 7;
    p->opcode = p->hdr[0] & 0x0F;
    p->plen = len;
    p->pgot = 0;
    if (p->opcode < 0x8) {
        if (len > p->lim.max_frame) return DRAPE_WS_CLOSE_TOO_BIG;
        size_t have = p->opcode == DRAPE_WS_CONT ? p->msg.len : 0;
        if (len > p->lim.max_message - have) return DRAPE_WS_CLOSE_TOO_BIG;
        if (p->opcode != DRAPE_WS_CONT) {
            p->msg_opcode = p->opcode;
            p->msg.len = 0;
            p->utf8 = (utf8_state){0, 0x80, 0xBF};
        }
        if (drape_buf_reserve(&p->msg, (size_t)len)) return DRAPE_WS_CLOSE_ERROR;
    }
    return 0;
}

/* A frame's payload is complete: 1 with an event, 0 for a non-final
 * fragment, or -close code. */
static int finish_frame(drape_ws_parser *p, drape_ws_event *ev)
{
    memset(ev, 0, sizeof *ev);
    int op = p->opcode;
    p->hdr_len = 0;
    p->hdr_need = 2;
    p->in_payload = 0;
    if (op >= 0x8) {
        ev->opcode = op;
        ev->data = p->ctrl;
        ev->len = (size_t)p->plen;
        if (op == DRAPE_WS_CLOSE) {
            ev->close_code = DRAPE_WS_CLOSE_NO_STATUS;
            if (p->plen == 1) return -DRAPE_WS_CLOSE_PROTOCOL;
            if (p->plen >= 2) {
                int code = p->ctrl[0] << 8 | p->ctrl[1];
                if (!close_code_valid(code)) return -DRAPE_WS_CLOSE_PROTOCOL;
                if (!drape_utf8_valid(p->ctrl + 2, (size_t)p->plen - 2)) return -DRAPE_WS_CLOSE_PROTOCOL;
                ev->close_code = code;
                ev->data = p->ctrl + 2; /* the reason */
                ev->len = (size_t)p->plen - 2;
            }
        }
        return 1;
    }
    if (!p->fin) return 0;
    if (p->msg_opcode == DRAPE_WS_TEXT && p->utf8.need) return -DRAPE_WS_CLOSE_BAD_DATA;
    ev->opcode = p->msg_opcode;
    ev->data = p->msg.p;
    ev->len = p->msg.len;
    p->msg_opcode = 0;
    p->reset_msg = 1;
    return 1;
}

int drape_ws_parse(drape_ws_parser *p, const uint8_t *buf, size_t n, size_t *used, drape_ws_event *ev,
                   int *close_code)
{
    *used = 0;
    *close_code = 0;
    if (p->failed) {
        *close_code = p->failed;
        return DRAPE_EFORMAT;
    }
    if (p->reset_msg) {
        p->msg.len = 0;
        p->reset_msg = 0;
    }
    size_t i = 0;
    for (;;) {
        if (!p->in_payload) {
            while (p->hdr_len < p->hdr_need && i < n) p->hdr[p->hdr_len++] = buf[i++];
            if (p->hdr_len < p->hdr_need) break;
            if (p->hdr_need == 2) {
                int c = check_first_bytes(p);
                if (c) {
                    *used = i;
                    return fail(p, close_code, c);
                }
                uint8_t len7 = p->hdr[1] & 0x7F;
                p->hdr_need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (p->hdr[1] & 0x80 ? 4 : 0);
                if (p->hdr_len < p->hdr_need) continue;
            }
            int c = finish_header(p);
            if (c) {
                *used = i;
                return fail(p, close_code, c);
            }
            p->in_payload = 1;
        }
        /* payload: unmask while copying into the control or message buffer */
        size_t take = (size_t)(p->plen - p->pgot) < n - i ? (size_t)(p->plen - p->pgot) : n - i;
        uint8_t *dst = p->opcode >= 0x8 ? p->ctrl + p->pgot : take ? p->msg.p + p->msg.len : NULL;
        for (size_t k = 0; k < take; k++)
            dst[k] = buf[i + k] ^ (p->masked ? p->mask[(p->pgot + k) & 3] : 0);
        if (p->opcode < 0x8) {
            if (p->msg_opcode == DRAPE_WS_TEXT && !utf8_feed(&p->utf8, dst, take)) {
                *used = i + take;
                return fail(p, close_code, DRAPE_WS_CLOSE_BAD_DATA);
            }
            p->msg.len += take;
        }
        i += take;
        p->pgot += take;
        if (p->pgot < p->plen) break;
        int r = finish_frame(p, ev);
        if (r < 0) {
            *used = i;
            return fail(p, close_code, -r);
        }
        if (r == 1) {
            *used = i;
            return 1;
        }
    }
    *used = i;
    return 0;
}

/* ---- encoder ---- */

int drape_ws_encode(drape_buf *out, int opcode, const void *data, size_t len, const uint8_t *mask)
{
    if (opcode < 0 || opcode > 0xF || (opcode >= 0x8 && len > 125) || (len && !data)) return DRAPE_EINVAL;
    uint8_t h[14];
    size_t hl = 0;
    h[hl++] = (uint8_t)(0x80 | opcode);
    uint8_t mbit = mask ? 0x80 : 0;
    if (len < 126) h[hl++] = (uint8_t)(mbit | len);
    else if (len <= 0xFFFF) {
        h[hl++] = mbit | 126;
        h[hl++] = (uint8_t)(len >> 8);
        h[hl++] = (uint8_t)len;
    } else {
        h[hl++] = mbit | 127;
        for (int i = 7; i >= 0; i--) h[hl++] = (uint8_t)((uint64_t)len >> (8 * i));
    }
    if (mask) {
        memcpy(h + hl, mask, 4);
        hl += 4;
    }
    if (len > SIZE_MAX - hl || drape_buf_reserve(out, hl + len)) return DRAPE_ENOMEM;
    drape_buf_append(out, h, hl);
    uint8_t *dst = out->p + out->len;
    const uint8_t *src = data;
    for (size_t i = 0; i < len; i++) dst[i] = src[i] ^ (mask ? mask[i & 3] : 0);
    out->len += len;
    return DRAPE_OK;
}

int drape_ws_encode_close(drape_buf *out, int code, const char *reason, const uint8_t *mask)
{
    uint8_t pl[125];
    size_t n = 0;
    if (code > 0) {
        if (code > 0xFFFF) return DRAPE_EINVAL;
        pl[0] = (uint8_t)(code >> 8);
        pl[1] = (uint8_t)code;
        n = 2;
        size_t rl = reason ? strlen(reason) : 0;
        if (rl > 123) {
            /* a control frame holds 125 bytes: cut at a character boundary */
            rl = 123;
            while (rl && ((uint8_t)reason[rl] & 0xC0) == 0x80) rl--;
        }
        if (rl) memcpy(pl + 2, reason, rl);
        n += rl;
    }
    return drape_ws_encode(out, DRAPE_WS_CLOSE, pl, n, mask);
}
