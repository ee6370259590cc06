/* runtime/npy.c: the .npy reader refuses what it cannot hold, by name; the
 * writer leaves a file whole or as it was (core/outfile.c). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/npy.h"
#include "util.h"

/* a version-1 .npy file with this header dict and `data` bytes after it */
static void write_npy(const char *path, const char *dict, size_t data)
{
    char h[256];
    int n = snprintf(h, sizeof h, "%s", dict);
    while ((n + 10 + 1) % 64) h[n++] = ' ';
    h[n++] = '\n';
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 255), (unsigned char)(n >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(h, 1, (size_t)n, f);
    for (size_t i = 0; i < data; i++) fputc(0, f);
    fclose(f);
}

Test(npy, round_trip)
{
    char path[] = "/tmp/drape_npy_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    float v[6] = {1, 2, 3, 4, 5, -6.5f};
    int64_t shape[2] = {2, 3};
    drape_error err = {0};
    cr_assert_eq(drape_npy_write(path, v, 2, shape, &err), 0, "%s", err.msg);
    drape_npy a;
    cr_assert_eq(drape_npy_read(&a, path, &err), 0, "%s", err.msg);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 2);
    cr_assert_eq(a.shape[1], 3);
    cr_assert_eq(memcmp(a.data, v, sizeof v), 0);
    drape_npy_free(&a);
    unlink(path);
}

/* A write that fails part way (here a file-size limit, as a full disk would)
 * leaves the previous file as it was and nothing beside it; it once left
 * the first 4 KB of the new one under the old name. */
Test(npy, a_failed_write_leaves_the_old_file)
{
    char dir[] = "/tmp/drape_npy_dir_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/out.npy", dir);
    static float big[20000], small[6] = {1, 2, 3, 4, 5, 6};
    drape_error err = {0};
    cr_assert_eq(drape_npy_write(path, small, 1, (int64_t[]){6}, &err), 0, "%s", err.msg);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) { /* the child writes 80 KB under a 4-KB limit */
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        drape_error e = {0};
        _exit(drape_npy_write(path, big, 1, (int64_t[]){20000}, &e) == DRAPE_EIO && strstr(e.msg, "out.npy") ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the limited write did not fail with DRAPE_EIO naming the file");
    drape_npy a;
    cr_assert_eq(drape_npy_read(&a, path, &err), 0, "the old file: %s", err.msg);
    cr_assert(a.ndim == 1 && a.shape[0] == 6 && !memcmp(a.data, small, sizeof small), "the old file changed");
    drape_npy_free(&a);
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) files += e->d_name[0] != '.';
    closedir(d);
    cr_assert_eq(files, 1, "the failed write left a file beside the old one");
    /* a path that is not a regular file is written in place */
    cr_assert_eq(drape_npy_write("/dev/null", small, 1, (int64_t[]){6}, &err), 0, "%s", err.msg);
    unlink(path);
    rmdir(dir);
}

/* (2^32, 2^32) overflowed the element count before the size check */
Test(npy, huge_shapes_are_refused_without_overflow)
{
    char path[] = "/tmp/drape_npy_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    const char *dicts[] = {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (17179869184, 17179869184, 4), }",
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536), }"};
    for (int i = 0; i < 3; i++) {
        write_npy(path, dicts[i], 16);
        drape_npy a;
        drape_error err = {0};
        cr_assert_eq(drape_npy_read(&a, path, &err), DRAPE_ERANGE, "shape %d: %s", i, err.msg);
        cr_assert(strstr(err.msg, "too large"), "%s", err.msg);
        cr_assert_null(a.data);
    }
    unlink(path);
}

/* a short file claiming (2^32,) floats made the reader allocate 16 GB before
 * it found the data missing (fuzz/fuzz_npy.c): now it is refused as truncated
 * first, from a file and from a stream in memory */
Test(npy, short_data_is_refused_before_its_size_is_allocated)
{
    char path[] = "/tmp/drape_npy_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    write_npy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296,), }", 16);
    drape_npy a;
    drape_error err = {0};
    long peak = tu_vm_peak_kb();
    cr_assert_eq(drape_npy_read(&a, path, &err), DRAPE_EFORMAT, "%s", err.msg);
    cr_assert(strstr(err.msg, "truncated data (4294967296 floats expected)"), "%s", err.msg);
    cr_assert_null(a.data);
    cr_assert_lt(tu_vm_peak_kb() - peak, 64 << 10, "the address space grew by %ld MB", (tu_vm_peak_kb() - peak) >> 10);

    static char bytes[256];
    FILE *f = fopen(path, "rb");
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    f = fmemopen(bytes, n, "rb");
    cr_assert_eq(drape_npy_fread(&a, f, "mem", &err), DRAPE_EFORMAT, "%s", err.msg);
    cr_assert(strstr(err.msg, "mem: truncated data"), "%s", err.msg);
    fclose(f);
    unlink(path);
}

/* drape_npy_fread_num: little-endian integers of every width it takes,
 * signed ones sign-extended, as floats; refused by the float-only readers */
Test(npy, integers_are_read_as_floats_by_the_numeric_reader)
{
    static const struct { const char *descr; int size; unsigned char bytes[8]; float want; char kind; } cases[] = {
        {"<i2", 2, {0xfe, 0xff}, -2, 'i'},
        {"<i4", 4, {0xff, 0xff, 0xff, 0xff}, -1, 'i'},
        {"<i8", 8, {0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00}, 4294967296.0f, 'i'},
        {"<u4", 4, {0xff, 0xff, 0xff, 0xff}, 4294967295.0f, 'u'},
        {"|u1", 1, {0xff}, 255, 'u'},
        {"<u2", 2, {0x34, 0x12}, 0x1234, 'u'},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }", cases[c].descr);
        const char *path = tu_tmp("int.npy");
        write_npy(path, dict, 0);
        FILE *f = fopen(path, "ab");
        cr_assert(f);
        fwrite(cases[c].bytes, 1, (size_t)cases[c].size, f);
        fclose(f);
        drape_npy a;
        drape_error err = {0};
        f = fopen(path, "rb");
        cr_assert_eq(drape_npy_fread_num(&a, f, path, &err), 0, "%s: %s", cases[c].descr, err.msg);
        fclose(f);
        cr_assert_eq(a.data[0], cases[c].want, "%s: %g", cases[c].descr, a.data[0]);
        cr_assert_eq(a.kind, cases[c].kind);
        drape_npy_free(&a);
        cr_assert_eq(drape_npy_read(&a, path, &err), DRAPE_EDTYPE, "%s", cases[c].descr);
        cr_assert(strstr(err.msg, "expected float32 ('<f4')"), "%s", err.msg);
    }
}
