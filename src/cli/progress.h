/* progress.h: a progress report for long commands: on a terminal one line redrawn in place
 * (what, percent, count, rate, time left), otherwise a plain line every few seconds.
 * Relies on base/clock; writes to stderr. */
#ifndef CDN_CLI_PROGRESS_H
#define CDN_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_progress {
    const char *what; /* "checking", "loading" */
    const char *unit; /* "lines" */
    size_t total;     /* 0 = unknown: no percent or time left */
    size_t done;
    uint64_t t0, last; /* ns */
    int tty, on, shown;
} cli_progress_t;

/* Starts a report of total units (0 if unknown); on = 0 makes every call a no-op. */
void cli_progress_start(cli_progress_t *p, const char *what, const char *unit, size_t total,
                        int on);
/* Records done units so far; redraws at most 10 times a second on a terminal, every 5 s
 * otherwise. */
void cli_progress_update(cli_progress_t *p, size_t done);
/* Prints the final count and time, and ends the line. */
void cli_progress_end(cli_progress_t *p);

#endif
