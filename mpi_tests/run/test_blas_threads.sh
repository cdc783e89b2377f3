#!/bin/sh
# OpenBLAS's worker threads (run_blas.c): each rank gets its share of the node's CPUs -- the
# CPUs it is bound to, or unbound max(1, CPUs / ranks on the node) -- and summary.json says the
# count in force and who chose it; the user's OPENBLAS_NUM_THREADS or OMP_NUM_THREADS wins.
. "$(dirname "$0")/../lib/testlib.sh"
unset OPENBLAS_NUM_THREADS GOTO_NUM_THREADS OMP_NUM_THREADS
C="--data $S/data/a9a --algo lbfgs --iters 2 --quiet --no-trace-loss"
cpus=$(getconf _NPROCESSORS_ONLN)
share() { t=$((cpus / $1)); [ "$t" -ge 1 ] || t=1; echo "$t"; }
expect 0 $MPI --bind-to none -np 2 "$DPOPT" train $C --out "$T/a"
has "$T/a/summary.json" "\"blas_threads\":$(share 2)," "2 unbound ranks: $cpus CPUs / 2"
has "$T/a/summary.json" '"blas_threads_from":"dpopt: this rank' "dpopt chose it"
expect 0 $MPI --bind-to none -np 1 "$DPOPT" train $C --out "$T/b"
has "$T/b/summary.json" "\"blas_threads\":$cpus," "1 unbound rank: $cpus CPUs"
# bound ranks (Open MPI's default at few ranks): the CPUs each is bound to, as nproc sees them
own=$($MPI -np 2 nproc | sort -n | head -1)
expect 0 $MPI -np 2 "$DPOPT" train $C --out "$T/c"
[ "$own" -lt "$cpus" ] || own=$(share 2) # not bound after all: the unbound share
has "$T/c/summary.json" "\"blas_threads\":$own," "2 ranks as mpirun binds them: $own"
# the user's count, different from dpopt's (OpenBLAS caps it at the CPUs the rank may use)
if [ "$cpus" -ge 2 ]; then
  OPENBLAS_NUM_THREADS=2 expect 0 $MPI --bind-to none -np 2 "$DPOPT" train $C --out "$T/d"
  has "$T/d/summary.json" '"blas_threads":2,' "OPENBLAS_NUM_THREADS=2 wins over $(share 2)"
  has "$T/d/summary.json" '"blas_threads_from":"environment"' "the environment chose it"
  OMP_NUM_THREADS=1 expect 0 $MPI --bind-to none -np 1 "$DPOPT" train $C --out "$T/e"
  has "$T/e/summary.json" '"blas_threads":1,' "OMP_NUM_THREADS=1 wins over $cpus"
fi
finish test_blas_threads
