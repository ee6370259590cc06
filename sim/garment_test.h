/* Test-only hooks of the garment simulation: what the tests need to force
 * that no program does. Not part of sim/garment.h. */
#ifndef DRAPE_GARMENT_TEST_H
#define DRAPE_GARMENT_TEST_H

#include "garment.h"

/* Gives every free vertex of the run the velocity v [3] (m/s), as a state
 * that has run away would have; the next frame then strays. */
int drape_garment_run_test_kick(drape_garment_run *s, const double v[3], drape_error *err);

#endif
