#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 64 /* per command; the parser keeps a seen mark per option */

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

/* INT's bounds: the table's, within int */
static double lo_of(const drape_opt *o) { return o->type == DRAPE_OPT_INT && o->min < INT_MIN ? INT_MIN : o->min; }
static double hi_of(const drape_opt *o) { return o->type == DRAPE_OPT_INT && o->max > INT_MAX ? INT_MAX : o->max; }

/* "[0, 256]", "[0, 1)", "> 0", "<= 1" or "" */
static void bounds(const drape_opt *o, char *buf, size_t n)
{
    *buf = 0;
    if (o->type != DRAPE_OPT_INT && o->type != DRAPE_OPT_DOUBLE) return;
    double lo = lo_of(o), hi = hi_of(o);
    int has_lo = lo > -DRAPE_OPT_UNBOUNDED && (o->type == DRAPE_OPT_DOUBLE || lo > INT_MIN);
    int has_hi = hi < DRAPE_OPT_UNBOUNDED && (o->type == DRAPE_OPT_DOUBLE || hi < INT_MAX);
    int gt = o->flags & DRAPE_OPT_GT_MIN, lt = o->flags & DRAPE_OPT_LT_MAX;
    if (has_lo && has_hi) snprintf(buf, n, "%c%.15g, %.15g%c", gt ? '(' : '[', lo, hi, lt ? ')' : ']');
    else if (has_lo) snprintf(buf, n, "%s %.15g", gt ? ">" : ">=", lo);
    else if (has_hi) snprintf(buf, n, "%s %.15g", lt ? "<" : "<=", hi);
}

static int in_bounds(const drape_opt *o, double d)
{
    double lo = lo_of(o), hi = hi_of(o);
    return (o->flags & DRAPE_OPT_GT_MIN ? d > lo : d >= lo) && (o->flags & DRAPE_OPT_LT_MAX ? d < hi : d <= hi);
}

