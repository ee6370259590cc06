/* Stream messages (see msg.h). One validation path serves both encodings:
 * a `val` is either a jansson node or a msgpack object, and the few
 * accessors below hide which. The encoders likewise go through one small
 * emitter that writes msgpack directly or builds a jansson tree. */
#include "msg.h"

#include <jansson.h>
#include <math.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/status.h"
#include "pack.h"
#include "ws.h"

#define SAFE_INT_MAX ((uint64_t)1 << 53) /* integers a JavaScript number holds exactly */

static const char *const mode_names[] = {"neural", "lbs", "physics"};

/* ---- the value view ---- */

typedef struct {
    const json_t *j;          /* JSON, or */
    const msgpack_object *o;  /* msgpack; both NULL: absent */
} val;

enum { V_ABSENT, V_NIL, V_BOOL, V_UINT, V_NEGINT, V_FLOAT, V_STR, V_ARRAY, V_MAP, V_BIN, V_OTHER };

static int vkind(val v)
{
    if (v.j) {
        switch (json_typeof(v.j)) {
        case JSON_OBJECT: return V_MAP;
        case JSON_ARRAY: return V_ARRAY;
        case JSON_STRING: return V_STR;
        case JSON_INTEGER: return json_integer_value(v.j) < 0 ? V_NEGINT : V_UINT;
        case JSON_REAL: return V_FLOAT;
        case JSON_TRUE:
        case JSON_FALSE: return V_BOOL;
        case JSON_NULL: return V_NIL;
        }
        return V_OTHER;
    }
    if (!v.o) return V_ABSENT;
    switch (v.o->type) {
    case MSGPACK_OBJECT_NIL: return V_NIL;
    case MSGPACK_OBJECT_BOOLEAN: return V_BOOL;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return V_UINT;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return V_NEGINT;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return V_FLOAT;
    case MSGPACK_OBJECT_STR: return V_STR;
    case MSGPACK_OBJECT_ARRAY: return V_ARRAY;
    case MSGPACK_OBJECT_MAP: return V_MAP;
    case MSGPACK_OBJECT_BIN: return V_BIN;
    default: return V_OTHER;
    }
}

static const char *kind_name(int k)
{
    static const char *const n[] = {"absent", "null", "a boolean", "an integer", "a negative integer", "a float",
                                    "a string", "an array", "a map", "binary", "an unsupported type"};
    return n[k];
}

static val vget(val m, const char *key)
{
    val r = {0};
    if (m.j) {
        r.j = json_object_get(m.j, key);
        return r;
    }
    size_t kl = strlen(key);
    for (uint32_t i = 0; i < m.o->via.map.size; i++) {
        const msgpack_object *k = &m.o->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl && !memcmp(k->via.str.ptr, key, kl)) {
            r.o = &m.o->via.map.ptr[i].val;
            break;
        }
    }
    return r;
}

static size_t vlen(val a) { return a.j ? json_array_size(a.j) : a.o->via.array.size; }

static val vat(val a, size_t i)
{
    val r = {0};
    if (a.j) r.j = json_array_get(a.j, i);
    else r.o = &a.o->via.array.ptr[i];
    return r;
}

static double vnum(val v)
{
    if (v.j) return json_number_value(v.j);
    if (v.o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (double)v.o->via.u64;
    if (v.o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return (double)v.o->via.i64;
    return v.o->via.f64;
}

static uint64_t vuint(val v) { return v.j ? (uint64_t)json_integer_value(v.j) : v.o->via.u64; }

static int vtrue(val v) { return v.j ? json_is_true(v.j) : v.o->via.boolean; }

static const char *vstr(val v, size_t *n)
{
    if (v.j) {
        *n = json_string_length(v.j);
        return json_string_value(v.j);
    }
    *n = v.o->via.str.size;
    return v.o->via.str.ptr;
}

/* ---- checks that name the field ---- */

typedef struct {
    const char **code;
    drape_errcode *ec;
    char *msg;
    size_t cap;
} errctx;

static int bad(errctx *e, drape_errcode code, int status, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int bad(errctx *e, drape_errcode code, int status, const char *fmt, ...)
{
    if (e->code) *e->code = drape_errcode_wire(code);
    if (e->ec) *e->ec = code;
    if (e->msg && e->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, e->cap, fmt, ap);
        va_end(ap);
    }
    return status;
}

static int want_kind(errctx *e, val v, const char *field, int kind, const char *what)
{
    int k = vkind(v);
    if (k == kind) return DRAPE_OK;
    if (k == V_ABSENT) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "%s: missing (expected %s)", field, what);
    return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "%s: expected %s, got %s", field, what, kind_name(k));
}

