/* progress.c: the progress report of long commands (progress.h).
 * Relies on base/clock for a monotonic clock and isatty to tell a terminal from a log. */
#include "cli/progress.h"
#include "base/clock.h"

#include <stdio.h>
#include <unistd.h>

void cli_progress_start(cli_progress_t *p, const char *what, const char *unit, size_t total, int on)
{
    *p = (cli_progress_t){.what = what, .unit = unit, .total = total, .on = on};
    p->t0 = p->last = cdn_clock_ns();
    p->tty = on && isatty(2);
}

static void draw(cli_progress_t *p, double secs, int final)
{
    double rate = secs > 0 ? p->done / secs : 0;
    fprintf(stderr, "%s%-8s ", p->tty ? "\r" : "", p->what);
    if (p->total && !final)
        fprintf(stderr, "%3.0f%% %zu/%zu %s", 100.0 * p->done / p->total, p->done, p->total,
                p->unit);
    else
        fprintf(stderr, "%zu %s", p->done, p->unit);
    fprintf(stderr, " in %.1f s (%.0f/s)", secs, rate);
    if (p->total && !final && rate > 0 && p->done < p->total)
        fprintf(stderr, ", about %.0f s left", (p->total - p->done) / rate);
    fprintf(stderr, "%s%s", p->tty ? "\033[K" : "", p->tty && !final ? "" : "\n");
    p->shown = 1;
}

void cli_progress_update(cli_progress_t *p, size_t done)
{
    uint64_t now;
    p->done = done;
    if (!p->on)
        return;
    now = cdn_clock_ns();
    if (now - p->last < (p->tty ? 100000000ull : 5000000000ull))
        return;
    p->last = now;
    draw(p, (double)(now - p->t0) / 1e9, 0);
}

void cli_progress_end(cli_progress_t *p)
{
    if (p->on && (p->shown || p->done))
        draw(p, (double)(cdn_clock_ns() - p->t0) / 1e9, 1);
}
