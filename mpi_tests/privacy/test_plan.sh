#!/bin/sh
# What is charged is what ran (privacy rule 3, optim.h "release plans").  Every private
# algorithm of `dpopt train --help` runs on a small synthetic set at its natural length (no
# --iters), below it and above it:
#  - natural: the plan's steps ran and the ledger stays within the budget; for the pure-eps
#    family the ledger total is recomputed here, charge by charge, from the journal's public
#    release parameters with the mechanism's own formula (Laplace on the 2^-40 grid, 001 (3.3)
#    for sampling without replacement) — an accountant written independently of ledger.c;
#  - below: a whole-schedule plan (pnsgd, 003 Thm 3.1) is refused before anything is charged;
#    a per-step plan stops after the steps that ran and its total is exactly the natural run's
#    journal total after as many charges (the releases that ran, and nothing else); for
#    dp-sgd-rdp (and the pure family) --iters K is the plan: exactly K steps run and are charged;
#  - above: the run ends at the schedule's end with the natural run's charges;
#  - the journal records the plan and `dpopt ledger` shows it beside what was spent;
#  - --gtol on a private algorithm is refused (a stopping decision on the private gradient).
#  Every run is at one rank: the plan, the steps and the charges do not depend on the rank count
#  (test_ledger checks the ledger's collective charge at 1..4 ranks); at two ranks each run's
#  wall time was 3-4x one rank's on a loaded 2-core machine, for the same CPU.
. "$(dirname "$0")/../lib/testlib.sh"
"$DPOPT" gen logistic --n 3000 --d 5 --l1-bound 5 --seed 4 "$T/g.txt" >/dev/null 2>&1 || bad "gen"
C="--data $T/g.txt --row-l1-bound 5 --row-l2-bound 5 --lambda 0.01 --quiet --eps 1"
G="--delta 1e-5" # the accountant follows the algorithm
js() { jq -r "$2" "$1/summary.json" 2>/dev/null; }
# journal total after the k-th charge (k >= 1)
jtotal() { grep '"step"' "$1/ledger.jsonl" | sed -n "${2}p" | sed 's/.*"total_eps":\([0-9.eE+-]*\).*/\1/'; }

# pure eps, recomputed from the journal: eps0 = (Delta1 + dim Lambda) / b, Lambda = the
# smallest power of two >= b 2^-40 (mechanism.c); wor: ln(1 + (m/n)(e^eps0 - 1)) (001 (3.3));
# disjoint batches of one pass cost their max (parallel composition).
pure_total() {
  grep '"step"' "$1/ledger.jsonl" | sed 's/.*"sampling":"\([a-z]*\)".*"noise_scale":\([0-9.eE+-]*\),"sensitivity":\([0-9.eE+-]*\),"dim":\([0-9]*\),"m":\([0-9]*\),"n":\([0-9]*\).*/\1 \2 \3 \4 \5 \6/' |
    awk '{ b = $2; L = 1; t = b * 2^-40; while (L < t) L *= 2; while (L / 2 >= t) L /= 2;
           e = ($3 + $4 * L) / b;
           if ($1 == "wor") e = log(1 + ($5 / $6) * (exp(e) - 1));
           if ($1 == "disjoint") { if (e > pm) pm = e; next }
           s += pm; pm = 0; s += e }
         END { printf "%.15g\n", s + pm }'
}

