/* date.c: ISO-8601 dates and date-times (and epoch milliseconds as text) to epoch milliseconds.
 * Relies on nothing but integer arithmetic: no timegm, whose range and locale vary by libc. */
#include "base/date.h"
#include "base/err.h"

#include <stdbool.h>
#include <stdint.h>

/* A cursor over the n bytes of the text: every read checks the end, since s has no NUL. */
typedef struct cur {
    const char *s;
    size_t n, i;
} cur_t;

static bool at(const cur_t *c, char ch)
{
    return c->i < c->n && c->s[c->i] == ch;
}

static bool take(cur_t *c, char ch)
{
    if (!at(c, ch))
        return false;
    c->i++;
    return true;
}

/* Reads exactly `len` digits as a number. */
static bool num(cur_t *c, int len, int *out)
{
    int v = 0;
    if (c->i + (size_t)len > c->n)
        return false;
    for (int k = 0; k < len; k++) {
        char ch = c->s[c->i + (size_t)k];
        if (ch < '0' || ch > '9')
            return false;
        v = v * 10 + (ch - '0');
    }
    c->i += (size_t)len;
    *out = v;
    return true;
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil): exact for every year this parser admits, negative before 1970. */
static long days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Numeric text as epoch milliseconds: 5..19 characters, an optional '-' then digits. */
static bool epoch_ms(const char *s, size_t n, double *out)
{
    size_t i = n > 0 && s[0] == '-';
    if (n < 5 || n > 19 || i == n)
        return false;
    double v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = s[0] == '-' ? -v : v;
    return true;
}

/* The time of day after the date's separator: HH:MM[:SS[.F]], in ms since midnight. */
static bool time_of_day(cur_t *c, double *ms)
{
    int h, mi, sec = 0;
    double frac = 0, scale = 100.0; /* the first fraction digit is hundreds of ms */
    if (!num(c, 2, &h) || !take(c, ':') || !num(c, 2, &mi) || h > 23 || mi > 59)
        return false;
    if (take(c, ':')) {
        if (!num(c, 2, &sec) || sec > 60) /* 60: a leap second, as RFC 3339 allows */
            return false;
        if (take(c, '.')) {
            int nd = 0;
            for (; c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9'; c->i++, nd++) {
                frac += (c->s[c->i] - '0') * scale;
                scale /= 10;
            }
            if (nd < 1 || nd > 9)
                return false;
        }
    }
    *ms = ((double)h * 3600 + mi * 60 + sec) * 1000.0 + frac;
    return true;
}

/* An optional zone: Z, z, or a sign and HH, HHMM or HH:MM; *off_ms is local time minus UTC. */
static bool zone(cur_t *c, double *off_ms)
{
    int oh, om = 0, sign;
    *off_ms = 0;
    if (take(c, 'Z') || take(c, 'z') || c->i == c->n)
        return true;
    if (!at(c, '+') && !at(c, '-'))
        return false;
    sign = c->s[c->i++] == '+' ? 1 : -1;
    if (!num(c, 2, &oh) || oh > 23)
        return false;
    if (take(c, ':')) {
        if (!num(c, 2, &om))
            return false;
    } else if (c->i < c->n && !num(c, 2, &om)) {
        return false;
    }
    if (om > 59)
        return false;
    *off_ms = sign * ((double)oh * 3600 + om * 60) * 1000.0;
    return true;
}

int cdn_date_parse(const char *s, size_t n, unsigned flags, double *epoch_ms_out)
{
    cur_t c = {s, n, 0};
    int y, mo = 1, d = 1;
    double tod = 0, off = 0;
    if (!s)
        return CDN_ERR_INVALID;
    if ((flags & CDN_DATE_EPOCH_MS_TEXT) && n != 4 && epoch_ms(s, n, epoch_ms_out))
        return CDN_OK;
    if (!num(&c, 4, &y))
        return CDN_ERR_INVALID;
    if (take(&c, '-')) {
        if (!num(&c, 2, &mo) || !take(&c, '-') || !num(&c, 2, &d) || mo < 1 || mo > 12 || d < 1 ||
            d > days_in_month(y, mo))
            return CDN_ERR_INVALID;
        if ((take(&c, 'T') || take(&c, 't') || take(&c, ' ')) && !time_of_day(&c, &tod))
            return CDN_ERR_INVALID;
        if (!zone(&c, &off))
            return CDN_ERR_INVALID;
    }
    if (c.i != n) /* a year alone takes no zone */
        return CDN_ERR_INVALID;
    *epoch_ms_out = (double)days_from_civil(y, mo, d) * 86400000.0 + tod - off;
    return CDN_OK;
}
