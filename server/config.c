#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/backend.h"

typedef enum { OPT_INT, OPT_STR } opt_type;

typedef struct {
    const char *flag, *env;
    opt_type type;
    size_t off, cap; /* offset in draped_config; capacity for strings */
    const char *def;
    int64_t min, max; /* ints: bounds; strings: max length is cap - 1 */
    const char *help;
} opt;

#define I(field, flag, env, def, lo, hi, help) \
    {flag, env, OPT_INT, offsetof(draped_config, field), 0, def, lo, hi, help}
#define S(field, flag, env, def, help) \
    {flag, env, OPT_STR, offsetof(draped_config, field), sizeof(((draped_config *)0)->field), def, 0, 0, help}

static const opt table[] = {
    I(port, "port", "DRAPE_PORT", "8080", 0, 65535, "TCP port (0: any free port, printed at start)"),
    S(bind, "bind", "DRAPE_BIND", "0.0.0.0", "IPv4 address to listen on"),
    S(model, "model", "DRAPE_MODEL", "models/default.safetensors", "model bundle (.safetensors)"),
    S(backend, "backend", "DRAPE_BACKEND", "auto", "auto | cpu | cuda"),
    S(precision, "precision", "DRAPE_PRECISION", "fp32",
      "fp32 | tf32 | bf16 | fp16: the CUDA backend's arithmetic (bf16, fp16: the conv on tensor cores)"),
    I(threads, "threads", "DRAPE_THREADS", "0", 0, 1024, "math threads of the CPU backend (0: all cores)"),
    I(max_batch, "max-batch", "DRAPE_MAX_BATCH", "64", 1, 4096, "frames per batch at most"),
    I(max_delay_us, "max-delay-us", "DRAPE_MAX_DELAY_US", "2000", 0, 1000000,
      "how long the oldest waiting frame may wait for a fuller batch"),
    I(cache_bytes, "cache-bytes", "DRAPE_CACHE_BYTES", "1073741824", 1, INT64_C(1) << 40,
      "identity cache budget in bytes"),
    I(max_identities, "max-identities", "DRAPE_MAX_IDENTITIES", "100000", 1, 10000000,
      "identity ids remembered (evicted ones re-encode on use)"),
    I(max_connections, "max-connections", "DRAPE_MAX_CONNECTIONS", "256", 1, 100000,
      "open stream connections at most"),
    I(max_conn_per_ip, "max-conn-per-ip", "DRAPE_MAX_CONN_PER_IP", "64", 0, 100000,
      "HTTP and stream connections from one client address at most (0: no limit; behind a proxy, 0)"),
    I(header_timeout, "header-timeout", "DRAPE_HEADER_TIMEOUT", "10", 1, 3600,
      "seconds a connection has to send a request's headers, however it trickles them"),
    I(max_avatars, "max-avatars", "DRAPE_MAX_AVATARS", "256", 1, 100000, "avatars per stream connection"),
    I(max_message, "max-message", "DRAPE_MAX_MESSAGE", "1048576", 1024, 1 << 30,
      "bytes of one WebSocket message or HTTP request body"),
    I(send_queue, "send-queue", "DRAPE_SEND_QUEUE", "16777216", 65536, INT64_C(1) << 34,
      "bytes queued for a client that stopped reading before it is closed"),
    I(idle_timeout, "idle-timeout", "DRAPE_IDLE_TIMEOUT", "300", 1, 86400,
      "seconds a stream may stay silent before it is closed"),
    I(error_flood, "error-flood", "DRAPE_ERROR_FLOOD", "100", 1, 1000000,
      "consecutive bad messages that close a stream (1008)"),
    S(api_key_file, "api-key-file", "DRAPE_API_KEY_FILE", "",
      "file with one API key per line; /v1/* then needs 'Authorization: Bearer KEY' (or ?token=KEY, on /v1/stream "
      "only: browsers' WebSockets cannot send headers)"),
    S(tls_cert, "tls-cert", "DRAPE_TLS_CERT", "", "PEM certificate: serve HTTPS/WSS (with --tls-key)"),
    S(tls_key, "tls-key", "DRAPE_TLS_KEY", "", "PEM private key for --tls-cert"),
    S(log_level, "log-level", "DRAPE_LOG_LEVEL", "info", "debug | info | warn | error"),
    S(instance, "instance", "DRAPE_INSTANCE", "", "name in X-Drape-Instance (default: hostname:port)"),
    S(web_root, "web-root", "DRAPE_WEB_ROOT", "web", "folder of the viewer served at /"),
    I(drain_ms, "drain-ms", "DRAPE_DRAIN_MS", "5000", 0, 600000,
      "on SIGTERM, how long to wait for frames in flight before closing streams"),
    /* past 1e4 rad a float angle loses its turn, past 1e6 m a float body its shape */
    I(pose_max_angle, "pose-max-angle", "DRAPE_POSE_MAX_ANGLE", "100", 7, 10000,
      "radians: a pose's axis-angle components beyond this are refused (bad_field)"),
    I(pose_max_trans, "pose-max-trans", "DRAPE_POSE_MAX_TRANS", "10000", 1, 1000000,
      "metres: a pose's root translation beyond this is refused (bad_field)"),
    /* a sprint is 10 m/s, a pirouette 2 turns/s (12.6 rad/s), a kick's knee about 30 rad/s */
    I(cut_speed, "cut-speed", "DRAPE_CUT_SPEED", "25", 0, 100000,
      "m/s: a stream's root moving faster than this between two frames is a cut (history restarts; 0: off)"),
    I(cut_spin, "cut-spin", "DRAPE_CUT_SPIN", "60", 0, 100000,
      "rad/s: a joint turning faster than this between two frames is a cut (history restarts; 0: off)"),
    /* a 10-minute CMU take at 120 fps is about 20 MB of BVH text, an AMASS npz of it 5 MB */
    I(motion_max_bytes, "motion-max-bytes", "DRAPE_MOTION_MAX_BYTES", "16777216", 1024, 64 << 20,
      "bytes of a BVH or npz file sent to POST /v1/motions/convert (413 beyond)"),
    S(motions_dir, "motions-dir", "DRAPE_MOTIONS_DIR", "data/motions",
      "folder of the .npy clips GET /v1/motions lists (missing: an empty list)"),
    I(physics_threads, "physics-threads", "DRAPE_PHYSICS_THREADS", "1", 1, 64,
      "threads simulating physics avatars (mode physics), apart from the neural batcher"),
    S(physics_substeps, "physics-substeps", "DRAPE_PHYSICS_SUBSTEPS", "",
      "GARMENT=N,...: a physics avatar of that garment takes N substeps a frame (1..64) instead of the served 4, "
      "at N/4 times the CPU (docs/server.md, \"Physics\")"),
};
#define N_OPTS (sizeof table / sizeof table[0])

