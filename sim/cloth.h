/* The fast mass-spring cloth engine (DESIGN section 4; Liu et al. 2013 as the
 * seed notebook shows it).
 *
 * Implicit Euler as energy minimization, solved by block coordinate descent:
 * a local step sets each spring's direction d_s to its rest length along the
 * current spring, a global step solves (M/h² + GᵀWG) x = M y/h² + GᵀW d over
 * the free nodes. M and GᵀWG are (node matrix) ⊗ I₃, so the global system is
 * one n_free×n_free matrix with three right-hand sides; it depends on rest
 * data only and is factorized once (CHOLMOD) when the cloth is made. Every
 * step is back-substitutions into workspaces allocated at creation.
 * Everything is double precision. */
#ifndef DRAPE_CLOTH_H
#define DRAPE_CLOTH_H

#include <stdint.h>

#include "../runtime/status.h"

typedef struct drape_cloth drape_cloth;

typedef enum { DRAPE_MASS_UNIT = 0, DRAPE_MASS_AREA = 1 } drape_mass_mode;

typedef struct {
    double dt;        /* time step h, s */
    double gravity;   /* m/s², along −y */
    int iters;        /* local/global iterations per step */
    double ym;        /* spring stiffness scale: k = ym / l0² */
    drape_mass_mode mass;
    double density;   /* kg/m², for DRAPE_MASS_AREA */
} drape_cloth_params;

/* X [n,3] rest positions, faces [F,3]; springs are the unique triangle edges.
 * pins: vertex indices held at their rest positions (eliminated DOFs).
 * Rejects non-finite positions, degenerate triangles, zero-length edges, bad
 * indices and parameters, each with a message. */
int drape_cloth_create(drape_cloth **out, const double *X, int n, const int32_t *faces, int F, const int32_t *pins,
                       int n_pins, const drape_cloth_params *p, drape_error *err);
void drape_cloth_free(drape_cloth *c);

/* One implicit Euler step of the current state. */
int drape_cloth_step(drape_cloth *c, drape_error *err);

/* Current positions [n,3] (read-only view) and velocities. */
const double *drape_cloth_positions(const drape_cloth *c);
const double *drape_cloth_velocities(const drape_cloth *c);
int drape_cloth_nodes(const drape_cloth *c);
int drape_cloth_springs(const drape_cloth *c);
/* How many times the global matrix was factorized (1 for any run). */
int drape_cloth_factorizations(const drape_cloth *c);

/* The step's objective at x [n,3] for the momentum target of the current
 * state: 1/(2h²)‖x − y‖²_M + Σ k/2 (|x_j − x_i| − l0)². */
double drape_cloth_energy(const drape_cloth *c, const double *x);
/* Runs one step like drape_cloth_step but records the objective after every
 * global solve in energies[iters] (for the descent test). */
int drape_cloth_step_traced(drape_cloth *c, double *energies, drape_error *err);

#endif
