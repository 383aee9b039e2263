/* bench_audit.h: `cordon bench audit`: what recording a search in the retrieval audit costs,
 * as search latency with the audit on and off in the same run, and the log's bytes per
 * record. */
#ifndef CDN_BENCH_AUDIT_H
#define CDN_BENCH_AUDIT_H

int bench_audit_main(int argc, char **argv);

#endif
