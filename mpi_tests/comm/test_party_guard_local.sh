#!/bin/sh
# The parties' guard under privacy.trust = local and shares (doc/design.md, "Threat model"):
# every rank but the coordinator's prices the noise the request header announces from its own
# plan and charges its own journal before it adds noise.  Deviations are dpopt-test's switches
# (--test-coordinator KIND[:N]; rank 0 announces the deviation and itself goes on by the plan;
# never in the installed dpopt: test_switches_out.sh).  For dp-gd (Laplace) under local and
# shares, dp-sgd-rdp (Gaussian) under local and DP-ADMM under local:
#  - an honest run completes, and each party's own journal (PARTYDIR/ledger.partyK.jsonl)
#    replays (dpopt ledger) to the coordinator's view of that party, with one charge a release;
#  - a smaller noise (the scale on the sum halved, from release 1 or from release 3), another
#    noise family (Laplace <-> Gaussian), shares sized for one rank more, one release beyond
#    the plan (the party's own budget refuses it): every honest party refuses naming what
#    differed, the round is withheld (FAILED, no model.txt), the party's journal holds only the
#    releases before it, and the coordinator's no more than the requests made;
#  - parties whose settings differ stop before anything is charged (the plan's digest).
. "$(dirname "$0")/../lib/testlib.sh"

charges() { grep -c '"mechanism"' "$1"; }
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }
own() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }

# honest RUN K N [TOL]: party K's journal replays to the coordinator's view (within TOL,
# default 0), N charges
honest() {
  check "$1: completed" test -f "$1/model.txt"
  expect 0 "$DPOPT" ledger "$1.p$2/ledger.party$2.jsonl"
  close "$(own "$1.p$2/ledger.party$2.jsonl")" "$(pview "$1" "$2")" "${4:-0}" \
    "$1: party $2's own journal replays to the coordinator's view"
  [ "$(charges "$1.p$2/ledger.party$2.jsonl")" = "$3" ] && ok ||
    bad "$1: party $2 journalled $(charges "$1.p$2/ledger.party$2.jsonl") charges (want $3)"
}

