#!/bin/sh
# dpopt admm's parties keep their own budget stores (doc/design.md, "Budget stores",
# "Per-party stores"): three parties, each reading its own file (parties.data, a 3000-row a9a
# split by `dpopt simulate`) and charging its own store (parties.budget_store = DIR%d):
#  - DP-ADMM under secagg and private consensus under local trust: each store holds one run,
#    settled to what the party's own journal holds (dpopt ledger replays it: the same spent eps
#    and as many RDP charges; rank 0's party: the coordinator's account of party 0, charged
#    for every release party 1 journals), and
#    python3 recomputes each store's composition from its verified chain;
#  - a second run that does not fit party 1's store is refused (exit 3), the error (printed
#    once) naming party 1 and not what its store has left (no rank prints the store or its
#    amounts): no run or party directory, no store or journal changed;
#  - train then admm on the same party stores: each store holds both runs, composed (python3);
#  - a party's rank killed mid-run (dpopt-test, never the installed dpopt): the reservations
#    stay open; the resume keeps them and settles each to its party's journal, redone
#    releases included;
#  - stopped at a checkpoint and resumed: the store settled to the party's journal at the
#    stop, then again, one record for the run, to the whole journal once the resume ends; a
#    resume whose whole budget party 1's store can no longer hold (a train run on its file
#    spent it meanwhile) is refused naming party 1, no journal, directory or store changed;
#  - party stores outside secagg / local, a store without the party's file, one store for
#    per-party files, a seeded run with party stores and two parties on one store (admm and
#    train: each would hold its lock and wait for the other) and one party's store alone
#    (admm and train: one message, from the one party table) are refused before anything is
#    written.
. "$(dirname "$0")/../lib/testlib.sh"
export DPOPT_JOURNAL_KEY="$T/journal.key"
head -n 3000 "$S/data/a9a" > "$T/a3k"
cp "$S/data/a9a.schema" "$T/a3k.schema"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$T/a3k" "$T/p%d"
init() { # init NAME EPS1: stores NAME0..2 for the three files, party 1's with budget EPS1
  for k in 0 1 2; do
    e=3; [ "$k" = 1 ] && e=$2
    expect 0 "$DPOPT" budget init "$T/$1$k" --eps "$e" --delta 1e-4 --data "$T/p$k"
  done
}
field() { tail -n 1 "$1/records.jsonl" | sed -n "s/.*\"$2\":\([^,]*\),.*/\1/p"; }
spent() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }
charges() { grep -c '"mechanism"' "$1"; }
shown() { "$DPOPT" budget show "$1" | awk '/^spent/ { print $4 }' | tr -d ,; }
# settled RUN STORE WHAT [PER]: each party's store settled to its own journal (party 0, rank
# 0 alone: the coordinator's account of it, one charge in PER of the coordinator's journal)
settled() {
  for k in 0 1 2; do
    [ "$(field "$T/$2$k" kind)" = '"settle"' ] && ok || bad "$3: store $k's last record is no settlement"
    if [ $k = 0 ]; then own=$(pview "$1" 0); n=$(($(charges "$1/ledger.jsonl") / ${4:-1}))
    else j="$1.p$k/ledger.party$k.jsonl"; own=$(spent "$j"); n=$(charges "$j"); fi
    close "$(field "$T/$2$k" eps)" "$own" 1e-12 "$3: store $k settled to the party's journal"
    [ "$(field "$T/$2$k" n_rdp)" = "$n" ] && ok || bad "$3: store $k settled $(field "$T/$2$k" n_rdp) charges, the journal holds $n"
    c=$(store_compose "$T/$2$k/records.jsonl" "$DPOPT_JOURNAL_KEY")
    close "${c#* }" "$(shown "$T/$2$k")" 1e-9 "$3: store $k's composition recomputed ($c)"
  done
}
sums() { cat "$T/$1"0/records.jsonl "$T/$1"1/records.jsonl "$T/$1"2/records.jsonl | sha256sum; }
DP="--method dpadmm --clip 1 --eps 1 --delta 1e-5 --row-l2-bound 3.75 --maxit 12 \
  --set privacy.trust=secagg --set parties.data=$T/p%d --quiet"
