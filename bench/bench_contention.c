/* `make bench`, the rows under contention (issue 36 §3): module A at batch 1
 * on the CPU backend and in the PyTorch reference, interleaved in the same
 * run, while the benchmark keeps a neighbour busy on the same machine:
 *
 *   quiet            nothing started (whatever else runs on the machine stays)
 *   one busy loop    one process spinning
 *   two busy loops   two of them
 *   OpenMP spinning  an OpenMP program with OMP_WAIT_POLICY=active and a team
 *                    as wide as the machine, between short parallel regions
 *                    (its workers spin at the barrier while its master waits)
 *   draped loaded    build/draped on a free loopback port with the default
 *                    model, driven by `drape load` (DRAPED_AVATARS × 30 fps)
 *
 *   drape_bench --contention BUNDLE MODEL DRAPED DRAPE
 *       env DRAPE_BENCH_THREADS (default: all cores), DRAPE_PYTHON
 *
 * Per row the neighbour starts, runs SETTLE_S alone, then blocks of C frames
 * and of PyTorch frames alternate (ROUNDS each); each C block first runs
 * untimed for longer than the backend's free-core period (runtime/cores.h)
 * so that its estimate covers the neighbour and not the PyTorch block just
 * before. Per side: median and p90 over all timed frames; the ratio is of
 * the medians. Neighbours run in their own process groups, die with the
 * benchmark (PR_SET_PDEATHSIG) and are killed on every exit path. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_contention.h"
#include "bench_util.h"
#include "../runtime/backend.h"
#include "../runtime/cores.h"
#include "../runtime/model.h"

#define SETTLE_S 1.5    /* a neighbour alone before the first block */
#define ROUNDS 3        /* C and PyTorch blocks per row, alternating */
#define BLOCK_MS 1000.0 /* timed time per block (C: at least MIN_FRAMES frames, PyTorch two) */
#define MIN_FRAMES 3
#define MAX_FRAMES 400
#define DRAPED_AVATARS 16

/* ---- neighbours: every child the benchmark starts, killed on any exit ---- */

static pid_t kids[8];
static int n_kids;

static void kill_kids(void)
{
    for (int i = 0; i < n_kids; i++)
        if (kids[i] > 0) kill(-kids[i], SIGKILL);
    for (int i = 0; i < n_kids; i++)
        if (kids[i] > 0) waitpid(kids[i], NULL, 0);
    n_kids = 0;
}

static void on_signal(int sig)
{
    for (int i = 0; i < n_kids; i++) /* kill() is async-signal-safe */
        if (kids[i] > 0) kill(-kids[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* fork a child in its own process group that dies with us; 0 in the child */
static pid_t spawn(void)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench: fork");
        exit(1);
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0); /* the benchmark died before prctl */
        return 0;
    }
    setpgid(pid, pid); /* also here: the kill must find the group at once */
    kids[n_kids++] = pid;
    return pid;
}

static void stop_kid(pid_t pid)
{
    for (int i = 0; i < n_kids; i++)
        if (kids[i] == pid) {
            kill(-pid, SIGKILL);
            waitpid(pid, NULL, 0);
            kids[i] = kids[--n_kids];
            return;
        }
}

static void busy_loop(void)
{
    volatile unsigned long x = 0;
    for (;;) x++;
}

/* The OpenMP neighbour (run as `drape_bench --neighbour-omp` with
 * OMP_WAIT_POLICY=active): short parallel regions, each followed by a serial
 * millisecond (as a program waiting on input between its loops), during
 * which the team's workers spin at the barrier. */
int bench_neighbour_omp(void)
{
    volatile double sink = 0;
    for (;;) {
#pragma omp parallel
        {
            double a = 0;
            for (int i = 0; i < 50000; i++) a += i * 1e-9;
#pragma omp atomic
            sink += a;
        }
        usleep(1000);
    }
}

static pid_t start_omp_neighbour(int cpus)
{
    pid_t pid = spawn();
    if (pid) return pid;
    char n[16];
    snprintf(n, sizeof n, "%d", cpus);
    setenv("OMP_WAIT_POLICY", "active", 1);
    setenv("OMP_NUM_THREADS", n, 1);
    execl("/proc/self/exe", "drape_bench", "--neighbour-omp", (char *)NULL);
    _exit(127);
}

