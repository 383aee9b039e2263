/* es_qvec.c: a search body whose knn query vector is read from the text straight into floats,
 * the rest parsed by jansson as es_body does. Relies on http/es.h, jansson, base/mem and
 * glibc's strtod_l.
 *
 * Why: a 384-d query vector is 384 reals for jansson (strtod and an allocation each, then a
 * free each), most of a 1-hit search's server time. The scanner here follows the body's
 * structure (strings, containers, keys) without building anything; when the body has exactly
 * one key "query_vector", at a place where a knn clause is read (knn, knn[i], retriever.knn,
 * retriever.rrf.retrievers[i].knn), holding an array of numbers, those numbers become floats
 * here (each the (float) of the double jansson would give) and jansson parses the body without
 * them: the array reads as [] and es_qvec_t holds its values. Anything else (a key with an
 * escape, a value that is not a number jansson takes, more than one such key) leaves the whole
 * body to es_body, and so does a body jansson then refuses: every error is es_body's, from the
 * text as sent. The cordon API's retrieve and context bodies get the same for their
 * "query": {"vector": [...]} (es_body_retrieve). */
#include "base/mem.h"
#include "http/es.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Where a container sits, as far as knn clauses (or a retrieve's query) go. */
enum {
    AT_OTHER,
    AT_ROOT,
    AT_RETRIEVER,
    AT_RRF,
    AT_RRF_LIST,
    AT_RRF_ITEM,
    AT_KNN_LIST,
    AT_KNN,
    AT_QUERY /* a retrieve body's "query" */
};

/* What the last key of an object named, when it matters for the value that follows. */
enum { KEY_OTHER, KEY_KNN, KEY_RETRIEVER, KEY_RRF, KEY_RETRIEVERS, KEY_QUERY };

#define SCAN_DEPTH_MAX 256

