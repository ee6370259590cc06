/* Levelled logging to stderr. The level is process-wide and set once at
 * start-up (drape_log_level); messages below it cost one comparison. */
#ifndef DRAPE_LOG_H
#define DRAPE_LOG_H

enum { DRAPE_LOG_DEBUG = 0, DRAPE_LOG_INFO = 1, DRAPE_LOG_WARN = 2, DRAPE_LOG_ERROR = 3 };

extern int drape_log_level;

void drape_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define DRAPE_LOG(level, ...)                                                  \
    do {                                                                       \
        if ((level) >= drape_log_level) drape_log_write((level), __VA_ARGS__); \
    } while (0)
#define LOG_DEBUG(...) DRAPE_LOG(DRAPE_LOG_DEBUG, __VA_ARGS__)
#define LOG_INFO(...) DRAPE_LOG(DRAPE_LOG_INFO, __VA_ARGS__)
#define LOG_WARN(...) DRAPE_LOG(DRAPE_LOG_WARN, __VA_ARGS__)
#define LOG_ERROR(...) DRAPE_LOG(DRAPE_LOG_ERROR, __VA_ARGS__)

#endif
