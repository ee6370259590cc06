/* draped: the Drape daemon. Loads the model, starts the backend, the
 * batcher, the identity cache and the HTTP/WebSocket server, then waits for
 * signals: SIGTERM/SIGINT drain and exit 0; SIGHUP is logged and ignored
 * (docs/server.md says why). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/simd.h"
#include "../runtime/omp_env.h"
#include "app.h"

static uint64_t file_digest(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint64_t h = DRAPE_HASH64_INIT;
    if (!f) return h;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = drape_hash64(h, buf, n);
    fclose(f);
    return h;
}

static int load_keys(draped *d)
{
    if (!*d->cfg.api_key_file) return 0;
    FILE *f = fopen(d->cfg.api_key_file, "r");
    if (!f) {
        LOG_ERROR("--api-key-file: cannot read '%s'", d->cfg.api_key_file);
        return -1;
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        line[n] = 0;
        while (n && (line[n - 1] == ' ' || line[n - 1] == '\t')) line[--n] = 0;
        if (!n || line[0] == '#') continue;
        char **k = realloc(d->keys, sizeof(char *) * (size_t)(d->n_keys + 1));
        if (!k) break;
        d->keys = k;
        d->keys[d->n_keys++] = strdup(line);
    }
    fclose(f);
    if (!d->n_keys) {
        LOG_ERROR("--api-key-file: '%s' holds no keys", d->cfg.api_key_file);
        return -1;
    }
    return 0;
}

static void cleanup(draped *d)
{
    draped_http_stop(d);
    if (d->batcher) drape_batcher_free(d->batcher);
    draped_physics_stop(d->physics); /* no cloth is stepped past here */
    drape_idcache_free(d->cache);    /* frees the rigs through the pool's ops: the pool goes after it */
    draped_physics_free(d->physics);
    drape_backend_free(d->be);
    drape_model_free(d->model);
    for (int i = 0; i < d->n_keys; i++) free(d->keys[i]);
    free(d->keys);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
}

int main(int argc, char **argv)
{
    drape_omp_env(argv);
    static draped d;
    int rc = draped_config_load(&d.cfg, argc, argv);
    if (rc) return rc > 0 ? 0 : 2;
    static const char *levels[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(d.cfg.log_level, levels[i])) drape_log_level = i;
    draped_streams_init(&d);
    atomic_store(&d.healthy, 1);

    /* every thread inherits this mask; main takes the signals with sigwait */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    drape_error err = {0};
    if (load_keys(&d)) goto fail;
    if (drape_model_load(&d.model, d.cfg.model, &err)) {
        LOG_ERROR("model: %s", err.msg);
        goto fail;
    }
    d.digest = file_digest(d.cfg.model);
    drape_backend_opts bo = {.threads = (int)d.cfg.threads, .precision = drape_precision_parse(d.cfg.precision)};
    if (drape_backend_create(&d.be, d.cfg.backend, d.model, &bo, &err)) {
        LOG_ERROR("backend: %s", err.msg);
        goto fail;
    }
    if (drape_idcache_create(&d.cache, d.be, d.digest, (size_t)d.cfg.cache_bytes, (int)d.cfg.max_identities)) {
        LOG_ERROR("identity cache: out of memory");
        goto fail;
    }
    if (drape_batcher_create(&d.batcher, d.be, (int)d.cfg.max_batch, (int)d.cfg.max_delay_us, &err)) {
        LOG_ERROR("%s", err.msg);
        goto fail;
    }
    if (draped_physics_create(&d.physics, d.model, (int)d.cfg.physics_threads, d.cfg.physics_substeps, &err)) {
        LOG_ERROR("%s", err.msg);
        goto fail;
    }
    if (draped_http_start(&d)) goto fail;
    if (*d.cfg.instance) snprintf(d.instance, sizeof d.instance, "%s", d.cfg.instance);
    else {
        char host[128] = "localhost";
        gethostname(host, sizeof host - 1);
        snprintf(d.instance, sizeof d.instance, "%s:%d", host, d.port);
    }
    LOG_INFO("draped %s listening on %s:%d (instance %s, model %s, backend %s, cpu build %s, max_batch %lld, "
             "max_delay_us %lld)",
             DRAPED_VERSION, d.cfg.bind, d.port, d.instance, d.cfg.model, drape_backend_name(d.be), drape_simd_build(),
             (long long)d.cfg.max_batch, (long long)d.cfg.max_delay_us);
    /* the line tests and scripts wait for (the port matters with --port 0) */
    printf("draped: listening on %s://%s:%d\n", *d.cfg.tls_cert ? "https" : "http", d.cfg.bind, d.port);
    fflush(stdout);

    for (;;) {
        int sig = 0;
        sigwait(&sigs, &sig);
        if (sig == SIGHUP) {
            LOG_WARN("SIGHUP: model reload is not supported; restart the replica to load a new model");
            continue;
        }
        LOG_INFO("%s: draining streams (up to %lld ms) and exiting", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                 (long long)d.cfg.drain_ms);
        break;
    }
    draped_streams_shutdown(&d);
    drape_batcher_stop(d.batcher);
    draped_physics_stop(d.physics);
    /* a stream past the drain deadline finishes once its last frames are
     * back; one that does not would use what cleanup frees: leave it all to
     * the exit instead */
    if (draped_streams_wait(&d, 5000)) {
        LOG_WARN("streams still open after the pools stopped: exiting without freeing what they use");
        return 0;
    }
    cleanup(&d);
    LOG_INFO("bye");
    return 0;
fail:
    cleanup(&d);
    return 1;
}