static void values_list(const drape_opt *o, const char *sep, char *buf, size_t n)
{
    size_t len = 0;
    *buf = 0;
    for (int i = 0; o->values[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? sep : "", o->values[i]);
}

/* "--name META", as in usage lines */
static void flag_text(const drape_opt *o, char *buf, size_t n)
{
    char vals[160];
    if (o->type == DRAPE_OPT_FLAG) { snprintf(buf, n, "--%s", o->name); return; }
    if (o->type == DRAPE_OPT_ENUM) values_list(o, "|", vals, sizeof vals);
    snprintf(buf, n, "--%s %s", o->name, o->type == DRAPE_OPT_ENUM ? vals : o->meta ? o->meta : "VALUE");
}

static void usage_line(const drape_cmd_spec *c, FILE *f)
{
    fprintf(f, "usage: drape %s", c->name);
    if (c->arg) fprintf(f, " %s", c->arg);
    int optional = 0;
    for (int i = 0; i < c->n_opts; i++) {
        char t[200];
        if (!(c->opts[i].flags & DRAPE_OPT_REQUIRED)) { optional = 1; continue; }
        flag_text(&c->opts[i], t, sizeof t);
        fprintf(f, " %s", t);
    }
    fprintf(f, "%s", optional ? " [options]" : "");
}

static void help(const drape_cmd_spec *c, const void *defaults)
{
    usage_line(c, stdout);
    printf("\n%s\n\noptions:\n", c->about);
    for (int i = 0; i < c->n_opts; i++) {
        const drape_opt *o = &c->opts[i];
        const char *v = (const char *)defaults + o->off;
        char t[200], b[80], def[160] = "";
        flag_text(o, t, sizeof t);
        bounds(o, b, sizeof b);
        switch (o->type) {
        case DRAPE_OPT_INT: snprintf(def, sizeof def, "%d", *(const int *)(const void *)v); break;
        case DRAPE_OPT_DOUBLE: snprintf(def, sizeof def, "%g", *(const double *)(const void *)v); break;
        case DRAPE_OPT_ENUM: snprintf(def, sizeof def, "%s", o->values[*(const int *)(const void *)v]); break;
        case DRAPE_OPT_STRING:
        case DRAPE_OPT_PATH: {
            const char *s = *(const char *const *)(const void *)v;
            if (s && *s) snprintf(def, sizeof def, "%s", s);
            break;
        }
        case DRAPE_OPT_FLAG: break;
        }
        char note[300];
        int n = o->flags & DRAPE_OPT_REQUIRED ? snprintf(note, sizeof note, "required")
              : *def                          ? snprintf(note, sizeof note, "default %s", def)
                                              : (*note = 0);
        if (*b) snprintf(note + n, sizeof note - (size_t)n, "%srange %s", n ? "; " : "", b);
        printf("  %-26s%s%s", t, strlen(t) >= 26 ? "\n                            " : "", o->help);
        printf(*note ? " (%s)\n" : "%s\n", note);
    }
    printf("  %-26s%s\n", "-h, --help", "print this help and exit");
}

static int vfail(const drape_cmd_spec *c, const char *fmt, va_list ap)
{
    fprintf(stderr, "drape %s: ", c->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    usage_line(c, stderr);
    fprintf(stderr, "   (drape %s --help lists every option)\n", c->name);
    return DRAPE_OPTS_BAD;
}

int drape_opts_fail(const drape_cmd_spec *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(c, fmt, ap);
    va_end(ap);
    return rc;
}

/* The whole string a number, finite; ints also written as 1e3 or 240.0 (as
 * they were accepted before the table), but whole. */
static int parse_number(const char *s, int whole, double *out)
{
    char *end;
    errno = 0;
    long long i = strtoll(s, &end, 10);
    if (!errno && end != s && !*end) { *out = (double)i; return 0; }
    if (strpbrk(s, "xX")) return -1; /* decimal only: strtod reads 0x10 as 16 */
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(d) || (whole && d != floor(d))) return -1;
    *out = d;
    return 0;
}

static int set(const drape_cmd_spec *c, const drape_opt *o, void *out, const char *val)
{
    void *dst = (char *)out + o->off;
    switch (o->type) {
    case DRAPE_OPT_INT:
    case DRAPE_OPT_DOUBLE: {
        int whole = o->type == DRAPE_OPT_INT;
        double d;
        if (parse_number(val, whole, &d))
            return drape_opts_fail(c, "--%s: '%s' is not a valid number%s", o->name, val, whole ? " (want an integer)" : "");
        if (!in_bounds(o, d)) {
            char b[80];
            bounds(o, b, sizeof b);
            return drape_opts_fail(c, "--%s: %s is out of range, want %s", o->name, val, b);
        }
        if (whole) *(int *)dst = (int)d;
        else *(double *)dst = d;
        return 0;
    }
    case DRAPE_OPT_PATH:
        if (!*val) return drape_opts_fail(c, "--%s: the path is empty", o->name);
        /* fall through */
    case DRAPE_OPT_STRING: *(const char **)dst = val; return 0;
    case DRAPE_OPT_ENUM:
        for (int i = 0; o->values[i]; i++)
            if (!strcmp(val, o->values[i])) { *(int *)dst = i; return 0; }
        char vals[160];
        values_list(o, ", ", vals, sizeof vals);
        return drape_opts_fail(c, "--%s: '%s' is not one of %s", o->name, val, vals);
    case DRAPE_OPT_FLAG: *(int *)dst = 1; return 0;
    }
    return DRAPE_OPTS_BAD;
}

/* the option "--name" or "--name=value" names; NULL when none */
static const drape_opt *find(const drape_cmd_spec *c, const char *arg)
{
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (int i = 0; i < c->n_opts; i++)
        if (strlen(c->opts[i].name) == len && !strncmp(c->opts[i].name, name, len)) return &c->opts[i];
    return NULL;
}

/* whether the argument after arg is arg's value */
static int takes_next(const drape_cmd_spec *c, const char *arg)
{
    const drape_opt *o = strncmp(arg, "--", 2) ? NULL : find(c, arg);
    return o && o->type != DRAPE_OPT_FLAG && !strchr(arg, '=');
}

int drape_opts_parse(const drape_cmd_spec *c, void *out, int argc, char **argv)
{
    if (c->n_opts > MAX_OPTS) return drape_opts_fail(c, "too many options in the table (a bug)");
    for (int i = 0; i < c->n_opts; i++)
        if (c->opts[i].def && set(c, &c->opts[i], out, c->opts[i].def)) return DRAPE_OPTS_BAD;
    /* --help wins wherever it is (but as another option's value), before any
     * value is checked, and shows the defaults */
    for (int a = 0; a < argc; a++) {
        if (is_help(argv[a])) { help(c, out); return DRAPE_OPTS_HELP; }
        if (takes_next(c, argv[a])) a++;
    }
    unsigned char seen[MAX_OPTS] = {0};
    int have_arg = 0;
    for (int a = 0; a < argc; a++) {
        const char *arg = argv[a];
        if (strncmp(arg, "--", 2)) {
            if (!c->arg || have_arg) return drape_opts_fail(c, "unexpected argument '%s'", arg);
            *(const char **)(void *)((char *)out + c->arg_off) = arg;
            have_arg = 1;
            continue;
        }
        const drape_opt *o = find(c, arg);
        const char *eq = strchr(arg, '=');
        if (!o) return drape_opts_fail(c, "unknown option '%.*s'", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        if (o->type == DRAPE_OPT_FLAG && eq) return drape_opts_fail(c, "--%s takes no value", o->name);
        /* a separate value that looks like an option is the value forgotten
         * (`--out --lbs-only`), not a file named so: --out=--x spells one */
        const char *val = o->type == DRAPE_OPT_FLAG ? "" : eq ? eq + 1 : a + 1 < argc ? argv[++a] : NULL;
        if (!val || (!eq && o->type != DRAPE_OPT_FLAG && !strncmp(val, "--", 2)))
            return drape_opts_fail(c, "--%s needs a value", o->name);
        if (set(c, o, out, val)) return DRAPE_OPTS_BAD;
        seen[o - c->opts] = 1;
    }
    for (int i = 0; i < c->n_opts; i++)
        if ((c->opts[i].flags & DRAPE_OPT_REQUIRED) && !seen[i])
            return drape_opts_fail(c, "--%s is required", c->opts[i].name);
    if (c->arg && !have_arg) return drape_opts_fail(c, "%s is required", c->arg);
    return 0;
}

static void list(const char *prog, const drape_subcmd *s, int n, FILE *f)
{
    fprintf(f, "usage: %s COMMAND [options]\n\ncommands:\n", prog);
    for (int i = 0; i < n; i++) fprintf(f, "  %-10s %s\n", s[i].name, s[i].summary);
    fprintf(f, "\n'%s COMMAND --help' lists a command's options.\n", prog);
}

int drape_subcmd_run(const char *prog, const drape_subcmd *s, int n, int argc, char **argv)
{
    if (argc >= 1 && is_help(argv[0])) {
        list(prog, s, n, stdout);
        return 0;
    }
    for (int i = 0; argc >= 1 && i < n; i++)
        if (!strcmp(argv[0], s[i].name)) return s[i].run(argc - 1, argv + 1);
    if (argc >= 1) fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[0]);
    list(prog, s, n, stderr);
    return 2;
}
