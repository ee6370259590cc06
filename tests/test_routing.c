/* Identity-affine routing on one machine: three real draped replicas on
 * loopback ports behind Debian's nginx running deploy/nginx/drape.conf
 * unchanged (the test writes only the main nginx.conf around it and the two
 * files it includes: the replicas' addresses and the listen port), driven by
 * tests/clients/routing_client.py. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define OUT 65536
#define NREP 3
static char out[OUT];

static tu_server rep[NREP];
static const char *names[NREP] = {"replica-a", "replica-b", "replica-c"};
static pid_t nginx_pid, client_pid;
static int nginx_port;

static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }

/* whatever happens in a test, nothing it started outlives it, and a
 * replica still running must exit 0 on SIGTERM with nginx's connections open */
static void teardown(void)
{
    if (client_pid > 0) { /* an assertion failed while it streamed: its process group */
        kill(-client_pid, SIGKILL);
        waitpid(client_pid, NULL, 0);
        client_pid = 0;
    }
    if (nginx_pid > 0) {
        kill(nginx_pid, SIGTERM); /* fast shutdown: does not wait for open connections */
        waitpid(nginx_pid, NULL, 0);
        nginx_pid = 0;
    }
    for (int i = 0; i < NREP; i++)
        if (rep[i].pid > 0) cr_expect_eq(tu_draped_stop(&rep[i]), 0, "%s did not exit 0", names[i]);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Three replicas and nginx in front of them; returns nginx's base URL. */
static const char *cluster_start(void)
{
    if (tu_run(NULL, 0, "command -v nginx >/dev/null || test -x /usr/sbin/nginx") != 0)
        cr_skip_test("nginx is not installed (scripts/deps.sh installs nginx-light)");
    const char *nginx = access("/usr/sbin/nginx", X_OK) == 0 ? "/usr/sbin/nginx" : "nginx";
    char conf_src[PATH_MAX];
    cr_assert(realpath("deploy/nginx/drape.conf", conf_src), "deploy/nginx/drape.conf is missing");

    char ups[1024] = "", line[160];
    for (int i = 0; i < NREP; i++) {
        char extra[64];
        snprintf(extra, sizeof extra, "--instance %s", names[i]);
        rep[i] = tu_draped_start("tiny_random", extra);
        snprintf(line, sizeof line, "server 127.0.0.1:%d weight=10 max_fails=1 fail_timeout=10s;\n", rep[i].port);
        strcat(ups, line);
    }

    /* DIR/nginx.conf includes the repository's drape.conf, which includes
     * DIR/drape/replicas.upstream and DIR/drape/listen.conf */
    static char dir[400];
    snprintf(dir, sizeof dir, "%s", tu_tmp("nginx"));
    char path[512];
    snprintf(path, sizeof path, "%s/drape", dir);
    cr_assert_eq(tu_run(NULL, 0, "mkdir -p %s", path), 0);
    snprintf(path, sizeof path, "%s/drape/replicas.upstream", dir);
    write_file(path, ups);
    nginx_port = free_port();
    snprintf(line, sizeof line, "listen 127.0.0.1:%d;\n", nginx_port);
    snprintf(path, sizeof path, "%s/drape/listen.conf", dir);
    write_file(path, line);

    /* temp paths of the modules this nginx has, inside DIR (not /var/lib) */
    char temps[1200] = "", v[OUT];
    tu_run(v, sizeof v, "%s -V", nginx);
    const char *mods[] = {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"};
    for (int i = 0; i < 5; i++) {
        char without[64];
        snprintf(without, sizeof without, "--without-http_%s_module", mods[i]);
        if (i > 0 && strstr(v, without)) continue;
        char t[512];
        snprintf(t, sizeof t, "    %s_temp_path %s/tmp-%s;\n", mods[i], dir, mods[i]);
        strcat(temps, t);
    }
    /* as root, the workers would switch to nobody and could not read DIR */
    char user[128] = "";
    if (getuid() == 0) snprintf(user, sizeof user, "user root;\n");
    char conf[8192];
    snprintf(conf, sizeof conf,
             "%sworker_processes 1;\nerror_log %s/error.log info;\npid %s/nginx.pid;\n"
             "events { worker_connections 512; }\n"
             "http {\n    access_log %s/access.log;\n%s    include %s;\n}\n",
             user, dir, dir, dir, temps, conf_src);
    snprintf(path, sizeof path, "%s/nginx.conf", dir);
    write_file(path, conf);
    int rc = tu_run(out, OUT, "%s -t -p %s -c %s -e %s/error.log 2>&1", nginx, dir, path, dir);
    cr_assert_eq(rc, 0, "nginx -t rejects the config:\n%s", out);

    nginx_pid = fork();
    cr_assert_geq(nginx_pid, 0);
    if (nginx_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char elog[600];
        snprintf(elog, sizeof elog, "%s/error.log", dir);
        execl(nginx, "nginx", "-p", dir, "-c", path, "-e", elog, "-g", "daemon off;", (char *)NULL);
        _exit(127);
    }
    static char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", nginx_port);
    for (int i = 0; i < 100; i++) {
        if (tu_run(NULL, 0, "curl -s -o /dev/null %s/healthz", base) == 0) return base;
        usleep(100000);
    }
    tu_run(out, OUT, "cat %s/error.log", dir);
    cr_assert_fail("nginx did not come up:\n%s", out);
    return NULL;
}

static void client(const char *base, const char *args)
{
    int rc = tu_run(out, OUT, "%s tests/clients/routing_client.py %s %s", py(), base, args);
    cr_assert_eq(rc, 0, "routing_client %s failed:\n%s", args, out);
}

/* key -> replica index, from routing_client.py map's JSON */
static void load_map(const char *path, int *where, int n)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    cr_assert(j, "%s: %s", path, err.text);
    cr_assert_eq((int)json_object_size(j), n);
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "user-%04d", i);
        const char *inst = json_string_value(json_object_get(j, key));
        cr_assert(inst, "no replica for %s", key);
        where[i] = -1;
        for (int r = 0; r < NREP; r++)
            if (!strcmp(inst, names[r])) where[i] = r;
        cr_assert_geq(where[i], 0, "%s answered by an unknown instance '%s'", key, inst);
    }
    json_decref(j);
}

