/* v1_context.c: prompt context: a retrieval's readable hits turned into numbered passages with
 * their sources, duplicates dropped, adjacent chunks of one document merged in order, cut to a
 * token budget at a word boundary. Built only from what cordon_search returned for the subject,
 * so nothing it may not read can enter. Deterministic for the same input and revision (the
 * ranking breaks ties by id). Relies on http/v1.h and the public API. */
#include "base/clock.h"
#include "base/mem.h"
#include "http/es.h"
#include "http/es_handlers.h"
#include "http/v1.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT_BUDGET_DEFAULT 2000
#define CONTEXT_BUDGET_MAX 1000000

/* Tokens of a text by the documented approximation: one per four bytes, rounded up (the
 * usual rule for English with BPE tokenizers; docs/api/retrieval.md). */
static size_t tokens_of(size_t bytes)
{
    return (bytes + 3) / 4;
}

typedef struct passage {
    const cordon_record *rec; /* the first (or only) chunk */
    char *text;               /* owned */
    const char *title;        /* borrowed from a record, or NULL */
    json_t *ids;              /* the chunks it holds, in document order */
    char doc[256];            /* document key, "" when unknown */
    long long pos;            /* position in the document, -1 when unknown */
    int merged, dropped;
} passage_t;

static const char *field_of(const cordon_record *r, const char *name)
{
    for (size_t i = 0; i < r->n_fields; i++)
        if (!strcmp(r->fields[i].name, name))
            return r->fields[i].value;
    return NULL;
}

/* The passage text of a record: the chosen text fields (all but title by default), in the
 * record's order, one per line. */
static char *passage_text(const cordon_record *r, json_t *fields)
{
    cdn_buf_t b;
    cdn_buf_init(&b, (size_t)CORDON_TEXT_MAX * CORDON_TEXT_FIELDS_MAX);
    for (size_t i = 0; i < r->n_fields; i++) {
        const char *n = r->fields[i].name;
        int want = 0;
        if (fields) {
            size_t j;
            json_t *x;
            json_array_foreach(fields, j, x) want |=
                json_is_string(x) && !strcmp(json_string_value(x), n);
        } else {
            want = strcmp(n, "title") != 0;
        }
        if (want && (b.len == 0 || cdn_buf_puts(&b, "\n") == 0))
            cdn_buf_puts(&b, r->fields[i].value);
    }
    char *s = cdn_strdup(b.data ? b.data : "");
    cdn_buf_free(&b);
    return s;
}

/* Whitespace-collapsed equality, for dropping duplicates. */
static int same_text(const char *a, const char *b)
{
    for (;;) {
        while (isspace((unsigned char)*a))
            a++;
        while (isspace((unsigned char)*b))
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (*a != *b)
            return 0;
        int sa = isspace((unsigned char)a[1]), sb = isspace((unsigned char)b[1]);
        a++;
        b++;
        if (sa != sb)
            return 0;
    }
}

static void doc_key(const cordon_record *r, const char *dfield, const char *pfield, passage_t *p)
{
    json_t *m = json_loads(r->metadata_json ? r->metadata_json : "{}", 0, NULL);
    json_t *d = json_object_get(m, dfield), *q = json_object_get(m, pfield);
    p->doc[0] = '\0';
    p->pos = -1;
    if (json_is_string(d))
        snprintf(p->doc, sizeof p->doc, "%s", json_string_value(d));
    else if (json_is_integer(d))
        snprintf(p->doc, sizeof p->doc, "%lld", (long long)json_integer_value(d));
    if (json_is_integer(q))
        p->pos = (long long)json_integer_value(q);
    json_decref(m);
}

