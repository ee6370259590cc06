/* Stream messages: both encodings, every error path, encoder round trips. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/msg.h"
#include "../proto/pack.h"
#include "../core/status.h"
#include "util.h"

static int buf_write(void *data, const char *p, size_t n) { return drape_buf_append(data, p, n) ? -1 : 0; }

/* The same document in msgpack: integers stay integers, reals are float64. */
static void to_mp(msgpack_packer *pk, json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        msgpack_pack_map(pk, json_object_size(j));
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            msgpack_pack_str_with_body(pk, k, strlen(k));
            to_mp(pk, v);
        }
        break;
    }
    case JSON_ARRAY:
        msgpack_pack_array(pk, json_array_size(j));
        for (size_t i = 0; i < json_array_size(j); i++) to_mp(pk, json_array_get(j, i));
        break;
    case JSON_STRING: msgpack_pack_str_with_body(pk, json_string_value(j), json_string_length(j)); break;
    case JSON_INTEGER: msgpack_pack_int64(pk, json_integer_value(j)); break;
    case JSON_REAL: msgpack_pack_double(pk, json_real_value(j)); break;
    case JSON_TRUE: msgpack_pack_true(pk); break;
    case JSON_FALSE: msgpack_pack_false(pk); break;
    case JSON_NULL: msgpack_pack_nil(pk); break;
    }
}

static drape_buf mp_of(const char *json)
{
    json_error_t je;
    json_t *j = json_loads(json, JSON_DECODE_ANY, &je);
    cr_assert(j, "test JSON: %s: %s", json, je.text);
    drape_buf b = {0};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &b, buf_write);
    to_mp(&pk, j);
    json_decref(j);
    return b;
}

/* "pose":[0,0,...] with n entries, i-th = i/100 */
static char *pose_json(int n)
{
    static char s[4096];
    size_t o = 0;
    o += (size_t)snprintf(s + o, sizeof s - o, "[");
    for (int i = 0; i < n; i++) o += (size_t)snprintf(s + o, sizeof s - o, "%s%g", i ? "," : "", i / 100.0);
    snprintf(s + o, sizeof s - o, "]");
    return s;
}

static int parse(drape_msg *m, const uint8_t *d, size_t n, int bin, const char **code, char *why)
{
    return drape_msg_parse(m, d, n, bin, code, why, 256);
}

/* Both encodings of one JSON document must fail with code and a reason containing needle. */
static void expect_bad(const char *json, const char *code, const char *needle)
{
    drape_msg m;
    const char *c;
    char why[256];
    int rc = parse(&m, (const uint8_t *)json, strlen(json), 0, &c, why);
    cr_assert_lt(rc, 0, "JSON should fail: %s", json);
    cr_assert_str_eq(c, code, "JSON %s: code %s (%s)", json, c, why);
    cr_assert(strstr(why, needle), "JSON %s: reason '%s' should mention '%s'", json, why, needle);
    drape_buf b = mp_of(json);
    rc = parse(&m, b.p, b.len, 1, &c, why);
    drape_buf_free(&b);
    cr_assert_lt(rc, 0, "msgpack should fail: %s", json);
    cr_assert_str_eq(c, code, "msgpack %s: code %s (%s)", json, c, why);
    cr_assert(strstr(why, needle), "msgpack %s: reason '%s' should mention '%s'", json, why, needle);
}

static void expect_ok(drape_msg *m, const char *json, int bin)
{
    const char *c = NULL;
    char why[256];
    int rc;
    if (bin) {
        drape_buf b = mp_of(json);
        rc = parse(m, b.p, b.len, 1, &c, why);
        drape_buf_free(&b);
    } else {
        rc = parse(m, (const uint8_t *)json, strlen(json), 0, &c, why);
    }
    cr_assert_eq(rc, 0, "%s should parse (%s): %s: %s", bin ? "msgpack" : "JSON", json, c ? c : "", why);
}

