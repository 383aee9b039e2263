/* analyzer.c: tokenization (a practical subset of UAX #29 word boundaries), case folding,
 * stop words and stemming. Relies on libutf8proc and libstemmer (porter / english). */
#include "text/analyzer.h"

#include <libstemmer.h>
#include <string.h>
#include <utf8proc.h>

#include "base/mem.h"

/* Lucene's EnglishAnalyzer default stop set (also Anserini's and Elasticsearch's _english_). */
static const char *const lucene_stop[] = {
    "a",   "an",    "and",  "are",   "as",    "at",   "be",   "but", "by",  "for",  "if",
    "in",  "into",  "is",   "it",    "no",    "not",  "of",   "on",  "or",  "such", "that",
    "the", "their", "then", "there", "these", "they", "this", "to",  "was", "will", "with",
};

int analyzer_is_stopword(const char *word, size_t len)
{
    for (size_t i = 0; i < sizeof lucene_stop / sizeof *lucene_stop; i++)
        if (strlen(lucene_stop[i]) == len && !memcmp(lucene_stop[i], word, len))
            return 1;
    return 0;
}

int analyzer_spec_parse(const char *name, analyzer_spec_t *out, cdn_err_t *err)
{
    analyzer_spec_t s = {ANALYZER_STANDARD, ANALYZER_STOP_NONE, 0, 0};
    if (!name || !strcmp(name, "standard")) {
        *out = s;
        return CDN_OK;
    }
    if (!strcmp(name, "whitespace") || !strcmp(name, "keyword")) {
        s.kind = name[0] == 'w' ? ANALYZER_WHITESPACE : ANALYZER_KEYWORD;
        *out = s;
        return CDN_OK;
    }
    if (strncmp(name, "english", 7) != 0)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "analyzer '%s' is unknown; use standard, english, english:snowball, "
                           "english:nostop, whitespace or keyword",
                           name);
    s.kind = ANALYZER_ENGLISH;
    s.stop = ANALYZER_STOP_LUCENE;
    s.stem = 1;
    s.fold_marks = 1;
    const char *p = name + 7;
    while (*p == ':') {
        p++;
        size_t n = strcspn(p, ":");
        if (n == 8 && !strncmp(p, "snowball", 8))
            s.stem = 2;
        else if (n == 6 && !strncmp(p, "porter", 6))
            s.stem = 1;
        else if (n == 6 && !strncmp(p, "nostop", 6))
            s.stop = ANALYZER_STOP_NONE;
        else if (n == 6 && !strncmp(p, "nostem", 6))
            s.stem = 0;
        else
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "analyzer '%s': option '%.*s' is unknown; use snowball, porter, "
                               "nostop or nostem",
                               name, (int)n, p);
        p += n;
    }
    if (*p)
        return cdn_err_set(err, CDN_ERR_INVALID, "analyzer '%s' is malformed", name);
    *out = s;
    return CDN_OK;
}

int analyzer_init(analyzer_t *a, const analyzer_spec_t *spec, cdn_err_t *err)
{
    memset(a, 0, sizeof *a);
    a->spec = *spec;
    if (spec->kind > ANALYZER_KEYWORD || spec->stem > 2)
        return cdn_err_set(err, CDN_ERR_INVALID, "analyzer spec is out of range");
    if (spec->stem) {
        a->stemmer = sb_stemmer_new(spec->stem == 1 ? "porter" : "english", "UTF_8");
        if (!a->stemmer)
            return cdn_err_set(err, CDN_ERR_NOMEM, "libstemmer could not create a stemmer");
    }
    pthread_mutex_init(&a->lock, NULL);
    return CDN_OK;
}

void analyzer_destroy(analyzer_t *a)
{
    if (!a)
        return;
    if (a->stemmer)
        sb_stemmer_delete(a->stemmer);
    pthread_mutex_destroy(&a->lock);
    a->stemmer = NULL;
}

