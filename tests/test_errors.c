/* The error map (proto/errors.h) and the server's counters that follow it
 * (server/metrics.c, linked into the tests alone). The expectations are
 * written out here, not read from the map: a changed wire string or status
 * fails. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/errors.h"
#include "../proto/msg.h"
#include "../server/metrics.h"

static const struct {
    drape_errcode code;
    const char *wire;
    unsigned http;
    int stream; /* has a slot in drape_stream_errors_total */
} want[] = {
    {DRAPE_EC_BAD_MESSAGE, "bad_message", 400, 1},
    {DRAPE_EC_BAD_FIELD, "bad_field", 400, 1},
    {DRAPE_EC_UNKNOWN_GARMENT, "unknown_garment", 404, 1},
    {DRAPE_EC_UNKNOWN_IDENTITY, "unknown_identity", 404, 1},
    {DRAPE_EC_BAD_BETAS, "bad_betas", 400, 1},
    {DRAPE_EC_NOT_OPEN, "not_open", 400, 1},
    {DRAPE_EC_ALREADY_OPEN, "already_open", 400, 1},
    {DRAPE_EC_LIMIT, "limit", 503, 1},
    {DRAPE_EC_INTERNAL, "internal", 500, 1},
    {DRAPE_EC_PHYSICS_RESET, "physics_reset", 500, 1},
    {DRAPE_EC_MODE_UNAVAILABLE, "mode_unavailable", 400, 1},
    {DRAPE_EC_NOT_FOUND, "not_found", 404, 0},
    {DRAPE_EC_UNAUTHORIZED, "unauthorized", 401, 0},
    {DRAPE_EC_METHOD_NOT_ALLOWED, "method_not_allowed", 405, 0},
    {DRAPE_EC_BAD_MOTION, "bad_motion", 400, 0},
    {DRAPE_EC_UNKNOWN_MOTION, "unknown_motion", 404, 0},
};
#define N_WANT (int)(sizeof want / sizeof want[0])

Test(errors, every_code_keeps_its_wire_string_status_and_metric)
{
    cr_assert_eq(N_WANT, DRAPE_EC_COUNT, "a code was added or removed: add its row here");
    for (int i = 0; i < N_WANT; i++) {
        drape_errcode c = want[i].code;
        cr_assert_str_eq(drape_errcode_wire(c), want[i].wire);
        cr_assert_eq(drape_errcode_http(c), want[i].http, "%s", want[i].wire);
        cr_assert_eq(drape_errcode_metric(c), want[i].stream ? DRAPE_EC_METRIC_STREAM : DRAPE_EC_METRIC_NONE, "%s",
                     want[i].wire);
        cr_assert(strlen(drape_errcode_message(c)) > 0, "%s", want[i].wire);
        cr_assert_eq(drape_errcode_parse(want[i].wire), c, "%s", want[i].wire);
    }
    cr_assert_eq(drape_errcode_parse("bad_messag"), DRAPE_EC_COUNT);
    cr_assert_eq(drape_errcode_parse("bad_messages"), DRAPE_EC_COUNT);
    cr_assert_eq(drape_errcode_parse(""), DRAPE_EC_COUNT);
    cr_assert_eq(drape_errcode_parse(NULL), DRAPE_EC_COUNT);
    /* the old names still spell the same strings */
    cr_assert_str_eq(DRAPE_ERR_BAD_MESSAGE, "bad_message");
    cr_assert_str_eq(DRAPE_ERR_UNKNOWN_IDENTITY, "unknown_identity");
    cr_assert_str_eq(DRAPE_ERR_INTERNAL, "internal");
}

Test(errors, a_parse_failure_carries_its_code_both_ways)
{
    drape_msg m;
    const char *code = NULL;
    char msg[128];
    const char *doc = "{\"op\":\"close\",\"avatar\":-1}";
    cr_assert_neq(drape_msg_parse(&m, (const uint8_t *)doc, strlen(doc), 0, &code, msg, sizeof msg), 0);
    cr_assert_eq(m.err, DRAPE_EC_BAD_FIELD);
    cr_assert_str_eq(code, "bad_field");
    doc = "[1]";
    cr_assert_neq(drape_msg_parse(&m, (const uint8_t *)doc, strlen(doc), 0, &code, msg, sizeof msg), 0);
    cr_assert_eq(m.err, DRAPE_EC_BAD_MESSAGE);
    cr_assert_str_eq(code, "bad_message");
}

static char *render(draped_metrics *m)
{
    drape_buf o = {0};
    cr_assert_eq(draped_metrics_render(&o, m), 0);
    cr_assert_eq(drape_buf_append(&o, "", 1), 0);
    return (char *)o.p;
}

Test(errors, every_stream_code_counts_in_its_own_slot)
{
    static draped_metrics m;
    /* code i counted i + 1 times; a code without a slot counts as internal */
    uint64_t internal = 0;
    for (int i = 0; i < N_WANT; i++) {
        for (int k = 0; k <= i; k++) draped_count_error(&m, want[i].code);
        if (!want[i].stream || want[i].code == DRAPE_EC_INTERNAL) internal += (uint64_t)i + 1;
    }
    draped_count_error(&m, DRAPE_EC_COUNT);
    internal++;
    char *text = render(&m), line[160];
    for (int i = 0; i < N_WANT; i++) {
        snprintf(line, sizeof line, "drape_stream_errors_total{code=\"%s\"} ", want[i].wire);
        const char *at = strstr(text, line);
        if (!want[i].stream) {
            cr_assert_null(at, "%s has no stream slot", want[i].wire);
            continue;
        }
        cr_assert_not_null(at, "%s", want[i].wire);
        unsigned long long n = strtoull(at + strlen(line), NULL, 10);
        cr_assert_eq(n, want[i].code == DRAPE_EC_INTERNAL ? internal : (uint64_t)i + 1, "%s: %llu", want[i].wire, n);
    }
    free(text);
}

Test(errors, body_is_counted_as_its_own_route)
{
    static draped_metrics m;
    draped_count_http(&m, R_BODY, 200);
    draped_count_http(&m, R_BODY, 400);
    draped_count_http(&m, R_OTHER, 404);
    char *text = render(&m);
    cr_assert(strstr(text, "drape_http_requests_total{route=\"body\",code=\"200\"} 1\n"), "%s", text);
    cr_assert(strstr(text, "drape_http_requests_total{route=\"body\",code=\"400\"} 1\n"), "%s", text);
    cr_assert(strstr(text, "drape_http_requests_total{route=\"other\",code=\"404\"} 1\n"), "%s", text);
    free(text);
}
