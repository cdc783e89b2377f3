#!/bin/sh
# dpopt audit through the run driver (issue 36: the audit kind, src/run/run_audit.c):
#  - --out DIR is train's layout: config.ini, trace.csv (trials done, largest charge, seconds;
#    its last row all 2N trials), summary.json (bound, claim, verdict, the --json fields, what
#    the audit saw, the audited plan's ledger); no ledger.jsonl (synthetic data), no
#    checkpoint left; summary.json's bound is the table's;
#  - a seeded audit (dpopt-test --test-seed) stopped after some rounds (run.stop_after, the
#    path SIGTERM takes: exit 5, checkpoint written) and resumed gives the uninterrupted
#    audit's bound, result and trace, on 2 ranks; a white-box one too (its pilot run again on
#    resume); the same after SIGTERM to the ranks (exit 5, checkpoint kept);
#  - resuming on another rank count, resuming a finished audit, or changing a setting on
#    resume is refused; a refused audit writes nothing; a VIOLATION keeps exit 6 and is
#    written as such;
#  - the one-run audit (--one-run, a mode of the kind over train's hooks) writes train's run
#    directory (config.ini, ledger.jsonl, trace.csv, model.txt, summary.json with the audit's
#    result); seeded, stopped (exit 5, checkpoint with the canaries' bits and scores) and
#    resumed with dpopt audit --resume RUN, it gives the uninterrupted bound, result, model
#    and journal; --progress shows the steps; a refused one-run audit writes nothing.
. "$(dirname "$0")/../lib/testlib.sh"
lb() { awk 'NR == 2 {print $4}' "$T/out"; }
LAP="--eps 1 --clip l1:1 --row-l1-bound 4 --row-l2-bound 4 --quiet"

# --- the run directory
expect 0 $MPI -np 2 "$DPOPT" audit --algo dp-gd --iters 5 $LAP --trials 100 --out "$T/a"
for f in config.ini trace.csv summary.json; do check "audit --out: $f written" test -s "$T/a/$f"; done
check "audit --out: no ledger.jsonl (synthetic data, nothing spent)" test ! -e "$T/a/ledger.jsonl"
check "audit --out: no checkpoint left" test ! -e "$T/a/checkpoint"
has "$T/a/config.ini" "^run.command = audit" "config.ini: the kind"
has "$T/a/config.ini" "^algo.name = dp-gd" "config.ini: the audited algorithm"
has "$T/out" "^run directory $T/a" "the directory is printed after the table"
check "summary.json: eps_lb is the table's ($(lb))" \
  awk -v a="$(jq -r .audit.eps_lb "$T/a/summary.json")" -v b="$(lb)" 'BEGIN {d = a - b; exit !(d < 1e-4 && d > -1e-4)}'
check "summary.json: verdict pass" test "$(jq -r .verdict "$T/a/summary.json")" = pass
check "summary.json: the claim is what the ledger charged" \
  test "$(jq -r .audit.claimed_eps "$T/a/summary.json")" = "$(jq -r .privacy.audited_plan.eps_charged "$T/a/summary.json")"
check "summary.json: 100 trials a set" test "$(jq -r .saw.trials_per_set "$T/a/summary.json")" = 100
check "summary.json: not private (synthetic data)" test "$(jq -r .privacy.private_algorithm "$T/a/summary.json")" = false
check "summary.json: confidence 0.95" test "$(jq -r .confidence "$T/a/summary.json")" = 0.95
check "trace.csv: header" test "$(head -n 1 "$T/a/trace.csv")" = "trials_done,eps_charged_max,delta_charged_max,wall_s"
check "trace.csv: the last row has all 200 trials" test "$(tail -n 1 "$T/a/trace.csv" | cut -d, -f1)" = 200

# --- a seeded audit stopped and resumed = the uninterrupted one (2 ranks)
S7="--test-seed 7"
expect 0 $MPI -np 2 "$DPOPT_TEST" audit --algo dp-gd --iters 5 $LAP --trials 300 $S7 --out "$T/u" --json "$T/u.json"
lbu=$(lb)
expect 5 $MPI -np 2 "$DPOPT_TEST" audit --algo dp-gd --iters 5 $LAP --trials 300 $S7 --out "$T/s" \
  --json "$T/s.json" --set run.stop_after=70
