/* bench_text.h: `cordon bench text`: BM25 (and kNN / hybrid with use-lite vectors) quality and
 * latency on BEIR-layout corpora at several readable fractions, beside SQLite FTS5. */
#ifndef CDN_BENCH_TEXT_H
#define CDN_BENCH_TEXT_H

int bench_text_main(int argc, char **argv);

#endif