typedef struct scan {
    const char *s, *end;
    unsigned depth_max;
    unsigned char at[SCAN_DEPTH_MAX];  /* per open container: AT_* */
    unsigned char key[SCAN_DEPTH_MAX]; /* per open object: KEY_* of its last key */
    unsigned depth;
    int retrieve;  /* the cordon API's shape: the vector is "query": {"vector": [...]} */
    size_t n_qv;   /* keys naming a query vector seen */
    size_t lb, rb; /* the taken array's brackets: s[lb] == '[', s[rb] == ']' */
    float *v;      /* its values (cdn_malloc) */
    size_t n, cap;
} scan_t;

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && is_ws(*p))
        p++;
    return p;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* strtod in the C locale (jansson reads reals with strtod, its decimal point made the
 * locale's): one locale object for the process, made on first use. */
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void c_locale_make(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* A real that needs more than the exact fast path: strtod of the token [s, end), which the
 * caller has checked against JSON's grammar. */
static const char *slow_real(const char *s, const char *end, float *out)
{
    char tok[80], *stop;
    size_t n = (size_t)(end - s);
    pthread_once(&c_locale_once, c_locale_make);
    if (n >= sizeof tok || !c_locale)
        return NULL;
    memcpy(tok, s, n);
    tok[n] = '\0';
    double d = strtod_l(tok, &stop, c_locale);
    if (stop != tok + n || isinf(d)) /* jansson refuses an overflow: so does its error path */
        return NULL;
    *out = (float)d;
    return end;
}

/* 10^k and 10^-k for k in [0, 44], as the compiler rounds the literals (correctly). */
static const double pos10[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14,
    1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29,
    1e30, 1e31, 1e32, 1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44};
static const double neg10[] = {1e-0,  1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,  1e-8,
                               1e-9,  1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17,
                               1e-18, 1e-19, 1e-20, 1e-21, 1e-22, 1e-23, 1e-24, 1e-25, 1e-26,
                               1e-27, 1e-28, 1e-29, 1e-30, 1e-31, 1e-32, 1e-33, 1e-34, 1e-35,
                               1e-36, 1e-37, 1e-38, 1e-39, 1e-40, 1e-41, 1e-42, 1e-43, 1e-44};

/* The value of the 8 ASCII digits at p into *v; 0 when one of the bytes is not a digit. The
 * bytes as one little-endian word: the first digit is the lowest byte. */
static int eight_digits(const char *p, uint64_t *v)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0xF0F0F0F0F0F0F0F0ull;
    uint64_t x;
    memcpy(&x, p, 8);
    /* a digit is 0x30..0x39: high nibble 3, and still 3 after adding 6 (no byte carries: one
     * that would has a high nibble other than 3 already) */
    if ((x & high) != 0x30 * ones || ((x + 6 * ones) & high) != 0x30 * ones)
        return 0;
    x -= 0x30 * ones;
    /* byte i becomes 10 d_i + d_(i+1); keep the even ones: four two-digit values */
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
    /* 16-bit lanes 0 and 2: four-digit values */
    x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
    *v = (x * 10000 + (x >> 32)) & 0xFFFFFFFFull;
    return 1;
}

/* Reads the JSON number at p (its strict grammar) into *out as the float knn_of makes of
 * jansson's value: (float) of an integer's value as a double, or of a real's correctly rounded
 * double (strtod). The digits (up to 19) and the decimal exponent (within 44) give a double
 * within a relative 2^-50 of the number's exact value (three roundings of 2^-53 each: the
 * digits to a double, the power of ten, their product);
 * the correctly rounded double lies in that interval too, so when both its ends round to the
 * same float, that float is the answer. They fail to only within a few double ulps of a
 * float's rounding boundary, about one number in 10^8; those, longer numbers and larger
 * exponents go to strtod_l. The end of the number, or NULL for what jansson would refuse or
 * read otherwise (an integer past int64). */
const char *es_qvec_float(const char *p, const char *end, float *out)
{
    const char *start = p;
    uint64_t w = 0;
    int neg = 0, digits = 0, is_int = 1;
    long e10 = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p == end || !is_digit(*p))
        return NULL;
    if (*p == '0')
        p++;
    else
        for (; p < end && is_digit(*p); p++)
            if (++digits <= 19)
                w = w * 10 + (uint64_t)(*p - '0');
    if (p < end && *p == '.') {
        is_int = 0;
        if (++p == end || !is_digit(*p))
            return NULL;
        for (; w == 0 && p < end && *p == '0'; p++)
            e10--; /* leading zeros of the fraction are not significant */
        for (uint64_t v; digits <= 11 && end - p >= 8 && eight_digits(p, &v); p += 8) {
            w = w * 100000000 + v;
            digits += 8;
            e10 -= 8;
        }
        for (; p < end && is_digit(*p); p++) {
            if (++digits <= 19) {
                w = w * 10 + (uint64_t)(*p - '0');
                e10--;
            }
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        long x = 0, sign = 1;
        is_int = 0;
        if (++p < end && (*p == '+' || *p == '-'))
            sign = *p++ == '-' ? -1 : 1;
        if (p == end || !is_digit(*p))
            return NULL;
        for (; p < end && is_digit(*p); p++)
            if (x < 100000)
                x = x * 10 + (*p - '0');
        e10 += sign * x;
    }
    if (is_int) { /* jansson: an integer (json_int_t); "-0" is the integer 0 */
        if (digits > 19 || w > (uint64_t)INT64_MAX)
            return NULL; /* jansson: "too big integer" */
        double d = (double)(int64_t)w;
        *out = (float)(neg && w ? -d : d);
        return p;
    }
    if (w == 0) {
        *out = neg ? -0.0f : 0.0f;
        return p;
    }
    if (digits > 19 || e10 < -44 || e10 > 44)
        return slow_real(start, p, out);
    double d = (double)w * (e10 >= 0 ? pos10[e10] : neg10[-e10]);
    double slack = d * 0x1p-50;
    float lo = (float)(d - slack), hi = (float)(d + slack);
    if (lo != hi)
        return slow_real(start, p, out);
    *out = neg ? -lo : lo;
    return p;
}

static int push_value(scan_t *sc, float f)
{
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 512;
        float *v = cdn_realloc(sc->v, cap * sizeof *v);
        if (!v)
            return -1;
        sc->v = v;
        sc->cap = cap;
    }
    sc->v[sc->n++] = f;
    return 0;
}

