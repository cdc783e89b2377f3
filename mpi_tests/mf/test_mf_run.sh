#!/bin/sh
# dpopt mf through the run driver (the run API's mf kind):
#  - train --out A, admm --out B and mf --out C hold the same run directory files apart from
#    the model (train, admm: model.txt; mf: X1.txt, X2t.txt, biases.txt), compared by listing;
#  - summary.json carries train's common fields (command, status, privacy label) and mf's
#    (RMSEs, epochs, best epoch); config.ini keeps run.command = mf;
#  - without --out the run goes to runs/hamsi-DATE-TIME; --progress prints epoch lines;
#  - refusals (an existing directory, run.keep_every, privacy.eps) write nothing;
#  - a seeded run stopped at a checkpoint (run.stop_after) and resumed at np 2 writes the bytes
#    of the uninterrupted run's factors, the same trace rows and summary (times aside), for
#    HAMSI with and without the history cache, a shuffled schedule, mb-GD and early
#    stopping; a finished run is not resumed; another rank count is refused.
. "$(dirname "$0")/../lib/testlib.sh"
cd "$T"
"$DPOPT" gen ratings --users 60 --items 40 --ratings 600 --seed 2 "$T/r.txt" >/dev/null
head -n 2000 "$S/data/a9a" > "$T/a2k"

# ---- the same run directory as train and admm
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/a2k" --algo gd --iters 3 --row-l2-bound 3.75 --quiet --out "$T/A"
expect 0 $MPI -np 2 "$DPOPT" admm "$T/a2k" --method admm --row-l2-bound 3.75 --maxit 3 --quiet --out "$T/B"
expect 0 $MPI -np 2 "$DPOPT" mf --rank 3 --epochs 4 --out "$T/C" "$T/r.txt"
has "$T/out" "^run directory   $T/C" "mf names its run directory"
ls "$T/A" | grep -vx model.txt > "$T/la"
ls "$T/B" | grep -vx model.txt > "$T/lb"
ls "$T/C" | grep -vxE 'X1.txt|X2t.txt|biases.txt' > "$T/lc"
check "train and admm: the same files besides the model" cmp -s "$T/la" "$T/lb"
check "train and mf: the same files besides the model" cmp -s "$T/la" "$T/lc"
check "the common part is config.ini, summary.json, trace.csv" \
  test "$(cat "$T/lc" | tr '\n' ' ')" = "config.ini summary.json trace.csv "
check "mf's model files" test -s "$T/C/X1.txt" -a -s "$T/C/X2t.txt" -a -s "$T/C/biases.txt"
check "summary.json: common fields" jq -e '.command == "mf" and .status == "ok" and
  .iterations_done == 4 and .epochs == 4 and (.privacy.label | test("NOT PRIVATE")) and
  (.test_rmse | type) == "number" and (.train_rmse_nonprivate | type) == "number"' "$T/C/summary.json" >/dev/null
has "$T/C/config.ini" "^run.command = mf" "config.ini keeps the kind"
has "$T/C/config.ini" "^data.train = $T/r.txt" "config.ini keeps the ratings"

# ---- default directory, progress
mkdir "$T/cwd" && cd "$T/cwd"
expect 0 "$DPOPT" mf --rank 3 --epochs 2 --progress "$T/r.txt"
check "default run directory runs/hamsi-*" test -s "$(ls -d runs/hamsi-*)/X1.txt"
has "$T/err" "\[dpopt\] mf: epoch 2/2" "--progress prints the epochs"
cd "$T"