CO="--private --clip 1 --eps 0.5 --delta 1e-5 --lambda 1e-4 --maxit 10 \
  --set privacy.trust=local --set parties.data=$T/p%d --quiet"

# ---- DP-ADMM under secagg: each store settled to its party's journal
init st 1.05
expect 0 $MPI -np 3 "$DPOPT" admm $DP --set parties.budget_store="$T/st%d" \
  --set parties.out="$T/r1.p%d" --out "$T/r1"
settled "$T/r1" st "secagg"
for k in 0 1 2; do has "$T/st$k/records.jsonl" '"what":"admm"' "secagg: store $k reserved for admm"; done

# ---- a second run that party 1's store cannot hold: refused, nothing written anywhere
sums st >"$T/s1"
(cd "$T" && cat r1/ledger.jsonl r1.p1/ledger.party1.jsonl r1.p2/ledger.party2.jsonl | sha256sum) >"$T/j1"
expect 3 $MPI -np 3 "$DPOPT" admm $DP --set parties.budget_store="$T/st%d" \
  --set parties.out="$T/r2.p%d" --out "$T/r2"
has "$T/err" "party 1: its budget store refused the run" "refused: names party 1"
# the store's own account stays with the party: no rank prints the store or its amounts
hasnot "$T/err" "$T/st1\|what is left of the data set" "refused: no rank prints party 1's store or amounts"
hasnot "$T/err" "party 0\|party 2" "refused: names no other party"
[ "$(grep -c 'error' "$T/err")" = 1 ] && ok || bad "refused: the error is printed $(grep -c error "$T/err") times"
[ ! -e "$T/r2" ] && [ ! -e "$T/r2.p1" ] && [ ! -e "$T/r2.p2" ] && ok || bad "refused: a directory was made"
sums st | cmp -s - "$T/s1" && ok || bad "refused: a store changed"
(cd "$T" && cat r1/ledger.jsonl r1.p1/ledger.party1.jsonl r1.p2/ledger.party2.jsonl | sha256sum) |
  cmp -s - "$T/j1" && ok || bad "refused: a journal changed"

# ---- private consensus under local trust
init lc 3
expect 0 $MPI -np 3 "$DPOPT" admm $CO --set parties.budget_store="$T/lc%d" \
  --set parties.out="$T/c1.p%d" --out "$T/c1"
settled "$T/c1" lc "consensus local" 3

# ---- train, then admm, on the same party stores: each store composes both
init tr 5
expect 0 $MPI -np 3 "$DPOPT" train --dim 123 --row-l2-bound 3.75 --clip l2:1 --algo dp-sgd-rdp \
  --batch 256 --iters 20 --eps 1 --delta 1e-5 --quiet --set parties.count=3 \
  --set parties.data="$T/p%d" --set parties.budget_store="$T/tr%d" --out "$T/t1"
for k in 0 1 2; do eval "trspent$k=$(shown "$T/tr$k")"; done
expect 0 $MPI -np 3 "$DPOPT" admm $DP --set parties.budget_store="$T/tr%d" \
  --set parties.out="$T/t2.p%d" --out "$T/t2"
for k in 0 1 2; do
  "$DPOPT" budget show "$T/tr$k" >"$T/show"
  has "$T/show" '^runs  *2' "train + admm: store $k holds both runs"
  c=$(store_compose "$T/tr$k/records.jsonl" "$DPOPT_JOURNAL_KEY")
  [ "${c%% *}" = 2 ] && ok || bad "train + admm: store $k composes '$c'"
  close "${c#* }" "$(shown "$T/tr$k")" 1e-9 "train + admm: store $k's composition recomputed"
  eval "before=\$trspent$k"
  awk -v a="$before" -v b="$(shown "$T/tr$k")" 'BEGIN { exit !(b > a + 0.1 && b < a + 1) }' && ok ||
    bad "train + admm: store $k spent $before after train, $(shown "$T/tr$k") after admm"
