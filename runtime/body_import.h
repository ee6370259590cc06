/* A body of one's own (docs/body.md): a body in SMPL's .npz layout read and
 * checked, and a bundle rewritten around it with its garments refitted.
 *
 * The file holds SMPL's arrays under SMPL's names: v_template [N,3],
 * shapedirs [N,3,S'], J_regressor [24,N] (dense), weights [N,24],
 * kintree_table [2,24] (SMPL's joint tree, nothing else), f [F,3]; posedirs
 * may be there and is ignored (Drape's body has no pose correctives,
 * docs/design.md §2.1). Floats may be float32 or float64, indices any
 * little-endian integer type; stored (numpy.savez) or deflated
 * (savez_compressed) entries. */
#ifndef DRAPE_BODY_IMPORT_H
#define DRAPE_BODY_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"
#include "model.h"

#define DRAPE_BODY_MAX_FILE ((size_t)2 << 30)     /* bytes of the .npz */
#define DRAPE_BODY_MAX_ARRAY ((size_t)1 << 30)    /* bytes of one array, inflated */
#define DRAPE_BODY_MAX_VERTICES (1 << 20)
#define DRAPE_BODY_MAX_FACES (1 << 21)
#define DRAPE_BODY_MAX_COORD 10.0f /* m: a template beyond this is in other units (SMPL's are metres) */
/* A garment vertex that was outside the old body keeps at least
 * min(its old clearance, this) outside the new one (docs/body.md). */
#define DRAPE_BODY_CLEARANCE 0.005

/* SMPL's joint tree (docs/design.md §2); the names are runtime/motion.h's
 * drape_smpl_joint_names. */
extern const int32_t drape_smpl_parents[DRAPE_JOINTS];

typedef struct {
    int N, F;
    int S;            /* shape directions kept: the first `betas` asked for */
    int S_file;       /* shape directions in the file */
    int has_posedirs; /* the file had posedirs (ignored) */
    float *v_template;  /* [N,3] */
    float *shapedirs;   /* [N,3,S] */
    float *J_regressor; /* [24,N] */
    float *weights;     /* [N,24] */
    int32_t *faces;     /* [F,3] */
} drape_smpl_body;

/* Reads and checks an SMPL-layout npz held in memory; betas: the shape
 * directions wanted (the file must have at least as many). Every refusal
 * names the array and what is wrong with it. */
int drape_smpl_read(drape_smpl_body *b, const uint8_t *zip, size_t len, int betas, drape_error *err);
/* The same from a file (at most DRAPE_BODY_MAX_FILE bytes); messages start
 * with the path. */
int drape_smpl_read_file(drape_smpl_body *b, const char *path, int betas, drape_error *err);
void drape_smpl_free(drape_smpl_body *b);

/* What an import did, per garment. */
typedef struct {
    int vertex_mode;  /* 1: the same mesh as the bundle's body (vertex-to-vertex displacement); 0: by joints */
    int n_garments;
    struct {
        double max_move;  /* m, the largest displacement of a rest vertex */
        int pushed;       /* vertices pushed out to keep their clearance */
        int nn_changed;   /* vertices whose body_nn changed */
        int stale;        /* 1: its network is now flagged as trained on another body */
    } g[DRAPE_MAX_GARMENTS];
} drape_body_report;

/* Writes to out the bundle `in` with the body b: body.* replaced, every
 * garment's rest placement refitted and its rig (bones, bone_joint_w,
 * body_nn, bone_body_nn) recomputed, each garment with a network listed in
 * the config's "stale_networks"; every other tensor and metadata key as it
 * was. source names the body in the config's "body_import" (for people). */
int drape_body_import(const char *in, const drape_smpl_body *b, const char *source, const char *out,
                      drape_body_report *rep, drape_error *err);

#endif