/* A non-negative integer below 2^53. */
static int get_uint(errctx *e, val v, const char *field, uint64_t *out)
{
    int k = vkind(v);
    if (k == V_NEGINT) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ERANGE, "%s: must not be negative", field);
    int rc = want_kind(e, v, field, V_UINT, "a non-negative integer");
    if (rc) return rc;
    uint64_t u = vuint(v);
    if (u >= SAFE_INT_MAX) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ERANGE, "%s: must be below 2^53", field);
    *out = u;
    return DRAPE_OK;
}

/* A string of 1..max bytes, valid UTF-8 without NUL, copied into out[max+1]. */
static int get_str(errctx *e, val v, const char *field, char *out, size_t max)
{
    int rc = want_kind(e, v, field, V_STR, "a string");
    if (rc) return rc;
    size_t n;
    const char *s = vstr(v, &n);
    if (n == 0) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "%s: must not be empty", field);
    if (n > max) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ERANGE, "%s: longer than %zu bytes", field, max);
    if (memchr(s, 0, n) || !drape_utf8_valid((const uint8_t *)s, n))
        return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "%s: not valid UTF-8 text", field);
    memcpy(out, s, n);
    out[n] = 0;
    return DRAPE_OK;
}

/* A finite number (integers accepted) that fits a float. */
static int get_float(errctx *e, val v, const char *field, float *out)
{
    int k = vkind(v);
    if (k != V_UINT && k != V_NEGINT && k != V_FLOAT) {
        if (k == V_ABSENT) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "%s: missing (expected a number)", field);
        return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "%s: expected a number, got %s", field, kind_name(k));
    }
    double d = vnum(v);
    float f = (float)d;
    if (!isfinite(d) || !isfinite(f))
        return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ENONFINITE, "%s: not finite (NaN, Inf or beyond float range)", field);
    *out = f;
    return DRAPE_OK;
}

/* An array of exactly n (or, with at_most, up to n) numbers. */
static int get_floats(errctx *e, val v, const char *field, float *out, int n, int at_most, int *got)
{
    int rc = want_kind(e, v, field, V_ARRAY, "an array of numbers");
    if (rc) return rc;
    size_t len = vlen(v);
    if (at_most ? len > (size_t)n : len != (size_t)n)
        return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ESHAPE, "%s: expected %s%d numbers, got %zu", field,
                   at_most ? "at most " : "", n, len);
    for (size_t i = 0; i < len; i++) {
        val x = vat(v, i);
        if (get_float(e, x, field, &out[i]) == DRAPE_OK) continue;
        /* the element's name is formatted only for the error: once per
         * number it was most of a msgpack pose's parse (75 snprintf calls) */
        char name[64];
        snprintf(name, sizeof name, "%s[%zu]", field, i);
        return get_float(e, x, name, &out[i]);
    }
    if (got) *got = (int)len;
    return DRAPE_OK;
}

static int get_avatar(errctx *e, val v, drape_avatar_key *a)
{
    memset(a, 0, sizeof *a);
    int k = vkind(v);
    if (k == V_STR) {
        a->is_str = 1;
        return get_str(e, v, "avatar", a->str, DRAPE_MSG_NAME_MAX);
    }
    if (k == V_UINT || k == V_NEGINT) return get_uint(e, v, "avatar", &a->num);
    return want_kind(e, v, "avatar", V_STR, "a non-negative integer or a string");
}

/* name → index in names[n], or an error naming the choices */
static int get_enum(errctx *e, val v, const char *field, const char *const *names, int n, int *out)
{
    char s[DRAPE_MSG_NAME_MAX + 1];
    int rc = get_str(e, v, field, s, DRAPE_MSG_NAME_MAX);
    if (rc) return rc;
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return DRAPE_OK;
        }
    char list[128] = "";
    for (int i = 0; i < n; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "%s: '%s' is not one of %s", field, s, list);
}

static int get_format(errctx *e, val v, int *out)
{
    const char *names[DRAPE_FMT_COUNT];
    for (int i = 0; i < DRAPE_FMT_COUNT; i++) names[i] = drape_format_name(i);
    return get_enum(e, v, "format", names, DRAPE_FMT_COUNT, out);
}

/* ---- decoding either encoding into a root map ---- */

typedef struct {
    json_t *j;
    msgpack_unpacked u;
    int binary;
    val root;
} doc;

