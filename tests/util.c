#include "util.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/omp_env.h"

/* The tests run the backends as the programs do: OpenBLAS set to one thread
 * once per process, at its start (each test runs in a process of its own). */
__attribute__((constructor)) static void tu_blas_threads(void) { drape_blas_threads_init(); }

const char *tu_bundle(const char *name)
{
    static char path[512];
    const char *d = getenv("DRAPE_DATA");
    if (strchr(name, '/')) snprintf(path, sizeof path, "%s", name); /* a path, e.g. models/default.safetensors */
    else snprintf(path, sizeof path, "%s/%s.safetensors", d ? d : "build/data", name);
    return path;
}

drape_model *tu_load(const char *name)
{
    drape_model *m = NULL;
    drape_error e = {0};
    int rc = drape_model_load(&m, tu_bundle(name), &e);
    cr_assert_eq(rc, 0, "loading %s: %s (run `make bundles`)", name, e.msg);
    return m;
}

drape_backend *tu_backend(const drape_model *m)
{
    drape_backend *be = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_backend_create(&be, "cpu", m, NULL, &e), 0, "%s", e.msg);
    return be;
}

drape_identity *tu_identity(drape_backend *be, int garment, const float *betas, int n)
{
    drape_identity *id = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_identity_create(be, &id, garment, betas, n, &e), 0, "%s", e.msg);
    return id;
}

float tu_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) / (double)(1ULL << 24)) * 2.0f - 1.0f;
}

void tu_random_poses(float *poses, int T, float sigma, float trans, uint64_t seed)
{
    uint64_t s = seed * 2654435761u + 1;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < 72; i++) poses[75 * t + i] = sigma * tu_rand(&s);
        for (int i = 0; i < 3; i++) poses[75 * t + 72 + i] = trans * tu_rand(&s);
    }
}

static char tmpdir[256];

static void tmp_cleanup(void)
{
    if (tmpdir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd)) { /* best effort */ }
    }
}

const char *tu_tmp(const char *name)
{
    static char path[512];
    if (!tmpdir[0]) {
        /* under make test's own TMPDIR (scripts/with_tmpdir.sh), which goes
         * even when a test killed by a signal skips the atexit below */
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/drape-test-XXXXXX", base && *base ? base : "/tmp");
        cr_assert_not_null(mkdtemp(tmpdir));
        atexit(tmp_cleanup);
    }
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

void tu_key_file_flag(char *flags, size_t cap, const char *name, const char *keys)
{
    const char *path = tu_tmp(name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(keys, f);
    fclose(f);
    snprintf(flags, cap, "--api-key-file %s", path);
}

void tu_tls_flags(char *flags, size_t cap, char *ca, size_t ca_cap)
{
    static int n;
    char key[512], crt[512], out[4096], name[32];
    snprintf(name, sizeof name, "tls%d.key", n);
    snprintf(key, sizeof key, "%s", tu_tmp(name));
    snprintf(name, sizeof name, "tls%d.crt", n++);
    snprintf(crt, sizeof crt, "%s", tu_tmp(name));
    if (tu_run(out, sizeof out,
               "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 2 -subj /CN=localhost "
               "-addext subjectAltName=IP:127.0.0.1,DNS:localhost",
               key, crt))
        cr_assert_fail("openssl (scripts/deps.sh installs it) cannot make a test certificate: %s", out);
    snprintf(flags, cap, "--tls-cert %s --tls-key %s", crt, key);
    if (ca) snprintf(ca, ca_cap, "%s", crt);
}

int tu_run(char *out, int outlen, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    char sink[4096];
    int n = 0, sanitizer = 0;
    if (out && outlen) out[0] = 0;
    for (;;) {
        size_t got = fread(sink, 1, sizeof sink - 1, p);
        if (!got) break;
        /* a sanitizer's report goes on to the test's stderr, where make
         * check's grep sees it: a test that expects the command to fail
         * would pass on ASan's exit status and the report would be lost.
         * (A marker split across two reads is missed; the reports repeat it.) */
        sink[got] = 0;
        if (sanitizer || strstr(sink, "Sanitizer") || strstr(sink, "runtime error:")) {
            sanitizer = 1;
            fwrite(sink, 1, got, stderr);
        }
        if (out && n < outlen - 1) {
            size_t take = got < (size_t)(outlen - 1 - n) ? got : (size_t)(outlen - 1 - n);
            memcpy(out + n, sink, take);
            n += (int)take;
            out[n] = 0;
        }
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

void tu_rewrite(const char *src, const char *dst, tu_mutate_fn fn, const char *config_override, void *ctx)
{
    drape_st *st = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st, src, &e), 0, "%s", e.msg);
    drape_st_writer *w = drape_st_writer_new();
    cr_assert_not_null(w);
    const char *cfg = config_override ? config_override : drape_st_meta(st, "drape.config");
    if (cfg) cr_assert_eq(drape_st_writer_meta(w, "drape.config", cfg), 0);
    for (int i = 0; i < drape_st_count(st); i++) {
        const drape_tensor *t = drape_st_at(st, i);
        drape_dtype dt = t->dtype;
        int ndim = t->ndim;
        int64_t shape[DRAPE_ST_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        /* room for a mutation that grows the tensor a little */
        void *data = calloc(1, t->nbytes + 4096);
        memcpy(data, t->data, t->nbytes);
        if (!fn || fn(t->name, &dt, &ndim, shape, data, ctx)) cr_assert_eq(drape_st_writer_add(w, t->name, dt, ndim, shape, data), 0);
        free(data);
    }
    cr_assert_eq(drape_st_writer_save(w, dst, &e), 0, "%s", e.msg);
    drape_st_writer_free(w);
    drape_st_free(st);
}

void tu_config_plus(const char *src, const char *dst, const char *extra)
{
    drape_st *st = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st, src, &e), 0, "%s", e.msg);
    const char *cfg = drape_st_meta(st, "drape.config");
    const char *end = strrchr(cfg, '}');
    size_t cap = strlen(cfg) + strlen(extra) + 8;
    char *text = malloc(cap);
    snprintf(text, cap, "%.*s, %s}", (int)(end - cfg), cfg, extra);
    tu_rewrite(src, dst, NULL, text, NULL);
    free(text);
    drape_st_free(st);
}

double tu_max_abs_diff(const float *a, const float *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = a[i] > b[i] ? (double)a[i] - b[i] : (double)b[i] - a[i];
        if (!(d <= m)) m = d; /* NaN propagates as the max */
    }
    return m;
}

