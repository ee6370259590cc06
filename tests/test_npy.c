/* runtime/npy.c: the .npy reader refuses what it cannot hold, by name; the
 * writer leaves a file whole or as it was (core/outfile.c). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/npy.h"
#include "util.h"

/* a version-1 .npy header with this dict into h (256 bytes); its length */
static size_t npy_header(unsigned char *h, const char *dict)
{
    int n = snprintf((char *)h + 10, 246, "%s", dict);
    while ((n + 10 + 1) % 64) h[10 + n++] = ' ';
    h[10 + n++] = '\n';
    memcpy(h, (unsigned char[]){0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 255), (unsigned char)(n >> 8)}, 10);
    return 10 + (size_t)n;
}

/* a version-1 .npy file with this header dict and `data` bytes after it */
static void write_npy(const char *path, const char *dict, size_t data)
{
    unsigned char h[256];
    size_t n = npy_header(h, dict);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fwrite(h, 1, n, f);
    for (size_t i = 0; i < data; i++) fputc(0, f);
    fclose(f);
}

Test(npy, round_trip)
{
    const char *path = tu_tmp("round_trip.npy"); /* in the test's temp dir, removed at exit even on a failure */
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
}

/* A write that fails part way (here a file-size limit, as a full disk would)
 * leaves the previous file as it was and nothing beside it; it once left
 * the first 4 KB of the new one under the old name. */
Test(npy, a_failed_write_leaves_the_old_file)
{
    char dir[300], path[300];
    snprintf(dir, sizeof dir, "%s", tu_tmp("failed_write"));
    cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
    snprintf(path, sizeof path, "%s", tu_tmp("failed_write/out.npy"));
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
}

/* A path that is not a regular file is written in place, not renamed over:
 * a FIFO (alone in its folder) stays a FIFO, nothing is left beside it, and
 * its reader gets the file. (/dev/null proved nothing: as root a rename over
 * it succeeds.) */
Test(npy, a_fifo_is_written_in_place)
{
    char dir[300], fifo[300], got[300];
    snprintf(dir, sizeof dir, "%s", tu_tmp("fifo_dir"));
    snprintf(got, sizeof got, "%s", tu_tmp("fifo_got.npy"));
    cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
    snprintf(fifo, sizeof fifo, "%s", tu_tmp("fifo_dir/out.npy"));
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", fifo);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) { /* the reader copies what comes through into `got`; a writer that never comes: SIGALRM */
        alarm(20);
        FILE *in = fopen(fifo, "rb"), *o = fopen(got, "wb");
        if (!in || !o) _exit(2);
        char buf[4096];
        for (size_t n; (n = fread(buf, 1, sizeof buf, in));) fwrite(buf, 1, n, o);
        _exit(fclose(o) || fclose(in) ? 3 : 0);
    }
    static float small[6] = {1, 2, 3, 4, 5, 6};
    drape_error err = {0};
    int rc = drape_npy_write(fifo, small, 1, (int64_t[]){6}, &err);
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the FIFO's reader did not get an end of file (status 0x%x)", st);
    struct stat sb;
    cr_assert_eq(lstat(fifo, &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced (mode 0%o)", (unsigned)sb.st_mode);
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));)
        cr_assert(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "out.npy"),
                  "%s left beside the FIFO", e->d_name);
    closedir(d);
    drape_npy a;
    cr_assert_eq(drape_npy_read(&a, got, &err), 0, "what the reader got: %s", err.msg);
    cr_assert(a.ndim == 1 && a.shape[0] == 6 && !memcmp(a.data, small, sizeof small), "the reader got another array");
    drape_npy_free(&a);
}

/* (2^32, 2^32) overflowed the element count before the size check */
Test(npy, huge_shapes_are_refused_without_overflow)
{
    const char *path = tu_tmp("huge.npy");
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
}

/* a short file claiming (2^32,) floats made the reader allocate 16 GB before
 * it found the data missing (fuzz/fuzz_npy.c): now it is refused as truncated
 * first, from a file and from a stream in memory */
Test(npy, short_data_is_refused_before_its_size_is_allocated)
{
    const char *path = tu_tmp("short.npy");
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

/* A pipe cannot be sized before reading (`drape infer --poses -`): a
 * 128-byte header claiming 2^30 floats, 16 bytes of them and an end of file
 * made the reader allocate 4 GB before it found the data short. Now memory
 * follows what arrives and the error is the truncated file's. */
Test(npy, a_short_pipe_is_refused_without_allocating_its_claim)
{
    unsigned char h[256];
    size_t n = npy_header(h, "{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }");
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    /* header and data fit in the pipe's buffer: no writer thread needed */
    cr_assert_eq(write(fd[1], h, n), (ssize_t)n);
    cr_assert_eq(write(fd[1], (char[16]){0}, 16), 16);
    close(fd[1]);
    FILE *f = fdopen(fd[0], "rb");
    cr_assert(f);
    drape_npy a;
    drape_error err = {0};
    long peak = tu_vm_peak_kb();
    cr_assert_eq(drape_npy_fread(&a, f, "-", &err), DRAPE_EFORMAT, "%s", err.msg);
    long grew = tu_vm_peak_kb() - peak;
    fclose(f);
    cr_assert(strstr(err.msg, "-: truncated data (1073741824 floats expected)"), "%s", err.msg);
    cr_assert_null(a.data);
    cr_assert_lt(grew, 64 << 10, "the address space grew by %ld MB for 16 bytes of data", grew >> 10);
}

/* ...and a whole array still comes through a pipe, past several of the
 * buffer's doublings, as float32 and as float64 converted */
Test(npy, a_pipe_is_read_whole)
{
    enum { N = 300000 };
    for (int f64 = 0; f64 < 2; f64++) {
        int fd[2];
        cr_assert_eq(pipe(fd), 0);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) { /* the writer: more than a pipe holds, so it blocks until read */
            close(fd[0]);
            unsigned char h[256];
            size_t n = npy_header(h, f64 ? "{'descr': '<f8', 'fortran_order': False, 'shape': (300000,), }"
                                         : "{'descr': '<f4', 'fortran_order': False, 'shape': (300000,), }");
            FILE *w = fdopen(fd[1], "wb");
            int ok = w && fwrite(h, 1, n, w) == n;
            for (int i = 0; ok && i < N; i++) {
                float v = (float)i * 0.5f;
                double d = v;
                ok = f64 ? fwrite(&d, 8, 1, w) == 1 : fwrite(&v, 4, 1, w) == 1;
            }
            _exit(ok && !fclose(w) ? 0 : 1);
        }
        close(fd[1]);
        FILE *f = fdopen(fd[0], "rb");
        cr_assert(f);
        drape_npy a;
        drape_error err = {0};
        int rc = drape_npy_fread_f64(&a, f, "-", &err);
        fclose(f);
        int st = 0;
        waitpid(pid, &st, 0);
        cr_assert_eq(rc, 0, "%s: %s", f64 ? "<f8" : "<f4", err.msg);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer failed (status 0x%x)", st);
        cr_assert(a.ndim == 1 && a.shape[0] == N && a.numel == N);
        for (int i = 0; i < N; i++) cr_assert_eq(a.data[i], (float)i * 0.5f, "%s: element %d is %g", f64 ? "<f8" : "<f4", i, a.data[i]);
        drape_npy_free(&a);
    }
}