void analyzer_tokens_reset(analyzer_tokens_t *toks)
{
    toks->n = 0;
    toks->pool_len = 0;
    toks->next_pos = 0;
}

void analyzer_tokens_free(analyzer_tokens_t *toks)
{
    cdn_free(toks->tok);
    cdn_free(toks->pool);
    memset(toks, 0, sizeof *toks);
}

static int push_token(analyzer_tokens_t *t, const char *s, size_t len, uint32_t pos)
{
    if (cdn_grow((void **)&t->tok, &t->cap, t->n + 1, sizeof *t->tok) ||
        cdn_grow((void **)&t->pool, &t->pool_cap, t->pool_len + len + 1, 1))
        return CDN_ERR_NOMEM;
    memcpy(t->pool + t->pool_len, s, len);
    t->tok[t->n++] = (analyzer_token_t){(uint32_t)t->pool_len, (uint32_t)len, pos};
    t->pool_len += len;
    return CDN_OK;
}

static int is_word_cp(utf8proc_int32_t c)
{
    if (c < 128)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
    case UTF8PROC_CATEGORY_PC: return 1;
    default: return 0;
    }
}

/* Ideographs and kana are one token each, as UAX #29 (and Lucene's StandardTokenizer) do. */
static int is_ideograph(utf8proc_int32_t c)
{
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0x20000 && c <= 0x2FA1F);
}

static int is_digit_cp(utf8proc_int32_t c)
{
    return (c >= '0' && c <= '9') || (c >= 128 && utf8proc_category(c) == UTF8PROC_CATEGORY_ND);
}

/* Decodes the code point at s[i]; invalid bytes decode as -1 with length 1. */
static utf8proc_ssize_t cp_at(const char *s, size_t len, size_t i, utf8proc_int32_t *c)
{
    utf8proc_ssize_t n =
        utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(len - i), c);
    if (n <= 0) {
        *c = -1;
        return 1;
    }
    return n;
}

/* Folds one raw word into scratch (lower case / casefold, optional mark stripping), then
 * applies the english filters; appends it unless it is a stop word. Always consumes a position.*/
static int emit_word(analyzer_t *a, const char *w, size_t wl, analyzer_tokens_t *t)
{
    uint32_t pos = t->next_pos++;
    char small[256];
    char *folded = small;
    utf8proc_uint8_t *heap = NULL;
    size_t fl = 0;
    int ascii = 1;
    for (size_t i = 0; i < wl && ascii; i++)
        ascii = !((unsigned char)w[i] & 0x80);
    if (a->spec.kind != ANALYZER_KEYWORD && wl > ANALYZER_MAX_TOKEN)
        return CDN_OK; /* a "word" this long is data (base64, a URL run), not a term */
    if (a->spec.kind == ANALYZER_WHITESPACE || a->spec.kind == ANALYZER_KEYWORD) {
        return push_token(t, w, wl, pos);
    } else if (ascii && wl < sizeof small) {
        for (size_t i = 0; i < wl; i++)
            small[i] = (char)((w[i] >= 'A' && w[i] <= 'Z') ? w[i] + 32 : w[i]);
        fl = wl;
    } else {
        int opts = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD |
                   (a->spec.fold_marks ? UTF8PROC_STRIPMARK : 0);
        utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)w, (utf8proc_ssize_t)wl, &heap,
                                          (utf8proc_option_t)opts);
        if (r < 0) {
            free(heap); /* utf8proc allocates with malloc */
            return r == UTF8PROC_ERROR_NOMEM ? CDN_ERR_NOMEM : CDN_OK;
        }
        folded = (char *)heap;
        fl = (size_t)r;
    }
    int rc = CDN_OK;
    if (a->spec.kind == ANALYZER_ENGLISH) {
        /* possessive filter: "king's" -> "king" (also with U+2019) */
        if (fl >= 2 && folded[fl - 1] == 's' && folded[fl - 2] == '\'')
            fl -= 2;
        else if (fl >= 4 && folded[fl - 1] == 's' && !memcmp(folded + fl - 4, "\xe2\x80\x99", 3))
            fl -= 4;
        if (fl == 0 || (a->spec.stop == ANALYZER_STOP_LUCENE && analyzer_is_stopword(folded, fl)))
            goto done;
        if (a->stemmer) {
            pthread_mutex_lock(&a->lock);
            const sb_symbol *st = sb_stemmer_stem(a->stemmer, (const sb_symbol *)folded, (int)fl);
            rc = st ? push_token(t, (const char *)st, (size_t)sb_stemmer_length(a->stemmer), pos)
                    : CDN_ERR_NOMEM;
            pthread_mutex_unlock(&a->lock);
            goto done;
        }
    }
    if (fl > 0)
        rc = push_token(t, folded, fl, pos);