/* msgpack-c sizes an array or a map from its header, before it has read
 * the elements: 7 bytes that claim 2^32 map entries make it ask for 256 GB
 * (found by fuzz/fuzz_msg_msgpack.c). Every value takes at least one byte,
 * so a message whose headers claim more values than it has bytes left is
 * truncated: 0 then, before msgpack-c allocates anything. Anything else
 * (1) is msgpack-c's to judge. */
static int msgpack_fits(const uint8_t *p, size_t len)
{
    /* 0xc4..0xdf: bytes of the length field, then payload bytes the type
     * always has (an ext's type byte, a number, a fixext) */
    static const uint8_t len_bytes[28] = {1, 2, 4, 1, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 2, 4, 2, 4};
    static const uint8_t fixed[28] = {0, 0, 0, 1, 1, 1, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 2, 3, 5, 9, 17, 0, 0, 0, 0, 0, 0, 0};
    uint64_t pending = 1; /* values still to come */
    size_t i = 0;
    while (pending--) {
        if (i >= len) return 1;
        uint8_t t = p[i++];
        uint64_t values = 0, bytes = 0;
        if (t >= 0x80 && t <= 0x8f) values = 2 * (uint64_t)(t & 0x0f);
        else if (t >= 0x90 && t <= 0x9f) values = t & 0x0f;
        else if (t >= 0xa0 && t <= 0xbf) bytes = t & 0x1f;
        else if (t >= 0xc4 && t <= 0xdf) {
            int k = t - 0xc4;
            uint64_t n = 0;
            if (len - i < len_bytes[k]) return 1;
            for (int b = 0; b < len_bytes[k]; b++) n = n << 8 | p[i++];
            if (t >= 0xdc) values = t >= 0xde ? 2 * n : n; /* array16/32, map16/32 */
            else bytes = fixed[k] + n;
        } else if (t == 0xc1) {
            return 1; /* never used: msgpack-c calls it malformed */
        }
        if (bytes > len - i) return 1;
        i += (size_t)bytes;
        if (values && (pending > len - i || values > len - i - pending)) return 0;
        pending += values;
    }
    return 1;
}

static int doc_load(doc *d, const uint8_t *data, size_t len, int binary, errctx *e)
{
    memset(d, 0, sizeof *d);
    d->binary = binary;
    if (!data && len) return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EINVAL, "no data");
    if (binary) {
        msgpack_unpacked_init(&d->u);
        if (!msgpack_fits(data, len))
            return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "msgpack: truncated message");
        size_t off = 0;
        int r = msgpack_unpack_next(&d->u, (const char *)data, len, &off);
        if (r == MSGPACK_UNPACK_CONTINUE)
            return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "msgpack: truncated message");
        if (r != MSGPACK_UNPACK_SUCCESS && r != MSGPACK_UNPACK_EXTRA_BYTES)
            return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "msgpack: malformed data");
        if (off != len)
            return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "msgpack: %zu bytes of trailing garbage", len - off);
        d->root.o = &d->u.data;
    } else {
        json_error_t je;
        d->j = json_loadb((const char *)data, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
        if (!d->j) return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "JSON: %s at byte %d", je.text, je.position);
        d->root.j = d->j;
    }
    int k = vkind(d->root);
    if (k != V_MAP) return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "message is %s, not a map", kind_name(k));
    return DRAPE_OK;
}

static void doc_free(doc *d)
{
    if (d->binary) msgpack_unpacked_destroy(&d->u);
    json_decref(d->j);
}

/* ---- client → server ---- */

static int parse_open(drape_msg *m, val r, errctx *e)
{
    int rc;
    val id = vget(r, "identity"), g = vget(r, "garment"), b = vget(r, "betas"), f = vget(r, "format"),
        md = vget(r, "mode");
    int has_id = vkind(id) != V_ABSENT, has_g = vkind(g) != V_ABSENT;
    /* identity and garment may come together: the recipe then re-creates an
     * identity this server does not know (another replica made it) */
    if (!has_id && !has_g) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "identity or garment: missing");
    if (has_id) {
        if ((rc = get_str(e, id, "identity", m->identity, DRAPE_MSG_ID_MAX))) return rc;
        for (const char *c = m->identity; *c; c++)
            if (!strchr("0123456789abcdefABCDEF", *c))
                return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "identity: not a hex string");
        if (!has_g && vkind(b) != V_ABSENT)
            return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "betas: only with garment (an identity has its shape)");
    }
    if (has_g) {
        if ((rc = get_str(e, g, "garment", m->garment, DRAPE_MSG_NAME_MAX))) return rc;
        if (vkind(b) != V_ABSENT) {
            if (vkind(b) == V_ARRAY && vlen(b) > DRAPE_MSG_BETAS_MAX)
                return bad(e, DRAPE_EC_BAD_BETAS, DRAPE_ESHAPE, "betas: at most %d values, got %zu",
                           DRAPE_MSG_BETAS_MAX, vlen(b));
            if ((rc = get_floats(e, b, "betas", m->betas, DRAPE_MSG_BETAS_MAX, 1, &m->n_betas))) return rc;
        }
    }
    if (vkind(f) != V_ABSENT && (rc = get_format(e, f, &m->format))) return rc;
    if (vkind(md) != V_ABSENT && (rc = get_enum(e, md, "mode", mode_names, 3, &m->mode))) return rc;
    return DRAPE_OK;
}

