/* analyzer.h: turns field text into terms with positions (standard, english, whitespace, keyword).
 * Relies on libutf8proc for Unicode classes and case folding and libstemmer for stemming. */
#ifndef CDN_ANALYZER_H
#define CDN_ANALYZER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef enum analyzer_kind {
    ANALYZER_STANDARD = 0,   /* Unicode words, case folded (NFKC casefold) */
    ANALYZER_ENGLISH = 1,    /* standard + possessive 's + English stop words + stemmer */
    ANALYZER_WHITESPACE = 2, /* split on white space, no folding */
    ANALYZER_KEYWORD = 3,    /* the whole value is one term */
} analyzer_kind_t;

/* Tokens longer than this many bytes are dropped (keeping their position) by every analyzer
 * but keyword, as Lucene's StandardTokenizer caps tokens at 255 characters. */
#define ANALYZER_MAX_TOKEN 255

/* Stop word lists an analyzer may drop. */
typedef enum analyzer_stop { ANALYZER_STOP_NONE = 0, ANALYZER_STOP_LUCENE = 1 } analyzer_stop_t;

/* Options below the kind; analyzer_spec_parse fills them from a name like "english" or
 * "english:snowball". Values are stored in index files: never renumber. */
typedef struct analyzer_spec {
    analyzer_kind_t kind;
    analyzer_stop_t stop;
    uint8_t stem;       /* 0 none, 1 porter (as Lucene/ES english), 2 snowball english */
    uint8_t fold_marks; /* 1: strip diacritics (é -> e) after case folding */
} analyzer_spec_t;

/* An analyzer: immutable after creation except its stemmer, which is used under `lock`
 * (libstemmer keeps per-stemmer scratch memory), so concurrent searches may share it. */
typedef struct analyzer {
    analyzer_spec_t spec;
    struct sb_stemmer *stemmer;
    pthread_mutex_t lock;
} analyzer_t;

/* One term: bytes at text+off (not NUL-terminated) in the token list's pool. */
typedef struct analyzer_token {
    uint32_t off;
    uint32_t len;
    uint32_t pos; /* position in the field; removed stop words leave gaps */
} analyzer_token_t;

/* Output of one analysis; reuse across calls, release with analyzer_tokens_free. */
typedef struct analyzer_tokens {
    analyzer_token_t *tok;
    size_t n, cap;
    char *pool;
    size_t pool_len, pool_cap;
    uint32_t next_pos; /* position the next value of a multi-valued field starts at */
} analyzer_tokens_t;

/* Parses an analyzer name: "standard", "english" (Porter, Lucene stop words, folds marks),
 * "english:snowball", "english:nostop", "english:snowball:nostop", "whitespace", "keyword".
 * Returns 0 or CDN_ERR_INVALID naming the accepted names. */
int analyzer_spec_parse(const char *name, analyzer_spec_t *out, cdn_err_t *err);

/* Initialises a (caller-owned) analyzer; 0, CDN_ERR_NOMEM or CDN_ERR_INVALID.
 * Release with analyzer_destroy. */
int analyzer_init(analyzer_t *a, const analyzer_spec_t *spec, cdn_err_t *err);
void analyzer_destroy(analyzer_t *a);

/* Empties toks (keeps its memory) and resets positions to 0. */
void analyzer_tokens_reset(analyzer_tokens_t *toks);
void analyzer_tokens_free(analyzer_tokens_t *toks);

/* Appends the terms of text[0..len) to toks, positions continuing from toks->next_pos (a
 * following value starts 100 positions later, as Elasticsearch's position_increment_gap).
 * Invalid UTF-8 bytes are treated as separators. Returns 0 or CDN_ERR_NOMEM. */
int analyzer_run(analyzer_t *a, const char *text, size_t len, analyzer_tokens_t *toks);

/* True when word (lower case, NUL-free, len bytes) is in the Lucene English stop list. */
int analyzer_is_stopword(const char *word, size_t len);

#endif
