/* The viewer and the client libraries against a real draped serving web/
 * (--web-root web): the viewer in headless Chromium (tests/js/viewer_e2e.mjs,
 * screenshot kept in build/artifacts/viewer.png; tests/js/viewer_key.mjs,
 * the viewer of a server with API keys; tests/js/viewer_shots.mjs,
 * the default model's walk pictured over a loop, side by side and from a
 * dropped BVH, kept in build/artifacts/shots/), poseFromSkeleton against
 * three.js rigs (tests/js/pose_from_skeleton.mjs), the JavaScript client's
 * decoders against the C packers (tests/js/client_formats.mjs) and on
 * hand-made edge cases (tests/js/decoders_unit.mjs), its reconnection
 * (tests/js/client_reconnect.mjs), and the README's
 * libdrape-client example compiled and run. Skipped, saying why, only when
 * web/node_modules (scripts/npm.sh) or Debian's chromium is missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static char out[65536];

static const char *chromium(void) { return getenv("CHROMIUM") ? getenv("CHROMIUM") : "/usr/bin/chromium"; }

static int have_node_modules(void)
{
    const char *need[] = {"web/node_modules/three/build/three.module.js", "web/node_modules/meshoptimizer/package.json",
                          "web/node_modules/ws/package.json", "web/node_modules/playwright-core/index.mjs", NULL};
    for (int i = 0; need[i]; i++)
        if (access(need[i], R_OK)) return 0;
    return 1;
}

#define NEED_NODE_MODULES()                                                                   \
    do {                                                                                      \
        if (!have_node_modules()) cr_skip_test("web/node_modules is missing: run scripts/npm.sh"); \
    } while (0)

/* where the build keeps its outputs: the folder of $DRAPE_BIN (build/ or build-asan/) */
static void build_dir(char *dir, size_t cap)
{
    const char *bin = getenv("DRAPE_BIN") ? getenv("DRAPE_BIN") : "build/drape";
    snprintf(dir, cap, "%s", bin);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, cap, ".");
}

Test(web, serves_the_viewer)
{
    tu_server s = tu_draped_start("tiny_random", "--web-root web");
    const char *files[] = {"/", "/viewer.js", "/drape-client.js", "/msgpack.js", "/body.js", "/motion.js", "/rig.js", "/viewer.css",
                           "/node_modules/three/build/three.module.js", NULL};
    for (int i = 0; files[i]; i++) {
        if (!strncmp(files[i], "/node_modules", 13) && !have_node_modules()) continue;
        int rc = tu_run(out, sizeof out, "curl -s -o /dev/null -w '%%{http_code} %%{content_type}' '%s%s'", s.url, files[i]);
        cr_assert_eq(rc, 0, "%s", out);
        cr_assert(!strncmp(out, "200 ", 4), "GET %s: %s", files[i], out);
        const char *want = strstr(files[i], ".js") ? "text/javascript" : strstr(files[i], ".css") ? "text/css" : "text/html";
        cr_assert(strstr(out, want), "GET %s: %s, want %s", files[i], out, want);
    }
    tu_run(out, sizeof out, "curl -s '%s/'", s.url);
    cr_assert(strstr(out, "\"importmap\"") && strstr(out, "/node_modules/three/build/three.module.js"), "%.400s", out);
    cr_assert_eq(tu_draped_stop(&s), 0);
    /* the rest passed, but three.js was not checked: not a pass */
    if (!have_node_modules()) cr_skip_test("web/node_modules is missing (scripts/npm.sh): three.js was not served");
}

Test(web, viewer_in_chromium)
{
    NEED_NODE_MODULES();
    if (access(chromium(), X_OK)) cr_skip_test("%s is missing (apt-get install chromium)", chromium());
    char dir[512], shot[600];
    build_dir(dir, sizeof dir);
    snprintf(shot, sizeof shot, "%s/artifacts/viewer.png", dir);
    cr_assert_eq(tu_run(out, sizeof out, "mkdir -p %s/artifacts && rm -f %s", dir, shot), 0, "%s", out);
    tu_server s = tu_draped_start("tiny_random", "--web-root web");
    int rc = tu_run(out, sizeof out, "node tests/js/viewer_e2e.mjs %s %s", s.url, shot);
    int stop = tu_draped_stop(&s);
    cr_assert_eq(rc, 0, "the viewer failed (screenshot, if any: %s):\n%s", shot, out);
    cr_assert(strstr(out, "\"garment_pixels\""), "%s", out);
    cr_assert_eq(access(shot, R_OK), 0, "no screenshot at %s", shot);
    cr_assert_eq(stop, 0);
}

/* The viewer of a draped with API keys, opened with ?token=KEY: every /v1/
 * request carries the key (the body's once did not, and the page fell back
 * to the stand-in figure). */
Test(web, viewer_with_an_api_key)
{
    NEED_NODE_MODULES();
    if (access(chromium(), X_OK)) cr_skip_test("%s is missing (apt-get install chromium)", chromium());
    char flag[600], extra[700];
    tu_key_file_flag(flag, sizeof flag, "viewer_keys.txt", "viewer-key\n");
    snprintf(extra, sizeof extra, "--web-root web %s", flag);
    tu_server s = tu_draped_start("tiny_random", extra);
    int rc = tu_run(out, sizeof out, "node tests/js/viewer_key.mjs %s viewer-key", s.url);
    int stop = tu_draped_stop(&s);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"body\":\"server\""), "%s", out);
    cr_assert_eq(stop, 0);
}

