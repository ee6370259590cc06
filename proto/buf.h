/* A growable byte buffer: what every encoder in proto/ appends to. */
#ifndef DRAPE_BUF_H
#define DRAPE_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *p;
    size_t len, cap;
} drape_buf;

/* Each returns DRAPE_OK or DRAPE_ENOMEM (the buffer is left as it was). */
int drape_buf_reserve(drape_buf *b, size_t extra);
int drape_buf_append(drape_buf *b, const void *data, size_t n);
int drape_buf_printf(drape_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void drape_buf_free(drape_buf *b); /* and zero it */

#endif
