#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int drape_log_level = DRAPE_LOG_INFO;

/* One line per message, logfmt: ts=… level=… msg="…" (quotes and control
 * characters escaped), so log shippers can parse every line. */
void drape_log_write(int level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[1024], esc[2100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const char *p = line; *p && o < sizeof esc - 3; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            esc[o++] = '\\';
            esc[o++] = (char)c;
        } else if (c < 0x20) {
            esc[o++] = ' ';
        } else {
            esc[o++] = (char)c;
        }
    }
    esc[o] = 0;
    fprintf(stderr, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s msg=\"%s\"\n", tm.tm_year + 1900, tm.tm_mon + 1,
            tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
            names[level < 0 ? 0 : level > 3 ? 3 : level], esc);
}
