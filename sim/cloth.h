/* The fast mass-spring cloth engine (docs/design.md §4; Liu et al. 2013 as the
 * seed notebook shows it).
 *
 * Implicit Euler as energy minimization, solved by block coordinate descent:
 * a local step sets each spring's direction d_s to its rest length along the
 * current spring, a global step solves (M/h² + GᵀWG) x = M y/h² + GᵀW d over
 * the free nodes. M and GᵀWG are (node matrix) ⊗ I₃, so the global system is
 * one n_free×n_free matrix with three right-hand sides; it depends on rest
 * data only and is factorized once (CHOLMOD) when the cloth is made. Every
 * step is back-substitutions into workspaces allocated at creation.
 * Everything is double precision.
 *
 * What depends on rest data only (springs, masses, the factor) is a
 * drape_cloth_system, immutable once made: any number of cloths, each its
 * own state, can share one (the server's physics avatars of one identity). */
#ifndef DRAPE_CLOTH_H
#define DRAPE_CLOTH_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"

#include "collide.h"

typedef struct drape_cloth drape_cloth;
typedef struct drape_cloth_system drape_cloth_system;

typedef enum { DRAPE_MASS_UNIT = 0, DRAPE_MASS_AREA = 1 } drape_mass_mode;

typedef struct {
    double dt;        /* time step h, s */
    double gravity;   /* m/s², along −y */
    int iters;        /* local/global iterations per step */
    double ym;        /* spring stiffness scale: k = ym / l0² */
    drape_mass_mode mass;
    double density;   /* kg/m², for DRAPE_MASS_AREA */
    /* Garment extras; zero (the default of a designated initializer) leaves
     * each off, which is the notebook's model. */
    double bend;      /* bending springs across interior edges: k = bend / l0² */
    double attach;    /* soft attachment weight, N/m: energy attach/2 |x − target|² */
    double damping;   /* velocity scaled by (1 − damping) after every step, in [0, 1) */
    double margin;    /* collision: distance kept from the collider surface, m */
    double friction;  /* collision: Coulomb coefficient against the surface's motion, in [0, 1] */
    /* Chebyshev semi-iteration over the local/global iterations (Wang 2015):
     * rho, the estimated spectral radius of one iteration, in [0, 1); 0: off.
     * From the third iteration on, each result is pushed past the last two
     * by the Chebyshev weights, which converges in fewer iterations. */
    double cheby;
    /* A guide, 1/s²: every free vertex pulled towards a target of the
     * caller's (drape_cloth_set_guide) with energy guide/2 · m_i |x_i − g_i|²,
     * a spring of natural frequency √guide/2π per vertex whatever its mass.
     * It adds m_i·guide to the constant matrix; 0: off. */
    double guide;
} drape_cloth_params;

/* X [n,3] rest positions, faces [F,3]; springs are the unique triangle edges.
 * pins: vertex indices held at their rest positions (eliminated DOFs).
 * Rejects non-finite positions, degenerate triangles, zero-length edges, bad
 * indices and parameters, each with a message. */
int drape_cloth_create(drape_cloth **out, const double *X, int n, const int32_t *faces, int F, const int32_t *pins,
                       int n_pins, const drape_cloth_params *p, drape_error *err);
/* The same with soft attachments: attach [n_attach] vertex indices (distinct,
 * not pinned), each pulled towards its target with weight p->attach (> 0).
 * Targets start at the rest positions; the term adds attach·I to those rows
 * of the constant matrix, and the moving targets enter the right-hand side
 * only. */
int drape_cloth_create_attached(drape_cloth **out, const double *X, int n, const int32_t *faces, int F,
                                const int32_t *pins, int n_pins, const int32_t *attach, int n_attach,
                                const drape_cloth_params *p, drape_error *err);
void drape_cloth_free(drape_cloth *c);

/* The shared part alone: the arguments and checks of
 * drape_cloth_create_attached. Read-only afterwards, so any threads may step
 * cloths over it at once; it must outlive them. */