done

# ---- stopped at a checkpoint, then resumed: settled to the party's journal each time
init rs 3
expect 5 $MPI -np 3 "$DPOPT" admm $DP --checkpoint-every 3 --set run.stop_after=6 \
  --set parties.budget_store="$T/rs%d" --set parties.out="$T/s.p%d" --out "$T/s"
settled "$T/s" rs "stopped"
expect 0 $MPI -np 3 "$DPOPT" admm --resume "$T/s"
settled "$T/s" rs "resumed"
for k in 0 1 2; do
  [ "$(grep -c '"kind":"settle"' "$T/rs$k/records.jsonl")" = 2 ] && ok ||
    bad "resumed: store $k has $(grep -c settle "$T/rs$k/records.jsonl") settlements (want the stop's and the end's)"
  [ "$("$DPOPT" budget show "$T/rs$k" | awk '/^runs/ { print $2 }')" = 1 ] && ok ||
    bad "resumed: store $k counts more than one run"
done

# ---- the last party's rank killed in release 9: every reservation stays open (counted
# whole); the resume keeps it (one run a store) and settles each store to its party's journal,
# the releases redone after the checkpoint included
init kl 3
$MPI -np 3 "$DPOPT_TEST" admm --test-party-kill 9 $DP --checkpoint-every 3 \
  --set parties.budget_store="$T/kl%d" --set parties.out="$T/k.p%d" --out "$T/k" >"$T/out" 2>"$T/err"
[ "$?" != 0 ] && [ -f "$T/k/checkpoint" ] && ok || bad "killed: want a failed run with a checkpoint"
for k in 0 1 2; do
  [ "$(field "$T/kl$k" kind)" = '"reserve"' ] && ok || bad "killed: store $k's reservation is not open"
done
$MPI -np 3 "$DPOPT" admm --resume "$T/k" >"$T/out" 2>"$T/err"
rc=$?; [ $rc = 0 ] || [ $rc = 3 ] && ok || bad "killed, resumed: exit $rc"
[ "$(grep -c '"step":8[,}]' "$T/k/ledger.jsonl")" = 2 ] && ok || bad "killed: release 8 was not redone"
settled "$T/k" kl "killed, resumed"
for k in 0 1 2; do
  [ "$("$DPOPT" budget show "$T/kl$k" | awk '/^runs/ { print $2 }')" = 1 ] && ok ||
    bad "killed, resumed: store $k counts more than one run"
done

# ---- a resume that party 1's store cannot hold any more (a train run on its file spent it
# meanwhile): refused before any party reopens its journal, nothing written anywhere
init rf 3
expect 5 $MPI -np 3 "$DPOPT" admm $DP --checkpoint-every 3 --set run.stop_after=6 \
  --set parties.budget_store="$T/rf%d" --set parties.out="$T/f.p%d" --out "$T/f"
expect 0 "$DPOPT" train --data "$T/p1" --dim 123 --row-l1-bound 14 --row-l2-bound 3.75 \
  --algo dp-gd --iters 10 --eps 2.2 --budget-store "$T/rf1" --quiet --out "$T/tf"
tree() { (cd "$T" && find f f.p1 f.p2 -type f | sort | xargs sha256sum; sums rf); }
tree >"$T/f.sum"
expect 3 $MPI -np 3 "$DPOPT" admm --resume "$T/f"
has "$T/err" "party 1: its budget store refused the resumed run" "refused resume: names party 1"
hasnot "$T/err" "$T/rf1\|what is left of the data set" "refused resume: no rank prints party 1's store or amounts"
tree | cmp -s - "$T/f.sum" && ok || bad "refused resume: a journal, run directory or store changed"

