/* The `drape` command line, run as a user runs it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/npy.h"
#include "util.h"

static const char *bin(void)
{
    const char *b = getenv("DRAPE_BIN");
    return b ? b : "build/drape";
}

static void write_poses(const char *path, int T, int width, int nan_at /* −1: none */)
{
    float *p = calloc((size_t)T * width, sizeof *p);
    tu_random_poses(p, 1, 0.2f, 0.1f, 3); /* first frame random, rest zero: fine */
    if (nan_at >= 0) p[nan_at] = NAN;
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(path, p, 2, (int64_t[]){T, width}, &e), 0, "%s", e.msg);
    free(p);
}

Test(drape, info_prints_the_model)
{
    char out[4096];
    cr_assert_eq(tu_run(out, sizeof out, "%s info '%s'", bin(), tu_bundle("tiny_random")), 0, "%s", out);
    cr_assert(strstr(out, "skirt"), "%s", out);
    cr_assert(strstr(out, "tensors"), "%s", out);
    cr_assert(strstr(out, "conv [8, 8, 3]"), "%s", out);
}

Test(drape, infer_writes_vertices)
{
    char out[4096], pin[300], pout[300];
    snprintf(pin, sizeof pin, "%s", tu_tmp("p.npy"));
    snprintf(pout, sizeof pout, "%s", tu_tmp("o.npy"));
    write_poses(pin, 4, 75, -1);
    cr_assert_eq(tu_run(out, sizeof out, "%s infer --model '%s' --garment skirt --betas 0.5,-1 --poses '%s' --out '%s'",
                        bin(), tu_bundle("tiny_random"), pin, pout), 0, "%s", out);
    drape_npy a;
    drape_error e = {0};
    cr_assert_eq(drape_npy_read(&a, pout, &e), 0, "%s", e.msg);
    cr_assert_eq(a.ndim, 3);
    cr_assert_eq(a.shape[0], 4);
    cr_assert_eq(a.shape[2], 3);
    for (int64_t i = 0; i < a.numel; i++) cr_assert(isfinite(a.data[i]));
    drape_npy_free(&a);
}

static void expect_fail(const char *needle, const char *fmt_args)
{
    char out[4096];
    int rc = tu_run(out, sizeof out, "%s infer --model '%s' %s", bin(), tu_bundle("tiny_random"), fmt_args);
    cr_assert_neq(rc, 0, "should fail: %s", fmt_args);
    cr_assert(strstr(out, needle), "message '%s' should mention '%s'", out, needle);
}

Test(drape, infer_rejects_bad_input)
{
    char pin[300], pnan[300], pw[300], args[1024];
    snprintf(pin, sizeof pin, "%s", tu_tmp("ok.npy"));
    snprintf(pnan, sizeof pnan, "%s", tu_tmp("nan.npy"));
    snprintf(pw, sizeof pw, "%s", tu_tmp("wide.npy"));
    write_poses(pin, 3, 75, -1);
    write_poses(pnan, 3, 75, 75 + 40);
    write_poses(pw, 3, 72, -1);
    snprintf(args, sizeof args, "--garment skirt --poses '%s' --out /dev/null", pw);
    expect_fail("[T, 75]", args);
    snprintf(args, sizeof args, "--garment skirt --poses '%s' --out /dev/null", pnan);
    expect_fail("frame 1, value 40 is NaN", args);
    snprintf(args, sizeof args, "--garment cape --poses '%s' --out /dev/null", pin);
    expect_fail("garment 'cape'", args);
    snprintf(args, sizeof args, "--garment skirt --betas 1,x --poses '%s' --out /dev/null", pin);
    expect_fail("--betas", args);
    snprintf(args, sizeof args, "--garment skirt --betas 4 --poses '%s' --out /dev/null", pin);
    expect_fail("outside the model's range", args);
    snprintf(args, sizeof args, "--garment skirt --poses /nonexistent.npy --out /dev/null");
    expect_fail("cannot open", args);
    snprintf(args, sizeof args, "--garment skirt --poses '%s' --out /dev/null", tu_bundle("tiny_random"));
    expect_fail("not a .npy", args);
    char out[1024];
    cr_assert_neq(tu_run(out, sizeof out, "%s infer --model /nonexistent --garment skirt --poses '%s' --out /dev/null", bin(), pin), 0);
    cr_assert(strstr(out, "/nonexistent"), "%s", out);
}
