#!/bin/sh
# dpopt audit --one-run (Steinke, Nasr and Jagielski 2023) on the other families of dpopt train:
#  - pnsgd, phased-sgd, phased-erm: their steps are not releases (hidden state), so each canary
#    is scored by the final model's weight on its own column.  The intact run's bound stays
#    below the claim; with the noise scaled by 0.01 (dpopt-test, never installed) the canaries'
#    steps show in the final model and it is a VIOLATION (a wrong sign or column of the score
#    would give no right guesses).  At eps 1, delta 1e-5 a halved noise is not caught by the
#    final model (Gaussian releases: doc/results.md), so that is not asserted here;
#  - secagg (privacy.trust = secagg, two parties): the release is the unmasked sum of the
#    parties' noise shares.  With privacy.collude = 0 the shares add up to the central noise and
#    the halved noise is a VIOLATION where central's is (test_audit_onerun_power.sh's setting);
#    with collude 1 the sum holds more noise than the claim needs against an outsider, and the
#    intact run passes.
# Seeded (--seed), so the outcomes are reproducible.  2000 rows of a9a, so each run is short.
. "$(dirname "$0")/../lib/testlib.sh"

lb() { awk 'NR == 2 {print $4}' "$T/out"; }
below() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0)}'; }
head -n 2000 "$S/data/a9a" >"$T/a9a2k"
D="--data $T/a9a2k --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --canaries 1000
  --quiet --seed 11"

for a in pnsgd phased-sgd phased-erm; do
  expect 0 $MPI -np 2 "$DPOPT" audit --one-run $D --algo $a --eps 1 --delta 1e-5 --json "$T/$a.json" --out "$T/$a"
  check "$a one-run: bound $(lb) below the claim 1" below "$(lb)" 1
  has "$T/out" "^one run: the final model only (its steps are not releases: hidden state)" "$a: scored by the final model"
  has "$T/out" "^assumes: the adversary sees the final model" "$a: the assumption printed"
  has "$T/$a.json" '"scored_by":"final model"' "$a: json says the final model"
  expect 6 $MPI -np 2 "$DPOPT_TEST" audit --one-run $D --algo $a --eps 1 --delta 1e-5 \
    --test-noise-factor 0.01 --out "$T/$a.v"
  check "$a, noise x 0.01: bound $(lb) above the claim 1" below 1 "$(lb)"
done

SA="$D --algo dp-gd --iters 1 --eps 1 --clip l1:1 --set parties.count=2 --set privacy.trust=secagg"
expect 0 $MPI -np 2 "$DPOPT_TEST" audit --one-run $SA --set privacy.collude=0 --trust-coordinator \
  --set parties.out="$T/s0.p%d" --out "$T/s0"
check "secagg, collude 0: bound $(lb) below the claim 1" below "$(lb)" 1
has "$T/out" "^one run: 1 releases observed" "secagg: the release observed"
expect 6 $MPI -np 2 "$DPOPT_TEST" audit --one-run $SA --set privacy.collude=0 --trust-coordinator \
  --test-break-noise --set parties.out="$T/s0h.p%d" --out "$T/s0h"
check "secagg, collude 0, noise halved: bound $(lb) above the claim 1" below 1 "$(lb)"
expect 0 $MPI -np 2 "$DPOPT" audit --one-run $SA --set parties.out="$T/s1.p%d" --out "$T/s1"
check "secagg, collude 1: bound $(lb) below the claim 1" below "$(lb)" 1
check "secagg: each party's journal" test -s "$T/s1.p1/ledger.party1.jsonl"
finish test_audit_onerun_family
