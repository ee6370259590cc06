/* draped's physics mode (server/physics.c) end to end: a real daemon on a
 * loopback port with the shipped model, driven by Python's websockets
 * (tests/clients/physics_client.py) and curl. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define OUT 131072
static char out[OUT];
static const char *MODEL = "models/default.safetensors";

static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }

static void scenario(tu_server *s, const char *args)
{
    int rc = tu_run(out, OUT, "%s tests/clients/physics_client.py %s %s", py(), s->ws, args);
    cr_assert_eq(rc, 0, "scenario '%s' failed:\n%s", args, out);
    cr_log_info("%s: %s", args, out);
}

static void metrics(tu_server *s)
{
    cr_assert_eq(tu_run(out, OUT, "curl -s -S '%s/metrics'", s->url), 0, "%s", out);
}

/* the value of a metric line "name value" (the first that starts with name) */
static double metric(const char *name)
{
    char key[160];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(out, key);
    cr_assert(p, "no %s in:\n%s", name, out);
    return atof(p + strlen(key));
}

/* Two physics avatars of one identity and a skinned one, at rest: frames
 * flow, stay near skinning, the two physics avatars agree to the bit, and
 * the identity's rig is made once and counted once; closing them frees
 * their cloths (the rig stays cached with its identity). /v1/model lists
 * the mode. */