Test(msg, parses_open_pose_close_both_encodings)
{
    char doc[4200];
    for (int bin = 0; bin <= 1; bin++) {
        drape_msg m;
        expect_ok(&m, "{\"op\":\"open\",\"avatar\":7,\"garment\":\"skirt\",\"betas\":[0.5,-1,2],\"format\":\"q16\","
                      "\"mode\":\"lbs\",\"extra\":{\"ignored\":true}}", bin);
        cr_assert_eq(m.op, DRAPE_OP_OPEN);
        cr_assert_eq(m.avatar.is_str, 0);
        cr_assert_eq(m.avatar.num, 7);
        cr_assert_str_eq(m.garment, "skirt");
        cr_assert_str_eq(m.identity, "");
        cr_assert_eq(m.n_betas, 3);
        cr_assert_float_eq(m.betas[0], 0.5f, 0);
        cr_assert_float_eq(m.betas[1], -1.0f, 0);
        cr_assert_eq(m.format, DRAPE_FMT_Q16);
        cr_assert_eq(m.mode, DRAPE_MODE_LBS);

        expect_ok(&m, "{\"op\":\"open\",\"avatar\":\"alice\",\"identity\":\"00ff1234abcd\"}", bin);
        cr_assert_eq(m.avatar.is_str, 1);
        cr_assert_str_eq(m.avatar.str, "alice");
        cr_assert_str_eq(m.identity, "00ff1234abcd");
        cr_assert_eq(m.n_betas, -1);
        cr_assert_eq(m.format, DRAPE_FMT_F32);
        cr_assert_eq(m.mode, DRAPE_MODE_NEURAL);

        snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":9007199254740991,\"seq\":42,\"pose\":%s,\"trans\":[1,2,3.5]}",
                 pose_json(72));
        expect_ok(&m, doc, bin);
        cr_assert_eq(m.op, DRAPE_OP_POSE);
        cr_assert_eq(m.avatar.num, 9007199254740991ull);
        cr_assert_eq(m.has_seq, 1);
        cr_assert_eq(m.seq, 42);
        cr_assert_float_eq(m.pose[71], 0.71f, 1e-7);
        cr_assert_float_eq(m.trans[2], 3.5f, 0);

        /* integers where floats go; trans optional */
        snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":0,\"seq\":0,\"pose\":[%s0]}",
                 "1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,"
                 "1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,");
        expect_ok(&m, doc, bin);
        cr_assert_float_eq(m.pose[0], 1.0f, 0);
        cr_assert_float_eq(m.trans[0], 0.0f, 0);

        expect_ok(&m, "{\"avatar\":\"b\",\"op\":\"close\"}", bin);
        cr_assert_eq(m.op, DRAPE_OP_CLOSE);
        cr_assert_str_eq(m.avatar.str, "b");
    }
}

Test(msg, bad_messages)
{
    expect_bad("[1,2]", DRAPE_ERR_BAD_MESSAGE, "not a map");
    expect_bad("\"open\"", DRAPE_ERR_BAD_MESSAGE, "not a map");
    expect_bad("{\"avatar\":1}", DRAPE_ERR_BAD_MESSAGE, "op: missing");
    expect_bad("{\"op\":3,\"avatar\":1}", DRAPE_ERR_BAD_MESSAGE, "op: expected a string");
    expect_bad("{\"op\":\"dance\",\"avatar\":1}", DRAPE_ERR_BAD_MESSAGE, "op: unknown 'dance'");
}

