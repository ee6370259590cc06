/* The viewer's files under --web-root, for GET requests outside /v1/: no
 * key needed, nothing above the root reachable, a directory's index.html. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"

static const char *mime(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot) return "application/octet-stream";
    static const char *map[][2] = {{".html", "text/html; charset=utf-8"}, {".js", "text/javascript"},
                                   {".mjs", "text/javascript"},          {".css", "text/css"},
                                   {".json", "application/json"},        {".wasm", "application/wasm"},
                                   {".png", "image/png"},                {".svg", "image/svg+xml"},
                                   {".glb", "model/gltf-binary"},        {".npy", "application/octet-stream"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(dot, map[i][0])) return map[i][1];
    return "application/octet-stream";
}

enum MHD_Result draped_route_static(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    const char *url = rq->url;
    /* the path of 'GET ?x' is empty: no last character to look at */
    if (url[0] != '/')
        return draped_http_error(d, c, R_STATIC, DRAPE_EC_BAD_MESSAGE, "the path must start with '/'");
    if (strstr(url, "..") || strstr(url, "//") || strlen(url) > 256)
        return draped_http_error(d, c, R_STATIC, DRAPE_EC_NOT_FOUND, "no such file");
    char path[1024];
    snprintf(path, sizeof path, "%s%s%s", d->cfg.web_root, url, url[strlen(url) - 1] == '/' ? "index.html" : "");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        return draped_http_error(d, c, R_STATIC, DRAPE_EC_NOT_FOUND, "no such file: %s", url);
    }
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", mime(path));
    MHD_add_response_header(r, "X-Drape-Instance", d->instance);
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    draped_count_http(&d->met, R_STATIC, 200);
    return ok;
}
