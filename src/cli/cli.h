/* cli.h: the subcommands of the cordon binary, one function each.
 * Relies on include/cordon.h; each returns a process exit code (0 ok, 1 failure, 2 usage). */
#ifndef CDN_CLI_H
#define CDN_CLI_H

int cli_bench(int argc, char **argv);

#endif
