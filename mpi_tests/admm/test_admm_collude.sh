#!/bin/sh
# dpopt admm under privacy.trust = secagg reads privacy.collude and privacy.trust_coordinator
# as dpopt train does (doc/design.md, "Threat model (secagg)"; train's cases:
# mpi_tests/privacy/test_secagg_cli.sh).  DP-ADMM, one party a rank, 3 parties:
#  - collude 0 without privacy.trust_coordinator counts the coordinator's own share as honest,
#    a trust the user did not declare: refused (exit 1), once, in train's words and naming the
#    key's file and line, before anything is loaded or written;
#  - with --trust-coordinator the run goes ahead and its journal says "collude 0 of 3";
#  - --trust-coordinator with collude 1 (the default) and collude >= parties are refused in
#    train's words too.
. "$(dirname "$0")/../lib/testlib.sh"

ADMM="--method dpadmm --eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --maxit 3 \
  --set privacy.sigma_rule=rdp --set privacy.trust=secagg --quiet"
TRAIN="--data $S/data/a9a --row-l2-bound 3.75 --algo dp-gd --iters 3 --eps 1 --delta 1e-5 \
  --set privacy.trust=secagg --quiet"
printf '[privacy]\ncollude = 0\n' >"$T/k0.ini"
# the refusal without the command's name; both commands must print the same sentence
words() { sed -n 's/^dpopt [a-z]*: error: //p' "$T/err"; }
same() { # CASE: admm's refusal (in $T/admm.err) and train's (in $T/err) are one sentence
  if [ -s "$T/admm.err" ] && [ "$(words)" = "$(cat "$T/admm.err")" ]; then ok; else
    bad "$1: admm and train say different things:"; cat "$T/admm.err" "$T/err" | sed 's/^/    /'
  fi
}
mkdir "$T/w"
written() { [ -z "$(ls -A "$T/w")" ]; } # every run below writes under $T/w

# ---- collude 0, no acknowledgement
expect 1 $MPI -np 3 "$DPOPT" admm $ADMM --config "$T/k0.ini" --set parties.out="$T/w/a.p%d" \
  --out "$T/w/a" "$S/data/a9a"
has "$T/err" "k0.ini:2: privacy.collude = 0 counts the coordinator's own party's noise share as honest" \
  "admm: collude 0 refused, naming the file and line"
has "$T/err" "privacy.trust_coordinator = 1 (--trust-coordinator)" "admm: how to acknowledge"
check "admm: the refusal printed once: $(cat "$T/err")" test "$(grep -c 'error:' "$T/err")" = 1
check "admm: a refused collude 0 writes nothing: $(ls -A "$T/w")" written
words >"$T/admm.err"
expect 1 $MPI -np 3 "$DPOPT" train $TRAIN --config "$T/k0.ini" --set parties.out="$T/w/t.p%d" \
  --out "$T/w/t"
same "collude 0"
check "train: a refused collude 0 writes nothing" written

# ---- declared: the run goes ahead, journalled as collude 0 of 3
expect 0 $MPI -np 3 "$DPOPT" admm $ADMM --config "$T/k0.ini" --trust-coordinator \
  --set parties.out="$T/b.p%d" --out "$T/b" "$S/data/a9a"
has "$T/b/ledger.jsonl" '"event":"trust secagg, collude 0 of 3: ' "acknowledged: collude 0 of 3 journalled"

# ---- the acknowledgement without collude 0, and collude >= parties
expect 1 $MPI -np 3 "$DPOPT" admm $ADMM --trust-coordinator --set parties.out="$T/w/c.p%d" \
  --out "$T/w/c" "$S/data/a9a"
has "$T/err" "privacy.trust_coordinator applies to privacy.collude = 0 (here 1)" "admm: ack with collude 1"
words >"$T/admm.err"
expect 1 $MPI -np 3 "$DPOPT" train $TRAIN --trust-coordinator --set parties.out="$T/w/t.p%d" \
  --out "$T/w/t"
same "acknowledgement with collude 1"
expect 1 $MPI -np 3 "$DPOPT" admm $ADMM --set privacy.collude=3 --set parties.out="$T/w/c.p%d" \
  --out "$T/w/c" "$S/data/a9a"
has "$T/err" "privacy.collude = 3: need 0 <= k < parties (3)" "admm: collude 3 of 3 refused"
words >"$T/admm.err"
expect 1 $MPI -np 3 "$DPOPT" train $TRAIN --set privacy.collude=3 --set parties.out="$T/w/t.p%d" \
  --out "$T/w/t"
same "collude >= parties"
check "refused runs write nothing: $(ls -A "$T/w")" written

finish test_admm_collude
