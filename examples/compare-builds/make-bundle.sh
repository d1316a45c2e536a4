#!/bin/sh
# make-bundle.sh -- how primes.bundle was made (docs/example.md).
#
# primes is a tiny C program (count the primes below N) with three
# tagged revisions, the history a build comparison walks through:
#   v1.0  trial division
#   v1.1  a sieve of Eratosthenes (much faster: a win for v1.1)
#   v1.2  only the usage text changes (the same speed: parity)
# The bundle is committed; this script is the record of what is in it
# and makes it again (fixed dates and author, so the commits are the
# same; the bundle's bytes may differ between git versions).
#
# usage: sh examples/compare-builds/make-bundle.sh [OUT.bundle]
set -eu
out=$(realpath "${1:-$(dirname "$0")/primes.bundle}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
git init --quiet --initial-branch=main primes
cd primes
export GIT_AUTHOR_NAME="Parity example" GIT_AUTHOR_EMAIL="example@parity.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"

commit() {   # commit MESSAGE TAG DATE
    export GIT_AUTHOR_DATE="$3" GIT_COMMITTER_DATE="$3"
    git add -A
    git -c commit.gpgsign=false commit --quiet -m "$1"
    git -c tag.gpgsign=false tag -a -m "$2" "$2"
}

cat > Makefile <<'MK'
CC ?= cc
CFLAGS ?= -O2

primes: primes.c
	$(CC) $(CFLAGS) -o primes primes.c

clean:
	rm -f primes
MK

cat > primes.c <<'C'
/* primes: print how many primes are below N (default 100000). */
#include <stdio.h>
#include <stdlib.h>

static int
is_prime(unsigned long n)
{
    if (n < 2)
        return 0;
    for (unsigned long d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

int
main(int argc, char **argv)
{
    unsigned long limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    unsigned long count = 0;
    for (unsigned long n = 2; n < limit; n++)
        count += is_prime(n);
    printf("%lu\n", count);
    return 0;
}
C
commit "primes: count primes by trial division" v1.0 "2026-01-05T10:00:00Z"

cat > primes.c <<'C'
/* primes: print how many primes are below N (default 100000). */
#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
    unsigned long limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    unsigned long count = 0;
    /* A sieve of Eratosthenes: one byte per number below limit. */
    char *composite = calloc(limit + 1, 1);
    if (!composite) {
        fprintf(stderr, "primes: out of memory\n");
        return 1;
    }
    for (unsigned long n = 2; n < limit; n++) {
        if (composite[n])
            continue;
        count++;
        for (unsigned long m = n * n; m < limit; m += n)
            composite[m] = 1;
    }
    free(composite);
    printf("%lu\n", count);
    return 0;
}
C
commit "primes: a sieve instead of trial division" v1.1 "2026-02-02T10:00:00Z"

sed -i 's|/\* primes: print how many primes are below N (default 100000). \*/|/* primes N: print how many primes are below N (default 100000). */|' primes.c
commit "primes: say N in the usage line" v1.2 "2026-03-02T10:00:00Z"

git bundle create --quiet "$out" --all
echo "wrote $out"
