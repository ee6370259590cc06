/* Shared helpers for the Criterion tests: where the generated bundles are,
 * a seeded RNG, temp files, and running the tools the way a user does. */
#ifndef DRAPE_TEST_UTIL_H
#define DRAPE_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "../runtime/backend.h"
#include "../runtime/model.h"
#include "../runtime/safetensors.h"

/* $DRAPE_DATA/<name>.safetensors (bundles made by `make bundles`) */
const char *tu_bundle(const char *name);
/* loads a bundle or fails the test */
drape_model *tu_load(const char *name);
drape_backend *tu_backend(const drape_model *m);
drape_identity *tu_identity(drape_backend *be, int garment, const float *betas, int n);

/* deterministic uniform [-1, 1) */
float tu_rand(uint64_t *state);
/* poses [T,75]: axis-angle N(0, sigma)-ish per joint, translation scaled */
void tu_random_poses(float *poses, int T, float sigma, float trans, uint64_t seed);

/* a fresh path in a per-process temp dir; the dir is removed at exit */
const char *tu_tmp(const char *name);
/* draped's flag for an API key file holding keys (one per line), written
 * to tu_tmp(name): "--api-key-file PATH" into flags */
void tu_key_file_flag(char *flags, size_t cap, const char *name, const char *keys);
/* draped's flags for TLS with a fresh self-signed certificate for localhost
 * and 127.0.0.1 ("--tls-cert C --tls-key K" into flags; the certificate's
 * path into ca unless NULL). Skips the test when openssl cannot make one. */
void tu_tls_flags(char *flags, size_t cap, char *ca, size_t ca_cap);
/* runs a shell command, captures stderr+stdout into out (may be NULL);
 * returns the exit status */
int tu_run(char *out, int outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Copies a bundle, letting mutate() change or drop tensors (return 0 to drop)
 * and the config text; for the bad-input tests. */
typedef int (*tu_mutate_fn)(const char *name, drape_dtype *dt, int *ndim, int64_t *shape, void *data, void *ctx);
void tu_rewrite(const char *src, const char *dst, tu_mutate_fn fn, const char *config_override, void *ctx);
/* A copy of src whose config gets `extra` (a JSON member) before its last brace. */
void tu_config_plus(const char *src, const char *dst, const char *extra);

double tu_max_abs_diff(const float *a, const float *b, int64_t n);

/* the peak of this process's address space in kB (VmPeak): what a parser
 * asked for, even memory it never touched */
long tu_vm_peak_kb(void);

/* A real draped on an ephemeral loopback port, started the way users start
 * it ($DRAPED_BIN, flags), its log in a temp file. */
typedef struct {
    int pid, port;
    char url[64];     /* http://127.0.0.1:PORT */
    char ws[80];      /* ws://127.0.0.1:PORT/v1/stream */
    char log[512];
} tu_server;
/* bundle: a $DRAPE_DATA name; extra: more flags (may be ""). Fails the test
 * if it does not come up. */
tu_server tu_draped_start(const char *bundle, const char *extra);
/* SIGTERM, wait; returns the exit status (128 + signal when killed). */
int tu_draped_stop(tu_server *s);

#endif
