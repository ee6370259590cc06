/* Status codes and error messages shared by every module.
 * Functions return DRAPE_OK (0) or a negative drape_status; where a caller
 * needs to know *what* was wrong, a drape_error carries a message that names
 * the tensor, field or argument. */
#ifndef DRAPE_STATUS_H
#define DRAPE_STATUS_H

#include <stddef.h>

typedef enum {
    DRAPE_OK = 0,
    DRAPE_EINVAL = -1,    /* bad argument or value */
    DRAPE_ENOMEM = -2,    /* allocation failed */
    DRAPE_EIO = -3,       /* file could not be read or written */
    DRAPE_EFORMAT = -4,   /* malformed file: header, JSON, offsets */
    DRAPE_ESHAPE = -5,    /* tensor shape disagrees with the config */
    DRAPE_EDTYPE = -6,    /* unsupported or wrong dtype */
    DRAPE_ENONFINITE = -7,/* NaN or Inf where finite values are required */
    DRAPE_ENOTFOUND = -8, /* missing tensor, garment or key */
    DRAPE_ERANGE = -9,    /* value outside its allowed range */
    DRAPE_EBACKEND = -10, /* backend failure (device error, ...) */
    DRAPE_ENOTSUP = -11   /* backend not built or not available */
} drape_status;

#define DRAPE_ERRMSG_MAX 320

typedef struct {
    int code;
    char msg[DRAPE_ERRMSG_MAX];
} drape_error;

const char *drape_strerror(int code);

/* Records code and a printf-style message in err (if not NULL); returns code
 * so callers can write `return drape_fail(err, DRAPE_EINVAL, "...")`. */
int drape_fail(drape_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to err->msg (truncating), e.g. the file's path. */
void drape_error_prefix(drape_error *err, const char *prefix);

#endif
