/* sim/obj.c: OBJ files in and out; nothing non-finite goes out. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../sim/obj.h"
#include "util.h"

Test(obj, round_trip_and_no_nan_written)
{
    const char *path = tu_tmp("tri.obj");
    double v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0.25};
    int32_t f[3] = {0, 1, 2};
    drape_error e = {0};
    cr_assert_eq(drape_obj_write(path, v, 3, f, 1, &e), DRAPE_OK, "%s", e.msg);
    drape_obj m;
    cr_assert_eq(drape_obj_read(&m, path, &e), DRAPE_OK, "%s", e.msg);
    cr_assert(m.n == 3 && m.F == 1 && !memcmp(m.v, v, sizeof v) && !memcmp(m.faces, f, sizeof f));
    drape_obj_free(&m);
    unlink(path);
    v[4] = NAN;
    cr_assert_eq(drape_obj_write(path, v, 3, f, 1, &e), DRAPE_ENONFINITE);
    cr_assert(strstr(e.msg, "vertex 1 is not finite"), "%s", e.msg);
    cr_assert_neq(access(path, F_OK), 0, "a file was written");
}

Test(obj, coordinates_are_bounded)
{
    const char *path = tu_tmp("far.obj");
    FILE *fp = fopen(path, "w");
    fprintf(fp, "v 0 0 0\nv %g 0 0\nv 0 1 0\nf 1 2 3\n", DRAPE_OBJ_MAX_COORD);
    fclose(fp);
    drape_obj m;
    drape_error e = {0};
    cr_assert_eq(drape_obj_read(&m, path, &e), DRAPE_OK, "%s", e.msg);
    drape_obj_free(&m);
    fp = fopen(path, "w");
    fprintf(fp, "v 0 0 0\nv 0 %g 0\nv 0 1 0\nf 1 2 3\n", -2 * DRAPE_OBJ_MAX_COORD);
    fclose(fp);
    cr_assert_eq(drape_obj_read(&m, path, &e), DRAPE_ERANGE);
    cr_assert(strstr(e.msg, ":2: vertex coordinate"), "%s", e.msg);
}