static int parse_client(drape_msg *m, val r, errctx *e)
{
    static const char *const ops[] = {"open", "pose", "close"};
    val opv = vget(r, "op");
    if (vkind(opv) != V_STR) {
        if (vkind(opv) == V_ABSENT) return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "op: missing");
        return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "op: expected a string, got %s", kind_name(vkind(opv)));
    }
    size_t n;
    const char *s = vstr(opv, &n);
    for (int i = 0; i < 3; i++)
        if (n == strlen(ops[i]) && !memcmp(s, ops[i], n)) m->op = DRAPE_OP_OPEN + i;
    if (!m->op) {
        char shown[40];
        snprintf(shown, sizeof shown, "%.*s", (int)(n < 32 ? n : 32), s);
        for (char *c = shown; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7F) *c = '?';
        return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "op: unknown '%s' (expected open, pose or close)", shown);
    }
    int rc;
    if ((rc = get_avatar(e, vget(r, "avatar"), &m->avatar))) return rc;
    m->has_avatar = 1;
    if (m->op == DRAPE_OP_OPEN) return parse_open(m, r, e);
    if (m->op == DRAPE_OP_POSE) {
        if ((rc = get_uint(e, vget(r, "seq"), "seq", &m->seq))) return rc;
        m->has_seq = 1;
        if ((rc = get_floats(e, vget(r, "pose"), "pose", m->pose, DRAPE_MSG_POSE, 0, NULL))) return rc;
        val t = vget(r, "trans");
        if (vkind(t) != V_ABSENT && (rc = get_floats(e, t, "trans", m->trans, 3, 0, NULL))) return rc;
        val rs = vget(r, "reset");
        if (vkind(rs) != V_ABSENT && vkind(rs) != V_BOOL)
            return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_EINVAL, "reset: expected true or false, got %s",
                       kind_name(vkind(rs)));
        m->reset = vkind(rs) == V_BOOL && vtrue(rs);
    }
    return DRAPE_OK;
}

int drape_msg_parse(drape_msg *m, const uint8_t *data, size_t len, int binary, const char **code, char *msg,
                    size_t msg_cap)
{
    memset(m, 0, sizeof *m);
    m->n_betas = -1;
    m->format = DRAPE_FMT_F32;
    m->mode = DRAPE_MODE_NEURAL;
    errctx e = {code, &m->err, msg, msg_cap};
    if (code) *code = NULL;
    if (msg && msg_cap) msg[0] = 0;
    doc d;
    int rc = doc_load(&d, data, len, binary, &e);
    if (!rc) {
        /* seq first, so that any later error can name it */
        val sq = vget(d.root, "seq");
        if (vkind(sq) == V_UINT && vuint(sq) < SAFE_INT_MAX) m->seq = vuint(sq), m->has_seq = 1;
        errctx quiet = {0};
        if (!get_avatar(&quiet, vget(d.root, "avatar"), &m->avatar)) m->has_avatar = 1;
        rc = parse_client(m, d.root, &e);
    }
    doc_free(&d);
    return rc;
}

/* ---- the emitter ---- */

typedef struct {
    int bin;
    drape_buf *out;
    msgpack_packer pk;
    json_t *root, *stack[4];
    int depth;
    const char *key;
    int err;
} emitter;

static int buf_write(void *data, const char *p, size_t n) { return drape_buf_append(data, p, n) ? -1 : 0; }

static void em_init(emitter *e, drape_buf *out, int bin)
{
    memset(e, 0, sizeof *e);
    e->bin = bin;
    e->out = out;
    if (bin) msgpack_packer_init(&e->pk, out, buf_write);
}

