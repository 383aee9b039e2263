/* rebac_ref.h: what the relationship tests' references share, written apart from the engine:
 * the members of each group (a least fixpoint over nested groups, cycles included) and the
 * users a set of groups stands for, as bit sets of users. Header only; libc. */
#ifndef CDN_TEST_REBAC_REF_H
#define CDN_TEST_REBAC_REF_H

#include <stddef.h>

/* out[g]: every user in group g, directly (users[g]) or through the groups it holds (bit h of
 * groups[g]), for ng groups. */
static inline void rref_members(const unsigned *users, const unsigned *groups, int ng,
                                unsigned *out)
{
    int changed = 1;
    for (int g = 0; g < ng; g++)
        out[g] = users[g];
    while (changed) {
        changed = 0;
        for (int g = 0; g < ng; g++)
            for (int h = 0; h < ng; h++)
                if (groups[g] >> h & 1 && (out[g] | out[h]) != out[g]) {
                    out[g] |= out[h];
                    changed = 1;
                }
    }
}

/* The users of the groups in bits, given every group's members. */
static inline unsigned rref_users_of(unsigned bits, const unsigned *mem, int ng)
{
    unsigned u = 0;
    for (int g = 0; g < ng; g++)
        if (bits >> g & 1)
            u |= mem[g];
    return u;
}

/* A kind of tuple a test writes at random: a format over two indexes (a < na, b < nb; a
 * wildcard's format uses a alone, nb 0) and the reference's bit set it sets (bit b of the
 * unsigned array at offset field of the test's reference). */
typedef struct rref_kind {
    const char *fmt;
    int na, nb;
    size_t field;
} rref_kind_t;

#endif