#define NKEYS 1000

Test(routing, same_identity_same_replica_even_spread_and_failover, .fini = teardown)
{
    const char *base = cluster_start();

    /* bodies through the proxy: a 2-MB motion file reaches draped (its
     * JSON answer, not nginx's HTML 413: --motion-max-bytes is 16 MiB), a
     * 2-MB identity request is over --max-message either way */
    const char *big = tu_tmp("big.bin");
    tu_run(out, OUT, "head -c 2000000 /dev/urandom > %s", big);
    tu_run(out, OUT, "curl -s -w '\\nHTTP %%{http_code}' -X POST --data-binary @%s %s/v1/motions/convert", big, base);
    cr_assert(strstr(out, "HTTP 400") && strstr(out, "\"bad_motion\""), "a 2-MB motion file through nginx:\n%.400s", out);
    tu_run(out, OUT, "curl -s -o /dev/null -w '%%{http_code}' -X POST --data-binary @%s %s/v1/identities", big, base);
    cr_assert_str_eq(out, "413", "a 2-MB identity request through nginx");

    /* every key twice (interleaved): each answer names the same replica */
    char args[600];
    char map1[512], map2[512], res[512]; /* tu_tmp returns one static buffer */
    snprintf(map1, sizeof map1, "%s", tu_tmp("map1.json"));
    snprintf(map2, sizeof map2, "%s", tu_tmp("map2.json"));
    snprintf(res, sizeof res, "%s", tu_tmp("stream.out"));
    snprintf(args, sizeof args, "map %d %s 2", NKEYS, map1);
    client(base, args);
    static int before[NKEYS], after[NKEYS];
    load_map(map1, before, NKEYS);
    int count[NREP] = {0};
    for (int i = 0; i < NKEYS; i++) count[before[i]]++;
    cr_log_info("routing: %d keys -> %s %d, %s %d, %s %d", NKEYS, names[0], count[0], names[1], count[1], names[2],
                count[2]);
    for (int r = 0; r < NREP; r++) {
        double share = count[r] * (double)NREP / NKEYS;
        cr_expect(share >= 0.75 && share <= 1.25, "%s has %d of %d keys (%.0f%% of even; ±25%% allowed)", names[r],
                  count[r], NKEYS, 100 * share);
    }

    /* a streaming client, then its replica is stopped under it (SIGTERM:
     * drain, close 1001); it reconnects with the same key and resumes */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s tests/clients/routing_client.py %s stream user-0007 40 > %s 2>&1; echo rc=$? >> %s",
             py(), base, res, res);
    pid_t cpid = client_pid = fork();
    cr_assert_geq(cpid, 0);
    if (cpid == 0) {
        setpgid(0, 0); /* the shell and its python: one group for teardown to stop */
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int victim = -1;
    for (int i = 0; i < 200 && victim < 0; i++) {
        tu_run(out, OUT, "cat %s", res);
        char *p = strstr(out, "streaming ");
        if (p)
            for (int r = 0; r < NREP; r++)
                if (!strncmp(p + 10, names[r], strlen(names[r]))) victim = r;
        if (strstr(out, "rc=")) break;
        usleep(100000);
    }
    cr_assert_geq(victim, 0, "the streaming client did not start:\n%s", out);
    cr_assert_eq(victim, before[7], "user-0007 streams on %s but its requests went to %s", names[victim],
                 names[before[7]]);
    usleep(300000); /* frames go by */
    cr_assert_eq(tu_draped_stop(&rep[victim]), 0, "%s did not drain and exit 0", names[victim]);
    waitpid(cpid, NULL, 0);
    client_pid = 0;
    tu_run(out, OUT, "cat %s", res);
    cr_assert(strstr(out, "rc=0"), "the client did not resume on another replica:\n%s", out);
    cr_log_info("routing: stream after stopping %s: %s", names[victim], strstr(out, "{") ? strstr(out, "{") : out);

    /* only the stopped replica's keys move */
    snprintf(args, sizeof args, "map %d %s 2", NKEYS, map2);
    client(base, args);
    load_map(map2, after, NKEYS);
    int moved = 0, moved_other = 0;
    for (int i = 0; i < NKEYS; i++) {
        cr_assert_neq(after[i], victim, "user-%04d still answered by the stopped %s", i, names[victim]);
        if (after[i] != before[i]) {
            moved++;
            if (before[i] != victim) moved_other++;
        }
    }
    cr_log_info("routing: stopping %s moved %d of %d keys (%.1f%%), %d from other replicas", names[victim], moved,
                NKEYS, 100.0 * moved / NKEYS, moved_other);
    cr_expect_eq(moved_other, 0, "%d keys of the replicas still up moved", moved_other);
    cr_expect_eq(moved, count[victim], "moved %d keys, the stopped replica had %d", moved, count[victim]);
    /* the stopped replica's share, within the even-spread tolerance above
     * (the ring depends on the replicas' ports; weight=10, 1,600 points a
     * replica, kept every share within 14% of even over 1,000 simulated port
     * draws; nginx's default, 160 points, reached 42% and failed CI once) */
    cr_expect_leq(moved, NKEYS * 5 / (4 * NREP), "moved %d of %d keys (at most 125%% of an even share allowed)", moved,
                  NKEYS);
}