Test(msg, bad_fields_name_the_field)
{
    char doc[4200];
    expect_bad("{\"op\":\"close\"}", DRAPE_ERR_BAD_FIELD, "avatar: missing");
    expect_bad("{\"op\":\"close\",\"avatar\":-1}", DRAPE_ERR_BAD_FIELD, "avatar: must not be negative");
    expect_bad("{\"op\":\"close\",\"avatar\":9007199254740992}", DRAPE_ERR_BAD_FIELD, "avatar: must be below 2^53");
    expect_bad("{\"op\":\"close\",\"avatar\":1.5}", DRAPE_ERR_BAD_FIELD, "avatar: expected");
    expect_bad("{\"op\":\"close\",\"avatar\":\"\"}", DRAPE_ERR_BAD_FIELD, "avatar: must not be empty");
    expect_bad("{\"op\":\"close\",\"avatar\":[1]}", DRAPE_ERR_BAD_FIELD, "avatar: expected");
    expect_bad("{\"op\":\"close\",\"avatar\":\"01234567890123456789012345678901234567890123456789012345678901234\"}",
               DRAPE_ERR_BAD_FIELD, "avatar: longer than 64 bytes");
    /* open */
    expect_bad("{\"op\":\"open\",\"avatar\":1}", DRAPE_ERR_BAD_FIELD, "identity or garment: missing");
    {
        /* an identity with its recipe: both kept (the server re-creates an unknown id from it) */
        const char *both = "{\"op\":\"open\",\"avatar\":1,\"identity\":\"ab\",\"garment\":\"s\",\"betas\":[1,2]}";
        drape_msg m;
        const char *code = NULL;
        char why[256];
        cr_assert_eq(drape_msg_parse(&m, (const uint8_t *)both, strlen(both), 0, &code, why, sizeof why), 0, "%s", why);
        cr_assert_str_eq(m.identity, "ab");
        cr_assert_str_eq(m.garment, "s");
        cr_assert_eq(m.n_betas, 2);
    }
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"garment\":5}", DRAPE_ERR_BAD_FIELD, "garment: expected a string");
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"identity\":\"xyz\"}", DRAPE_ERR_BAD_FIELD, "identity: not a hex");
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"identity\":\"ab\",\"betas\":[1]}", DRAPE_ERR_BAD_FIELD,
               "betas: only with garment");
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"garment\":\"s\",\"betas\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
               DRAPE_ERR_BAD_BETAS, "betas: at most 16");
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"garment\":\"s\",\"betas\":[0,\"x\"]}", DRAPE_ERR_BAD_FIELD,
               "betas[1]: expected a number");
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"garment\":\"s\",\"betas\":1}", DRAPE_ERR_BAD_FIELD,
               "betas: expected an array");
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"garment\":\"s\",\"format\":\"png\"}", DRAPE_ERR_BAD_FIELD,
               "format: 'png' is not one of f32, f16, q16, meshopt");
    expect_bad("{\"op\":\"open\",\"avatar\":1,\"garment\":\"s\",\"mode\":\"magic\"}", DRAPE_ERR_BAD_FIELD,
               "mode: 'magic' is not one of neural, lbs, physics");
    /* pose */
    snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":1,\"pose\":%s}", pose_json(72));
    expect_bad(doc, DRAPE_ERR_BAD_FIELD, "seq: missing");
    snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":1,\"seq\":-3,\"pose\":%s}", pose_json(72));
    expect_bad(doc, DRAPE_ERR_BAD_FIELD, "seq: must not be negative");
    snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":1,\"seq\":1,\"pose\":%s}", pose_json(71));
    expect_bad(doc, DRAPE_ERR_BAD_FIELD, "pose: expected 72 numbers, got 71");
    snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":1,\"seq\":1,\"pose\":%s}", pose_json(73));
    expect_bad(doc, DRAPE_ERR_BAD_FIELD, "pose: expected 72 numbers, got 73");
    expect_bad("{\"op\":\"pose\",\"avatar\":1,\"seq\":1}", DRAPE_ERR_BAD_FIELD, "pose: missing");
    snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":1,\"seq\":1,\"pose\":%s,\"trans\":[1,2]}", pose_json(72));
    expect_bad(doc, DRAPE_ERR_BAD_FIELD, "trans: expected 3 numbers, got 2");
    snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":1,\"seq\":1,\"pose\":%s,\"trans\":[1,2,null]}", pose_json(72));
    expect_bad(doc, DRAPE_ERR_BAD_FIELD, "trans[2]: expected a number, got null");
    snprintf(doc, sizeof doc, "{\"op\":\"pose\",\"avatar\":1,\"seq\":1,\"pose\":%s,\"trans\":[1,2,1e300]}", pose_json(72));
    expect_bad(doc, DRAPE_ERR_BAD_FIELD, "trans[2]: not finite");
}

