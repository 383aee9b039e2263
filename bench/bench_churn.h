/* bench_churn.h: `cordon bench churn`, what replacing chunks over time costs a vector collection
 * (recall, latency, memory, file and graph sizes) against a fresh build. Relies on cordon.h. */
#ifndef CDN_BENCH_CHURN_H
#define CDN_BENCH_CHURN_H

int bench_churn_main(int argc, char **argv);

#endif
