/* safetensors reader/writer: round trip and every kind of bad file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/half.h"
#include "../runtime/safetensors.h"
#include "util.h"

/* Builds an in-memory file from a header string and a data section. */
static unsigned char *make_file(const char *header, const void *data, size_t dlen, size_t *len)
{
    size_t hl = strlen(header);
    *len = 8 + hl + dlen;
    unsigned char *b = malloc(*len);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    if (dlen) memcpy(b + 8 + hl, data, dlen);
    return b;
}

/* Parses the file and expects failure with code and a message containing needle. */
static void expect_bad(const char *header, const void *data, size_t dlen, int code, const char *needle)
{
    size_t len;
    unsigned char *b = make_file(header, data, dlen, &len);
    drape_st *st = NULL;
    drape_error e = {0};
    int rc = drape_st_parse(&st, b, len, &e);
    cr_assert_eq(rc, code, "expected %s, got %d (%s) for %s", drape_strerror(code), rc, e.msg, header);
    cr_assert_null(st);
    cr_assert(strstr(e.msg, needle), "message '%s' should mention '%s'", e.msg, needle);
}

static const float F4[4] = {1, 2, 3, 4};

Test(safetensors, round_trip_all_dtypes)
{
    drape_st_writer *w = drape_st_writer_new();
    int32_t iv[3] = {-1, 0, 7};
    uint16_t hv[2] = {drape_f32_to_f16(0.5f), drape_f32_to_f16(-2.0f)};
    cr_assert_eq(drape_st_writer_add(w, "a", DRAPE_DT_F32, 2, (int64_t[]){2, 2}, F4), 0);
    cr_assert_eq(drape_st_writer_add(w, "b", DRAPE_DT_I32, 1, (int64_t[]){3}, iv), 0);
    cr_assert_eq(drape_st_writer_add(w, "c", DRAPE_DT_F16, 1, (int64_t[]){2}, hv), 0);
    cr_assert_eq(drape_st_writer_add(w, "empty", DRAPE_DT_F32, 2, (int64_t[]){0, 3}, F4), 0);
    cr_assert_eq(drape_st_writer_meta(w, "drape.config", "{\"x\":1}"), 0);
    drape_error e = {0};
    const char *path = tu_tmp("rt.safetensors");
    cr_assert_eq(drape_st_writer_save(w, path, &e), 0, "%s", e.msg);
    drape_st_writer_free(w);

    drape_st *st = NULL;
    cr_assert_eq(drape_st_open(&st, path, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_st_count(st), 4);
    cr_assert_str_eq(drape_st_meta(st, "drape.config"), "{\"x\":1}");
    const drape_tensor *a = drape_st_find(st, "a"), *b = drape_st_find(st, "b"), *c = drape_st_find(st, "c");
    cr_assert(a && b && c);
    cr_assert_eq(a->ndim, 2);
    cr_assert_eq(a->shape[1], 2);
    float fa[4], fc[2];
    int32_t ib[3];
    drape_st_to_f32(fa, a);
    drape_st_to_i32(ib, b);
    drape_st_to_f32(fc, c);
    cr_assert_arr_eq(fa, F4, sizeof F4);
    cr_assert_arr_eq(ib, iv, sizeof iv);
    cr_assert_float_eq(fc[0], 0.5f, 0);
    cr_assert_float_eq(fc[1], -2.0f, 0);
    cr_assert_null(drape_st_find(st, "nope"));
    drape_st_free(st);
}

Test(safetensors, f16_conversion)
{
    float vals[] = {0.0f, 1.0f, -1.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.1f};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        float back = drape_f16_to_f32(drape_f32_to_f16(vals[i]));
        cr_assert(fabsf(back - vals[i]) <= fabsf(vals[i]) * 1e-3f, "%g -> %g", vals[i], back);
    }
    cr_assert(isinf(drape_f16_to_f32(0x7c00)));
    cr_assert(isnan(drape_f16_to_f32(0x7e00)));
}

Test(safetensors, rejects_truncated_file)
{
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", F4, 8, DRAPE_EFORMAT, "truncated");
    /* header length claims more than the file has */
    size_t len;
    unsigned char *b = make_file("{}", NULL, 0, &len);
    b[0] = 200;
    drape_st *st;
    drape_error e = {0};
    cr_assert_eq(drape_st_parse(&st, b, len, &e), DRAPE_EFORMAT);
    cr_assert(strstr(e.msg, "exceeds the file"), "%s", e.msg);
    /* shorter than the length field */
    unsigned char *tiny = malloc(4);
    memset(tiny, 0, 4);
    cr_assert_eq(drape_st_parse(&st, tiny, 4, &e), DRAPE_EFORMAT);
}

Test(safetensors, rejects_oversized_header)
{
    size_t len;
    unsigned char *b = make_file("{}", NULL, 0, &len);
    uint64_t huge = (uint64_t)DRAPE_ST_MAX_HEADER + 1;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(huge >> (8 * i));
    drape_st *st;
    drape_error e = {0};
    cr_assert_eq(drape_st_parse(&st, b, len, &e), DRAPE_EFORMAT);
    cr_assert(strstr(e.msg, "header length"), "%s", e.msg);
}

Test(safetensors, rejects_bad_json)
{
    expect_bad("{\"a\":{\"dtype\":\"F32\",", F4, 16, DRAPE_EFORMAT, "not valid JSON");
    expect_bad("[1,2]", NULL, 0, DRAPE_EFORMAT, "not a JSON object");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               F4, 8, DRAPE_EFORMAT, "JSON");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4]}}", F4, 16, DRAPE_EFORMAT, "'a'");
    expect_bad("{\"__metadata__\":{\"k\":3}}", NULL, 0, DRAPE_EFORMAT, "__metadata__.k");
}

Test(safetensors, rejects_wrong_dtype)
{
    expect_bad("{\"w\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", F4, 16, DRAPE_EDTYPE, "'w'");
}

Test(safetensors, rejects_size_mismatch)
{
    expect_bad("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", F4, 16, DRAPE_EFORMAT, "need 12");
    expect_bad("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", F4, 4, DRAPE_EFORMAT, "shape[0]");
    expect_bad("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,16]}}", F4, 16,
               DRAPE_EFORMAT, "overflow");
}

Test(safetensors, rejects_overlap_and_holes)
{
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               F4, 12, DRAPE_EFORMAT, "overlaps");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               F4, 12, DRAPE_EFORMAT, "hole");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", F4, 8, DRAPE_EFORMAT, "after the last");
}

Test(safetensors, rejects_non_finite)
{
    float bad[4] = {1, NAN, 3, 4};
    expect_bad("{\"weights\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", bad, 16, DRAPE_ENONFINITE,
               "'weights': element 1");
    uint16_t h[2] = {0x3c00, 0x7c00};
    expect_bad("{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", h, 4, DRAPE_ENONFINITE, "'h'");
}

Test(safetensors, missing_file_is_an_io_error)
{
    drape_st *st;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st, "/nonexistent/x.safetensors", &e), DRAPE_EIO);
    cr_assert(strstr(e.msg, "/nonexistent/x.safetensors"));
}