PURE="dp-gd dp-hb dp-shb dp-gdws dp-sgdws dp-onlinegdws dp-nag dp-nag-opt dp-masg dp-masg-opt dp-mag dp-smag"
SCO="pnsgd phased-sgd phased-erm sc-reduce phased-sc dp-sgd-rdp"
for a in $PURE $SCO; do
  case " $SCO " in *" $a "*) X="$G";; *) X="--delta 0";; esac
  extra=""
  case $a in dp-sgdws|dp-onlinegdws|dp-smag) extra="--batch 300";; phased-sc) extra="--lambda 0.1";; dp-masg*|dp-mag) extra="--set algo.n1=4";; esac
  # natural length
  expect 0 $MPI -np 1 "$DPOPT" train $C $X $extra --algo $a --out "$T/$a-nat" --verbose
  N=$(js "$T/$a-nat" .plan.steps); kind=$(js "$T/$a-nat" .plan.kind)
  done_n=$(js "$T/$a-nat" .iterations_done); spent=$(js "$T/$a-nat" .privacy.eps_spent)
  if [ -n "$N" ] && [ "$N" != null ] && [ "$done_n" -le "$N" ] && [ "$done_n" -ge 1 ]; then ok; else
    bad "$a: natural run: plan steps '$N', iterations done '$done_n'"; continue; fi
  awk -v s="$spent" 'BEGIN {exit !(s > 0 && s <= 1)}' && ok || bad "$a: spent '$spent' not in (0, 1]"
  has "$T/out" "release plan    $kind" "$a: the printed summary states the plan (--verbose)"
  has "$T/out" "^spent  *eps [0-9.]* of 1.* in $done_n steps* (" "$a: the plain line counts the steps that ran"
  expect 0 "$DPOPT" ledger "$T/$a-nat"
  has "$T/out" "plan:      $a, $kind charge, $N steps planned" "$a: dpopt ledger shows plan vs spent"
  case " $PURE " in *" $a "*)
    close "$(pure_total "$T/$a-nat")" "$spent" 1e-9 "$a: ledger total vs the independent recomputation";;
  esac
  # below: half the natural length
  k=$(( N / 2 )); [ "$k" -ge 1 ] || k=1
  if [ "$kind" = whole ]; then
    expect 1 $MPI -np 1 "$DPOPT" train $C $X $extra --algo $a --iters $k --out "$T/$a-below"
    has "$T/err" "would cut it" "$a: a cut whole plan is refused"
    if ! grep -q '"step"' "$T/$a-below/ledger.jsonl" 2>/dev/null; then ok; else bad "$a: refused run charged"; fi
  else
    expect 0 $MPI -np 1 "$DPOPT" train $C $X $extra --algo $a --iters $k --out "$T/$a-below"
    kb=$(js "$T/$a-below" .iterations_done); sb=$(js "$T/$a-below" .privacy.eps_spent)
    nb=$(grep -c '"step"' "$T/$a-below/ledger.jsonl")
    [ "$kb" -le "$k" ] && ok || bad "$a: --iters $k ran $kb steps"
    case "$a: $PURE " in
      *" $a "*) # algo.iters is these algorithms' T: the plan itself is k steps, recomputed
        [ "$(js "$T/$a-below" .plan.steps)" = "$k" ] && ok || bad "$a: plan of --iters $k"
        close "$(pure_total "$T/$a-below")" "$sb" 1e-9 "$a: --iters $k total vs recomputation";;
      dp-sgd-rdp:*) # --iters K is its T too: a plan of K steps, noise for K, K charges
        [ "$(js "$T/$a-below" .plan.steps)" = "$k" ] && [ "$kb" = "$k" ] && [ "$nb" = "$k" ] &&
          ok || bad "$a: --iters $k: plan $(js "$T/$a-below" .plan.steps), ran $kb, charged $nb";;
      *) # the natural plan cut after k steps: exactly the natural run's first nb charges
        [ "$(js "$T/$a-below" .plan.steps)" = "$N" ] && ok || bad "$a: plan changed by --iters"
        close "$sb" "$(jtotal "$T/$a-nat" "$nb")" 0 "$a: --iters $k vs the natural run after $nb charges";;
    esac
  fi
  # above: the SCO schedules end at their own length with the natural run's total; for the
  # pure family and dp-sgd-rdp algo.iters is T, so the plan grows (and is recomputed)
  expect 0 $MPI -np 1 "$DPOPT" train $C $X $extra --algo $a --iters $((N + 5)) --out "$T/$a-above"
  sa=$(js "$T/$a-above" .privacy.eps_spent)
  case "$a: $PURE " in
    *" $a "*)
      [ "$(js "$T/$a-above" .plan.steps)" = "$((N + 5))" ] && ok || bad "$a: plan of --iters $((N + 5))"
      close "$(pure_total "$T/$a-above")" "$sa" 1e-9 "$a: --iters $((N + 5)) total vs recomputation";;
    dp-sgd-rdp:*)
      na=$(grep -c '"step"' "$T/$a-above/ledger.jsonl")
      [ "$(js "$T/$a-above" .iterations_done)" = "$((N + 5))" ] && [ "$na" = "$((N + 5))" ] &&
        ok || bad "$a: --iters $((N + 5)) ran $(js "$T/$a-above" .iterations_done), charged $na"
      awk -v s="$sa" 'BEGIN {exit !(s > 0 && s <= 1)}' && ok || bad "$a: --iters above spent '$sa'";;
    *)
      [ "$(js "$T/$a-above" .iterations_done)" = "$done_n" ] && ok ||
        bad "$a: --iters $((N + 5)) ran $(js "$T/$a-above" .iterations_done) steps, natural $done_n"
      close "$sa" "$spent" 0 "$a: --iters above vs natural total";;
  esac
done

# a stopping rule on the private gradient is refused before anything is charged
expect 1 $MPI -np 1 "$DPOPT" train $C --algo dp-gd --gtol 1e-3 --out "$T/gtol"
has "$T/err" "gtol" "--gtol on a private algorithm is refused"
if ! grep -q '"step"' "$T/gtol/ledger.jsonl" 2>/dev/null; then ok; else bad "gtol run charged"; fi
finish test_plan
