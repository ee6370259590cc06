/* draped's configuration: one table of options, each with a flag, an
 * environment variable, a default and bounds. Precedence: default <
 * environment < command line. `draped --help` prints the table. */
#ifndef DRAPED_CONFIG_H
#define DRAPED_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    int64_t port;
    char bind[64];
    char model[512];
    char backend[16];
    char precision[8];
    int64_t threads;
    int64_t max_batch;
    int64_t max_delay_us;
    int64_t cache_bytes;
    int64_t max_identities; /* recipes remembered for ids */
    int64_t max_connections;
    int64_t max_conn_per_ip; /* connections from one address; 0: any */
    int64_t header_timeout;  /* seconds from accept to a request's complete headers */
    int64_t max_avatars;    /* per connection */
    int64_t max_message;    /* bytes of one WebSocket message or HTTP body */
    int64_t send_queue;     /* bytes queued to one slow client before it is closed */
    int64_t idle_timeout;   /* seconds without a message from a stream client */
    int64_t error_flood;    /* stream errors in a row that close a connection */
    char api_key_file[512];
    char tls_cert[512];
    char tls_key[512];
    char log_level[16];
    char instance[128];     /* X-Drape-Instance; default host:port */
    char web_root[512];     /* the viewer's files, served at / */
    int64_t drain_ms;       /* how long SIGTERM waits for frames in flight */
    int64_t pose_max_angle; /* rad: |each axis-angle component| of a pose at most */
    int64_t pose_max_trans; /* m: |each root translation component| at most */
    int64_t cut_speed;      /* m/s: a root faster than this between frames is a cut (0: off) */
    int64_t cut_spin;       /* rad/s: a joint turning faster than this is a cut (0: off) */
    int64_t motion_max_bytes; /* POST /v1/motions/convert's body at most */
    char motions_dir[512];  /* the .npy clips GET /v1/motions lists */
    int64_t physics_threads; /* workers of mode physics (server/physics.c) */
    char physics_substeps[256]; /* GARMENT=N,...: that garment's physics frames take N substeps, not the served 4 */
} draped_config;

/* Fills cfg from defaults, the environment and argv. Returns 0, 1 when
 * --help was printed (exit 0), or -1 after printing one line on stderr that
 * names the bad flag or variable. */
int draped_config_load(draped_config *cfg, int argc, char **argv);
void draped_config_usage(FILE *f);

#endif
