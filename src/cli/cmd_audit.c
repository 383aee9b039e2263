/* cmd_audit.c: `cordon audit`: the records of the retrieval audit (who was shown which chunk),
 * printed as JSON lines, oldest first. Relies on the public API (cordon_audit_query) and
 * base/date for --since and --until. Only reads: it works while a server records. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: cordon audit [verify] --data DIR [--subject ID] [--collection NAME [--chunk ID]]\n"
    "                    [--request ID] [--kind KIND] [--since T] [--until T] [--limit N]\n\n"
    "Prints the audit's records as JSON lines, oldest first: every search, get, context\n"
    "assembly and is-authorized decision a server recorded, with the chunks each returned.\n"
    "Filters combine (all must hold):\n"
    "  --subject ID        records of this subject\n"
    "  --collection NAME   of this collection; with --chunk ID, those that returned the chunk\n"
    "                      (which subjects were shown it)\n"
    "  --request ID        of this request id (the client's X-Opaque-Id)\n"
    "  --kind KIND         search, context, get or authorize\n"
    "  --since T, --until T  recorded in [T1, T2): ISO-8601 (2026-12-01T10:00:00Z) or epoch ms\n"
    "  --limit N           print at most N records (default: all)\n\n"
    "cordon audit verify replays the records the filters select against the permission\n"
    "history: was every chunk a record shows readable by its subject at the record's revision?\n"
    "It prints the counts and each hit that was not, and exits 1 if there is one.\n";

static int print_bad(void *ctx, uint64_t seq, const char *chunk_id)
{
    (void)ctx;
    printf("unreadable when shown: record %llu, chunk ", (unsigned long long)seq);
    cli_print_json_str(chunk_id);
    putchar('\n');
    return 0;
}

static int print_line(void *ctx, uint64_t seq, const char *json, size_t len)
{
    size_t *left = ctx;
    (void)seq;
    fwrite(json, 1, len, stdout);
    fputc('\n', stdout);
    return --*left ? 0 : 1;
}

int cli_audit(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, 0, 'd'},
        {"subject", required_argument, 0, 's'},
        {"collection", required_argument, 0, 'c'},
        {"chunk", required_argument, 0, 'i'},
        {"request", required_argument, 0, 'r'},
        {"kind", required_argument, 0, 'k'},
        {"since", required_argument, 0, 'S'},
        {"until", required_argument, 0, 'U'},
        {"limit", required_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *dir = NULL;
    cordon_audit_filter f = {0};
    size_t limit = 0;
    int c, verify = argc > 1 && !strcmp(argv[1], "verify");
    if (verify) { /* the verb goes; options follow */
        argv++;
        argc--;
    }
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'd': dir = optarg; break;
        case 's': f.subject = optarg; break;
        case 'c': f.collection = optarg; break;
        case 'i': f.chunk_id = optarg; break;
        case 'r': f.request_id = optarg; break;
        case 'k': f.kind = optarg; break;
        case 'S': bad = cli_parse_time("audit", "--since", optarg, &f.since_us); break;
        case 'U': bad = cli_parse_time("audit", "--until", optarg, &f.until_us); break;
        case 'n': bad = cli_parse_size("--limit", optarg, &limit); break;
        default: fputs(usage, c == 'h' ? stdout : stderr); return c == 'h' ? 0 : 2;
        }
        if (bad)
            return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "cordon audit: unexpected argument \"%s\"\n%s", argv[optind], usage);
        return 2;
    }
    if (f.chunk_id && !f.collection) {
        fprintf(stderr, "cordon audit: --chunk names a chunk of a collection: give "
                        "--collection too\n");
        return 2;
    }
    cordon_t *db;
    if (cli_open(dir, 1, &db) != 0)
        return 1;
    if (verify) {
        cordon_audit_replay r;
        cordon_error verr;
        int vrc = cordon_audit_verify(db, &f, print_bad, NULL, &r, &verr);
        cordon_close(db);
        if (vrc) {
            fprintf(stderr, "cordon audit verify: %s\n", verr.message);
            return 1;
        }
        printf("%llu records, %llu hits replayed: %llu unreadable when shown, %llu before the "
               "history\n",
               (unsigned long long)r.records, (unsigned long long)r.hits,
               (unsigned long long)r.unreadable, (unsigned long long)r.unjudged);
        return r.unreadable ? 1 : 0;
    }
    size_t left = limit ? limit : SIZE_MAX;
    uint64_t more = 0;
    cordon_error err;
    int rc;
    do { /* pages of the most one query returns, each after the last */
        f.after_seq = more;
        rc = cordon_audit_query(db, &f, print_line, &left, &more, &err);
    } while (rc == 0 && more && left);
    cordon_close(db);
    if (rc && rc != 1) {
        fprintf(stderr, "cordon audit: %s\n", err.message);
        return 1;
    }
    return 0;
}
