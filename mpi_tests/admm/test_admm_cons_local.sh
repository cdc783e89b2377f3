#!/bin/sh
# Private consensus ADMM under privacy.trust = local (doc/design.md, "Threat model"): every
# party (one a rank) agrees on the plan and charges its own journal, PARTYDIR/ledger.partyK.jsonl,
# before each noised message it sends; the coordinator's ledger is a view.
#  - an honest run (3 ranks, 10 iterations, seeded): completes; each party's journal holds 10 charges
#    and replays (dpopt ledger) to the coordinator's view of that party; the training objective
#    is withheld;
#  - seeded, stopped at 4 and resumed: each party's checkpoint part (its un-noised x_i, u_i)
#    is in its own directory, not the coordinator's; the uninterrupted model's bytes, each
#    party's reopened journal replays to the same view, no part left;
#  - a fixed --sigma whose budget lasts 6 iterations: the coordinator's ledger stops the run
#    (exit 3) and each party journalled the 6 releases;
#  - a coordinator that announces the 7th iteration accepted although its ledger refused it
#    (dpopt-test's --test-coordinator ignore-refusal, never in the installed dpopt): every
#    party's own account refuses, printed once, FAILED, no model.txt, every journal intact (6
#    charges a party, the same totals as the coordinator's view);
#  - a party whose settings differ stops every rank before any charge (the plan's digest); a
#    party without its own directory, a party directory under central trust, and local trust
#    without --private, are refused.
. "$(dirname "$0")/../lib/testlib.sh"
head -n 3000 "$S/data/a9a" > "$T/a3k"
cp "$S/data/a9a.schema" "$T/a3k.schema" # the public schema (123 features)
P="--private --clip 1 --eps 1 --delta 1e-5 --lambda 1e-4 --maxit 10 --set privacy.trust=local --quiet"
charges() { if [ -f "$1" ]; then grep -c '"mechanism"' "$1"; else echo 0; fi; }
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }
own() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }
# parties RUN N: party 1's and 2's journals hold N charges and replay to the coordinator's view
parties() {
  for k in 1 2; do
    j="$1.p$k/ledger.party$k.jsonl"
    [ "$(charges "$j")" = "$2" ] && ok || bad "$1: party $k journalled $(charges "$j") charges (want $2)"
    expect 0 "$DPOPT" ledger "$j"
    [ -n "$(own "$j")" ] && [ "$(own "$j")" = "$(pview "$1" $k)" ] && ok ||
      bad "$1: party $k's journal replays to '$(own "$j")', the coordinator's view is '$(pview "$1" $k)'"
  done
}

# ---- honest (seeded: the reference of the resume below)
expect 0 $MPI -np 3 "$DPOPT" admm $P --seed 7 --set parties.out="$T/h.p%d" --out "$T/h" "$T/a3k"
check "honest: completed" test -f "$T/h/model.txt"
has "$T/out" "objective   withheld" "honest: the training objective is withheld"
has "$T/out" "trust       local, 3 parties" "honest: the report names the trust"
parties "$T/h" 10
[ "$(charges "$T/h/ledger.jsonl")" = 30 ] && ok || bad "honest: the coordinator journalled $(charges "$T/h/ledger.jsonl") charges (want 10 x 3)"

# ---- seeded: stopped at 4, resumed, the uninterrupted bytes and journals
expect 5 $MPI -np 3 "$DPOPT" admm $P --seed 7 --checkpoint-every 2 --set run.stop_after=4 \
  --set parties.out="$T/s.p%d" --out "$T/s" "$T/a3k"
parties "$T/s" 4
parts() { (cd "$T" && find s s.p1 s.p2 -name 'checkpoint*' | sort | tr '\n' ' '); }
[ "$(parts)" = "s.p1/checkpoint.rank1.it4 s.p2/checkpoint.rank2.it4 s/checkpoint " ] && ok ||
  bad "stopped: the parts are $(parts) (want each party's in its own directory)"
expect 0 $MPI -np 3 "$DPOPT" admm --resume "$T/s"
cmp -s "$T/h/model.txt" "$T/s/model.txt" && ok || bad "resumed: the model differs from the uninterrupted one"
parties "$T/s" 10
[ -z "$(parts)" ] && ok || bad "resumed: parts left after the run completed: $(parts)"

# ---- the coordinator's ledger stops an honest run; a deviating coordinator is refused by
# every party
expect 3 $MPI -np 3 "$DPOPT" admm $P --sigma 20 --set parties.out="$T/b.p%d" --out "$T/b" "$T/a3k"
parties "$T/b" 6
expect 1 $MPI -np 3 "$DPOPT_TEST" admm $P --sigma 20 --test-coordinator ignore-refusal \
  --set parties.out="$T/x.p%d" --out "$T/x" "$T/a3k"
has "$T/err" "party [12] refuses release 7 of the coordinator: its own account refuses the charge" "ignore-refusal: refused"
[ "$(grep -c 'refuses release' "$T/err")" = 1 ] && ok || bad "ignore-refusal: the refusal is printed $(grep -c 'refuses release' "$T/err") times (want once)"
check "ignore-refusal: FAILED, no model.txt" test -f "$T/x/FAILED" -a ! -f "$T/x/model.txt"
parties "$T/x" 6
expect 0 "$DPOPT" ledger "$T/x"
[ "$(charges "$T/x/ledger.jsonl")" = 18 ] && ok || bad "ignore-refusal: the coordinator journalled $(charges "$T/x/ledger.jsonl") charges (want 6 x 3)"

# ---- the plan, the directories, --private
expect 1 $MPI -np 2 "$DPOPT" admm $P --set parties.out="$T/pl.p%d" --out "$T/pl" "$T/a3k" : \
  -np 1 "$DPOPT" admm $P --maxit 11 --set parties.out="$T/pl.p%d" --out "$T/pl" "$T/a3k"
has "$T/err" "the parties do not agree on the plan (rank 2's digest differs from the coordinator's): admm.maxit is '11' here, '10' at the coordinator" "plan: refused"
[ "$(charges "$T/pl/ledger.jsonl")" = 0 ] && ok || bad "plan: $(charges "$T/pl/ledger.jsonl") charges (want 0)"
expect 1 $MPI -np 3 "$DPOPT" admm $P --out "$T/nd" "$T/a3k"
has "$T/err" "party 1 keeps its own journal in its own run directory, and none is given" "no party directory: refused"
check "no party directory: nothing written" test ! -e "$T/nd"
expect 1 $MPI -np 2 "$DPOPT" admm --private --clip 1 --eps 1 --quiet --set parties.out="$T/pc.p%d" --out "$T/pc" "$T/a3k"
has "$T/err" "setting 'parties.out' is not used by dpopt admm" "a party directory under central trust: refused"
expect 1 $MPI -np 2 "$DPOPT" admm --clip 1 --eps 1 --set privacy.trust=local --quiet --out "$T/np" "$T/a3k"
has "$T/err" "consensus ADMM adds noise only with --private" "local without --private: refused"
finish test_admm_cons_local