static void em_put(emitter *e, json_t *v)
{
    if (!v) {
        e->err = 1;
        return;
    }
    if (!e->depth) {
        json_decref(e->root);
        e->root = v;
    } else if (json_is_array(e->stack[e->depth - 1])) {
        if (json_array_append_new(e->stack[e->depth - 1], v)) e->err = 1;
    } else if (json_object_set_new(e->stack[e->depth - 1], e->key, v)) {
        e->err = 1;
    }
}

static void em_open(emitter *e, int n, int is_array)
{
    if (e->bin) {
        if (is_array ? msgpack_pack_array(&e->pk, (size_t)n) : msgpack_pack_map(&e->pk, (size_t)n)) e->err = 1;
        return;
    }
    json_t *c = is_array ? json_array() : json_object();
    em_put(e, c);
    if (c && !e->err && e->depth < 4) e->stack[e->depth++] = c;
    else e->err = 1;
}

static void em_close(emitter *e)
{
    if (!e->bin && e->depth) e->depth--;
}

static void em_key(emitter *e, const char *k)
{
    if (e->bin) {
        size_t n = strlen(k);
        if (msgpack_pack_str(&e->pk, n) || msgpack_pack_str_body(&e->pk, k, n)) e->err = 1;
    } else {
        e->key = k;
    }
}

static void em_str(emitter *e, const char *s)
{
    size_t n = strlen(s);
    if (e->bin) {
        if (msgpack_pack_str(&e->pk, n) || msgpack_pack_str_body(&e->pk, s, n)) e->err = 1;
    } else {
        em_put(e, json_stringn(s, n)); /* NULL (an error) when s is not UTF-8 */
    }
}

static void em_uint(emitter *e, uint64_t u)
{
    if (e->bin) {
        if (msgpack_pack_uint64(&e->pk, u)) e->err = 1;
    } else if (u > (uint64_t)INT64_MAX) {
        e->err = 1;
    } else {
        em_put(e, json_integer((json_int_t)u));
    }
}

static void em_float(emitter *e, float f)
{
    if (e->bin) {
        if (msgpack_pack_float(&e->pk, f)) e->err = 1;
    } else {
        em_put(e, json_real(f)); /* NULL for NaN/Inf: JSON cannot carry them */
    }
}

static void em_floats(emitter *e, const float *f, int n)
{
    em_open(e, n, 1);
    for (int i = 0; i < n; i++) em_float(e, f[i]);
    em_close(e);
}

static void em_avatar(emitter *e, const drape_avatar_key *a)
{
    em_key(e, "avatar");
    if (a->is_str) em_str(e, a->str);
    else em_uint(e, a->num);
}

/* Vertex data: a bin in msgpack; in JSON an array of floats (f32), of the
 * uint16 values (f16, q16) or of the bytes (meshopt). */
static void em_data(emitter *e, int fmt, const uint8_t *d, size_t len)
{
    if (e->bin) {
        if (msgpack_pack_bin(&e->pk, len) || msgpack_pack_bin_body(&e->pk, d, len)) e->err = 1;
        return;
    }
    size_t w = fmt == DRAPE_FMT_F32 ? 4 : fmt == DRAPE_FMT_MESHOPT ? 1 : 2;
    if (len % w) {
        e->err = 1;
        return;
    }
    json_t *a = json_array();
    for (size_t i = 0; a && i < len; i += w) {
        json_t *v;
        if (w == 4) {
            uint32_t u = (uint32_t)d[i] | (uint32_t)d[i + 1] << 8 | (uint32_t)d[i + 2] << 16 | (uint32_t)d[i + 3] << 24;
            float f;
            memcpy(&f, &u, 4);
            v = json_real(f);
        } else {
            v = json_integer(w == 2 ? (d[i] | d[i + 1] << 8) : d[i]);
        }
        if (!v || json_array_append_new(a, v)) {
            json_decref(v);
            json_decref(a);
            a = NULL;
        }
    }
    em_put(e, a);
}

/* Writes the JSON tree (compact; 9 digits round-trip a float) and reports. */
static int em_finish(emitter *e, size_t start)
{
    if (!e->bin && !e->err) {
        size_t n = json_dumpb(e->root, NULL, 0, JSON_COMPACT | JSON_REAL_PRECISION(9));
        if (!n || drape_buf_reserve(e->out, n)) e->err = 1;
        else e->out->len += json_dumpb(e->root, (char *)e->out->p + e->out->len, n, JSON_COMPACT | JSON_REAL_PRECISION(9));
    }
    json_decref(e->root);
    if (e->err) {
        e->out->len = start; /* leave out as it was */
        return DRAPE_EINVAL;
    }
    return DRAPE_OK;
}