Test(msg, errors_keep_avatar_and_seq)
{
    drape_msg m;
    const char *c;
    char why[256];
    const char *j = "{\"op\":\"pose\",\"avatar\":\"zed\",\"seq\":5,\"pose\":[1]}";
    cr_assert_lt(parse(&m, (const uint8_t *)j, strlen(j), 0, &c, why), 0);
    cr_assert_eq(m.has_avatar, 1);
    cr_assert_str_eq(m.avatar.str, "zed");
    cr_assert_eq(m.has_seq, 1);
    cr_assert_eq(m.seq, 5);
    j = "{\"op\":\"bogus\",\"avatar\":3}";
    cr_assert_lt(parse(&m, (const uint8_t *)j, strlen(j), 0, &c, why), 0);
    cr_assert_eq(m.has_avatar, 1);
    cr_assert_eq(m.avatar.num, 3);
    cr_assert_eq(m.has_seq, 0);
}

Test(msg, json_specific_errors)
{
    drape_msg m;
    const char *c;
    char why[256];
    const char *cases[] = {"{\"op\":\"close\",\"avatar\":1} x", "{\"op\":\"close\",", "", "{\"op\":\"close\",\"avatar\":NaN}",
                           "{\"op\":\"close\",\"op\":\"open\",\"avatar\":1}", "{\"op\":\"close\",\"avatar\":\"\xff\"}"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_lt(parse(&m, (const uint8_t *)cases[i], strlen(cases[i]), 0, &c, why), 0, "%s", cases[i]);
        cr_assert_str_eq(c, DRAPE_ERR_BAD_MESSAGE, "%s", cases[i]);
        cr_assert(strstr(why, "JSON"), "%s", why);
    }
}

