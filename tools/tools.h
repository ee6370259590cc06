/* The `drape` tool's subcommands, one file each. */
#ifndef DRAPE_TOOLS_H
#define DRAPE_TOOLS_H

#include "../runtime/model.h"
#include "../runtime/npy.h"

int drape_cmd_sim(int argc, char **argv);     /* sim_cmd.c */
int drape_cmd_metrics(int argc, char **argv); /* metrics_cmd.c */
int drape_cmd_load(int argc, char **argv);    /* load_cmd.c */
int drape_cmd_eval(int argc, char **argv);    /* eval_cmd.c */

/* Shared by the subcommands (drape.c); each prints its one-line message to
 * stderr, prefixed "drape CMD: ". */
int drape_tool_die(const char *cmd, const drape_error *e); /* returns 1 */
/* comma-separated floats; 0, or −1 when malformed or more than max */
int drape_tool_parse_floats(const char *s, float *out, int max, int *n);

/* The options every garment command takes: --model, --garment, --betas, --poses. */
typedef struct { const char *model, *garment, *betas, *poses; } drape_tool_job_args;
/* 1 when a (with value v) is one of them, now recorded in j */
int drape_tool_job_opt(drape_tool_job_args *j, const char *a, const char *v);

typedef struct {
    drape_model *m;
    drape_npy poses;  /* [T,75], checked */
    int T, gi;        /* frames, garment index */
    float betas[DRAPE_MAX_BETAS];
    int nb;
} drape_tool_job;
/* Checks that the four are given, parses the betas, reads the poses, loads
 * the model and finds the garment. 0, or the exit status (after a message);
 * drape_tool_job_close is safe either way. */
int drape_tool_job_open(drape_tool_job *j, const char *cmd, const drape_tool_job_args *a);
void drape_tool_job_close(drape_tool_job *j);

#endif