/* Reads the array of numbers at p ('['); the position of its ']', or NULL when it is empty or
 * holds anything but numbers es_qvec_float takes. */
static const char *take_array(scan_t *sc, const char *p)
{
    p = skip_ws(p + 1, sc->end);
    for (;;) {
        float f;
        if (!(p = es_qvec_float(p, sc->end, &f)) || push_value(sc, f))
            return NULL;
        p = skip_ws(p, sc->end);
        if (p < sc->end && *p == ']')
            return p;
        if (p == sc->end || *p != ',')
            return NULL;
        p = skip_ws(p + 1, sc->end);
    }
}

/* Where a container opened in the current one (after its key, for an object) sits. */
static unsigned char child_at(const scan_t *sc, int is_obj)
{
    if (sc->depth == 0)
        return is_obj ? AT_ROOT : AT_OTHER;
    unsigned char at = sc->at[sc->depth - 1], key = sc->key[sc->depth - 1];
    if (at == AT_KNN_LIST)
        return is_obj ? AT_KNN : AT_OTHER;
    if (at == AT_RRF_LIST)
        return is_obj ? AT_RRF_ITEM : AT_OTHER;
    if (key == KEY_KNN && (at == AT_ROOT || at == AT_RETRIEVER || at == AT_RRF_ITEM))
        return is_obj ? AT_KNN : AT_KNN_LIST;
    if (sc->retrieve)
        return is_obj && key == KEY_QUERY && at == AT_ROOT ? AT_QUERY : AT_OTHER;
    if (is_obj && key == KEY_RETRIEVER && at == AT_ROOT)
        return AT_RETRIEVER;
    if (is_obj && key == KEY_RRF && at == AT_RETRIEVER)
        return AT_RRF;
    if (!is_obj && key == KEY_RETRIEVERS && at == AT_RRF)
        return AT_RRF_LIST;
    return AT_OTHER;
}

static unsigned char key_kind(const char *k, size_t n)
{
    if (n == 3 && !memcmp(k, "knn", 3))
        return KEY_KNN;
    if (n == 9 && !memcmp(k, "retriever", 9))
        return KEY_RETRIEVER;
    if (n == 3 && !memcmp(k, "rrf", 3))
        return KEY_RRF;
    if (n == 10 && !memcmp(k, "retrievers", 10))
        return KEY_RETRIEVERS;
    if (n == 5 && !memcmp(k, "query", 5))
        return KEY_QUERY;
    return KEY_OTHER;
}

/* A string at p ('"'): its end past the closing quote, *escaped when it holds a backslash; NULL
 * when the text ends inside it. */
