/* A bundle's garment simulated on its moving body (`drape sim garment`):
 * the garment's waist attached to its plainly skinned positions, the posed
 * body of every frame as a collider, bending springs, area mass. Also the
 * pieces that `drape metrics` shares: the skinned garment and rest shape for
 * a pose sequence, and the posed body of every frame. */
#ifndef DRAPE_GARMENT_SIM_H
#define DRAPE_GARMENT_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "../runtime/model.h"

typedef struct {
    int iters;           /* local/global iterations per substep */
    int substeps;        /* per frame; 0: automatic (see max_disp) */
    int max_substeps;    /* cap of the automatic rule */
    double max_disp;     /* automatic rule: the fewest substeps that keep every body vertex's
                            motion per substep at or below this (m), over the whole sequence */
    int adapt;           /* per frame, up to this many substeps: the run's count doubled until
                            no body vertex moves more than max_disp a substep in this frame (one
                            factor per count, made with the rig); 0: off, the same count always */
    int settle;          /* steps at the first pose before frame 0 */
    double gravity;      /* m/s² along −y */
    double density;      /* kg/m² (area-weighted mass) */
    double stretch;      /* N/m: edge springs k = stretch · mean(l0)² / l0² */
    double bend;         /* N/m: bending springs the same way */
    double attach;       /* N/m: waist attachment weight */
    double attach_band;  /* m: without the bundle's garment.<g>.attach, the attached vertices are those within this of the shaped garment's top */
    double damping;      /* velocity factor (1 − damping) per frame, spread over its substeps */
    double margin;       /* m kept from the body surface */
    double vertex_margin; /* m kept above the nearest body vertex's tangent plane, the collision
                             metric's test (docs/design.md §4); negative: off */
    double friction;     /* tangential velocity factor (1 − friction) on contact */
    double reach;        /* m: how deep inside the body a vertex is still found */
    /* What the served settings add (docs/server.md, "Physics"); 0 leaves
     * each off, the teacher's way. */
    double cell;         /* m: the body grid's cell; 0: a body triangle's width, at least the reach */
    int warm;            /* collider queries start from each vertex's last nearest triangle */
    int track;           /* continuous contact: a vertex the body passed in a substep goes back to its side */
    double cheby;        /* Chebyshev acceleration of the iterations: the spectral radius estimate; 0: off */
    int plain_search;    /* the collider's queries without their guess (drape_collider_set_plain_search):
                            the same answers, slower; the benchmark's peer */
    double max_stray;    /* m: a run whose vertex strays farther than this, and than twice the
                            garment's size (its rest bounding box's diagonal), from its skinned place
                            (or whose state is not finite) has diverged and starts again; 0: never */
    double guide;        /* 1/s²: every free vertex pulled towards a guide frame (the skinned
                            garment, or frames of the caller's: `drape sim garment --guide`) by a
                            spring of this stiffness per unit mass (drape_cloth_params.guide); the
                            guide moves linearly between frames over the substeps; 0: off (the
                            teacher's way) */
} drape_garment_sim_params;

/* the guide's stiffness when none is given, and the served settings' pull
 * to the skinned garment, 1/s² (docs/training-log.md, "The cloth engine
 * guided by the networks", "A pull towards skinning") */
#define DRAPE_GUIDE_DEFAULT 10.0

/* substep counts a rig can hold with adapt: substeps, twice that, … (1 … 64) */
#define DRAPE_GARMENT_LEVELS 7

/* The defaults documented in docs/conventions.md ("Garment simulation"):
 * the teacher. */
drape_garment_sim_params drape_garment_sim_defaults(void);
/* The served settings (`draped`'s physics mode, `drape sim garment
 * --realtime`): fixed substeps, fewer iterations, the faster collider;
 * docs/server.md gives their cost against the teacher. */
drape_garment_sim_params drape_garment_sim_realtime(void);
/* The served settings for garment gi of m: drape_garment_sim_realtime's,
 * with the pull the bundle gives that garment, if any (drape_config's
 * physics; docs/server.md, "Physics"). gi must be a garment of m. */
drape_garment_sim_params drape_garment_sim_served(const drape_model *m, int gi);

typedef struct {
    int substeps, attached;
    double mean_substeps; /* a frame's after the first, on average (more than substeps with adapt) */
    int resets;          /* frames where the run diverged and started again (max_stray) */
    double contacts;     /* mean vertices in contact per frame */
    double setup_ms, settle_ms, ms_per_frame; /* wall clock */
    double cpu_ms_per_frame;                   /* this process's CPU time */
} drape_garment_sim_stats;

/* out [T,V,3]: world positions of garment gi for poses [T,75] (float32,
 * the conventions of `drape infer`). Frame 0 is the garment skinned to the
 * first pose and settled there; later frames move the attachment targets
 * and the body linearly between frames over the substeps. stats may be NULL. */
