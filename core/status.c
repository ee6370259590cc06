#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *drape_strerror(int code)
{
    switch (code) {
    case DRAPE_OK: return "ok";
    case DRAPE_EINVAL: return "invalid argument";
    case DRAPE_ENOMEM: return "out of memory";
    case DRAPE_EIO: return "i/o error";
    case DRAPE_EFORMAT: return "malformed file";
    case DRAPE_ESHAPE: return "wrong tensor shape";
    case DRAPE_EDTYPE: return "wrong dtype";
    case DRAPE_ENONFINITE: return "non-finite value";
    case DRAPE_ENOTFOUND: return "not found";
    case DRAPE_ERANGE: return "value out of range";
    case DRAPE_EBACKEND: return "backend error";
    case DRAPE_ENOTSUP: return "not supported";
    default: return "unknown error";
    }
}

int drape_fail(drape_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void drape_error_prefix(drape_error *err, const char *prefix)
{
    if (!err) return;
    char tmp[DRAPE_ERRMSG_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s: ", prefix);
    if (n < 0 || n >= (int)sizeof tmp) return;
    snprintf(tmp + n, sizeof tmp - (size_t)n, "%.*s", (int)(sizeof tmp - (size_t)n - 1), err->msg);
    memcpy(err->msg, tmp, sizeof tmp);
}