/* hits and misses of every replica's identity cache, from /metrics */
static void cache_counts(long long *hits, long long *misses)
{
    *hits = *misses = 0;
    for (int r = 0; r < NREP; r++) {
        tu_run(out, OUT, "curl -s %s/metrics", rep[r].url);
        long long h = -1, m = -1;
        for (char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            sscanf(l, "drape_cache_hits_total %lld", &h);
            sscanf(l, "drape_cache_misses_total %lld", &m);
        }
        cr_assert(h >= 0 && m >= 0, "%s: no cache counters in /metrics:\n%.2000s", names[r], out);
        *hits += h;
        *misses += m;
    }
}

Test(routing, identity_cache_hit_rate_in_steady_state, .fini = teardown)
{
    const char *base = cluster_start();
    const int n = 24;
    char args[64];
    /* warm-up: each body is encoded once, on the replica its key hashes to */
    long long h0, m0, h1, m1, h2, m2;
    cache_counts(&h0, &m0);
    snprintf(args, sizeof args, "streams %d 1", n);
    client(base, args);
    cache_counts(&h1, &m1);
    cr_assert_eq(m1 - m0, n, "warm-up: %lld misses for %d new bodies", m1 - m0, n);
    /* steady state: the same bodies again, twice */
    for (int round = 2; round <= 3; round++) {
        snprintf(args, sizeof args, "streams %d %d", n, round);
        client(base, args);
    }
    cache_counts(&h2, &m2);
    long long hits = h2 - h1, misses = m2 - m1;
    double rate = hits + misses ? (double)hits / (double)(hits + misses) : 0;
    cr_log_info("routing: steady-state cache hit rate %.1f%% (%lld hits, %lld misses over %d streams)", 100 * rate,
                hits, misses, 2 * n);
    cr_assert_eq(hits + misses, 2 * n, "expected one cache lookup per stream open");
    cr_expect_gt(rate, 0.95, "cache hit rate %.1f%% (> 95%% expected)", 100 * rate);
}
