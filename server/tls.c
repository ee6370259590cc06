/* The TLS certificate and key: libmicrohttpd takes them as PEM text in
 * memory (GnuTLS underneath), so they are read whole here at start. */
#include <stdio.h>
#include <stdlib.h>

#include "http.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 && n < (1 << 20) ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

int draped_tls_load(const draped *d, char **cert, char **key)
{
    *cert = *key = NULL;
    if (!*d->cfg.tls_cert) return 0;
    *cert = slurp(d->cfg.tls_cert);
    *key = slurp(d->cfg.tls_key);
    if (*cert && *key) return 0;
    LOG_ERROR("cannot read the TLS certificate '%s' or key '%s'", d->cfg.tls_cert, d->cfg.tls_key);
    free(*cert);
    free(*key);
    *cert = *key = NULL;
    return -1;
}