done:
    free(heap);
    return rc;
}

/* Standard tokenization: runs of letters/digits/marks, joined across one apostrophe or '.'
 * between letters, and across '.' or ',' between digits ("1,000", "3.5", "U.S.A", "don't"). */
static int run_standard(analyzer_t *a, const char *s, size_t len, analyzer_tokens_t *t)
{
    size_t i = 0;
    while (i < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = cp_at(s, len, i, &c);
        if (c < 0 || !is_word_cp(c)) {
            i += (size_t)n;
            continue;
        }
        if (is_ideograph(c)) {
            int rc = emit_word(a, s + i, (size_t)n, t);
            if (rc)
                return rc;
            i += (size_t)n;
            continue;
        }
        size_t start = i;
        utf8proc_int32_t prev = c;
        i += (size_t)n;
        while (i < len) {
            n = cp_at(s, len, i, &c);
            if (c >= 0 && is_word_cp(c) && !is_ideograph(c)) {
                prev = c;
                i += (size_t)n;
                continue;
            }
            int mid_letter = c == '\'' || c == 0x2019 || c == '.';
            int mid_num = c == '.' || c == ',' || c == '\'';
            if (!(mid_letter || mid_num) || i + (size_t)n >= len)
                break;
            utf8proc_int32_t nx;
            utf8proc_ssize_t n2 = cp_at(s, len, i + (size_t)n, &nx);
            (void)n2;
            int ok = nx >= 0 && is_word_cp(nx) && !is_ideograph(nx) &&
                     ((is_digit_cp(prev) && is_digit_cp(nx) && mid_num) ||
                      (!is_digit_cp(prev) && !is_digit_cp(nx) && mid_letter));
            if (!ok)
                break;
            i += (size_t)n;
        }
        int rc = emit_word(a, s + start, i - start, t);
        if (rc)
            return rc;
    }
    return CDN_OK;
}

static int run_whitespace(analyzer_t *a, const char *s, size_t len, analyzer_tokens_t *t)
{
    size_t i = 0;
    while (i < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = cp_at(s, len, i, &c);
        int ws = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                 (c >= 128 && utf8proc_category(c) == UTF8PROC_CATEGORY_ZS);
        if (ws) {
            i += (size_t)n;
            continue;
        }
        size_t start = i;
        while (i < len) {
            n = cp_at(s, len, i, &c);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                (c >= 128 && utf8proc_category(c) == UTF8PROC_CATEGORY_ZS))
                break;
            i += (size_t)n;
        }
        int rc = emit_word(a, s + start, i - start, t);
        if (rc)
            return rc;
    }
    return CDN_OK;
}

int analyzer_run(analyzer_t *a, const char *text, size_t len, analyzer_tokens_t *toks)
{
    if (toks->next_pos > 0)
        toks->next_pos += 100;
    int rc;
    switch (a->spec.kind) {
    case ANALYZER_KEYWORD: rc = emit_word(a, text, len, toks); break;
    case ANALYZER_WHITESPACE: rc = run_whitespace(a, text, len, toks); break;
    default: rc = run_standard(a, text, len, toks); break;
    }
    return rc;
}
