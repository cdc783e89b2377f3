#!/bin/sh
# dpopt admm under privacy.trust = secagg resumes (DP-ADMM, one party per rank, 3 parties,
# collude 1; doc/design.md, "Dropouts", *Which secagg runs resume*):
#  - seeded, stopped by run.stop_after at iteration 6 and resumed: the model.txt bytes of the
#    uninterrupted run (each rank's share of release r is drawn at the stream's place for r,
#    so the resumed run draws what the uninterrupted one drew; the masks cancel whatever their
#    keys), and every party's own journal holds the uninterrupted run's 13 charges, replaying
#    to its total;
#  - the last party's rank killed in release 9 (dpopt-test's --test-party-kill 9; checkpoint
#    at iteration 6, i.e. 7 releases): `--resume RUN` on the three ranks reopens every party's
#    journal; releases 8 and 9 are redone and charged again (the coordinator's journal holds
#    steps 7 and 8 twice), the plan's 13 charges spend the whole budget, so the run ends with
#    the budget exhausted (exit 3) and its model; party 2's own journal (it journalled release
#    9 before it died) holds as many charges as the coordinator's and replays to the
#    coordinator's view of it, party 1's never more;
#  - a resume without a party's journal is refused naming it, writing nothing (a budget
#    store's reservation is carried over: test_admm_store_resume.sh; local trust resumes:
#    test_admm_local_resume.sh).
. "$(dirname "$0")/../lib/testlib.sh"

ADMM="--method dpadmm --eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --maxit 12 \
  --set privacy.sigma_rule=rdp --set privacy.trust=secagg"
charges() { if [ -f "$1" ]; then grep -c '"mechanism"' "$1"; else echo 0; fi; }
spent() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }

# ---- seeded: stopped and resumed gives the uninterrupted run's bytes
expect 0 $MPI -np 3 "$DPOPT" admm $ADMM --seed 3 --set parties.out="$T/u.p%d" --out "$T/u" "$S/data/a9a"
expect 5 $MPI -np 3 "$DPOPT" admm $ADMM --seed 3 --checkpoint-every 3 --set run.stop_after=6 \
  --set parties.out="$T/s.p%d" --out "$T/s" "$S/data/a9a"
[ -f "$T/s/checkpoint" ] && [ ! -e "$T/s/model.txt" ] && ok || bad "stopped: want a checkpoint, no model"
expect 0 $MPI -np 3 "$DPOPT" admm --resume "$T/s"
has "$T/err" "resuming $T/s at iteration 7" "seeded: resumed at iteration 7"
cmp -s "$T/u/model.txt" "$T/s/model.txt" && ok || bad "seeded: the resumed model differs from the uninterrupted run's"
for k in 1 2; do
  [ "$(charges "$T/s.p$k/ledger.party$k.jsonl")" = 13 ] && ok ||
    bad "seeded: party $k journalled $(charges "$T/s.p$k/ledger.party$k.jsonl") releases (want 13)"
  close "$(spent "$T/s.p$k/ledger.party$k.jsonl")" "$(spent "$T/u.p$k/ledger.party$k.jsonl")" 1e-12 \
    "seeded: party $k's own total is the uninterrupted run's"
done

# ---- killed in release 9, resumed with its three parties
$MPI -np 3 "$DPOPT_TEST" admm --test-party-kill 9 $ADMM --checkpoint-every 3 \
  --set parties.out="$T/k.p%d" --out "$T/k" "$S/data/a9a" >"$T/out" 2>"$T/err"
[ "$?" != 0 ] && ok || bad "the job with a killed rank exited 0"
[ -f "$T/k/checkpoint" ] && [ ! -e "$T/k/model.txt" ] && ok || bad "killed: want a checkpoint, no model"
[ "$(charges "$T/k/ledger.jsonl")" = 9 ] && [ "$(charges "$T/k.p2/ledger.party2.jsonl")" = 9 ] && ok ||
  bad "killed: the coordinator and party 2 journalled $(charges "$T/k/ledger.jsonl"), $(charges "$T/k.p2/ledger.party2.jsonl") (want 9, 9)"
cp "$T/k.p2/ledger.party2.jsonl" "$T/p2.killed"
expect 3 $MPI -np 3 "$DPOPT" admm --resume "$T/k"
has "$T/err" "resuming $T/k at iteration 7" "killed: resumed at iteration 7"
[ -f "$T/k/model.txt" ] && ok || bad "killed: the resumed run wrote no model"
[ "$(charges "$T/k/ledger.jsonl")" = 13 ] && ok ||
  bad "killed: the coordinator's journal holds $(charges "$T/k/ledger.jsonl") charges (want 13)"
for st in 7 8; do
  [ "$(grep -c "\"step\":$st[,}]" "$T/k/ledger.jsonl")" = 2 ] && ok || bad "killed: step $st not charged twice"
done
head -n "$(wc -l <"$T/p2.killed")" "$T/k.p2/ledger.party2.jsonl" | cmp -s - "$T/p2.killed" && ok ||
  bad "killed: party 2's journal lost or changed a line"
[ "$(charges "$T/k.p2/ledger.party2.jsonl")" = 13 ] && ok ||
  bad "killed: party 2 holds $(charges "$T/k.p2/ledger.party2.jsonl") charges (want 9 + 4)"
close "$(spent "$T/k.p2/ledger.party2.jsonl")" "$(pview "$T/k" 2)" 1e-12 \
  "killed: party 2's own journal replays to the coordinator's view"
p1=$(spent "$T/k.p1/ledger.party1.jsonl")
check "killed: party 1's own total $p1 is not above the coordinator's view" awk -v p="$p1" \
  -v c="$(pview "$T/k" 1)" 'BEGIN {exit !(p > 0 && p <= c * (1 + 1e-12))}'

# ---- a resume without a party's journal: refused before anything is written
$MPI -np 3 "$DPOPT_TEST" admm --test-party-kill 6 $ADMM --checkpoint-every 3 \
  --set parties.out="$T/m.p%d" --out "$T/m" "$S/data/a9a" >"$T/out" 2>"$T/err"
rm -r "$T/m.p1"
(cd "$T/m" && find . -type f | sort | xargs sha256sum) >"$T/m.sum"
expect 1 $MPI -np 3 "$DPOPT" admm --resume "$T/m"
has "$T/err" "--resume: party 1's journal $T/m.p1/ledger.party1.jsonl is missing" "a missing party journal refused"
(cd "$T/m" && find . -type f | sort | xargs sha256sum) | cmp -s - "$T/m.sum" && [ ! -e "$T/m.p1" ] && ok ||
  bad "a refused resume wrote something"
finish test_admm_secagg_resume