int drape_garment_simulate(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses, int T,
                           const drape_garment_sim_params *p, float *out, drape_garment_sim_stats *stats,
                           drape_error *err);

/* A simulation fed one pose at a time, as a stream is (the server's physics
 * mode; drape_garment_simulate is a loop over it).
 *
 * The rig is what depends on (model, garment, betas, settings, substeps)
 * only: the shaped rest, the shaped body, the attachment set and the cloth
 * system with its factor. Immutable once made: any number of runs on any
 * threads share it, and it must outlive them. A run is one garment's state
 * (cloth, body collider, the last pose's skinning) over a rig; one thread at
 * a time. */
typedef struct drape_garment_rig drape_garment_rig;
typedef struct drape_garment_run drape_garment_run;

int drape_garment_rig_create(drape_garment_rig **out, const drape_model *m, int gi, const float *betas, int n_betas,
                             const drape_garment_sim_params *p, int substeps, drape_error *err);
void drape_garment_rig_free(drape_garment_rig *r);
size_t drape_garment_rig_bytes(const drape_garment_rig *r);
int drape_garment_rig_substeps(const drape_garment_rig *r);
int drape_garment_rig_attached(const drape_garment_rig *r);
/* the attached vertices themselves [drape_garment_rig_attached] */
const int32_t *drape_garment_rig_attach_set(const drape_garment_rig *r);
int drape_garment_rig_vertices(const drape_garment_rig *r);

int drape_garment_run_create(drape_garment_run **out, const drape_garment_rig *r, drape_error *err);
void drape_garment_run_free(drape_garment_run *s);
size_t drape_garment_run_bytes(const drape_garment_run *s);
/* Starts (or starts again) at pose [75]: the garment skinned there, settled
 * for the rig's settle steps; out [V,3] that frame. */
int drape_garment_run_first(drape_garment_run *s, const float *pose, float *out, drape_error *err);
/* The same with settle steps of the caller's choosing (settle >= 0): a
 * server catching a late avatar up settles for about one frame's cost, not
 * the full settle, which on a loaded machine would leave it late again. */
int drape_garment_run_restart(drape_garment_run *s, const float *pose, int settle, float *out, drape_error *err);
/* the run's substeps per frame (the fewest, with adapt) */
int drape_garment_run_substeps(const drape_garment_run *s);
/* the substeps the last frame took (drape_garment_run_next): more than the
 * run's with adapt on a fast frame */
int drape_garment_run_frame_substeps(const drape_garment_run *s);
/* The next frame at pose [75]: the rig's substeps from the previous pose to
 * this one (the first call is drape_garment_run_first). When the state
 * diverges (max_stray), the run starts again at this pose and *reset (may
 * be NULL) is 1. A pose that fails its check leaves the state as it was. */
int drape_garment_run_next(drape_garment_run *s, const float *pose, float *out, int *reset, drape_error *err);
/* The same two with a guide frame [V,3] for this pose (the rig's guide > 0;
 * NULL: the skinned garment): a start (first) is the guide settled there,
 * not the skinned garment. */
int drape_garment_run_first_guided(drape_garment_run *s, const float *pose, const float *guide, float *out,
                                   drape_error *err);
int drape_garment_run_next_guided(drape_garment_run *s, const float *pose, const float *guide, float *out, int *reset,
                                  drape_error *err);
/* vertices in contact in the last substep */
int drape_garment_run_contacts(const drape_garment_run *s);

/* The same guided by frames guide [T,V,3] (p->guide > 0; NULL: the skinned
 * garment), one per pose. */
int drape_garment_simulate_guided(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses,
                                  int T, const float *guide, const drape_garment_sim_params *p, float *out,
                                  drape_garment_sim_stats *stats, drape_error *err);

/* rest [V,3]: the garment retargeted to the body shape, g(β) (docs/design.md §2.3);
 * lbs [T,V,3] (may be NULL): its plain skinning for poses [T,75], what
 * `drape infer --lbs-only` writes. Both through the CPU backend's LBS path. */
int drape_garment_lbs(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses, int T,
                      float *rest, float *lbs, drape_error *err);

/* body [T,Nb,3]: the posed body of every frame (shape, FK, skinning). */
int drape_garment_body_frames(const drape_model *m, const float *betas, int n_betas, const float *poses, int T,
                              float *body, drape_error *err);

/* poses [T,75]: a procedural walk cycle (1 Hz at fps; hips ±0.35 rad, knees
 * bending to 0.6 rad, the root turning ±0.3 rad, 1 m/s along +z) for tests,
 * benchmarks and demos. */
void drape_garment_walk(float *poses, int T, double fps);

/* Waist attachment: the vertices of rest [V,3] within band of its highest y.
 * *idx is malloc'ed. */
int drape_garment_waist(int32_t **idx, int *n, const float *rest, int V, double band, drape_error *err);

#endif