int drape_cloth_system_create(drape_cloth_system **out, const double *X, int n, const int32_t *faces, int F,
                              const int32_t *pins, int n_pins, const int32_t *attach, int n_attach,
                              const drape_cloth_params *p, drape_error *err);
void drape_cloth_system_free(drape_cloth_system *s);
/* bytes the system holds (its arrays and factor) */
size_t drape_cloth_system_bytes(const drape_cloth_system *s);
/* A cloth over s (not owned), in the state a new drape_cloth_create_attached
 * would be in: rest positions, zero velocity, targets at rest. */
int drape_cloth_create_on(drape_cloth **out, const drape_cloth_system *s, drape_error *err);
/* bytes of one cloth's state and workspaces (without its system) */
size_t drape_cloth_bytes(const drape_cloth *c);
const drape_cloth_system *drape_cloth_get_system(const drape_cloth *c);
/* Steps from now on over s, the state kept: s is the same cloth's system
 * with other step settings (a substep's length, its damping), made the same
 * way. DRAPE_EINVAL (and nothing changed) when its layout differs. */
int drape_cloth_use_system(drape_cloth *c, const drape_cloth_system *s, drape_error *err);
/* Back to the state of a new cloth over the same system (positions, velocities,
 * targets, the springs' remembered directions): what follows is what a new
 * cloth would do. The collider stays set. */
void drape_cloth_reset(drape_cloth *c);

/* targets [n_attach,3], in the order of the attach indices given at creation */
int drape_cloth_set_targets(drape_cloth *c, const double *targets, drape_error *err);
/* guide [n,3]: the guide's targets (params.guide > 0), until the next call;
 * a new or reset cloth's are its rest positions. */
int drape_cloth_set_guide(drape_cloth *c, const double *guide, drape_error *err);
/* x, v [n,3] (v may be NULL: zero): the current state; pinned vertices keep
 * their rest positions and zero velocity. */
int drape_cloth_set_state(drape_cloth *c, const double *x, const double *v, drape_error *err);
/* Collider applied after every step (NULL: none); not owned, must outlive
 * the steps; one cloth's (its points' memory is this cloth's). */
void drape_cloth_set_collider(drape_cloth *c, drape_collider *col);

/* One implicit Euler step of the current state. */
int drape_cloth_step(drape_cloth *c, drape_error *err);

/* Current positions [n,3] (read-only view) and velocities. */
const double *drape_cloth_positions(const drape_cloth *c);
const double *drape_cloth_velocities(const drape_cloth *c);
int drape_cloth_nodes(const drape_cloth *c);
int drape_cloth_springs(const drape_cloth *c);      /* all springs: edges then bending */
int drape_cloth_bend_springs(const drape_cloth *c); /* of which bending */
/* contacts resolved by the collider in the last step */
int drape_cloth_contacts(const drape_cloth *c);
/* How many times the global matrix was factorized (1 for any run). */
int drape_cloth_factorizations(const drape_cloth *c);

/* The step's objective at x [n,3] for the momentum target of the current
 * state: 1/(2h²)‖x − y‖²_M + Σ k/2 (|x_j − x_i| − l0)² + Σ attach/2 |x_a − t_a|²
 * + guide/2 ‖x − g‖²_M over the free vertices. */
double drape_cloth_energy(const drape_cloth *c, const double *x);
/* Runs one step like drape_cloth_step but records the objective after every
 * global solve in energies[iters] (for the descent test). */
int drape_cloth_step_traced(drape_cloth *c, double *energies, drape_error *err);

/* The seed notebook's cloth: X [nx·ny,3] an nx × ny grid of w × h centred
 * on the origin in the z = 0 plane (vertex j·nx + i at column i, row j), and
 * T [2(nx−1)(ny−1),3] each quad split along one diagonal. nx, ny >= 2. */
void drape_grid_mesh(double *X, int32_t *T, int nx, int ny, double w, double h);

#endif
