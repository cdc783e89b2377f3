#!/bin/sh
# Multi-party dpopt train runs under central, local and shares trust checkpoint and resume
# (doc/design.md, "Dropouts", *Which runs resume*).  Two parties (parties.count = 2) on a
# 4000-row slice of a9a, seeded, each run stopped by run.stop_after at step 13 (a checkpoint
# every 4) and resumed, against the uninterrupted run:
#  - central (the coordinator draws all noise from its saved stream): dp-sgd-rdp, pnsgd (its
#    one pass, every iterate charged) and dp-gd give the uninterrupted model.txt bytes;
#  - local (each party noises its own sum) and shares (each rank adds a share): the parties'
#    seeded streams restart at the resume, so only the charges are compared;
#  - in every case the journal holds the uninterrupted run's charges and events (the trust
#    mode once), each once, and each party's account ends at the uninterrupted run's total;
#  - refused up front, exit 1, nothing written: a shared-file run resumed on another rank
#    count (its rank blocks would move rows between parties), a plan charged whole as one pass under secagg
#    (dp-onlinegdws: the refusal follows the algorithm's one-pass flag, not its name), and
#    checkpoints of a central run whose party keeps a budget store (its resume would need the
#    party's own journal); under local trust the same run resumes, its party's store settled
#    against the party's own journal.
. "$(dirname "$0")/../lib/testlib.sh"

head -n 4000 "$S/data/a9a" >"$T/a9a"
cp "$S/data/a9a.schema" "$T/a9a.schema"
COMMON="--data $T/a9a --row-l1-bound 14 --row-l2-bound 3.75 --eps 2 --delta 1e-5 --seed 3 --quiet \
  --set parties.count=2"
charge_lines() { unchained "$1/ledger.jsonl" | grep '"mechanism"'; }
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }
own() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }
# pair NAME BYTES ARGS...: the uninterrupted run and the stopped and resumed one
# (GUARDED=1: local / shares, each party's guard journals in its own run directory RUN.pK,
# which a resume reopens; its journal replays to the coordinator's view of the party)
pair() {
  name=$1 bytes=$2; shift 2
  pu="" ps=""
  [ -n "${GUARDED:-}" ] && pu="--set parties.out=$T/$name-u.p%d" ps="--set parties.out=$T/$name-s.p%d"
  expect 0 $MPI -np 2 "$DPOPT" train $COMMON "$@" $pu --out "$T/$name-u"
  expect 5 $MPI -np 2 "$DPOPT" train $COMMON "$@" $ps --out "$T/$name-s" --checkpoint-every 4 \
    --set run.stop_after=13
  [ -f "$T/$name-s/checkpoint" ] && [ ! -e "$T/$name-s/model.txt" ] && ok ||
    bad "$name: stopped, want a checkpoint and no model"
  expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/$name-s"
  [ -f "$T/$name-s/model.txt" ] && [ ! -e "$T/$name-s/checkpoint" ] && ok ||
    bad "$name: resumed, want a model and no checkpoint left"
  if [ "$bytes" = 1 ]; then
    cmp -s "$T/$name-u/model.txt" "$T/$name-s/model.txt" && ok ||
      bad "$name: the resumed model differs from the uninterrupted run's"
  fi
  charge_lines "$T/$name-u" >"$T/a"
  charge_lines "$T/$name-s" >"$T/b"
  [ -s "$T/a" ] && cmp -s "$T/a" "$T/b" && ok ||
    bad "$name: the resumed journal's $(wc -l <"$T/b") charges are not the uninterrupted run's $(wc -l <"$T/a")"
  for r in u s; do unchained "$T/$name-$r/ledger.jsonl" | grep '"event"' | grep -v '"run_id' >"$T/e$r"; done
  grep -q '"trust ' "$T/eu" && cmp -s "$T/eu" "$T/es" && ok ||
    bad "$name: the resumed journal's events (the trust mode once) are not the uninterrupted run's"
  for k in 0 1; do
    close "$(pview "$T/$name-s" $k)" "$(pview "$T/$name-u" $k)" 1e-12 "$name: party $k's account"
  done
  if [ -n "${GUARDED:-}" ]; then
    close "$(own "$T/$name-s.p1/ledger.party1.jsonl")" "$(pview "$T/$name-s" 1)" 1e-12 "$name: party 1's own journal, resumed, replays to the coordinator's view"
  fi
}

