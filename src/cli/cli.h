/* cli.h: the subcommands of the cordon binary, one function each, and their shared helpers.
 * Relies on include/cordon.h; each command returns a process exit code (0 ok, 1 failure,
 * 2 usage error). */
#ifndef CDN_CLI_H
#define CDN_CLI_H

#include <stddef.h>

#include "cordon.h"

int cli_bench(int argc, char **argv);
int cli_load(int argc, char **argv);
int cli_search(int argc, char **argv);
int cli_demo(int argc, char **argv);
int cli_model(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_drop(int argc, char **argv);
int cli_compact(int argc, char **argv);
int cli_delete(int argc, char **argv);
int cli_set_acl(int argc, char **argv);
int cli_keys(int argc, char **argv);
int cli_serve(int argc, char **argv);
/* Starts the local embedder (cmd_embedder.c) as a child on a free loopback port: 0 with its
 * pid and port once it is ready, or -1 after a message on stderr saying why. */
int cli_embedder_start(int *pid, unsigned *port);
/* Stops it (SIGTERM) and waits for it. */
void cli_embedder_stop(int pid);
int cli_embedder(int argc, char **argv);
int cli_audit(int argc, char **argv);
int cli_asof(int argc, char **argv);
int cli_history(int argc, char **argv);

/* Splits "a,b,c" into a NULL-terminated array of strings (one allocation; cdn_free it). */
char **cli_split(const char *csv, size_t *n);
/* Parses a float in full ("1e-3"), an unsigned size ("10"); 0 or -1 with a message printed. */
int cli_parse_size(const char *opt, const char *s, size_t *out);
/* Parses an ISO-8601 time or epoch milliseconds for option opt of `cordon cmd` into
 * microseconds since 1970; 0 or -1 with a message printed. */
int cli_parse_time(const char *cmd, const char *opt, const char *v, uint64_t *us);
/* Opens a data directory, printing the error on failure. must_exist: for commands that only
 * read, which must not create a directory (a mistyped path says so instead). */
int cli_open(const char *dir, int must_exist, cordon_t **db);
/* The same with every option given (the server's audit settings). */
int cli_open_with(const char *dir, const cordon_options *o, cordon_t **db);
/* Prints s to stdout as a JSON string literal. */
void cli_print_json_str(const char *s);
/* Prints "cordon CMD: message" for err to stderr and returns 1. */
int cli_fail(const char *cmd, const cordon_error *err);

#endif