Test(msg, msgpack_specific_errors)
{
    drape_msg m;
    const char *c;
    char why[256];
    drape_buf b = mp_of("{\"op\":\"close\",\"avatar\":1}");
    /* trailing garbage, truncation, garbage */
    drape_buf_append(&b, "\xc0", 1);
    cr_assert_lt(parse(&m, b.p, b.len, 1, &c, why), 0);
    cr_assert(strstr(why, "trailing"), "%s", why);
    cr_assert_lt(parse(&m, b.p, b.len - 3, 1, &c, why), 0);
    cr_assert(strstr(why, "truncated"), "%s", why);
    cr_assert_lt(parse(&m, (const uint8_t *)"\xc1", 1, 1, &c, why), 0);
    cr_assert(strstr(why, "malformed"), "%s", why);
    cr_assert_str_eq(c, DRAPE_ERR_BAD_MESSAGE);
    cr_assert_lt(parse(&m, b.p, 0, 1, &c, why), 0);
    drape_buf_free(&b);
    /* headers that claim more values than the bytes that follow are refused
     * as truncated before msgpack-c sizes them (fuzz_msg_msgpack: 7 bytes
     * made it ask for 256 GB); nested and in the middle of a message too */
    static const struct { const char *p; size_t n; } claims[] = {
        {"\xdf\xdf\xdf\xdf\xdf\xdf\xc1", 7},                  /* map32, 0xdfdfdfdf entries */
        {"\xdd\x04\x00\x00\x00", 5},                          /* array32 of 2^26 */
        {"\x82\xa2op\xa4pose\xa4pose\xdc\xff\xff\x00", 18},      /* pose: array16 of 65535 */
        {"\x91\x91\x91\xde\x10\x00", 6},                       /* deep map16 of 4096 */
    };
    for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        long peak = tu_vm_peak_kb();
        cr_assert_lt(parse(&m, (const uint8_t *)claims[i].p, claims[i].n, 1, &c, why), 0);
        cr_assert_lt(tu_vm_peak_kb() - peak, 64 << 10, "claim %zu: the address space grew by %ld MB", i,
                     (tu_vm_peak_kb() - peak) >> 10);
        cr_assert_str_eq(why, "msgpack: truncated message", "claim %zu: %s", i, why);
        cr_assert_str_eq(c, DRAPE_ERR_BAD_MESSAGE);
        drape_server_msg sm;
        cr_assert_lt(drape_server_msg_parse(&sm, (const uint8_t *)claims[i].p, claims[i].n, 1), 0);
        cr_assert_str_eq(sm.message, "msgpack: truncated message", "claim %zu: %s", i, sm.message);
    }

    /* NaN and Inf floats, which msgpack can carry */
    float pose[72] = {0};
    drape_avatar_key a = {0, 4, ""};
    for (int t = 0; t < 3; t++) {
        pose[10] = t == 0 ? NAN : t == 1 ? INFINITY : -INFINITY;
        drape_buf e = {0};
        cr_assert_eq(drape_msg_encode_pose(&e, 1, &a, 1, pose, NULL), 0);
        cr_assert_lt(parse(&m, e.p, e.len, 1, &c, why), 0);
        cr_assert_str_eq(c, DRAPE_ERR_BAD_FIELD);
        cr_assert(strstr(why, "pose[10]: not finite"), "%s", why);
        /* JSON cannot carry them: the encoder refuses and leaves the buffer as it was */
        size_t len = e.len;
        uint8_t *was = malloc(len);
        memcpy(was, e.p, len);
        cr_assert_eq(drape_msg_encode_pose(&e, 0, &a, 1, pose, NULL), DRAPE_EINVAL);
        cr_assert_eq(e.len, len, "the refused encode left %zu bytes, not %zu", e.len, len);
        cr_assert_eq(memcmp(e.p, was, len), 0, "the refused encode changed the bytes before it");
        free(was);
        drape_buf_free(&e);
    }

    /* a bin where a string goes; invalid UTF-8 in a string; a non-string key is ignored */
    drape_buf x = {0};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &x, buf_write);
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "op", 2);
    msgpack_pack_str_with_body(&pk, "close", 5);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_str_with_body(&pk, "avatar", 6);
    msgpack_pack_bin_with_body(&pk, "ab", 2);
    cr_assert_lt(parse(&m, x.p, x.len, 1, &c, why), 0);
    cr_assert(strstr(why, "avatar: expected a non-negative integer or a string, got binary"), "%s", why);
    x.len = 0;
    msgpack_pack_map(&pk, 2);
    msgpack_pack_str_with_body(&pk, "op", 2);
    msgpack_pack_str_with_body(&pk, "close", 5);
    msgpack_pack_str_with_body(&pk, "avatar", 6);
    msgpack_pack_str_with_body(&pk, "a\0b", 3);
    cr_assert_lt(parse(&m, x.p, x.len, 1, &c, why), 0);
    cr_assert(strstr(why, "avatar: not valid UTF-8"), "%s", why);
    drape_buf_free(&x);
}

/* Encodes a server message, parses it back in the same encoding. */
static void reparse(drape_server_msg *s, drape_buf *b, int bin)
{
    int rc = drape_server_msg_parse(s, b->p, b->len, bin);
    cr_assert_eq(rc, 0, "%.*s: %s", bin ? 0 : (int)b->len, (const char *)b->p, s->message);
    b->len = 0;
}

