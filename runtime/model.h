/* The model bundle (docs/design.md §3) loaded into memory.
 *
 * Every tensor is validated against the config and copied into one
 * contiguous, 64-byte aligned arena; the structs below are named views into
 * it (network weights keep PyTorch layouts: Linear weight [out,in], conv
 * weight [out,in,3,3]). Tables derived at load (unique edges, the UV raster,
 * UV copies, the conv's runs) are separate allocations owned by the model. */
#ifndef DRAPE_MODEL_H
#define DRAPE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"

#define DRAPE_JOINTS 24
#define DRAPE_POSE_DIM 72
#define DRAPE_MAX_BETAS 16
#define DRAPE_MAX_CONV 16
#define DRAPE_MAX_GARMENTS 64
#define DRAPE_NAME_MAX 64
#define DRAPE_TEACHER_MAX 256 /* a garment's teacher flags (drape_config.teacher), with the NUL */
/* module A's pose history (docs/design.md §2.4; docs/conventions.md): at most this
 * many frames, reaching at most DRAPE_MAX_HISTORY_SPAN - 1 frames back */
#define DRAPE_MAX_HISTORY 8
#define DRAPE_MAX_HISTORY_SPAN 64

typedef struct {
    int format_version, fps;
    int betas;          /* S */
    int bones;          /* B */
    int skin_k;         /* k */
    int hidden;         /* H */
    int z_dim, pose_dim, feat_dim;
    int uv_h, uv_w;     /* Hu, Wu */
    int n_conv, conv[DRAPE_MAX_CONV];
    int latent;         /* d_h */
    int blocks, knn;
    int n_hist, hist[DRAPE_MAX_HISTORY]; /* frames module A sees, offsets back from t, oldest
                                            first, the last 0: docs/design.md §2.4's {2, 1, 0} by default */
    float beta_min, beta_max;
    int n_garments;
    /* the refine step after module A, per garment (runtime/refine.h;
     * docs/conventions.md "The refine step"); iters 0: off */
    struct { int iters; float stiffness, margin; double rho; } refine[DRAPE_MAX_GARMENTS];
    char garments[DRAPE_MAX_GARMENTS][DRAPE_NAME_MAX];
    /* the teacher it was trained against (docs/design.md §3.3): per garment the
     * `drape sim garment` flags, the common ones then the garment's own;
     * has_teacher 0: the bundle carries none */
    int has_teacher;
    char teacher[DRAPE_MAX_GARMENTS][DRAPE_TEACHER_MAX];
    /* train/'s worn-in start before each clip ("KIND:SEED:SECONDS" of its
     * motion generator; "" for none), read only to be named: the C teacher
     * cannot play it, so `drape sim garment` says its frames start from rest */
    char teacher_prelude[DRAPE_MAX_GARMENTS][64];
    /* the config's "untrained": 1 for a garment no network was trained for
     * (`drape garment add`, docs/garments.md): it runs in lbs and physics
     * modes, never neural */
    int untrained[DRAPE_MAX_GARMENTS];
    /* 1: the garment's network was trained on another body (the config's
     * "stale_networks", set by `drape body import`; docs/body.md) */
    int stale_net[DRAPE_MAX_GARMENTS];
    /* the physics mode's pull towards the skinned garment for this garment,
     * 1/s² per unit mass (the config's "physics": {"<garment>": {"pull": K}},
     * docs/design.md §3.3), where has_pull is 1; else the served settings' own */
    struct { int has_pull; double pull; } physics[DRAPE_MAX_GARMENTS];
} drape_config;

/* y[n,out] = x[n,in] · wᵀ + b */
typedef struct { const float *w, *b; int in, out; } drape_linear;
/* Linear → ReLU → Linear → LayerNorm (MeshGraphNet MLP) */
typedef struct { drape_linear l0, l1; const float *ln_w, *ln_b; } drape_mlp_ln;
/* 3×3 conv, stride 1, padding 1; w [out,in,3,3] */
typedef struct { const float *w, *b; int in, out; } drape_conv;

/* A run of needed texels: a half-open range of flat positions of one row of
 * the padded (Hu+2)×(Wu+2) map, never touching its border. */
typedef struct { int begin, end; } drape_span;

