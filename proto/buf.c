#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/status.h"

int drape_buf_reserve(drape_buf *b, size_t extra)
{
    if (extra <= b->cap - b->len) return DRAPE_OK;
    if (extra > SIZE_MAX / 2 - b->len) return DRAPE_ENOMEM;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return DRAPE_ENOMEM;
    b->p = p;
    b->cap = cap;
    return DRAPE_OK;
}

int drape_buf_append(drape_buf *b, const void *data, size_t n)
{
    if (drape_buf_reserve(b, n)) return DRAPE_ENOMEM;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    return DRAPE_OK;
}

int drape_buf_printf(drape_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || drape_buf_reserve(b, (size_t)n + 1)) return DRAPE_ENOMEM;
    va_start(ap, fmt);
    vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return DRAPE_OK;
}

void drape_buf_free(drape_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