static int valid_avatar(const drape_avatar_key *a)
{
    if (!a) return 0;
    if (!a->is_str) return a->num < SAFE_INT_MAX;
    size_t n = strnlen(a->str, sizeof a->str);
    return n > 0 && n <= DRAPE_MSG_NAME_MAX && drape_utf8_valid((const uint8_t *)a->str, n);
}

/* the opening of every message: {op, avatar?, then n_more fields */
static void em_begin(emitter *e, const char *op, const drape_avatar_key *avatar, int n_more)
{
    em_open(e, 1 + (avatar ? 1 : 0) + n_more, 0);
    em_key(e, "op");
    em_str(e, op);
    if (avatar) em_avatar(e, avatar);
}

/* ---- server → client encoders ---- */

int drape_msg_opened(drape_buf *out, int binary, const drape_avatar_key *avatar, const char *identity,
                     const char *garment, int vertices, int format, int mode)
{
    if (!valid_avatar(avatar) || !identity || !garment || vertices < 0 || format < 0 || format >= DRAPE_FMT_COUNT ||
        mode < 0 || mode > DRAPE_MODE_PHYSICS)
        return DRAPE_EINVAL;
    emitter e;
    size_t start = out->len;
    em_init(&e, out, binary);
    em_begin(&e, "opened", avatar, 5);
    em_key(&e, "identity"), em_str(&e, identity);
    em_key(&e, "garment"), em_str(&e, garment);
    em_key(&e, "vertices"), em_uint(&e, (uint64_t)vertices);
    em_key(&e, "format"), em_str(&e, drape_format_name(format));
    em_key(&e, "mode"), em_str(&e, mode_names[mode]);
    em_close(&e);
    return em_finish(&e, start);
}

int drape_msg_frame(drape_buf *out, int binary, const drape_avatar_key *avatar, uint64_t seq, int format,
                    int count, const float bbox[6], const uint8_t *data, size_t len, const drape_timing *t,
                    uint64_t dropped)
{
    if (!valid_avatar(avatar) || format < 0 || format >= DRAPE_FMT_COUNT || count < 0 || !bbox || (len && !data))
        return DRAPE_EINVAL;
    drape_timing zero = {0, 0, 0};
    if (!t) t = &zero;
    emitter e;
    size_t start = out->len;
    em_init(&e, out, binary);
    em_begin(&e, "frame", avatar, 7);
    em_key(&e, "seq"), em_uint(&e, seq);
    em_key(&e, "format"), em_str(&e, drape_format_name(format));
    em_key(&e, "count"), em_uint(&e, (uint64_t)count);
    em_key(&e, "bbox"), em_floats(&e, bbox, 6);
    em_key(&e, "data"), em_data(&e, format, data, len);
    em_key(&e, "timing");
    em_open(&e, 3, 0);
    em_key(&e, "queue"), em_uint(&e, t->queue_us);
    em_key(&e, "compute"), em_uint(&e, t->compute_us);
    em_key(&e, "pack"), em_uint(&e, t->pack_us);
    em_close(&e);
    em_key(&e, "dropped"), em_uint(&e, dropped);
    em_close(&e);
    return em_finish(&e, start);
}

int drape_msg_error(drape_buf *out, int binary, const char *code, const char *message,
                    const drape_avatar_key *avatar, int has_seq, uint64_t seq)
{
    if (!code || !message || (avatar && !valid_avatar(avatar))) return DRAPE_EINVAL;
    /* a message built from bad input may hold invalid UTF-8: JSON must not */
    char safe[512];
    size_t n = strnlen(message, sizeof safe - 1);
    memcpy(safe, message, n);
    safe[n] = 0;
    drape_utf8_scrub(safe);
    emitter e;
    size_t start = out->len;
    em_init(&e, out, binary);
    em_begin(&e, "error", avatar, 2 + (has_seq ? 1 : 0));
    em_key(&e, "code"), em_str(&e, code);
    em_key(&e, "message"), em_str(&e, safe);
    if (has_seq) em_key(&e, "seq"), em_uint(&e, seq);
    em_close(&e);
    return em_finish(&e, start);
}

/* opened/closed/close: {op, avatar} */
static int avatar_only(drape_buf *out, int binary, const char *op, const drape_avatar_key *avatar)
{
    if (!valid_avatar(avatar)) return DRAPE_EINVAL;
    emitter e;
    size_t start = out->len;
    em_init(&e, out, binary);
    em_begin(&e, op, avatar, 0);
    em_close(&e);
    return em_finish(&e, start);
}

