#!/bin/sh
# The meetings of a HAMSI epoch: the collectives every rank waits in, counted as the code runs
# through MPI's profiling interface (jobs/bench/mpicount.c, preloaded) on rank 0 of 2 ranks;
# runs of 2 and 6 epochs differ by 4 epochs' meetings.  With a public plan (no --time, no
# evaluation under a wall-time budget) an epoch makes the two allreduces jobs/costmodel
# charges it (--mf-meetings): the pair's and the epoch's end; the schedule is drawn on every
# rank, the det order or the seeded shuffle, not broadcast.  With --time rank 0's clock
# decides whether to go on: its plan is broadcast too, one more.  The factors are those of
# the same run with its plan broadcast every epoch (--time 1e6 stops no earlier).  Counts, not
# timings: the machine's load cannot move them.
. "$(dirname "$0")/../lib/testlib.sh"
cc=${MPICC:-mpicc}
command -v "$cc" >/dev/null 2>&1 || { echo "no $cc: skipped"; exit 77; }
"$cc" -shared -fPIC -O2 -o "$T/mpicount.so" "$S/jobs/bench/mpicount.c" || { bad "build mpicount.so"; finish test_mf_meetings; }
R="$T/r.txt"
expect 0 "$DPOPT" gen ratings --users 200 --items 150 --ratings 4000 --seed 3 "$R"
# meetings NAME FLAGS...: got = the collectives an epoch on rank 0 (the 6-epoch run's less the
# 2-epoch run's, over 4)
meetings() {
  nm=$1; shift
  for n in 2 6; do
    rm -rf "$T/$nm-$n" "$T/$nm-$n.cnt".*
    expect 0 env DPO_MPICOUNT="$T/$nm-$n.cnt" $MPI -np 2 -x LD_PRELOAD="$T/mpicount.so" \
      -x DPO_MPICOUNT "$DPOPT" mf --plain --rank 10 --eval-every 0 --epochs $n "$@" \
      --out "$T/$nm-$n" "$R"
  done
  got=$(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      c = NR == 1 ? v["coll"] : (v["coll"] - c) / 4 } END { if (NR == 2) print c }' \
    "$T/$nm-2.cnt.0" "$T/$nm-6.cnt.0")
}
set -- $(sh "$S/jobs/costmodel" --mf-meetings)
[ "${1:-}" = MEETINGS ] || bad "jobs/costmodel --mf-meetings printed '$*'"
charged=${2:-}
meetings det
check "det schedule: $got collectives an epoch, the model charges $charged" test "$got" = "$charged"
meetings shuf --sched shuffle --seed 9
check "shuffled schedule (seeded): $got collectives an epoch, the model charges $charged" test "$got" = "$charged"
meetings timed --time 1e6
check "--time: $got collectives an epoch, the plan's broadcast besides the model's $charged" \
  test "$got" = "$((charged + 1))"
for f in X1.txt X2t.txt; do
  check "$f: the plan drawn on every rank gives the broadcast plan's factors" \
    cmp -s "$T/det-6/$f" "$T/timed-6/$f"
done
finish test_mf_meetings