has "$T/err" "continue with --resume" "stopped: says how to continue"
check "stopped: checkpoint written" test -s "$T/s/checkpoint"
check "stopped: no summary yet" test ! -e "$T/s/summary.json"
check "stopped: trace kept (rows before the stop)" test "$(wc -l <"$T/s/trace.csv")" -ge 2
expect 1 "$DPOPT_TEST" audit --resume "$T/s" $S7
has "$T/err" "resume it on 2" "resume on another rank count is refused"
check "the refused resume left the checkpoint" test -s "$T/s/checkpoint"
expect 1 $MPI -np 2 "$DPOPT_TEST" audit --resume "$T/s" $S7 --trials 400
has "$T/err" "audit.trials" "resume cannot change the trial count"
expect 0 $MPI -np 2 "$DPOPT_TEST" audit --resume "$T/s" $S7
check "resumed: bound $(lb) = uninterrupted $lbu" test "$(lb)" = "$lbu"
check "resumed: the same result (--json)" cmp -s "$T/u.json" "$T/s.json"
check "resumed: the same audit in summary.json" \
  test "$(jq -c .audit "$T/s/summary.json")" = "$(jq -c .audit "$T/u/summary.json")"
cut -d, -f1-3 "$T/u/trace.csv" >"$T/tu"
cut -d, -f1-3 "$T/s/trace.csv" >"$T/ts"
check "resumed: the same trace rows" cmp -s "$T/tu" "$T/ts"
check "resumed: checkpoint removed" test ! -e "$T/s/checkpoint"
expect 2 $MPI -np 2 "$DPOPT_TEST" audit --resume "$T/s" $S7
has "$T/err" "no checkpoint" "a finished audit cannot be resumed"
# an unseeded stop cannot be resumed as a seeded one (its noise was not reproducible)
expect 5 "$DPOPT_TEST" audit --mechanism laplace --eps 1 --trials 50 --quiet --out "$T/n" --set run.stop_after=10
expect 1 "$DPOPT_TEST" audit --resume "$T/n" $S7
has "$T/err" "not seeded" "seeded resume of an unseeded audit is refused"
expect 0 "$DPOPT" audit --resume "$T/n" --quiet
check "unseeded resume: 50 trials a set" test "$(jq -r .saw.trials_per_set "$T/n/summary.json")" = 50

# --- white box: the pilot runs again on resume, the streams continue where they stopped
WB="--algo dp-gd --iters 3 $LAP --trials 200 --white-box $S7"
expect 0 $MPI -np 2 "$DPOPT_TEST" audit $WB --out "$T/wu"
wbu=$(lb)
expect 5 $MPI -np 2 "$DPOPT_TEST" audit $WB --out "$T/ws" --set run.stop_after=33
expect 0 $MPI -np 2 "$DPOPT_TEST" audit --resume "$T/ws" $S7
check "white box resumed: bound $(lb) = uninterrupted $wbu" test "$(lb)" = "$wbu"
check "white box resumed: the same audit" \
  test "$(jq -c .audit "$T/ws/summary.json")" = "$(jq -c .audit "$T/wu/summary.json")"

# --- SIGTERM to the ranks: exit 5 with a checkpoint; resumed, the uninterrupted bound
SIG="--algo dp-gd --iters 10 $LAP --trials 1500 $S7"
expect 0 $MPI -np 2 "$DPOPT_TEST" audit $SIG --out "$T/gu"
sigu=$(lb)
$MPI -np 2 "$DPOPT_TEST" audit $SIG --out "$T/gs" --checkpoint-every 5 >"$T/sout" 2>"$T/serr" &
term_ranks_when $! 30 test -f "$T/gs/checkpoint"
if [ "$st" = 5 ]; then ok; else bad "SIGTERM to the ranks: exit $st (want 5)"; head -n 20 "$T/serr"; fi
has "$T/serr" "continue with --resume" "SIGTERM: says how to continue"
check "SIGTERM: checkpoint kept" test -s "$T/gs/checkpoint"
expect 0 $MPI -np 2 "$DPOPT_TEST" audit --resume "$T/gs" $S7
check "SIGTERM, resumed: bound $(lb) = uninterrupted $sigu" test "$(lb)" = "$sigu"
check "SIGTERM, resumed: the same audit" \
  test "$(jq -c .audit "$T/gs/summary.json")" = "$(jq -c .audit "$T/gu/summary.json")"