/* The network of modules A and B: views into the arena. */
typedef struct {
    /* module A */
    const float *in_mean, *in_std; /* [drape_bonenet_in(cfg)] */
    const float *in_min, *in_max;  /* optional (both or neither, NULL: none): the raw inputs'
                                      range in training, which clamps them (docs/design.md §3.3) */
    drape_linear bonenet[4], pose_embed, modulator[3];
    drape_conv conv[DRAPE_MAX_CONV];
    /* module B */
    drape_mlp_ln node_embed, edge_embed;
    drape_mlp_ln *edge_mlp, *node_mlp; /* [blocks] */
    drape_linear head_z[2], head_dw[2], head_feat;
} drape_net;

typedef struct {
    char name[DRAPE_NAME_MAX];
    int V, F, Nuv;
    const float *rest;         /* [V,3] */
    const int32_t *faces;      /* [F,3] */
    const float *uv;           /* [Nuv,2] */
    const int32_t *uv_faces;   /* [F,3] */
    const float *bones;        /* [B,3] */
    const float *bone_joint_w; /* [B,24] */
    const int32_t *skin_idx;   /* [V,k] */
    const float *skin_w0;      /* [V,k] */
    const int32_t *body_nn;    /* [V] */
    const int32_t *bone_body_nn; /* [B] */
    int n_attach;              /* optional garment.<g>.attach: 0 when the bundle has none */
    const int32_t *attach;     /* [n_attach] vertices the simulator attaches, ascending */
    /* derived at load */
    int n_edges;
    int32_t *edges;            /* [n_edges,2] unique undirected, i < j */
    int32_t *texel_face;       /* [Hu*Wu] face index or -1 */
    float *texel_bary;         /* [Hu*Wu,3] */
    int n_cov;
    int32_t *cov_texel;        /* [n_cov] covered texels, ascending i*Wu+j */
    int32_t *copy_start;       /* [V+1] CSR over copy_uv */
    int32_t *copy_uv;          /* distinct uv indices per vertex */
    /* conv: the texels each layer computes, as runs; [0] is the input map,
     * [l+1] the output of conv layer l */
    int n_spans[DRAPE_MAX_CONV + 1];
    drape_span *spans[DRAPE_MAX_CONV + 1];
    int64_t active_texels[DRAPE_MAX_CONV + 1]; /* texels in those runs */
} drape_garment;

typedef struct drape_model {
    drape_config cfg;
    /* body (docs/design.md §2.1) */
    int Nb, Fb;
    const float *v_template;   /* [Nb,3] */
    const float *shapedirs;    /* [Nb,3,S] */
    const float *J_regressor;  /* [24,Nb] */
    const float *weights;      /* [Nb,24] */
    int32_t parents[DRAPE_JOINTS];
    const int32_t *body_faces; /* [Fb,3] */
    int n_body_edges;
    int32_t *body_edges;       /* [n,2] derived */
    drape_garment garments[DRAPE_MAX_GARMENTS];
    drape_net net; /* the shared network (docs/design.md §3's tensor names) */
    /* garments with a network of their own (garment.<g>.net.<name>, every
     * name of the shared network; docs/conventions.md "A garment's own
     * network"): own[g] is a view of this model, the same body, garments and
     * arena, whose `net` is that garment's; NULL for a garment that uses the
     * shared one. A view's own[] is all NULL and it owns none of the storage. */
    struct drape_model *own[DRAPE_MAX_GARMENTS];
    int n_own;
    int is_view;
    /* storage and facts for `drape info` */
    unsigned char *arena;
    size_t arena_bytes, derived_bytes, file_bytes;
    int n_tensors, n_unused_tensors;
} drape_model;

/* Bone-Net's input width (docs/design.md §2.4 step 2): F positions and F - 1
 * differences per bone for a history of F frames; 15B for three frames */
static inline int drape_bonenet_in(const drape_config *c) { return (2 * c->n_hist - 1) * 3 * c->bones; }

int drape_model_load(drape_model **out, const char *path, drape_error *err);
void drape_model_free(drape_model *m);
/* The model whose shared network is the one garment g runs: a view with
 * g's own network, or m itself. Backends are made per network from these
 * (runtime/backend.c), so a kernel only ever sees one network. */
static inline const struct drape_model *drape_model_for_garment(const struct drape_model *m, int g)
{
    return m->own[g] ? m->own[g] : m;
}
/* index of a garment by name, or DRAPE_ENOTFOUND */
int drape_model_garment(const drape_model *m, const char *name);
/* a garment name a bundle may hold: 1-63 of [A-Za-z0-9_-] */
int drape_model_name_ok(const char *s);
/* Validates betas for this model: count <= S, finite, within beta_range. */
int drape_model_check_betas(const drape_model *m, const float *betas, int n, drape_error *err);

#endif