int drape_msg_closed(drape_buf *out, int binary, const drape_avatar_key *avatar)
{
    return avatar_only(out, binary, "closed", avatar);
}

/* ---- client → server encoders ---- */

int drape_msg_encode_open(drape_buf *out, int binary, const drape_avatar_key *avatar, const char *identity,
                          const char *garment, const float *betas, int n_betas, int format, int mode)
{
    int has_id = identity && *identity, has_g = garment && *garment;
    /* identity, garment (+ betas), or both: the recipe beside an id re-creates
     * it on a replica that does not know it (protocol.md) */
    if (!valid_avatar(avatar) || (!has_id && !has_g) || n_betas > DRAPE_MSG_BETAS_MAX || (n_betas > 0 && !betas) ||
        (n_betas > 0 && !has_g) || format < 0 || format >= DRAPE_FMT_COUNT || mode < 0 || mode > DRAPE_MODE_PHYSICS)
        return DRAPE_EINVAL;
    int with_betas = n_betas >= 0 && has_g;
    emitter e;
    size_t start = out->len;
    em_init(&e, out, binary);
    em_begin(&e, "open", avatar, 2 + has_id + has_g + with_betas);
    if (has_id) em_key(&e, "identity"), em_str(&e, identity);
    if (has_g) em_key(&e, "garment"), em_str(&e, garment);
    if (with_betas) em_key(&e, "betas"), em_floats(&e, betas, n_betas);
    em_key(&e, "format"), em_str(&e, drape_format_name(format));
    em_key(&e, "mode"), em_str(&e, mode_names[mode]);
    em_close(&e);
    return em_finish(&e, start);
}

int drape_msg_encode_pose(drape_buf *out, int binary, const drape_avatar_key *avatar, uint64_t seq,
                          const float pose[72], const float trans[3])
{
    if (!valid_avatar(avatar) || !pose || seq >= SAFE_INT_MAX) return DRAPE_EINVAL;
    emitter e;
    size_t start = out->len;
    em_init(&e, out, binary);
    em_begin(&e, "pose", avatar, 2 + (trans ? 1 : 0));
    em_key(&e, "seq"), em_uint(&e, seq);
    em_key(&e, "pose"), em_floats(&e, pose, DRAPE_MSG_POSE);
    if (trans) em_key(&e, "trans"), em_floats(&e, trans, 3);
    em_close(&e);
    return em_finish(&e, start);
}

int drape_msg_encode_close(drape_buf *out, int binary, const drape_avatar_key *avatar)
{
    return avatar_only(out, binary, "close", avatar);
}

/* ---- server → client parsing ---- */

static int copy_opt_str(errctx *e, val r, const char *field, char *out, size_t max)
{
    val v = vget(r, field);
    if (vkind(v) == V_ABSENT) return DRAPE_OK;
    return get_str(e, v, field, out, max);
}

/* JSON frame data back to the bytes the msgpack bin would hold */
static int json_data(drape_server_msg *m, val d, errctx *e)
{
    int rc = want_kind(e, d, "data", V_ARRAY, "an array");
    if (rc) return rc;
    size_t n = vlen(d), w = m->format == DRAPE_FMT_F32 ? 4 : m->format == DRAPE_FMT_MESHOPT ? 1 : 2;
    m->data = malloc(n * w + 1);
    if (!m->data) return DRAPE_ENOMEM;
    m->len = n * w;
    for (size_t i = 0; i < n; i++) {
        val x = vat(d, i);
        uint8_t *p = m->data + i * w;
        if (w == 4) {
            float f;
            if ((rc = get_float(e, x, "data[]", &f))) return rc;
            uint32_t u;
            memcpy(&u, &f, 4);
            p[0] = (uint8_t)u, p[1] = (uint8_t)(u >> 8), p[2] = (uint8_t)(u >> 16), p[3] = (uint8_t)(u >> 24);
        } else {
            uint64_t u;
            if ((rc = get_uint(e, x, "data[]", &u))) return rc;
            if (u >= (w == 2 ? 65536u : 256u)) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ERANGE, "data[%zu]: out of range", i);
            p[0] = (uint8_t)u;
            if (w == 2) p[1] = (uint8_t)(u >> 8);
        }
    }
    return DRAPE_OK;
}

