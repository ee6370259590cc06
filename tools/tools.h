/* The `drape` tool's subcommands, one file each. */
#ifndef DRAPE_TOOLS_H
#define DRAPE_TOOLS_H

#include "../runtime/model.h"
#include "../runtime/npy.h"
#include "../sim/metrics.h"
#include "options.h"

int drape_cmd_sim(int argc, char **argv);     /* sim_cmd.c */
int drape_cmd_metrics(int argc, char **argv); /* metrics_cmd.c */
int drape_cmd_load(int argc, char **argv);    /* load_cmd.c */
int drape_cmd_eval(int argc, char **argv);    /* eval_cmd.c */
int drape_cmd_motion(int argc, char **argv);  /* motion_cmd.c */
int drape_cmd_garment(int argc, char **argv); /* garment_cmd.c */
int drape_cmd_body(int argc, char **argv);    /* body_cmd.c */

/* Shared by the subcommands (drape.c); each prints its one-line message to
 * stderr, prefixed "drape CMD: ". */
int drape_tool_die(const char *cmd, const drape_error *e); /* returns 1 */
/* comma-separated floats; 0, or −1 when malformed or more than max */
int drape_tool_parse_floats(const char *s, float *out, int max, int *n);

/* The options every garment command takes: --model, --garment, --betas,
 * --poses; in the options struct T as its member `job`. */
typedef struct { const char *model, *garment, *betas, *poses; } drape_tool_job_args;
#define DRAPE_TOOL_JOB_OPTS(T)                                                                                    \
    DRAPE_OPT_P(T, job.model, "model", "MODEL", DRAPE_OPT_REQUIRED, "the model bundle (.safetensors)"),         \
    DRAPE_OPT_S(T, job.garment, "garment", NULL, "NAME", DRAPE_OPT_REQUIRED,                                    \
                "a garment of the model (drape info lists them)"),                                              \
    DRAPE_OPT_S(T, job.betas, "betas", NULL, "b0,b1,...", 0,                                                    \
                "body shape: up to 16 numbers, each in the model's beta range; missing ones are 0"),           \
    DRAPE_OPT_P(T, job.poses, "poses", "IN.npy", DRAPE_OPT_REQUIRED,                                            \
                "float32 [T, 75]: per frame 72 axis-angle values (SMPL joint order), then the translation")

/* --backend and --threads, in T's members `backend` (an index into
 * drape_tool_backends) and `threads`; one default, auto, for every command. */
extern const char *const drape_tool_backends[]; /* "auto", "cpu", "cuda" */
#define DRAPE_TOOL_BACKEND_OPTS(T)                                                                                \
    DRAPE_OPT_E(T, backend, "backend", "auto", drape_tool_backends,                                             \
                "where the model runs: auto is cuda when built and a GPU is present, else cpu"),              \
    DRAPE_OPT_I(T, threads, "threads", "0", 0, 256, "N", 0, "math threads of the CPU backend (0: the default)")

/* frames of the posed body the judging commands (eval, metrics) make at a
 * time: a long sequence's bodies are not held whole (a body frame is as
 * large as a garment frame) */
#define DRAPE_TOOL_BODY_CHUNK 64

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

/* The judging commands' pass (eval_cmd.c): k vertex sequences X[i] [T,V,3]
 * of the job's garment judged in one pass over its frames, the body posed
 * DRAPE_TOOL_BODY_CHUNK frames at a time (sim/metrics.h), each against
 * ref[i] (NULL: none); s[i] their summaries. k ≤ DRAPE_TOOL_JUDGE_MAX. */
#define DRAPE_TOOL_JUDGE_MAX 3
int drape_tool_judge(const drape_tool_job *j, int k, const float *const X[], const float *const ref[],
                     drape_metrics_summary s[], drape_error *e);

#endif