static int by_pos(const void *a, const void *b)
{
    const passage_t *x = *(passage_t *const *)a, *y = *(passage_t *const *)b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Merges runs of consecutive positions of one document into the best-ranked passage of the
 * run, text in position order. */
static void merge_adjacent(passage_t *ps, size_t n)
{
    passage_t **run = cdn_calloc(n ? n : 1, sizeof *run);
    if (!run)
        return;
    for (size_t i = 0; i < n; i++) {
        passage_t *p = &ps[i];
        size_t m = 0;
        if (p->dropped || p->merged || !p->doc[0] || p->pos < 0)
            continue;
        for (size_t j = i; j < n; j++)
            if (!ps[j].dropped && !ps[j].merged && ps[j].pos >= 0 && !strcmp(ps[j].doc, p->doc))
                run[m++] = &ps[j];
        qsort(run, m, sizeof *run, by_pos);
        /* the consecutive run around p */
        size_t at = 0;
        while (run[at] != p)
            at++;
        size_t lo = at, hi = at;
        while (lo > 0 && run[lo - 1]->pos == run[lo]->pos - 1)
            lo--;
        while (hi + 1 < m && run[hi + 1]->pos == run[hi]->pos + 1)
            hi++;
        if (lo == hi)
            continue;
        cdn_buf_t b;
        cdn_buf_init(&b, (size_t)64 << 20);
        json_t *ids = json_array();
        for (size_t k = lo; k <= hi; k++) {
            if (k > lo)
                cdn_buf_puts(&b, "\n");
            cdn_buf_puts(&b, run[k]->text);
            json_array_append_new(ids, json_string(run[k]->rec->id));
            if (run[k] != p)
                run[k]->merged = 1;
        }
        cdn_free(p->text);
        p->text = cdn_strdup(b.data ? b.data : "");
        cdn_buf_free(&b);
        json_decref(p->ids);
        p->ids = ids;
        p->merged = 0;
    }
    cdn_free(run);
}

/* Cuts s to at most max bytes at the last white space before it (never mid-word). */
static size_t cut_at_word(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return n;
    while (max > 0 && !isspace((unsigned char)s[max]))
        max--;
    while (max > 0 && isspace((unsigned char)s[max - 1]))
        max--;
    return max;
}

void v1_context(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const extra[] = {
        "budget_tokens",  "format",         "citation", "text_fields",
        "document_field", "position_field", NULL};
    char subject[CORDON_ROLE_MAX + 8];
    cordon_subject s;
    cordon_result *res = NULL;
    cordon_error err = {0};
    v1_retrieve_t r;
    passage_t *ps = NULL;
    es_index_t ix = {0};
    es_qvec_t qv = {0};
    json_t *body;
    int rc, opened = 0;
    memset(&r, 0, sizeof r);
    if (!(body = es_body_retrieve(ctx, req, resp, &qv)))
        return;
    json_t *bt = json_object_get(body, "budget_tokens");
    const char *format = json_string_value(json_object_get(body, "format"));
    const char *cite = json_string_value(json_object_get(body, "citation"));
    const char *dfield = json_string_value(json_object_get(body, "document_field"));
    const char *pfield = json_string_value(json_object_get(body, "position_field"));
    json_t *tfields = json_object_get(body, "text_fields");
    size_t budget = CONTEXT_BUDGET_DEFAULT;
    if (!format)
        format = "text";
    if (!cite)
        cite = "numeric";
    if (!dfield)
        dfield = "doc_id";
    if (!pfield)
        pfield = "chunk";
    if (bt && (!json_is_integer(bt) || json_integer_value(bt) < 1 ||
               json_integer_value(bt) > CONTEXT_BUDGET_MAX)) {
        es_error(resp, 400, "illegal_argument_exception", "[budget_tokens] must be 1 to %d",
                 CONTEXT_BUDGET_MAX);
        goto out;
    }
    if (bt)
        budget = (size_t)json_integer_value(bt);
    if (strcmp(format, "text") && strcmp(format, "markdown") && strcmp(format, "json")) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[format] must be text, markdown or json");
        goto out;
    }
    if (strcmp(cite, "numeric") && strcmp(cite, "id")) {
        es_error(resp, 400, "illegal_argument_exception", "[citation] must be numeric or id");
        goto out;
    }
    if (tfields && !json_is_array(tfields)) {
        es_error(resp, 400, "illegal_argument_exception", "[text_fields] must be a list");
        goto out;
    }
    if (v1_wait_revision(ctx, body, resp) ||
        v1_subject(req, body, resp, &s, subject, sizeof subject))
        goto out;
    req->seg[0] = req->seg[2];
    if (es_index_open_shared(ctx, req, resp, &ix))
        goto out;
    opened = 1;
    if (v1_retrieve_read(&ix, body, &qv, extra, &r, resp))
        goto out;
    if (!r.q.k)
        r.q.k = 20;
    r.q.audit_kind = "context";
    if ((rc = cordon_search(ctx->db, ix.name, &s, &r.q, &res, &err)) != 0) {
        if (rc == CORDON_ERR_NOT_FOUND)
            es_error_index(resp, ix.name);
        else
            es_error_cordon(resp, rc, &err, "illegal_argument_exception");
        goto out;
    }
    if (!(ps = cdn_calloc(res->n_hits + 1, sizeof *ps))) {
        es_error(resp, 503, "circuit_breaking_exception", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < res->n_hits; i++) {
        const cordon_record *rec = res->hits[i].record;
        passage_t *p = &ps[i];
        p->rec = rec;
        p->text = rec ? passage_text(rec, tfields) : cdn_strdup("");
        p->title = rec ? field_of(rec, "title") : NULL;
        p->ids = json_pack("[s]", res->hits[i].id);
        if (rec)
            doc_key(rec, dfield, pfield, p);
        for (size_t j = 0; j < i; j++)
            if (!ps[j].dropped && same_text(ps[j].text, p->text))
                p->dropped = 1;
    }
    merge_adjacent(ps, res->n_hits);
    /* Numbered passages within the budget. */
    cdn_buf_t out;
    cdn_buf_init(&out, (size_t)budget * 8 + 4096);
    json_t *passages = json_array(), *as_json = json_array();
    size_t used = 0, n = 0;
    int truncated_any = 0;
    for (size_t i = 0; i < res->n_hits; i++) {
        passage_t *p = &ps[i];
        char head[600];
        if (p->dropped || p->merged)
            continue;
        const char *id0 = json_string_value(json_array_get(p->ids, 0));
        char ref[300];
        if (!strcmp(cite, "id"))
            snprintf(ref, sizeof ref, "[%s]", id0);
        else
            snprintf(ref, sizeof ref, "[%zu]", n + 1);
        if (!strcmp(format, "markdown"))
            snprintf(head, sizeof head, "%s### %s %s\n\n", n ? "\n" : "", ref,
                     p->title ? p->title : id0);
        else if (!strcmp(format, "text"))
            snprintf(head, sizeof head, "%s%s %s%s\n", n ? "\n" : "", ref, p->title ? p->title : "",
                     p->title ? "" : id0);
        else
            head[0] = '\0';
        size_t head_tokens = tokens_of(strlen(head)), text_tokens = tokens_of(strlen(p->text));
        /* A passage left out for the budget truncates the context as a cut one does. */
        if (used + head_tokens >= budget) {
            truncated_any = 1;
            break;
        }
        size_t room = (budget - used - head_tokens) * 4, keep = strlen(p->text);
        int truncated = 0;
        if (used + head_tokens + text_tokens > budget) {
            keep = cut_at_word(p->text, room);
            truncated = 1;
            if (keep == 0) {
                truncated_any = 1;
                break; /* not one whole word fits */
            }
        }
        char *text = cdn_malloc(keep + 1);
        if (!text)
            break;
        memcpy(text, p->text, keep);
        text[keep] = '\0';
        n++;
        size_t t = head_tokens + tokens_of(keep);
        used += t;
        cdn_buf_puts(&out, head);
        if (strcmp(format, "json")) {
            cdn_buf_puts(&out, text);
            cdn_buf_puts(&out, "\n");
        }
        json_t *pj = json_pack("{s:I, s:s, s:O, s:I, s:b}", "n", (json_int_t)n, "id", id0, "ids",
                               p->ids, "tokens", (json_int_t)t, "truncated", truncated);
        if (p->title)
            json_object_set_new(pj, "title", json_string(p->title));
        json_array_append_new(passages, pj);
        json_t *cj = json_pack("{s:I, s:s, s:s}", "n", (json_int_t)n, "id", id0, "text", text);
        if (p->title)
            json_object_set_new(cj, "title", json_string(p->title));
        json_array_append_new(as_json, cj);
        cdn_free(text);
        truncated_any |= truncated;
        if (truncated)
            break;
    }
    json_t *hits = json_array();
    for (size_t i = 0; i < res->n_hits; i++)
        json_array_append_new(hits, json_pack("{s:s, s:f}", "id", res->hits[i].id, "score",
                                              (double)res->hits[i].score));
    json_t *context =
        !strcmp(format, "json") ? json_incref(as_json) : json_string(out.data ? out.data : "");
    json_t *reply = json_pack(
        "{s:o, s:o, s:I, s:I, s:b, s:o, s:b, s:s, s:I, s:I, s:f}", "context", context, "passages",
        passages, "tokens", (json_int_t)used, "budget_tokens", (json_int_t)budget, "truncated",
        truncated_any, "hits", hits, "complete", res->complete, "plan", res->plan, "readable",
        (json_int_t)res->readable, "revision", (json_int_t)res->revision, "took_ms",
        (double)(cdn_clock_ns() - req->t0_ns) / 1e6);
    json_t *audit = v1_audit_meta(ctx, res->audit_seq);
    es_authorizer_set(reply, &res->authorizer);
    if (reply && audit)
        json_object_set_new(reply, "audit", audit);
    else
        json_decref(audit);
    es_reply(resp, 200, reply);
    json_decref(as_json);
    cdn_buf_free(&out);
out:
    for (size_t i = 0; ps && res && i < res->n_hits; i++) {
        cdn_free(ps[i].text);
        json_decref(ps[i].ids);
    }
    cdn_free(ps);
    cordon_result_free(res);
    v1_retrieve_free(&r);
    es_qvec_free(&qv);
    if (opened)
        es_index_release(&ix);
    json_decref(body);
}