long tu_vm_peak_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmPeak: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

tu_server tu_draped_start(const char *bundle, const char *extra)
{
    tu_server s;
    memset(&s, 0, sizeof s);
    const char *bin = getenv("DRAPED_BIN") ? getenv("DRAPED_BIN") : "build/draped";
    static int n;
    char name[64];
    snprintf(name, sizeof name, "draped-%d.log", n++);
    snprintf(s.log, sizeof s.log, "%s", tu_tmp(name));
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "exec %s --port 0 --bind 127.0.0.1 --model %s --backend cpu --threads 1 --log-level debug %s 2>%s",
             bin, tu_bundle(bundle), extra, s.log);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* a test that fails before tu_draped_stop leaves no daemon behind:
         * it goes with the test's process (the setting outlives exec) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[256];
    int port = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, "listening on ");
        if (p && (p = strrchr(p, ':'))) {
            port = atoi(p + 1);
            break;
        }
    }
    fclose(f);
    if (!port) {
        char logtext[4096] = "";
        tu_run(logtext, sizeof logtext, "cat %s", s.log);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        cr_assert_fail("draped did not start: %s", logtext);
    }
    s.pid = pid;
    s.port = port;
    snprintf(s.url, sizeof s.url, "http://127.0.0.1:%d", port);
    snprintf(s.ws, sizeof s.ws, "ws://127.0.0.1:%d/v1/stream", port);
    return s;
}

int tu_draped_stop(tu_server *s)
{
    if (s->pid <= 0) return -1;
    kill(s->pid, SIGTERM);
    int st = 0;
    waitpid(s->pid, &st, 0);
    s->pid = 0;
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (rc) { /* show why (a sanitizer report lands in this log too) */
        char logtext[8192] = "";
        tu_run(logtext, sizeof logtext, "tail -c 6000 %s", s->log);
        fprintf(stderr, "draped exited %d; its log:\n%s\n", rc, logtext);
    }
    return rc;
}
