/* The `drape` subcommands' options: one table per subcommand, in the style of
 * draped's (server/config.c), read by one parser. Each entry names the flag,
 * its type, where the value goes in the command's options struct, its
 * default, bounds or allowed values, and its help; `--help` is generated from
 * the table.
 *
 * Values go into the struct as: INT, ENUM (the index into values), FLAG (0
 * or 1): int; DOUBLE: double; STRING, PATH: const char * (into argv or the
 * table, never copied).
 *
 * Why not shared with server/config.c: draped's table also reads an
 * environment variable per flag and stores int64_t and fixed char arrays in
 * draped_config. Sharing means an `env` column and those two storage types
 * here, and draped_config's table rewritten onto it; a later step, left out
 * while server/ is being split. */
#ifndef DRAPE_TOOLS_OPTIONS_H
#define DRAPE_TOOLS_OPTIONS_H

#include <math.h>
#include <stddef.h>

typedef enum {
    DRAPE_OPT_INT,    /* a whole number in [min, max] */
    DRAPE_OPT_DOUBLE, /* a finite number in [min, max] */
    DRAPE_OPT_STRING,
    DRAPE_OPT_PATH,   /* a file name: not empty */
    DRAPE_OPT_ENUM,   /* one of values */
    DRAPE_OPT_FLAG,   /* takes no value: present is 1 */
} drape_opt_type;

enum {
    DRAPE_OPT_REQUIRED = 1, /* must be given */
    DRAPE_OPT_GT_MIN = 2,   /* min itself is out of range (> min) */
    DRAPE_OPT_LT_MAX = 4,   /* max itself is out of range (< max) */
};
#define DRAPE_OPT_UNBOUNDED HUGE_VAL

typedef struct {
    const char *name;          /* the flag, without "--" */
    drape_opt_type type;
    size_t off;                /* the value's place in the options struct */
    const char *def;           /* the default as typed on the command line; NULL keeps what the
                                  caller put in the struct (a library's defaults), which --help shows */
    double min, max;           /* INT and DOUBLE, inclusive; ±DRAPE_OPT_UNBOUNDED: none */
    const char *const *values; /* ENUM: the allowed names, NULL-terminated */
    const char *meta;          /* the value in usage lines: N, IN.npy (ENUM: the values) */
    unsigned flags;            /* DRAPE_OPT_REQUIRED, _GT_MIN, _LT_MAX */
    const char *help;
} drape_opt;

/* Table entries: T is the options struct, F its field. */
#define DRAPE_OPT_I(T, F, name, def, lo, hi, meta, flags, help) \
    {name, DRAPE_OPT_INT, offsetof(T, F), def, lo, hi, NULL, meta, flags, help}
#define DRAPE_OPT_D(T, F, name, def, lo, hi, meta, flags, help) \
    {name, DRAPE_OPT_DOUBLE, offsetof(T, F), def, lo, hi, NULL, meta, flags, help}
#define DRAPE_OPT_D_ANY(T, F, name, def, meta, help) /* any finite number */ \
    {name, DRAPE_OPT_DOUBLE, offsetof(T, F), def, -DRAPE_OPT_UNBOUNDED, DRAPE_OPT_UNBOUNDED, NULL, meta, 0, help}
#define DRAPE_OPT_S(T, F, name, def, meta, flags, help) \
    {name, DRAPE_OPT_STRING, offsetof(T, F), def, 0, 0, NULL, meta, flags, help}
#define DRAPE_OPT_P(T, F, name, meta, flags, help) \
    {name, DRAPE_OPT_PATH, offsetof(T, F), NULL, 0, 0, NULL, meta, flags, help}
#define DRAPE_OPT_E(T, F, name, def, values, help) \
    {name, DRAPE_OPT_ENUM, offsetof(T, F), def, 0, 0, values, NULL, 0, help}
#define DRAPE_OPT_F(T, F, name, help) \
    {name, DRAPE_OPT_FLAG, offsetof(T, F), NULL, 0, 0, NULL, NULL, 0, help}

typedef struct {
    const char *name;   /* as typed after `drape`: "infer", "sim garment" */
    const char *about;  /* what the command does, for --help */
    const char *arg;    /* a positional argument (e.g. "MODEL"), required; NULL: none */
    size_t arg_off;     /* where it goes (const char *) */
    const drape_opt *opts;
    int n_opts;
} drape_cmd_spec;

#define DRAPE_OPTS_HELP 1 /* --help was printed: exit 0 */
#define DRAPE_OPTS_BAD 2  /* a usage error was printed: exit 2 */

/* Sets the defaults, then reads argv (the arguments after the command's
 * name): `--name value`, `--name=value`, `--flag`, `-h`/`--help`. Returns 0,
 * DRAPE_OPTS_HELP after printing the help to stdout, or DRAPE_OPTS_BAD after
 * printing to stderr one line that names the option and the bad value, and
 * the usage line. The exit status is drape_opts_status(rc). */
int drape_opts_parse(const drape_cmd_spec *c, void *out, int argc, char **argv);
static inline int drape_opts_status(int rc) { return rc == DRAPE_OPTS_HELP ? 0 : rc; }

/* A usage error found after parsing (one option against another): prints
 * "drape CMD: message" and the usage line; returns DRAPE_OPTS_BAD. */
int drape_opts_fail(const drape_cmd_spec *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A command with subcommands (`drape`, `drape sim`): runs the one argv[0]
 * names with the rest; `--help` lists them (exit 0); none or an unknown one
 * lists them on stderr (exit 2). */
typedef struct {
    const char *name, *summary;
    int (*run)(int argc, char **argv);
} drape_subcmd;
int drape_subcmd_run(const char *prog, const drape_subcmd *s, int n, int argc, char **argv);

#endif
