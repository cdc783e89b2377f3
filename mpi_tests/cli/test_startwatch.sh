#!/bin/sh
# The start-up watchdog (src/cli/startwatch.c): a rank whose peer never reaches MPI_Init stops
# after DPOPT_START_TIMEOUT seconds with exit 4 and one message, instead of waiting for the
# launcher's limit; it writes nothing; a bad value is refused once; 0 turns the bound off.
. "$(dirname "$0")/../lib/testlib.sh"
printf '1 1:0.5\n-1 1:-0.5\n1 1:0.7\n-1 1:-0.2\n' > "$T/d.svm"
printf '[schema]\nfeatures = 1\n' > "$T/d.svm.schema"
run="train --data $T/d.svm --row-l1-bound 1 --row-l2-bound 1 --algo gd --iters 2 --quiet"
# rank 1 reaches MPI_Init 60 s late (a node whose daemon or link did not come up): rank 0
# waits in MPI_Init's wire-up until its watchdog fires after 3 s; mpirun then ends the job
t0=$(date +%s)
expect 4 env DPOPT_START_TIMEOUT=3 $MPI -np 2 sh -c \
  'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then sleep 60; fi; exec "$0" "$@"' \
  "$DPOPT" $run --out "$T/late"
t1=$(date +%s)
check "the job ended within 40 s of its start ($((t1 - t0)) s), not after the late rank's 60 s" \
  [ $((t1 - t0)) -lt 40 ]
has "$T/err" '^dpopt: rank 0 on .*: MPI start-up did not finish within 3 s' "rank 0 names the bound"
check "the watchdog's message is printed once" [ "$(grep -c 'MPI start-up did not finish' "$T/err")" = 1 ]
check "nothing was written" [ ! -e "$T/late" ]
# a start-up that completes disarms it: a run iterating (its first checkpoint written) 7 s
# after its start, past a 5 s bound, is stopped by SIGTERM (dpopt's clean interruption), not
# by the watchdog.  Progress, not a run's speed, decides when to stop it (a loaded machine may
# take seconds to start the ranks; a quiet one runs thousands of iterations a second)
expect 0 "$DPOPT" gen logistic --n 20000 --d 20 --seed 3 "$T/big.bin"
t0=$(date +%s)
env DPOPT_START_TIMEOUT=5 $MPI -np 2 "$DPOPT" train --data "$T/big.bin" --row-l1-bound 20 \
  --row-l2-bound 20 --algo gd --iters 100000000 --checkpoint-every 1000 --quiet --out "$T/ok" \
  > "$T/out" 2> "$T/err" &
mp=$!
i=0
while [ $i -lt 1200 ] && kill -0 $mp 2>/dev/null; do
  [ -s "$T/ok/checkpoint" ] && [ $(($(date +%s) - t0)) -ge 7 ] && break
  sleep 0.1; i=$((i + 1))
done
kill -TERM $mp 2>/dev/null
wait $mp
check "the run was iterating when stopped ($(($(date +%s) - t0)) s after its start)" [ -s "$T/ok/checkpoint" ]
has "$T/err" "interrupted before iteration" "the run ran past the 5 s bound and stopped cleanly"
hasnot "$T/err" 'start-up did not finish' "no watchdog message after start-up"
# bad values are refused once, exit 1, writing nothing; 0 is accepted
for v in abc -1 1.5 999999; do
  expect 1 env DPOPT_START_TIMEOUT=$v $MPI -np 2 "$DPOPT" $run --out "$T/bad"
  check "DPOPT_START_TIMEOUT=$v: refused once" \
    [ "$(grep -c "DPOPT_START_TIMEOUT=$v: not a number of seconds" "$T/err")" = 1 ]
  check "DPOPT_START_TIMEOUT=$v: nothing written" [ ! -e "$T/bad" ]
done
expect 0 env DPOPT_START_TIMEOUT=0 $MPI -np 2 "$DPOPT" $run --out "$T/off"
finish test_startwatch