# own_times RUN: a rank's times follow its rows, so the coordinator's summary holds its own
# (max = min: no other rank's time reached it)
own_times() {
  v() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p" "$2/summary.json" | head -1; }
  for w in compute comm; do
    a=$(v ${w}_time_s_max "$1") b=$(v ${w}_time_s_min "$1")
    [ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "$1: ${w}_time_s max $a, min $b: other ranks' times"
  done
}

# refused RUN N WHAT: refused at release N, withheld; the parties journalled N - 1 releases
refused() {
  has "$T/err" "party [12] refuses release $2 of the coordinator: $3" "$1: refused ($3)"
  has "$T/err" "nothing contributed, the round is withheld" "$1: withheld"
  check "$1: FAILED, no model.txt" test -f "$1/FAILED" -a ! -f "$1/model.txt"
  for k in 1 2; do
    [ -f "$1.p$k/ledger.party$k.jsonl" ] || continue
    c=$(charges "$1.p$k/ledger.party$k.jsonl")
    [ "$c" = $(($2 - 1)) ] && ok || bad "$1: party $k journalled $c charges (want $(($2 - 1)))"
    expect 0 "$DPOPT" ledger "$1.p$k/ledger.party$k.jsonl"
  done
  c=$(charges "$1/ledger.jsonl")
  check "$1: $c charges journalled by the coordinator for $2 requests" test "$c" -le "$2"
}

# (local: a smaller noise from release 3 and an extra release; shares: from release 1 and the
# share count; both: the other family)
for tr in local shares; do
  C="--data $S/data/a9a --row-l2-bound 3.75 --clip l2:1 --eps 1 --set privacy.trust=$tr \
    --set parties.count=3 --algo dp-gd --iters 5 --quiet"
  expect 0 $MPI -np 3 "$DPOPT_TEST" train $C --set parties.out="$T/$tr-ok.p%d" --out "$T/$tr-ok"
  honest "$T/$tr-ok" 1 5
  honest "$T/$tr-ok" 2 5
  own_times "$T/$tr-ok"
  at=1; [ $tr = local ] && at=3
  expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --set parties.out="$T/$tr-s.p%d" --out "$T/$tr-s" --test-coordinator sigma:$at
  refused "$T/$tr-s" $at "its noise (Laplace scale .* on the sum) costs eps = 0.4 a release, more than the eps = 0.2 its ledger charges"
  expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --set parties.out="$T/$tr-k.p%d" --out "$T/$tr-k" --test-coordinator kind
  [ $tr = local ] && want="local" || want="shared"
  refused "$T/$tr-k" 1 "it asks for $want Gaussian noise; this party's plan (privacy.trust = $tr, Laplace noise) has $want Laplace"
  if [ $tr = local ]; then
    expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --set parties.out="$T/$tr-x.p%d" --out "$T/$tr-x" --test-coordinator extra
    refused "$T/$tr-x" 6 "its own account refuses the charge"
    [ "$(charges "$T/$tr-x/ledger.jsonl")" = 5 ] && ok || bad "$tr extra: the coordinator journalled $(charges "$T/$tr-x/ledger.jsonl") charges (want the plan's 5)"
  else
    expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --set parties.out="$T/$tr-n.p%d" --out "$T/$tr-n" --test-coordinator shares
    refused "$T/$tr-n" 1 "it announces 4 noise shares; this party's plan has 3 ranks, each adding one"
  fi
done

# the plan: a party with other settings stops every rank before any charge
C="--data $S/data/a9a --row-l2-bound 3.75 --clip l2:1 --eps 1 --set privacy.trust=local \
  --set parties.count=3 --algo dp-gd --iters 5 --quiet --set parties.out=$T/pl.p%d --out $T/pl"
expect 1 $MPI -np 2 "$DPOPT" train $C : -np 1 "$DPOPT" train $C --iters 6
has "$T/err" "the parties do not agree on the plan (rank 2's digest differs from the coordinator's): algo.iters is '6' here, '5' at the coordinator" "local: the plan is agreed"
[ "$(charges "$T/pl/ledger.jsonl")" = 0 ] && ok || bad "plan: $(charges "$T/pl/ledger.jsonl") charges (want 0)"

# dp-sgd-rdp (Gaussian on each party's own sum, the multiplier priced on its own L2 bound)
G="--data $S/data/a9a --row-l2-bound 3.75 --clip l2:1 --eps 2 --delta 1e-5 \
  --set privacy.trust=local --set parties.count=2 --algo dp-sgd-rdp --batch 2000 --iters 3 --quiet"
expect 0 $MPI -np 2 "$DPOPT_TEST" train $G --set parties.out="$T/g-ok.p%d" --out "$T/g-ok"
honest "$T/g-ok" 1 3
expect 1 $MPI -np 2 "$DPOPT_TEST" train $G --set parties.out="$T/g-k.p%d" --out "$T/g-k" --test-coordinator kind
refused "$T/g-k" 1 "it asks for local Laplace noise; this party's plan (privacy.trust = local, Gaussian noise) has local Gaussian"

# DP-ADMM under local trust (one party per rank)
A="--method dpadmm --eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --maxit 6 --set privacy.trust=local --quiet"
expect 0 $MPI -np 3 "$DPOPT_TEST" admm $A --set parties.out="$T/a-ok.p%d" --out "$T/a-ok" "$S/data/a9a"
# (the coordinator charges n sigma on n sens, the party sigma n on 2 clip: the same multiplier
# up to the last bits of sens = 2 clip / n)
honest "$T/a-ok" 2 7 1e-12
expect 1 $MPI -np 3 "$DPOPT_TEST" admm $A --set parties.out="$T/a-s.p%d" --out "$T/a-s" --test-coordinator sigma:2 "$S/data/a9a"
refused "$T/a-s" 2 "its noise (Gaussian sigma .* on the sum) has multiplier .*, below the .* its ledger charges"

finish test_party_guard_local