# ---- refusals: named, nothing written
expect 1 "$DPOPT" mf --rank 3 --epochs 1 --out "$T/C" "$T/r.txt"
has "$T/err" "exists and is not empty" "an existing run directory is refused"
expect 1 "$DPOPT" mf --rank 3 --epochs 1 --set run.keep_every=2 --out "$T/k" "$T/r.txt"
has "$T/err" "run.keep_every is not read by dpopt mf" "run.keep_every refused"
expect 1 "$DPOPT" mf --rank 3 --epochs 1 --set mf.out=x --out "$T/o" "$T/r.txt"
has "$T/err" "mf.out was replaced by --out" "mf.out refused naming --out"
expect 1 "$DPOPT" mf --rank 3 --epochs 1 --set privacy.eps=1 --out "$T/e" "$T/r.txt"
has "$T/err" "privacy.eps" "privacy.eps refused"
check "refused runs wrote nothing" test ! -e "$T/k" -a ! -e "$T/e" -a ! -e "$T/o" -a ! -e x
# ---- stop and resume at np 2: the bytes of the uninterrupted run
# HAMSI (STRATA-B: the item blocks with their L-BFGS rows rotate around the ring; with and
# without the history cache), the shuffled schedule (its stream is in the checkpoint),
# mb-GD, and early stopping (the best point is in it); every due epoch evaluated, so the
# trace rows are the same too (their times aside)
for V in "--rank 4 --plain --epochs 14" "--rank 4 --plain --epochs 14 --cache-mb 0" \
         "--rank 4 --epochs 14 --sched shuffle" "--rank 4 --plain --method mbgd --epochs 14" \
         "--rank 4 --epochs 30 --early-stop 2 --lambda 0.5"; do
  A="$V --strata 4 --eval-budget 0 --seed 3"
  K=6 # early stopping ends this run after epoch 3 (best at 1): stop at 2, the best kept
  case "$V" in *early-stop*) K=2 ;; esac
  expect 0 $MPI -np 2 "$DPOPT" mf $A --out "$T/f" "$T/r.txt"
  expect 5 $MPI -np 2 "$DPOPT" mf $A --set run.stop_after=$K --out "$T/s" "$T/r.txt"
  has "$T/err" "stopped after epoch $K" "$V: stopped at $K"
  check "$V: a stopped run keeps its checkpoint, no factors, no FAILED" \
    test -f "$T/s/checkpoint" -a ! -e "$T/s/X1.txt" -a ! -e "$T/s/FAILED"
  expect 0 $MPI -np 2 "$DPOPT" mf --resume "$T/s"
  has "$T/err" "resuming $T/s/checkpoint at epoch $((K + 1))" "$V: resumed at $((K + 1))"
  for f in X1.txt X2t.txt; do
    check "$V: resumed $f = the uninterrupted one" cmp -s "$T/f/$f" "$T/s/$f"
  done
  [ -f "$T/f/biases.txt" ] && { check "$V: biases.txt" cmp -s "$T/f/biases.txt" "$T/s/biases.txt"; }
  cut -d, -f1,4- "$T/f/trace.csv" > "$T/a.csv"; cut -d, -f1,4- "$T/s/trace.csv" > "$T/b.csv"
  check "$V: the same trace rows" cmp -s "$T/a.csv" "$T/b.csv"
  # times aside, and the ring's figures: a resumed run's history caches start stale (whole
  # histories on each block's first move), and its early blocks count from the resume
  nt='del(.wall_time_s, .solve_time_s, .t_train, .t_wall, .t_grad_max, .t_update_max,
    .t_hess_max, .t_comm_max, .ring_mb_max, .ring_bytes_epochs_sum, .ring_hist_bytes_epochs_sum,
    .ring_bytes_epochs_max, .blocks_early_sum)'
  jq -S "$nt" "$T/f/summary.json" > "$T/a.j"
  jq -S "$nt" "$T/s/summary.json" > "$T/b.j"
  check "$V: the same summary (times aside)" cmp -s "$T/a.j" "$T/b.j"
  case "$V" in *early-stop*) check "the early-stopped run kept epoch 1" jq -e '.best_epoch == 1' \
    "$T/s/summary.json" >/dev/null ;; esac
  check "$V: the finished run has no checkpoint" test ! -e "$T/s/checkpoint"
  rm -rf "$T/f" "$T/s"
done
expect 0 $MPI -np 2 "$DPOPT" mf --rank 4 --epochs 4 --checkpoint-every 2 --out "$T/ce" "$T/r.txt"
check "--checkpoint-every: finished cleanly" test ! -e "$T/ce/checkpoint" -a -s "$T/ce/X1.txt"
expect 2 $MPI -np 2 "$DPOPT" mf --resume "$T/ce"
has "$T/err" "no checkpoint" "a finished run is not resumed"
# another rank count: refused naming the ranks, the checkpoint kept
expect 5 $MPI -np 2 "$DPOPT" mf --rank 4 --epochs 8 --set run.stop_after=2 --out "$T/rk" "$T/r.txt"
expect 1 "$DPOPT" mf --resume "$T/rk"
has "$T/err" "resume it on 2" "a resume on 1 rank names the 2 ranks"
check "the refused resume kept the checkpoint" test -f "$T/rk/checkpoint" -a ! -e "$T/rk/FAILED"
expect 0 $MPI -np 2 "$DPOPT" mf --resume "$T/rk"
finish test_mf_run
