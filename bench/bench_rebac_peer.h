/* bench_rebac_peer.h: SpiceDB beside `cordon bench rebac`: the questions cordon answered (with
 * its answers) are collected here, then asked of SpiceDB (bench/peers/spicedb/spicedb.js in
 * node) over the same tuples. Relies on jansson. */
#ifndef CDN_BENCH_REBAC_PEER_H
#define CDN_BENCH_REBAC_PEER_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The ops both engines time, in the order of the rows. */
enum { RB_OP_CHECK, RB_OP_LOOKUP, RB_OP_SHARE, RB_OP_UNSHARE, RB_OP_N };

typedef struct rb_peer {
    char src[512], dir[512], tuples_path[600];
    char mods[512];                         /* the directory whose node_modules holds the package */
    FILE *tuples;                           /* every tuple cordon was given, one a line */
    json_t *checks, *lookups, *found, *ops; /* the questions, cordon's lookup answer */
    unsigned char *answers;                 /* cordon's answer to each check and op check */
    size_t n_answers, cap_answers;
    size_t n_op_checks;
    unsigned char op_answers[64];
    /* what SpiceDB gave, after rb_peer_run */
    double p50_us[RB_OP_N], p95_us[RB_OP_N], agree[RB_OP_N], load_s;
    size_t found_peer;
    int ran;
} rb_peer_t;

/* Finds the peer's script (CORDON_SPICEDB_SRC or bench/peers/spicedb), installs its packages
 * into CORDON_SPICEDB_DIR (default build/spicedb-peer) unless the script's directory has them,
 * and opens the tuple file there. 0, or -1 with a note on stderr (then nothing else works). */
int rb_peer_open(rb_peer_t *p);
void rb_peer_tuple(rb_peer_t *p, const char *tuple);
void rb_peer_check(rb_peer_t *p, const char *subject, const char *perm, const char *object,
                   int answer);
void rb_peer_lookup(rb_peer_t *p, const char *subject, const char *type, const char *perm);
/* One id of cordon's lookup answer; a cordon_name_fn (ctx is the peer). */
int rb_peer_found(void *ctx, const char *id);
/* A write op (one tuple written or, with del, deleted) and the check after it. */
void rb_peer_op(rb_peer_t *p, const char *name, const char *tuple, int del, const char *subject,
                const char *perm, const char *object, int answer);
/* Runs SpiceDB on everything collected, schema_op being cordon's put_schema op. 0, or -1 with a
 * note on stderr. Fills p50_us, p95_us, agree (share of answers equal to cordon's). */
int rb_peer_run(rb_peer_t *p, const char *schema_op, int lookup_repeat);
void rb_peer_close(rb_peer_t *p);

#endif