Test(msg, server_messages_round_trip)
{
    drape_avatar_key num = {0, 12, ""}, str = {1, 0, "avatar-é"};
    float xyz[30], back[30];
    for (int i = 0; i < 30; i++) xyz[i] = sinf((float)i) * 0.7f;
    for (int bin = 0; bin <= 1; bin++) {
        drape_buf b = {0};
        drape_server_msg s;
        cr_assert_eq(drape_msg_opened(&b, bin, &str, "abc123", "skirt", 4424, DRAPE_FMT_MESHOPT, DRAPE_MODE_PHYSICS), 0);
        reparse(&s, &b, bin);
        cr_assert_str_eq(s.op, "opened");
        cr_assert(s.has_avatar && s.avatar.is_str);
        cr_assert_str_eq(s.avatar.str, "avatar-é");
        cr_assert_str_eq(s.identity, "abc123");
        cr_assert_str_eq(s.garment, "skirt");
        cr_assert_eq(s.vertices, 4424);
        cr_assert_eq(s.format, DRAPE_FMT_MESHOPT);
        cr_assert_eq(s.mode, DRAPE_MODE_PHYSICS);
        drape_server_msg_clear(&s);

        for (int f = 0; f < DRAPE_FMT_COUNT; f++) {
            drape_buf packed = {0};
            float bbox[6];
            cr_assert_eq(drape_pack(&packed, bbox, f, xyz, 10), 0);
            drape_timing t = {100, 2000, 30};
            cr_assert_eq(drape_msg_frame(&b, bin, &num, 77, f, 10, bbox, packed.p, packed.len, &t, 3), 0);
            reparse(&s, &b, bin);
            cr_assert_str_eq(s.op, "frame");
            cr_assert_eq(s.avatar.num, 12);
            cr_assert_eq(s.seq, 77);
            cr_assert_eq(s.format, f);
            cr_assert_eq(s.count, 10);
            cr_assert_eq(s.dropped, 3);
            cr_assert_eq(s.timing.queue_us, 100);
            cr_assert_eq(s.timing.compute_us, 2000);
            cr_assert_eq(s.timing.pack_us, 30);
            for (int k = 0; k < 6; k++) cr_assert_eq(s.bbox[k], bbox[k]);
            cr_assert_eq(s.len, packed.len, "%s: %zu vs %zu", drape_format_name(f), s.len, packed.len);
            cr_assert_eq(memcmp(s.data, packed.p, packed.len), 0, "%s data", drape_format_name(f));
            cr_assert_eq(drape_unpack(back, 10, s.format, s.bbox, s.data, s.len), 0);
            drape_server_msg_clear(&s);
            drape_buf_free(&packed);
        }

        cr_assert_eq(drape_msg_error(&b, bin, DRAPE_ERR_NOT_OPEN, "avatar 12 is not open", &num, 1, 9), 0);
        reparse(&s, &b, bin);
        cr_assert_str_eq(s.op, "error");
        cr_assert_str_eq(s.code, "not_open");
        cr_assert_str_eq(s.message, "avatar 12 is not open");
        cr_assert(s.has_seq && s.seq == 9 && s.has_avatar);
        drape_server_msg_clear(&s);
        cr_assert_eq(drape_msg_error(&b, bin, DRAPE_ERR_BAD_MESSAGE, "bad \xff bytes", NULL, 0, 0), 0);
        reparse(&s, &b, bin);
        cr_assert_eq(s.has_avatar, 0);
        cr_assert_eq(s.has_seq, 0);
        cr_assert_str_eq(s.message, "bad ? bytes");
        drape_server_msg_clear(&s);

        cr_assert_eq(drape_msg_closed(&b, bin, &num), 0);
        reparse(&s, &b, bin);
        cr_assert_str_eq(s.op, "closed");
        drape_server_msg_clear(&s);
        drape_buf_free(&b);
    }
}