static int set(draped_config *cfg, const opt *o, const char *val, const char *where)
{
    char *dst = (char *)cfg + o->off;
    if (o->type == OPT_STR) {
        if (strlen(val) >= o->cap) {
            fprintf(stderr, "draped: %s: value longer than %zu characters\n", where, o->cap - 1);
            return -1;
        }
        memcpy(dst, val, strlen(val) + 1);
        return 0;
    }
    errno = 0;
    char *end;
    long long v = strtoll(val, &end, 10);
    if (errno || end == val || *end) {
        fprintf(stderr, "draped: %s: '%s' is not an integer\n", where, val);
        return -1;
    }
    if (v < o->min || v > o->max) {
        fprintf(stderr, "draped: %s: %lld is outside [%lld, %lld]\n", where, v, (long long)o->min,
                (long long)o->max);
        return -1;
    }
    *(int64_t *)(void *)dst = v;
    return 0;
}

void draped_config_usage(FILE *f)
{
    fprintf(f, "usage: draped [--flag value | --flag=value]...\n"
               "Every flag has an environment variable; the command line wins.\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt *o = &table[i];
        char bounds[64] = "";
        if (o->type == OPT_INT) snprintf(bounds, sizeof bounds, " [%lld..%lld]", (long long)o->min, (long long)o->max);
        fprintf(f, "  --%-16s %-22s default '%s'%s\n      %s\n", o->flag, o->env, o->def, bounds, o->help);
    }
}

static int check(const draped_config *c)
{
    if (strcmp(c->backend, "auto") && strcmp(c->backend, "cpu") && strcmp(c->backend, "cuda")) {
        fprintf(stderr, "draped: --backend: '%s' is not auto, cpu or cuda\n", c->backend);
        return -1;
    }
    if (drape_precision_parse(c->precision) < 0) {
        fprintf(stderr, "draped: --precision: '%s' is not fp32, tf32, bf16 or fp16\n", c->precision);
        return -1;
    }
    static const char *levels[] = {"debug", "info", "warn", "error"};
    int ok = 0;
    for (int i = 0; i < 4; i++) ok |= !strcmp(c->log_level, levels[i]);
    if (!ok) {
        fprintf(stderr, "draped: --log-level: '%s' is not debug, info, warn or error\n", c->log_level);
        return -1;
    }
    if (!*c->tls_cert != !*c->tls_key) {
        fprintf(stderr, "draped: --tls-cert and --tls-key go together\n");
        return -1;
    }
    return 0;
}

int draped_config_load(draped_config *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < N_OPTS; i++)
        if (set(cfg, &table[i], table[i].def, table[i].flag)) return -1;
    for (size_t i = 0; i < N_OPTS; i++) {
        const char *v = getenv(table[i].env);
        if (v && set(cfg, &table[i], v, table[i].env)) return -1;
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            draped_config_usage(stdout);
            return 1;
        }
        if (strncmp(arg, "--", 2)) {
            fprintf(stderr, "draped: unexpected argument '%s' (see --help)\n", arg);
            return -1;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const opt *o = NULL;
        for (size_t i = 0; i < N_OPTS; i++)
            if (strlen(table[i].flag) == len && !strncmp(table[i].flag, name, len)) o = &table[i];
        if (!o) {
            fprintf(stderr, "draped: unknown flag '%s' (see --help)\n", arg);
            return -1;
        }
        const char *val = eq ? eq + 1 : (a + 1 < argc ? argv[++a] : NULL);
        if (!val) {
            fprintf(stderr, "draped: --%s needs a value\n", o->flag);
            return -1;
        }
        char where[64];
        snprintf(where, sizeof where, "--%s", o->flag);
        if (set(cfg, o, val, where)) return -1;
    }
    return check(cfg);
}