/* draped on a free loopback port with the default model; its port */
static int start_draped(const char *draped, const char *model, pid_t *pid)
{
    int fds[2];
    if (pipe(fds)) {
        perror("bench: pipe");
        exit(1);
    }
    if (!(*pid = spawn())) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(draped, draped, "--port", "0", "--bind", "127.0.0.1", "--model", model, "--backend", "cpu",
              "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    int port = bench_draped_port(fds[0]);
    return port;
}

static pid_t start_load(const char *drape, int port)
{
    pid_t pid = spawn();
    if (pid) return pid;
    char url[64], av[16];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/v1/stream", port);
    snprintf(av, sizeof av, "%d", DRAPED_AVATARS);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    execl(drape, drape, "load", "--url", url, "--avatars", av, "--fps", "30", "--duration", "3600", "--format", "f32",
          (char *)NULL);
    _exit(127);
}

/* ---- the PyTorch peer (bench/ref_peer.py) ---- */

typedef struct {
    pid_t pid;
    FILE *in, *out;
} peer;

static int peer_start(peer *p, const char *bundle, int threads)
{
    int to[2], from[2];
    if (pipe(to) || pipe(from)) return -1;
    if (!(p->pid = spawn())) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]);
        close(from[0]);
        const char *py = getenv("DRAPE_PYTHON");
        char t[16];
        snprintf(t, sizeof t, "%d", threads);
        execl(py ? py : "/usr/bin/python3", "python3", "bench/ref_peer.py", "--model", bundle, "--threads", t,
              (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p->in = fdopen(to[1], "w");
    p->out = fdopen(from[0], "r");
    char line[256];
    return p->in && p->out && fgets(line, sizeof line, p->out) && strstr(line, "ready") ? 0 : -1;
}

/* PyTorch frames for about budget_ms (at least two); their times appended to t (n
 * in, n out); -1 if the peer failed */
static int peer_block(peer *p, double budget_ms, double *t, int *n)
{
    if (fprintf(p->in, "%d %.0f\n", MAX_FRAMES, budget_ms) < 0 || fflush(p->in)) return -1;
    static char line[1 << 16];
    if (!fgets(line, sizeof line, p->out)) return -1;
    json_t *o = json_loads(line, 0, NULL), *ms = o ? json_object_get(o, "ms") : NULL;
    for (size_t i = 0; ms && i < json_array_size(ms) && *n < MAX_FRAMES * ROUNDS; i++)
        t[(*n)++] = json_number_value(json_array_get(ms, i));
    json_decref(o);
    return ms ? 0 : -1;
}

/* ---- one row ---- */

typedef struct {
    drape_backend *be;
    drape_frame fr;
    peer *py;
    drape_cores cores; /* the benchmark's own reading, for the team column */
} rig;

/* C frames for ms (untimed when t is NULL); at least min frames */
static void c_block(rig *r, double ms, int min, double *t, int *n)
{
    drape_error e = {0};
    double start = now_ms();
    for (int k = 0; k < MAX_FRAMES && (k < min || now_ms() - start < ms); k++) {
        double t0 = now_ms();
        if (drape_backend_run(r->be, &r->fr, 1, &e)) {
            fprintf(stderr, "bench: %s\n", e.msg);
            exit(1);
        }
        if (t && *n < MAX_FRAMES * ROUNDS) t[(*n)++] = now_ms() - t0;
    }
}

static double p90(double *v, int n) /* v sorted */
{
    return n ? v[(int)(0.9 * (n - 1) + 0.5)] : NAN;
}

static int row(rig *r, const char *name, int threads, int *met)
{
    static double tc[MAX_FRAMES * ROUNDS], tp[MAX_FRAMES * ROUNDS];
    int nc = 0, np = 0;
    double settle = now_ms();
    while (now_ms() - settle < SETTLE_S * 1e3) c_block(r, 100, 1, NULL, NULL);
    int team = 0;
    double free_cores = 0;
    for (int k = 0; k < ROUNDS; k++) {
        /* longer than the backend's period of free-core readings; the
         * benchmark's own reading over the same time, for the table */
        drape_cores_team(&r->cores, threads);
        c_block(r, DRAPE_CORES_PERIOD_S * 1e3 + 200, 1, NULL, NULL);
        team = drape_cores_team(&r->cores, threads);
        free_cores = r->cores.free;
        c_block(r, BLOCK_MS, MIN_FRAMES, tc, &nc);
        if (peer_block(r->py, BLOCK_MS, tp, &np)) {
            fprintf(stderr, "bench: the PyTorch peer failed\n");
            return 1;
        }
    }
    double mc = median(tc, nc), mp = median(tp, np); /* sorts both */
    int ok = mp / mc >= 1.5 && 1000.0 / mc >= 30;
    *met &= ok;
    printf("| %s | %.1f → %d | %.2f | %.2f | %.1f | %.2f | %.2f | %.2fx | %s |\n", name, free_cores, team, mc, p90(tc, nc), 1000.0 / mc,
           mp, p90(tp, np), mp / mc, ok ? "yes" : "no");
    return 0;
}

int bench_contention(const char *bundle, const char *model, const char *draped, const char *drape)
{
    atexit(kill_kids);
    signal(SIGPIPE, SIG_IGN); /* a dead peer is a failed write, reported */
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], on_signal);

    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int threads = getenv("DRAPE_BENCH_THREADS") ? atoi(getenv("DRAPE_BENCH_THREADS")) : cpus;
    drape_model *m;
    drape_error e = {0};
    rig r = {0};
    drape_backend_opts o = {.threads = threads};
    if (drape_model_load(&m, bundle, &e) || drape_backend_create(&r.be, "cpu", m, &o, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return 1;
    }
    drape_identity *id;
    float betas[2] = {0.5f, -1.0f};
    if (drape_identity_create(r.be, &id, 0, betas, 2, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return 1;
    }
    static float poses[DRAPE_MAX_HISTORY][75];
    unsigned s = 1;
    for (int k = 0; k < m->cfg.n_hist; k++)
        for (int i = 0; i < 75; i++) poses[k][i] = 0.3f * rnd(&s);
    r.fr = (drape_frame){.id = id, .out = malloc(sizeof(float) * 3 * (size_t)m->garments[0].V)};
    for (int k = 0; k < m->cfg.n_hist; k++) {
        r.fr.pose[k] = poses[k];
        r.fr.trans[k] = poses[k] + 72;
    }
    drape_cores_init(&r.cores);
    peer py;
    if (peer_start(&py, bundle, threads)) {
        fprintf(stderr, "bench: the PyTorch peer (bench/ref_peer.py) did not start\n");
        return 1;
    }
    r.py = &py;

    printf("\n## Module A at batch 1 under contention (%s, %d cores, at most %d threads for C and PyTorch)\n\n",
           bundle, cpus, threads);
    printf("free → team: the cores found free (runtime/cores.h, the benchmark's own reading over the C backend's "
           "untimed frames of the last block) and the team the C backend takes for that; ms: median and p90 over the "
           "timed frames of %d interleaved blocks each\n\n", ROUNDS);
    printf("| neighbour | free → team | C ms | C p90 | C fps | PyTorch ms | PyTorch p90 | PyTorch / C | goal |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    int met = 1, fail = 0;
    fail |= row(&r, "none (quiet)", threads, &met);

    pid_t a = spawn();
    if (!a) busy_loop();
    fail |= row(&r, "one busy loop", threads, &met);
    pid_t b = spawn();
    if (!b) busy_loop();
    fail |= row(&r, "two busy loops", threads, &met);
    stop_kid(a);
    stop_kid(b);

    pid_t omp = start_omp_neighbour(cpus);
    char name[96];
    snprintf(name, sizeof name, "OpenMP team of %d spinning (OMP_WAIT_POLICY=active)", cpus);
    fail |= row(&r, name, threads, &met);
    stop_kid(omp);

    pid_t d;
    int port = start_draped(draped, model, &d);
    if (!port) {
        fprintf(stderr, "bench: draped did not start\n");
        fail = 1;
    } else {
        pid_t l = start_load(drape, port);
        const char *slash = strrchr(model, '/');
        snprintf(name, sizeof name, "draped (%s) with %d avatars x 30 fps", slash ? slash + 1 : model, DRAPED_AVATARS);
        fail |= row(&r, name, threads, &met);
        /* a load that ended early (refused, broken) left a quiet machine under this row's name */
        if (waitpid(l, NULL, WNOHANG) != 0) {
            fprintf(stderr, "bench: drape load ended before the row did: the row above is not a loaded one\n");
            fail = 1;
        }
        stop_kid(l);
    }
    stop_kid(d);

    fprintf(py.in, "quit\n");
    fclose(py.in);
    fclose(py.out);
    waitpid(py.pid, NULL, 0);
    for (int i = 0; i < n_kids; i++)
        if (kids[i] == py.pid) kids[i] = kids[--n_kids];
    printf("\ngoal: C >= 1.5x PyTorch at batch 1 and >= 30 fps, in every row: %s\n", met ? "met" : "NOT met");
    free(r.fr.out);
    drape_identity_free(r.be, id);
    drape_backend_free(r.be);
    drape_model_free(m);
    return fail;
}
