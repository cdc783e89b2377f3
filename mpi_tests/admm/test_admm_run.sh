#!/bin/sh
# dpopt admm through the run driver (the run API's admm kind, issue 36):
#  - the run directory holds the files of a train run's (config.ini, trace.csv, model.txt,
#    summary.json, ledger.jsonl), compared by listing both;
#  - summary.json's spent eps is the journal's last total, and the model file carries the label;
#  - a seeded DP-ADMM and DP-AccADMM (momentum restarts on both sides of the cut) stopped with
#    run.stop_after and resumed give the bytes of the uninterrupted run's model.txt, the same
#    trace rows and the same journal charges; a finished run cannot be resumed; the resumed
#    run's checkpoint is gone; so does a DP-ADMM run with party accounts (parties.count, central
#    trust), its party totals too;
#  - the old flags (--model-out, --journal, --trace) are refused naming --out, writing nothing
#    (consensus ADMM's checkpoints: test_admm_cons_resume.sh).
. "$(dirname "$0")/../lib/testlib.sh"
cd "$T"
head -n 3000 "$S/data/a9a" > "$T/a3k"
cp "$S/data/a9a.schema" "$T/a3k.schema" # the public schema (123 features)
P="$T/a3k --clip 1 --eps 1 --delta 1e-5 --row-l2-bound 3.75 --lambda 1e-4 --seed 7"

# ---- the same run directory as train
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/a3k" --algo dp-gd --eps 1 --delta 1e-5 --iters 5 \
  --clip l2:1 --row-l2-bound 3.75 --quiet --out "$T/tr"
expect 0 $MPI -np 2 "$DPOPT" admm $P --method dpadmm --maxit 12 --out "$T/ad"
check "train and admm run directories hold the same files" \
  sh -c "[ \"\$(ls '$T/tr')\" = \"\$(ls '$T/ad')\" ]"
ls "$T/ad" | tr '\n' ' '; echo
has "$T/out" "^run directory $T/ad" "admm names its run directory"
close "$(jq -r .privacy.eps_spent "$T/ad/summary.json")" "$(tail -n 1 "$T/ad/ledger.jsonl" | jq -r .total_eps)" 1e-12 \
  "summary.json's spent eps = the journal's total"
[ "$(jq -r .iterations_done "$T/ad/summary.json")" = 12 ] && ok || bad "summary: 12 iterations"
has "$T/ad/model.txt" "seeded: NOT private" "model.txt carries the seeded label"
[ "$(grep -c '"step"' "$T/ad/ledger.jsonl")" = 13 ] && ok || bad "journal: T + 1 = 13 charges"

# ---- stop and resume: the bytes of the uninterrupted run
for m in dpadmm dpaccadmm; do
  R="$P --method $m --maxit 14 --restart 4"
  [ $m = dpadmm ] && R="$P --method $m --maxit 14"
  expect 0 $MPI -np 2 "$DPOPT" admm $R --out "$T/f$m"
  expect 5 $MPI -np 2 "$DPOPT" admm $R --set run.stop_after=6 --out "$T/s$m"
  has "$T/err" "stopped after iteration 6 of 14, checkpoint written" "$m: stopped at 6"
  [ -f "$T/s$m/checkpoint" ] && [ ! -e "$T/s$m/model.txt" ] && [ ! -e "$T/s$m/FAILED" ] && ok ||
    bad "$m: a stopped run keeps its checkpoint, no model, no FAILED"
  [ "$(grep -c '"step"' "$T/s$m/ledger.jsonl")" = 7 ] && ok || bad "$m: 7 charges before the stop"
  expect 0 $MPI -np 2 "$DPOPT" admm --resume "$T/s$m"
  has "$T/err" "resuming $T/s$m at iteration 7" "$m: resumed at 7"
  cmp -s "$T/f$m/model.txt" "$T/s$m/model.txt" && ok || bad "$m: resumed model.txt differs from the uninterrupted one"
  cut -d, -f1,3- "$T/f$m/trace.csv" > "$T/a.csv"; cut -d, -f1,3- "$T/s$m/trace.csv" > "$T/b.csv"
  cmp -s "$T/a.csv" "$T/b.csv" && ok || bad "$m: trace rows differ"
  jq -c 'select(.step != null) | del(.chain)' "$T/f$m/ledger.jsonl" > "$T/a.j"
  jq -c 'select(.step != null) | del(.chain)' "$T/s$m/ledger.jsonl" > "$T/b.j"
  cmp -s "$T/a.j" "$T/b.j" && ok || bad "$m: the resumed journal's charges differ"
  [ ! -e "$T/s$m/checkpoint" ] && ok || bad "$m: the finished run kept its checkpoint"
  expect 2 $MPI -np 2 "$DPOPT" admm --resume "$T/s$m"
  has "$T/err" "no checkpoint" "$m: a finished run is not resumed"
done
# central trust with party accounts (parties.count): the bytes, charges and party totals of
# the uninterrupted run
R="$P --method dpadmm --maxit 12 --set parties.count=2"
expect 0 $MPI -np 2 "$DPOPT" admm $R --out "$T/fp"
expect 5 $MPI -np 2 "$DPOPT" admm $R --set run.stop_after=6 --out "$T/sp"
expect 0 $MPI -np 2 "$DPOPT" admm --resume "$T/sp"
cmp -s "$T/fp/model.txt" "$T/sp/model.txt" && ok || bad "parties.count: resumed model.txt differs"
jq -c 'select(.step != null) | del(.chain)' "$T/fp/ledger.jsonl" > "$T/a.j"
jq -c 'select(.step != null) | del(.chain)' "$T/sp/ledger.jsonl" > "$T/b.j"
cmp -s "$T/a.j" "$T/b.j" && ok || bad "parties.count: the resumed journal's charges differ"
"$DPOPT" ledger "$T/fp" | grep '^party' > "$T/a.p"; "$DPOPT" ledger "$T/sp" | grep '^party' > "$T/b.p"
[ "$(wc -l < "$T/a.p")" = 2 ] && cmp -s "$T/a.p" "$T/b.p" && ok || bad "parties.count: the party totals differ"
# --checkpoint-every: the run completes, and removes its checkpoint
expect 0 $MPI -np 2 "$DPOPT" admm $P --method dpadmm --maxit 6 --checkpoint-every 2 --out "$T/ce"
[ ! -e "$T/ce/checkpoint" ] && [ -f "$T/ce/model.txt" ] && ok || bad "--checkpoint-every: finished cleanly"

# ---- refusals: named, nothing written
for f in --model-out --journal --trace; do
  expect 1 "$DPOPT" admm $P --method dpadmm $f "$T/x"
  has "$T/err" "$f was replaced by --out DIR" "$f names --out"
  [ ! -e "$T/x" ] && [ ! -e "$T/runs" ] && ok || bad "$f: something was written"
done
expect 1 "$DPOPT" admm $P --method dpadmm --set privacy.journal="$T/j.jsonl" --out "$T/pj"
has "$T/err" "privacy.journal" "privacy.journal refused by name"
[ ! -e "$T/pj" ] && [ ! -e "$T/j.jsonl" ] && ok || bad "privacy.journal: something was written"

finish test_admm_run