/* The page as a user sees it: the default model's shipped walk (it travels
 * 5 m and loops) pictured at 5 points of a loop and right after its cut at
 * 1280x800 and 800x600, side by side, a capture motion of --motions-dir (a
 * clip the script writes), a dropped BVH and a refused file; boxes and pixel
 * shares as docs/viewer.md states; the loops counted by the server as reset
 * cuts. */
Test(web, viewer_pictures_the_walk)
{
    NEED_NODE_MODULES();
    if (access(chromium(), X_OK)) cr_skip_test("%s is missing (apt-get install chromium)", chromium());
    char dir[512], shots[600];
    build_dir(dir, sizeof dir);
    snprintf(shots, sizeof shots, "%s/artifacts/shots", dir);
    cr_assert_eq(tu_run(out, sizeof out, "rm -rf %s && mkdir -p %s", shots, shots), 0, "%s", out);
    char motions[512], flags[700];
    snprintf(motions, sizeof motions, "%s", tu_tmp("motions"));
    cr_assert_eq(tu_run(out, sizeof out, "node tests/js/viewer_shots.mjs --motions-dir %s", motions), 0, "%s", out);
    snprintf(flags, sizeof flags, "--web-root web --motions-dir %s", motions);
    tu_server s = tu_draped_start("models/default.safetensors", flags);
    int rc = tu_run(out, sizeof out, "node tests/js/viewer_shots.mjs %s %s", s.url, shots);
    int stop = tu_draped_stop(&s);
    cr_assert_eq(rc, 0, "the viewer's pictures failed (kept in %s):\n%s", shots, out);
    cr_assert(strstr(out, "\"loop_1280x800\"") && strstr(out, "\"loop_800x600\"") && strstr(out, "\"side_by_side\""), "%s", out);
    cr_assert(strstr(out, "\"played\":\"turn_test\"") && strstr(out, "\"menu\":\"stride_test.bvh (file)\""), "%s", out);
    char first[700];
    snprintf(first, sizeof first, "%s/shots-800x600-1.png", shots);
    cr_assert_eq(access(first, R_OK), 0, "no screenshot at %s", first);
    cr_assert_eq(stop, 0);
}

Test(web, pose_from_skeleton_reads_rigs)
{
    NEED_NODE_MODULES();
    int rc = tu_run(out, sizeof out, "node tests/js/pose_from_skeleton.mjs");
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(!strncmp(out, "ok ", 3), "%s", out);
}

Test(web, js_client_decoders_match_c_packers)
{
    NEED_NODE_MODULES();
    tu_server s = tu_draped_start("tiny_random", "");
    int rc = tu_run(out, sizeof out, "node tests/js/client_formats.mjs %s skirt", s.ws);
    int stop = tu_draped_stop(&s);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"msgpack\"") && strstr(out, "\"json\"") && strstr(out, "\"meshopt\""), "%s", out);
    cr_assert_eq(stop, 0);
}

Test(web, js_client_reconnects_with_backoff)
{
    NEED_NODE_MODULES();
    int rc = tu_run(out, sizeof out, "node tests/js/client_reconnect.mjs");
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"delays\":[40,40,80,160,200]"), "%s", out);
}

Test(web, js_decoders_edge_cases)
{
    NEED_NODE_MODULES();
    int rc = tu_run(out, sizeof out, "node tests/js/decoders_unit.mjs");
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(!strncmp(out, "ok ", 3), "%s", out);
}

/* The libdrape-client example in README.md (the ```c block after the
 * "example: stream_example.c" marker), compiled against the build's
 * libdrape.a and run against draped. */
Test(web, readme_example_streams)
{
    char dir[512];
    build_dir(dir, sizeof dir);
    char src[512], exe[512]; /* tu_tmp returns its own buffer: copy */
    snprintf(src, sizeof src, "%s", tu_tmp("stream_example.c"));
    snprintf(exe, sizeof exe, "%s", tu_tmp("stream_example"));
    int rc = tu_run(out, sizeof out,
                    "awk '/<!-- example: stream_example.c -->/{m=1;next} m&&/^```c/{c=1;next} c&&/^```/{exit} c' "
                    "README.md > %s && test -s %s",
                    src, src);
    cr_assert_eq(rc, 0, "no example block in README.md: %s", out);
    const char *san = strstr(dir, "asan") ? "-fsanitize=address,undefined" : "";
    rc = tu_run(out, sizeof out,
                "cc -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror %s -I. -o %s %s %s/libdrape.a "
                "-lgnutls -lmsgpackc -lmeshoptimizer -ljansson -lm -lpthread",
                san, exe, src, dir);
    cr_assert_eq(rc, 0, "the README example does not compile:\n%s", out);
    tu_server s = tu_draped_start("tiny_random", "");
    rc = tu_run(out, sizeof out, "%s %s miniskirt", exe, s.ws);
    int stop = tu_draped_stop(&s);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "frame 30: 120 vertices (meshopt), hem at ") && strstr(out, "\n30 frames"), "%s", out);
    cr_assert_eq(stop, 0);
}