static int parse_frame(drape_server_msg *m, val r, errctx *e)
{
    int rc;
    uint64_t u;
    if ((rc = get_uint(e, vget(r, "seq"), "seq", &m->seq))) return rc;
    m->has_seq = 1;
    if ((rc = get_format(e, vget(r, "format"), &m->format))) return rc;
    if ((rc = get_uint(e, vget(r, "count"), "count", &u))) return rc;
    if (u > INT32_MAX) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ERANGE, "count: too large");
    m->count = (int)u;
    if ((rc = get_floats(e, vget(r, "bbox"), "bbox", m->bbox, 6, 0, NULL))) return rc;
    val d = vget(r, "data");
    if (vkind(d) == V_BIN) {
        m->len = d.o->via.bin.size;
        m->data = malloc(m->len + 1);
        if (!m->data) return DRAPE_ENOMEM;
        if (m->len) memcpy(m->data, d.o->via.bin.ptr, m->len);
    } else if ((rc = json_data(m, d, e))) {
        return rc;
    }
    val t = vget(r, "timing");
    if (vkind(t) == V_MAP) {
        const char *keys[3] = {"queue", "compute", "pack"};
        uint32_t *dst[3] = {&m->timing.queue_us, &m->timing.compute_us, &m->timing.pack_us};
        for (int i = 0; i < 3; i++) {
            val x = vget(t, keys[i]);
            if (vkind(x) == V_ABSENT) continue;
            if ((rc = get_uint(e, x, keys[i], &u))) return rc;
            *dst[i] = u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
        }
    }
    val dr = vget(r, "dropped");
    if (vkind(dr) != V_ABSENT && (rc = get_uint(e, dr, "dropped", &m->dropped))) return rc;
    return DRAPE_OK;
}

static int parse_server(drape_server_msg *m, val r, errctx *e)
{
    int rc;
    val opv = vget(r, "op");
    if ((rc = get_str(e, opv, "op", m->op, sizeof m->op - 1))) return rc;
    val av = vget(r, "avatar");
    if (vkind(av) != V_ABSENT) {
        if ((rc = get_avatar(e, av, &m->avatar))) return rc;
        m->has_avatar = 1;
    }
    if (!strcmp(m->op, "opened")) {
        if ((rc = copy_opt_str(e, r, "identity", m->identity, DRAPE_MSG_ID_MAX))) return rc;
        if ((rc = copy_opt_str(e, r, "garment", m->garment, DRAPE_MSG_NAME_MAX))) return rc;
        uint64_t u;
        if ((rc = get_uint(e, vget(r, "vertices"), "vertices", &u))) return rc;
        if (u > INT32_MAX) return bad(e, DRAPE_EC_BAD_FIELD, DRAPE_ERANGE, "vertices: too large");
        m->vertices = (int)u;
        if ((rc = get_format(e, vget(r, "format"), &m->format))) return rc;
        val md = vget(r, "mode");
        if (vkind(md) != V_ABSENT && (rc = get_enum(e, md, "mode", mode_names, 3, &m->mode))) return rc;
    } else if (!strcmp(m->op, "frame")) {
        return parse_frame(m, r, e);
    } else if (!strcmp(m->op, "error")) {
        if ((rc = get_str(e, vget(r, "code"), "code", m->code, sizeof m->code - 1))) return rc;
        val msg = vget(r, "message");
        if (vkind(msg) == V_STR) {
            size_t n;
            const char *s = vstr(msg, &n);
            if (n >= sizeof m->message) n = sizeof m->message - 1;
            memcpy(m->message, s, n);
            m->message[n] = 0;
        }
        val sq = vget(r, "seq");
        if (vkind(sq) != V_ABSENT) {
            if ((rc = get_uint(e, sq, "seq", &m->seq))) return rc;
            m->has_seq = 1;
        }
    } else if (strcmp(m->op, "closed")) {
        return bad(e, DRAPE_EC_BAD_MESSAGE, DRAPE_EFORMAT, "op: unknown '%s'", m->op);
    }
    return DRAPE_OK;
}

int drape_server_msg_parse(drape_server_msg *m, const uint8_t *data, size_t len, int binary)
{
    memset(m, 0, sizeof *m);
    char why[256];
    errctx e = {NULL, NULL, why, sizeof why};
    doc d;
    int rc = doc_load(&d, data, len, binary, &e);
    if (!rc) rc = parse_server(m, d.root, &e);
    doc_free(&d);
    if (rc) {
        drape_server_msg_clear(m);
        snprintf(m->message, sizeof m->message, "%s", why);
    }
    return rc;
}

void drape_server_msg_clear(drape_server_msg *m)
{
    free(m->data);
    memset(m, 0, sizeof *m);
}