# ---- refusals before anything is written
expect 1 $MPI -np 3 "$DPOPT" admm $DP --set privacy.trust=central --set parties.budget_store="$T/st%d" --out "$T/x1"
has "$T/err" "'parties.budget_store' is not used by dpopt admm" "central: party stores refused"
expect 1 $MPI -np 3 "$DPOPT" admm --method dpadmm --clip 1 --eps 1 --delta 1e-5 --row-l2-bound 3.75 \
  --set privacy.trust=secagg --set parties.budget_store="$T/st%d" --set parties.out="$T/x2.p%d" \
  --quiet --out "$T/x2" "$T/a3k"
has "$T/err" "needs the party's own data file" "a store without the party's file"
expect 1 $MPI -np 3 "$DPOPT" admm $DP --budget-store "$T/st0" --set parties.out="$T/x3.p%d" --out "$T/x3"
has "$T/err" "one budget store" "one store for per-party files (settings that exclude each other: exit 1)"
expect 1 $MPI -np 3 "$DPOPT" admm $DP --seed 1 --set parties.budget_store="$T/st%d" \
  --set parties.out="$T/x4.p%d" --out "$T/x4"
has "$T/err" "NOT private, so it cannot charge the parties' budget stores" "seeded with party stores"
# two parties on one store (another spelling of its path): each would hold the store's lock
# until its reservation and wait for the other (a hang); refused by name first
init dup 3
expect 1 timeout 120 $MPI -np 3 "$DPOPT" admm $DP --set parties.out="$T/x5.p%d" --out "$T/x5" \
  --set party.0.budget_store="$T/dup0" --set party.1.budget_store="$T/dup1" \
  --set party.2.budget_store="$T/./dup1/" --set party.2.data="$T/p1"
has "$T/err" "party 2 names a budget store another party names" "two parties on one store"
expect 1 timeout 120 $MPI -np 3 "$DPOPT" train --dim 123 --row-l2-bound 3.75 --clip l2:1 \
  --algo dp-sgd-rdp --batch 256 --iters 5 --eps 1 --delta 1e-5 --quiet --set parties.count=3 \
  --set parties.data="$T/p%d" --set party.2.data="$T/p1" --set parties.budget_store="$T/dup%d" \
  --set party.2.budget_store="$T/./dup1/" --out "$T/x6"
has "$T/err" "party 2 names a budget store another party names" "train: two parties on one store"
# one party's store alone: admm and train read the parties' keys into one table and say so alike
expect 1 $MPI -np 3 "$DPOPT" admm $DP --set party.1.budget_store="$T/st1" \
  --set parties.out="$T/x7.p%d" --out "$T/x7"
has "$T/err" "parties: 1 of 3 parties name their own budget_store" "admm: one party's store alone"
expect 1 $MPI -np 3 "$DPOPT" train --dim 123 --row-l2-bound 3.75 --clip l2:1 --algo dp-sgd-rdp \
  --batch 256 --iters 5 --eps 1 --delta 1e-5 --quiet --set parties.count=3 \
  --set parties.data="$T/p%d" --set party.1.budget_store="$T/st1" --out "$T/x8"
has "$T/err" "parties: 1 of 3 parties name their own budget_store" "train: one party's store alone"
[ ! -e "$T/x1" ] && [ ! -e "$T/x2" ] && [ ! -e "$T/x3" ] && [ ! -e "$T/x4" ] && [ ! -e "$T/x2.p1" ] &&
  [ ! -e "$T/x5" ] && [ ! -e "$T/x6" ] && [ ! -e "$T/x7" ] && [ ! -e "$T/x8" ] && ok ||
  bad "a refused run made a directory"
sums st | cmp -s - "$T/s1" && ok || bad "a refused run changed a store"
finish test_admm_party_store
