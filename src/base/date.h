/* date.h: the one parser of date text, shared by permission conditions and metadata filters so
 * that a date one accepts the other accepts too, at the same instant. Relies on nothing. */
#ifndef CDN_DATE_H
#define CDN_DATE_H

#include <stddef.h>

/* Also accept text of digits (optionally after '-', 5 to 19 characters in all) as epoch
 * milliseconds, as Elasticsearch's epoch_millis does: metadata takes numbers this way, while a
 * condition takes its numbers as JSON numbers (epoch seconds) and refuses numeric text. Four
 * digits alone are always a year. */
#define CDN_DATE_EPOCH_MS_TEXT 1u

/* Parses the n bytes at s (no NUL needed) as one of the ISO-8601 / RFC 3339 forms
 *   YYYY                                      a year (its first instant, UTC)
 *   YYYY-MM-DD                                a day
 *   YYYY-MM-DD(T|t| )HH:MM[:SS[.F...]]        a time of day; seconds 00..60, F 1..9 digits
 * the last two optionally followed by a zone: Z, z, +HH, +HHMM or +HH:MM (or '-'), hours <= 23,
 * minutes <= 59; no zone means UTC. Years run 0000..9999 (proleptic Gregorian), the day must
 * exist in its month (2024-02-29 does, 2023-02-29 does not). With CDN_DATE_EPOCH_MS_TEXT in
 * flags, numeric text is epoch milliseconds (see above).
 * Writes milliseconds since 1970-01-01T00:00:00Z to *epoch_ms_out, with the fraction's digits
 * past milliseconds kept as a fraction of a millisecond. Returns 0 or CDN_ERR_INVALID (then
 * *epoch_ms_out is unchanged). */
int cdn_date_parse(const char *s, size_t n, unsigned flags, double *epoch_ms_out);

#endif