# --- the one-run audit: train's run directory, a seeded stop and resume
head -n 3000 "$S/data/a9a" >"$T/a3k"
cp "$S/data/a9a.schema" "$T/a3k.schema"
ONE="--one-run --data $T/a3k --algo dp-gd --eps 1 --iters 30 --row-l1-bound 14 --row-l2-bound 3.75 --canaries 200 --seed 5"
expect 0 $MPI -np 2 "$DPOPT" audit $ONE --quiet --out "$T/o1" --json "$T/o1.json"
lbo=$(lb)
for f in config.ini ledger.jsonl trace.csv model.txt summary.json; do
  check "one-run --out: $f written" test -s "$T/o1/$f"
done
check "one-run: no checkpoint left" test ! -e "$T/o1/checkpoint"
has "$T/o1/config.ini" "^run.command = audit" "one-run config.ini: the kind"
has "$T/o1/config.ini" "^audit.one_run = " "one-run config.ini: the mode"
has "$T/out" "^run directory $T/o1" "one-run: the directory is printed after the table"
check "one-run summary.json: the table's bound ($lbo)" \
  awk -v a="$(jq -r .audit.eps_lb "$T/o1/summary.json")" -v b="$lbo" 'BEGIN {d = a - b; exit !(d < 1e-4 && d > -1e-4)}'
check "one-run summary.json: command audit, verdict pass" \
  test "$(jq -r '.command + " " + .verdict' "$T/o1/summary.json")" = "audit pass"
check "one-run summary.json: 200 canaries, train's fields beside" \
  test "$(jq -r '"\(.audit.canaries) \(.algo)"' "$T/o1/summary.json")" = "200 dp-gd"
check "one-run: the journal holds the run's charges" test "$(wc -l <"$T/o1/ledger.jsonl")" -ge 30
expect 5 $MPI -np 2 "$DPOPT" audit $ONE --out "$T/o2" --json "$T/o2.json" --set run.stop_after=12
has "$T/err" "continue with dpopt audit --resume $T/o2" "one-run stopped: says how to continue"
check "one-run stopped: checkpoint written" test -s "$T/o2/checkpoint"
check "one-run stopped: no summary yet" test ! -e "$T/o2/summary.json"
expect 0 $MPI -np 2 "$DPOPT" audit --resume "$T/o2" --progress
check "one-run resumed: bound $(lb) = uninterrupted $lbo" test "$(lb)" = "$lbo"
check "one-run resumed: the same result (--json)" cmp -s "$T/o1.json" "$T/o2.json"
check "one-run resumed: the same audit in summary.json" \
  test "$(jq -c .audit "$T/o2/summary.json")" = "$(jq -c .audit "$T/o1/summary.json")"
check "one-run resumed: the same model" cmp -s "$T/o1/model.txt" "$T/o2/model.txt"
unchained "$T/o1/ledger.jsonl" | sed 's/"t":[0-9.e+]*,//' >"$T/j1"
unchained "$T/o2/ledger.jsonl" | sed 's/"t":[0-9.e+]*,//' >"$T/j2"
check "one-run resumed: the same charges" cmp -s "$T/j1" "$T/j2"
has "$T/err" "resuming $T/o2 at iteration 12" "one-run resumed: says where"
has "$T/err" "dp-gd: iteration 30/30 (100%)" "one-run resumed: --progress shows the steps"
check "one-run resumed: checkpoint removed" test ! -e "$T/o2/checkpoint"
expect 1 $MPI -np 2 "$DPOPT" audit $ONE --canaries 1 --out "$T/x"
has "$T/err" "at least 2 canaries" "one-run: one canary is refused"
check "a refused one-run audit writes nothing" test ! -e "$T/x"

# --- refusals write nothing; a violation keeps exit 6
expect 1 "$DPOPT" audit --algo gd --eps 1 --row-l1-bound 1 --out "$T/x"
check "a refused audit writes nothing" test ! -e "$T/x"
expect 1 "$DPOPT" audit --mechanism laplace --eps 1 --trials 10 --set run.keep_every=3 --out "$T/x"
has "$T/err" "not read by dpopt audit" "run.keep_every is refused"
check "a refused audit writes nothing (2)" test ! -e "$T/x"
expect 6 "$DPOPT_TEST" audit --mechanism laplace --eps 1 --quiet --test-break-noise --out "$T/v"
has "$T/out" "VIOLATION" "violation: reported"
check "violation: summary.json says so" test "$(jq -r .verdict "$T/v/summary.json")" = VIOLATION
check "violation: no FAILED (the audit ran)" test ! -e "$T/v/FAILED"
finish test_audit_run
