#!/bin/sh
# Checkpoints and --resume of dp-sgd-rdp (the delta > 0 method train picks by default) on
# data/a9a, and the refusals of checkpoints a run cannot keep:
#  - a seeded run stopped at a checkpoint and resumed equals the uninterrupted run byte for
#    byte (model.txt, the journal's charges, the trace without its time column): wor batches
#    under replace-one on 1 and 3 ranks (the sampler's pool is in the checkpoint), Poisson
#    batches under add-remove with a declared size on 2 ranks;
#  - charges journaled after the last checkpoint (a kill -9 between a charge and the next
#    checkpoint) stay spent and the redone steps are charged again: the calibrated plan no
#    longer fits, so the ledger stops the run (status 3) with the budget never exceeded;
#  - refusals, exit 1 before anything is written: pnsgd under secagg (its one pass is charged
#    whole).  (Add-remove on a noisy row count resumes: test_ckpt_count.sh; multi-party runs
#    under central and local trust: mpi_tests/run/test_parties_resume.sh.)
. "$(dirname "$0")/../lib/testlib.sh"
COMMON="--data $S/data/a9a --row-l2-bound 3.75 --lambda 0.01 --quiet --algo dp-sgd-rdp --eps 1 --delta 1e-5"

# ---- 1. resume == uninterrupted (ckptlib.sh), one charge per step
. "$(dirname "$0")/../lib/ckptlib.sh"
pair() { # np name args...
  run_pair "$@"
  c=$(grep -c '"step"' "$T/$2-part/ledger.jsonl")
  [ "$c" -eq 30 ] && ok || bad "$2: $c charges in the journal, want 30 (one per step)"
}
pair 1 wor1 --iters 30 --batch 200
pair 3 wor3 --iters 30 --batch 200
pair 2 poi2 --iters 30 --batch 200 --set privacy.neighbours=add-remove \
  --set algo.sampling=poisson --public-n 32561
# a resumed model differs from a run with another seed (the comparison above can fail)
expect 0 $MPI -np 1 "$DPOPT" train $COMMON --iters 30 --batch 200 --seed 12 --out "$T/seed12"
cmp -s "$T/seed12/model.txt" "$T/wor1-full/model.txt" && bad "seeds 11 and 12 gave one model" || ok

# ---- 2. charges after the last checkpoint stay spent
expect 5 $MPI -np 2 "$DPOPT" train $COMMON --iters 30 --batch 200 --seed 4 --out "$T/k9" \
  --set run.stop_after=10
cp "$T/k9/checkpoint" "$T/ck10"
expect 5 $MPI -np 2 "$DPOPT" train --resume "$T/k9" --quiet --set run.stop_after=16
head -n 17 "$T/k9/ledger.jsonl" >"$T/j16"
mv "$T/ck10" "$T/k9/checkpoint"
expect 3 $MPI -np 2 "$DPOPT" train --resume "$T/k9" --set run.quiet=false
grep -q "stay spent" "$T/err" && ok || bad "orphan charges not reported: $(cat "$T/err")"
head -n 17 "$T/k9/ledger.jsonl" >"$T/j16b"
same "$T/j16" "$T/j16b" "journal prefix kept after the resume"
n=$(grep -c '"step"' "$T/k9/ledger.jsonl")
[ "$n" -gt 16 ] && [ "$n" -lt 36 ] && ok || bad "journal holds $n charges, want 16 + some redone, < 36"
# step 10 is charged twice: once before the kill, once when redone
c=$(grep -c '"step":10[,}]' "$T/k9/ledger.jsonl")
[ "$c" -eq 2 ] && ok || bad "step 10 charged $c times, want 2"
expect 0 "$DPOPT" ledger "$T/k9"
spent=$(sed -n 's/^spent: *eps = \([0-9.eE+-]*\).*/\1/p' "$T/out")
awk -v s="$spent" 'BEGIN { exit !(s <= 1 && s > 0.9) }' && ok || bad "spent $spent not in (0.9, 1]"

# ---- 3. refusals: exit 1, nothing written
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo pnsgd --checkpoint-every 2 \
  --set privacy.trust=secagg --set parties.count=2 --out "$T/r1"
has "$T/err" "algo pnsgd under privacy.trust = secagg cannot write or resume checkpoints" \
  "pnsgd's secagg checkpoints refused (its one pass is the whole budget)"
[ ! -e "$T/r1" ] && ok || bad "a refused run wrote $T/r1"

finish test_ckpt_dpsgd