Test(physics, frames_flow_near_skinning_and_one_rig_serves_an_identity)
{
    tu_server s = tu_draped_start(MODEL, "");
    cr_assert_eq(tu_run(out, OUT, "curl -s -S '%s/v1/model'", s.url), 0, "%s", out);
    cr_assert(strstr(out, "\"modes\":[\"neural\",\"lbs\",\"physics\"]"), "%s", out);
    cr_assert(strstr(out, "\"physics\":{"), "%s", out);
    metrics(&s);
    double bytes0 = metric("drape_cache_bytes");
    scenario(&s, "rest 20");
    metrics(&s);
    cr_assert_eq(metric("drape_physics_rig_builds_total"), 1, "one rig for the identity of two avatars");
    cr_assert_eq(metric("drape_physics_rigs"), 1);
    cr_assert_eq(metric("drape_physics_avatars"), 0, "closed avatars are gone");
    cr_assert_eq(metric("drape_physics_frames_total"), 40);
    cr_assert_eq(metric("drape_avatars"), 0);
    /* the rig is in the cache's bytes: more than module B's outputs */
    cr_assert_gt(metric("drape_cache_bytes") - bytes0, 1e6, "the rig's factor counts in --cache-bytes");
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* The served settings have a name: physics frames are `drape sim garment
 * --realtime` on the same poses and betas, byte for byte. */
Test(physics, frames_are_the_tools_realtime_run_to_the_bit)
{
    tu_server s = tu_draped_start(MODEL, "");
    char args[600];
    snprintf(args, sizeof args, "matches_tool '%s' 0.5,-1 24", MODEL);
    scenario(&s, args);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* --physics-substeps: one garment's frames take more substeps; they are
 * the tool's --realtime run with that --substeps, byte for byte, and
 * /v1/model says which count each garment takes. */
Test(physics, a_garment_given_more_substeps_runs_them)
{
    tu_server s = tu_draped_start(MODEL, "--physics-substeps skirt=8,tshirt=6");
    cr_assert_eq(tu_run(out, OUT, "curl -s -S '%s/v1/model'", s.url), 0, "%s", out);
    cr_assert(strstr(out, "\"garment_substeps\":{\"skirt\":8,\"dress\":4,\"tshirt\":6"), "%s", out);
    char args[600];
    snprintf(args, sizeof args, "matches_tool '%s' 0.5,-1 12 8", MODEL);
    scenario(&s, args);
    cr_assert(strstr(out, " 8 substeps"), "the tool ran 8 substeps: %s", out);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* A garment with its own pull in the bundle (the shipped T-shirt's 640/s²
 * and the skirt's 40, the config's "physics"; the dress has the served 10):
 * /v1/model says so, and the T-shirt's frames are the tool's --realtime run,
 * which takes the same pull from the bundle, byte for byte (the skirt's:
 * frames_are_the_tools_realtime_run_to_the_bit). */
Test(physics, a_garment_with_its_own_pull_takes_it_from_the_bundle)
{
    tu_server s = tu_draped_start(MODEL, "");
    cr_assert_eq(tu_run(out, OUT, "curl -s -S '%s/v1/model'", s.url), 0, "%s", out);
    cr_assert(strstr(out, "\"garment_pull\":{\"skirt\":40.0,\"dress\":10.0,\"tshirt\":640.0}"), "%s", out);
    cr_assert(strstr(out, "\"pull\":10.0"), "%s", out);
    int rc = tu_run(out, OUT, "DRAPE_TEST_GARMENT=tshirt %s tests/clients/physics_client.py %s matches_tool '%s' 0.5,-1 12",
                    py(), s.ws, MODEL);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "pull 640/s^2, the bundle's"), "the tool took the bundle's pull: %s", out);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* A bad --physics-substeps stops draped at start with its reason. */
Test(physics, a_bad_substep_list_is_refused_at_start)
{
    const char *bin = getenv("DRAPED_BIN") ? getenv("DRAPED_BIN") : "build/draped";
    static const char *bad[][2] = {
        {"coat=8", "the model has no garment 'coat'"},
        {"skirt=65", "skirt: '65' is not a count in [1, 64]"},
        {"skirt=0", "skirt: '0' is not a count in [1, 64]"},
        {"skirt=8x", "skirt: '8x' is not a count in [1, 64]"},
        {"skirt", "'skirt' is not GARMENT=N"},
        {"skirt=8,,dress=4", "'' is not GARMENT=N"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_neq(tu_run(out, OUT, "%s --port 0 --model %s --physics-substeps '%s'", bin, MODEL, bad[i][0]), 0,
                      "%s started", bad[i][0]);
        cr_assert(strstr(out, bad[i][1]), "%s: %s", bad[i][0], out);
    }
}

/* Poses faster than the cloth: it skips them (newest wins), counted in the
 * frames' `dropped` and drape_physics_skips_total. */
Test(physics, a_slow_cloth_skips_poses_and_counts_them)
{
    tu_server s = tu_draped_start(MODEL, "");
    scenario(&s, "flood 30");
    metrics(&s);
    cr_assert_gt(metric("drape_physics_skips_total"), 0);
    cr_assert_eq(metric("drape_physics_skips_total"), metric("drape_dropped_poses_total"));
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* reset: true and a detected cut settle the cloth again from skinning: the
 * frames are a fresh avatar's from there. */
Test(physics, a_reset_or_a_cut_settles_again_from_skinning)
{
    tu_server s = tu_draped_start(MODEL, "");
    scenario(&s, "restart reset");
    scenario(&s, "restart detect");
    metrics(&s);
    cr_assert(strstr(out, "drape_stream_cuts_total{reason=\"reset\"} 1"), "%s", out);
    cr_assert(strstr(out, "drape_stream_cuts_total{reason=\"speed\"} 1"), "%s", out);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* --pose-max-trans above the built-in limit: a physics avatar is held to the
 * built-in one at the boundary (bad_field), as its cloth engine is. */
Test(physics, a_physics_pose_past_the_built_in_limits_is_a_bad_field)
{
    tu_server s = tu_draped_start(MODEL, "--pose-max-trans 100000 --cut-speed 0");
    scenario(&s, "beyond_builtin_limits 20000");
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* A cloth flung past the divergence bound is restarted from skinning and
 * reported (physics_reset); a neural avatar beside it is not disturbed. */
Test(physics, a_diverged_cloth_is_reset_and_reported)
{
    tu_server s = tu_draped_start(MODEL, "--cut-speed 0");
    scenario(&s, "diverge 4 4");
    metrics(&s);
    cr_assert_geq(metric("drape_physics_resets_total"), 1);
    cr_assert(strstr(out, "drape_stream_errors_total{code=\"physics_reset\"} "), "%s", out);
    cr_assert_eq(metric("drape_stream_errors_total{code=\"physics_reset\"}"), metric("drape_physics_resets_total"));
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* Physics runs on its own worker: six physics avatars flooding one worker
 * do not hold up a neural avatar's frames on the same connection. */
Test(physics, a_busy_cloth_does_not_delay_a_neural_avatar)
{
    tu_server s = tu_draped_start(MODEL, "--physics-threads 1 --max-delay-us 1000");
    scenario(&s, "busy_neighbour 6 4");
    metrics(&s);
    cr_assert_gt(metric("drape_physics_skips_total"), 0);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* A cache of about two physics identities (a skirt's is 3.05 MB with its
 * rig, 2026-12-06; 4.16 MB before the cloth's factor was stored once): one
 * streaming avatar's rig is never evicted while others come and go; a rig
 * without room is refused with `limit`, nothing else disturbed; rigs of
 * closed avatars are evicted and made again when needed. */
Test(physics, eviction_under_a_small_cache_spares_avatars_in_use)
{
    tu_server s = tu_draped_start(MODEL, "--cache-bytes 7500000");
    scenario(&s, "evict 3");
    metrics(&s);
    cr_assert_gt(metric("drape_cache_evictions_total"), 0);
    cr_assert_gt(metric("drape_physics_rig_builds_total"), 3, "evicted rigs are made again");
    cr_assert_leq(metric("drape_cache_bytes"), 7500000);
    cr_assert(strstr(out, "drape_limit_hits_total{limit=\"cache\"} "), "%s", out);
    cr_assert_gt(metric("drape_limit_hits_total{limit=\"cache\"}"), 0);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* --physics-threads is bounded like every option. */
Test(physics, the_thread_count_is_bounded)
{
    const char *bin = getenv("DRAPED_BIN") ? getenv("DRAPED_BIN") : "build/draped";
    /* a bad option's status, 2, and its message; not a server started */
    cr_assert_eq(tu_run(out, OUT, "%s --physics-threads 0", bin), 2, "%s", out);
    cr_assert(strstr(out, "--physics-threads: 0 is outside [1, 64]"), "%s", out);
    cr_assert_eq(tu_run(out, OUT, "%s --physics-threads 65", bin), 2, "%s", out);
    cr_assert(strstr(out, "--physics-threads: 65 is outside [1, 64]"), "%s", out);
}