Test(msg, client_encoders_round_trip)
{
    drape_avatar_key a = {1, 0, "p1"};
    float pose[72], trans[3] = {0.1f, -0.2f, 1e-8f}, betas[2] = {0.25f, -3};
    for (int i = 0; i < 72; i++) pose[i] = (float)i / 7.0f - 3;
    for (int bin = 0; bin <= 1; bin++) {
        drape_buf b = {0};
        drape_msg m;
        const char *c;
        char why[256];
        cr_assert_eq(drape_msg_encode_open(&b, bin, &a, NULL, "skirt", betas, 2, DRAPE_FMT_F16, DRAPE_MODE_NEURAL), 0);
        cr_assert_eq(parse(&m, b.p, b.len, bin, &c, why), 0, "%s", why);
        cr_assert_eq(m.op, DRAPE_OP_OPEN);
        cr_assert_str_eq(m.garment, "skirt");
        cr_assert_eq(m.n_betas, 2);
        cr_assert_eq(m.betas[1], -3.0f);
        cr_assert_eq(m.format, DRAPE_FMT_F16);
        b.len = 0;
        cr_assert_eq(drape_msg_encode_open(&b, bin, &a, "beef", NULL, NULL, -1, DRAPE_FMT_F32, DRAPE_MODE_LBS), 0);
        cr_assert_eq(parse(&m, b.p, b.len, bin, &c, why), 0, "%s", why);
        cr_assert_str_eq(m.identity, "beef");
        cr_assert_eq(m.mode, DRAPE_MODE_LBS);
        b.len = 0;
        /* an id with its recipe, as the protocol allows */
        cr_assert_eq(drape_msg_encode_open(&b, bin, &a, "beef", "skirt", betas, 2, DRAPE_FMT_F32, DRAPE_MODE_NEURAL), 0);
        cr_assert_eq(parse(&m, b.p, b.len, bin, &c, why), 0, "%s", why);
        cr_assert_str_eq(m.identity, "beef");
        cr_assert_str_eq(m.garment, "skirt");
        cr_assert_eq(m.n_betas, 2);
        b.len = 0;
        cr_assert_eq(drape_msg_encode_pose(&b, bin, &a, 123456789, pose, trans), 0);
        cr_assert_eq(parse(&m, b.p, b.len, bin, &c, why), 0, "%s", why);
        cr_assert_eq(m.seq, 123456789);
        for (int i = 0; i < 72; i++) cr_assert_eq(m.pose[i], pose[i], "pose[%d] exact (9 digits round-trip)", i);
        for (int i = 0; i < 3; i++) cr_assert_eq(m.trans[i], trans[i]);
        b.len = 0;
        cr_assert_eq(drape_msg_encode_close(&b, bin, &a), 0);
        cr_assert_eq(parse(&m, b.p, b.len, bin, &c, why), 0, "%s", why);
        cr_assert_eq(m.op, DRAPE_OP_CLOSE);
        /* bad arguments leave the buffer alone */
        b.len = 0;
        cr_assert_eq(drape_msg_encode_open(&b, bin, &a, NULL, NULL, NULL, -1, 0, 0), DRAPE_EINVAL);
        cr_assert_eq(drape_msg_encode_open(&b, bin, &a, "beef", NULL, betas, 2, 0, 0), DRAPE_EINVAL);
        drape_avatar_key bad = {1, 0, ""};
        cr_assert_eq(drape_msg_encode_close(&b, bin, &bad), DRAPE_EINVAL);
        cr_assert_eq(b.len, 0);
        drape_buf_free(&b);
    }
}

Test(msg, server_parse_rejects_garbage)
{
    drape_server_msg s;
    const char *j = "{\"op\":\"frame\",\"avatar\":1,\"seq\":1,\"format\":\"f16\",\"count\":1,\"bbox\":[0,0,0,1,1,1],"
                    "\"data\":[1,2,70000]}";
    cr_assert_lt(drape_server_msg_parse(&s, (const uint8_t *)j, strlen(j), 0), 0);
    cr_assert_str_eq(s.op, "");
    cr_assert(strstr(s.message, "data[2]"), "%s", s.message);
    cr_assert_null(s.data);
    j = "{\"op\":\"wat\"}";
    cr_assert_lt(drape_server_msg_parse(&s, (const uint8_t *)j, strlen(j), 0), 0);
    cr_assert(strstr(s.message, "unknown"), "%s", s.message);
    cr_assert_lt(drape_server_msg_parse(&s, (const uint8_t *)"\x93", 1, 1), 0);
}
