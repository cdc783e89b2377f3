#!/bin/sh
# dpopt admm --method dpadmm / dpaccadmm under privacy.trust = local checkpoints and resumes
# (one party per rank, each noising its own gradient sum; doc/design.md, the admm kind):
#  - seeded, stopped by run.stop_after at iteration 6 and resumed: the model.txt bytes of the
#    uninterrupted run (each party's seeded stream is moved past the releases before the
#    checkpoint, admm_dp.c), the same 13 charges in the journal (charged once, never twice,
#    never fewer) and every party's account at the uninterrupted run's total;
#  - DP-AccADMM alike, stopped at iteration 4;
#  - unseeded (OS keys, new in the resumed job): the same charges and party totals;
#  - every party's guard journals in its own run directory (parties.out, reopened by the
#    resume), and that journal replays to the coordinator's view of the party;
#  - the checkpoint is rank 0's state, so a resume on another rank count is refused, writing
#    nothing.
. "$(dirname "$0")/../lib/testlib.sh"

ADMM="--eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --maxit 12 --set privacy.trust=local"
charges() { grep -c '"mechanism"' "$1"; }
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }
same_charges() { # uninterrupted, resumed, label
  unchained "$1/ledger.jsonl" | grep '"mechanism"' >"$T/a"
  unchained "$2/ledger.jsonl" | grep '"mechanism"' >"$T/b"
  [ "$(charges "$2/ledger.jsonl")" = 13 ] && cmp -s "$T/a" "$T/b" && ok ||
    bad "$3: the resumed journal's $(charges "$2/ledger.jsonl") charges are not the uninterrupted run's 13"
  for k in 0 1 2; do
    close "$(pview "$2" $k)" "$(pview "$1" $k)" 1e-12 "$3: party $k's account"
  done
  # each party's guard journalled its own account in its own run directory (reopened by the
  # resume): it replays to the coordinator's view of the party
  for k in 1 2; do
    own=$("$DPOPT" ledger "$2.p$k/ledger.party$k.jsonl" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p')
    close "$own" "$(pview "$2" $k)" 1e-12 "$3: party $k's own journal replays to the coordinator's view"
  done
}

# ---- seeded: the uninterrupted run's bytes
for m in dpadmm:6 dpaccadmm:4; do
  meth=${m%:*} at=${m#*:}
  expect 0 $MPI -np 3 "$DPOPT" admm --method $meth $ADMM --seed 3 --set parties.out="$T/u$meth.p%d" \
    --out "$T/u$meth" "$S/data/a9a"
  expect 5 $MPI -np 3 "$DPOPT" admm --method $meth $ADMM --seed 3 --checkpoint-every 3 \
    --set run.stop_after=$at --set parties.out="$T/s$meth.p%d" --out "$T/s$meth" "$S/data/a9a"
  [ -f "$T/s$meth/checkpoint" ] && [ ! -e "$T/s$meth/model.txt" ] && ok ||
    bad "$meth stopped: want a checkpoint, no model"
  expect 0 $MPI -np 3 "$DPOPT" admm --resume "$T/s$meth"
  has "$T/err" "resuming $T/s$meth at iteration $((at + 1))" "$meth: resumed at iteration $((at + 1))"
  cmp -s "$T/u$meth/model.txt" "$T/s$meth/model.txt" && ok ||
    bad "$meth seeded: the resumed model differs from the uninterrupted run's"
  same_charges "$T/u$meth" "$T/s$meth" "$meth seeded"
  [ ! -e "$T/s$meth/checkpoint" ] && ok || bad "$meth: checkpoint left after completion"
done

# ---- unseeded: the charges of the (seeded) uninterrupted run, charged once (the noise scale
# is calibrated from public numbers alone, seeded or not)
expect 5 $MPI -np 3 "$DPOPT" admm --method dpadmm $ADMM --set run.stop_after=6 \
  --set parties.out="$T/so.p%d" --out "$T/so" "$S/data/a9a"
(cd "$T/so" && find . -type f | sort | xargs sha256sum) >"$T/so.sum"
# ---- another rank count: refused before anything is written
expect 1 $MPI -np 2 "$DPOPT" admm --resume "$T/so"
has "$T/err" "written by 3 ranks" "a resume on 2 ranks refused"
(cd "$T/so" && find . -type f | sort | xargs sha256sum) | cmp -s - "$T/so.sum" && ok ||
  bad "a refused resume wrote something"
expect 0 $MPI -np 3 "$DPOPT" admm --resume "$T/so"
[ -f "$T/so/model.txt" ] && ok || bad "unseeded: the resumed run wrote no model"
same_charges "$T/udpadmm" "$T/so" "unseeded"
finish test_admm_local_resume