static const char *skip_string(const char *p, const char *end, int *escaped)
{
    *escaped = 0;
    for (p++; p < end; p++) {
        if (*p == '\\') {
            *escaped = 1;
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* A key at p (a string followed by ':'): notes what it names, and takes the query vector that
 * follows it. The position after the key's value when the vector was taken, after the ':'
 * otherwise; NULL to give up. */
static const char *on_key(scan_t *sc, const char *k, size_t n, int escaped, const char *colon)
{
    if (escaped || sc->depth == 0)
        return NULL; /* a key that may decode to anything: leave the body to jansson */
    sc->key[sc->depth - 1] = key_kind(k, n);
    if (sc->retrieve ? n != 6 || memcmp(k, "vector", 6) : n != 12 || memcmp(k, "query_vector", 12))
        return colon + 1;
    if (sc->retrieve && sc->at[sc->depth - 1] != AT_QUERY)
        return colon + 1; /* a "vector" key elsewhere (a filter's field): not the query's */
    if (++sc->n_qv > 1 || sc->at[sc->depth - 1] != (sc->retrieve ? AT_QUERY : AT_KNN))
        return NULL;
    const char *lb = skip_ws(colon + 1, sc->end);
    if (lb == sc->end || *lb != '[')
        return NULL;
    const char *rb = take_array(sc, lb);
    if (!rb)
        return NULL;
    sc->lb = (size_t)(lb - sc->s);
    sc->rb = (size_t)(rb - sc->s);
    return rb + 1;
}

/* Walks the text; 0 when it took a query vector (sc->lb, rb, v, n), -1 otherwise. Depths count
 * as es_too_deep counts them, so a body it walks is one es_too_deep passes. */
static int scan(scan_t *sc)
{
    const char *p = sc->s, *end = sc->end;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            int escaped;
            const char *k = p + 1, *q = skip_string(p, end, &escaped);
            if (!q)
                return -1;
            const char *colon = skip_ws(q, end);
            if (colon < end && *colon == ':') {
                if (!(p = on_key(sc, k, (size_t)(q - 1 - k), escaped, colon)))
                    return -1;
            } else {
                p = q;
            }
        } else if (c == '{' || c == '[') {
            if (sc->depth >= sc->depth_max || sc->depth >= SCAN_DEPTH_MAX)
                return -1;
            sc->at[sc->depth] = child_at(sc, c == '{');
            sc->key[sc->depth] = KEY_OTHER;
            sc->depth++;
            p++;
        } else if (c == '}' || c == ']') {
            if (sc->depth == 0)
                return -1;
            sc->depth--;
            p++;
        } else {
            p++;
        }
    }
    return sc->n_qv == 1 && sc->n ? 0 : -1;
}

/* Feeds jansson the body without the taken array's numbers: [0, lb] then [rb, len). */
typedef struct feed {
    const char *s;
    size_t at, len, lb, rb;
} feed_t;

static size_t feed_next(void *buf, size_t cap, void *arg)
{
    feed_t *f = arg;
    if (f->at > f->lb && f->at < f->rb)
        f->at = f->rb;
    size_t stop = f->at <= f->lb ? f->lb + 1 : f->len, n = stop - f->at;
    if (n > cap)
        n = cap;
    memcpy(buf, f->s + f->at, n);
    f->at += n;
    return n;
}

void es_qvec_free(es_qvec_t *qv)
{
    cdn_free(qv->v);
    qv->v = NULL;
    qv->n = 0;
}

static json_t *body_taking_vector(const http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp,
                                  int retrieve, es_qvec_t *qv)
{
    scan_t sc = {.s = req->body,
                 .end = req->body + req->body_len,
                 .depth_max = ctx->cfg.json_depth_max,
                 .retrieve = retrieve};
    json_t *j = NULL;
    qv->v = NULL;
    qv->n = 0;
    if (scan(&sc) == 0) {
        feed_t f = {req->body, 0, req->body_len, sc.lb, sc.rb};
        json_error_t je;
        j = json_load_callback(feed_next, &f, JSON_REJECT_DUPLICATES, &je);
        if (j && !json_is_object(j)) {
            json_decref(j);
            j = NULL;
        }
    }
    if (!j) { /* nothing taken, or a body jansson refuses: es_body reads the text as sent */
        cdn_free(sc.v);
        return es_body(ctx, req, resp, retrieve);
    }
    qv->v = sc.v;
    qv->n = sc.n;
    return j;
}

json_t *es_body_search(const http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp,
                       es_qvec_t *qv)
{
    return body_taking_vector(ctx, req, resp, 0, qv);
}

json_t *es_body_retrieve(const http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp,
                         es_qvec_t *qv)
{
    return body_taking_vector(ctx, req, resp, 1, qv);
}