pair central-sgd 1 --algo dp-sgd-rdp --clip l2:1
pair central-pnsgd 1 --algo pnsgd --set algo.T=40 --set algo.D=1
pair central-gd 1 --algo dp-gd --clip l2:1 --iters 20
GUARDED=1
pair local-sgd 0 --algo dp-sgd-rdp --clip l2:1 --set privacy.trust=local
pair shares-gd 0 --algo dp-gd --clip l2:1 --iters 20 --set privacy.trust=shares
GUARDED=

# ---- refused up front, writing nothing
# parties over one shared file resume on their rank count (on 3 ranks the blocks would move
# rows from party 0 to party 1, whose account did not count them)
expect 5 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-gd --clip l2:1 --iters 20 --out "$T/rk" \
  --checkpoint-every 4 --set run.stop_after=9
find "$T/rk" -type f -exec sha256sum {} + | sort >"$T/rk.sum"
expect 1 $MPI -np 3 "$DPOPT" train --resume "$T/rk"
has "$T/err" "its 2 parties share one data file, whose rows are split by rank, and it ran on 2 ranks: resume it on 2" \
  "a shared-file multi-party resume on another rank count refused, saying why"
find "$T/rk" -type f -exec sha256sum {} + | sort | cmp -s - "$T/rk.sum" && ok ||
  bad "the refused resume changed the run directory"
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-onlinegdws --clip l2:1 --iters 20 \
  --set privacy.trust=secagg --set parties.out="$T/o.p%d" --checkpoint-every 4 --out "$T/o"
has "$T/err" "algo dp-onlinegdws under privacy.trust = secagg cannot write or resume checkpoints: its steps are the batches of one disjoint pass" \
  "a one-pass plan under secagg refused, saying why"
[ ! -e "$T/o" ] && [ ! -e "$T/o.p1" ] && ok || bad "the refused one-pass run wrote something"
mkdir -p "$T/parts"
for k in 0 1; do
  awk -v k=$k 'NR % 2 == k' "$T/a9a" >"$T/parts/p$k"
  expect 0 "$DPOPT" budget init "$T/st$k" --eps 50 --data "$T/parts/p$k"
done
cat "$T"/st0/records.jsonl "$T"/st1/records.jsonl | sha256sum >"$T/st.sum"
expect 1 $MPI -np 2 "$DPOPT" train $(echo "$COMMON" | sed 's/--seed 3//; s|--data [^ ]*||') --dim 123 \
  --algo dp-gd --clip l2:1 --iters 20 --set parties.data="$T/parts/p%d" \
  --set parties.budget_store="$T/st%d" --checkpoint-every 4 --out "$T/bst"
has "$T/err" "party 1 keeps a budget store: a resume settles the store against the party's own journal" \
  "central checkpoints with a party's budget store refused, saying why"
[ ! -e "$T/bst" ] && ok || bad "the refused run wrote $T/bst"
cat "$T"/st0/records.jsonl "$T"/st1/records.jsonl | sha256sum | cmp -s - "$T/st.sum" && ok ||
  bad "the refused run changed a store"
# under local trust the same run checkpoints: each party's guard keeps its own journal, so a
# resume settles the party's store against it; the store ends at the party's whole spend
stspent() { "$DPOPT" budget show "$1" | sed -n 's/^spent *eps = \([0-9.e+-]*\),.*/\1/p'; }
expect 5 $MPI -np 2 "$DPOPT" train $(echo "$COMMON" | sed 's/--seed 3//; s/--delta 1e-5//; s|--data [^ ]*||') \
  --dim 123 --algo dp-gd --clip l2:1 --iters 20 --set parties.data="$T/parts/p%d" --set privacy.trust=local \
  --set parties.budget_store="$T/st%d" --set parties.out="$T/bl.p%d" --checkpoint-every 4 \
  --set run.stop_after=13 --out "$T/bl"
close "$(stspent "$T/st1")" "$(own "$T/bl.p1/ledger.party1.jsonl")" 1e-12 "local, stopped: party 1's store settled to its own journal"
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/bl"
close "$(stspent "$T/st1")" "$(own "$T/bl.p1/ledger.party1.jsonl")" 1e-12 "local, resumed: party 1's store settled to its own journal"
close "$(own "$T/bl.p1/ledger.party1.jsonl")" "$(pview "$T/bl" 1)" 1e-12 "local, resumed: party 1's journal replays to the coordinator's view"
close "$(stspent "$T/st1")" 2 1e-9 "local, resumed: party 1's store holds its whole budget spent"
finish test_parties_resume
