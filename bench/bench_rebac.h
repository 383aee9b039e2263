/* bench_rebac.h: `cordon bench rebac`, relationship tuples at scale (check, lookup-resources,
 * share, unshare, move). Relies on cordon.h. */
#ifndef CDN_BENCH_REBAC_H
#define CDN_BENCH_REBAC_H

int bench_rebac_main(int argc, char **argv);

#endif
