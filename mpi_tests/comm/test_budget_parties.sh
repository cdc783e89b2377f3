#!/bin/sh
# Per-party budget stores in multi-party runs (parties.budget_store = DIR%d), three parties
# over data/a9a split by `dpopt simulate`, each party's file registered in its own store:
#  - a run passes; each store shows one run, settled to what the ledger charged its party;
#  - a second run that does not fit party 1's store is refused before loading (exit 3): the
#    error names party 1 and not what its store has left; no store and no run directory
#    changes (the other parties, which had room, reserved nothing either);
#  - a party whose store does not register its file is refused (exit 1, naming the party);
#  - the stores compose per party: a third, smaller run fits party 1 and each store holds
#    its own two runs;
#  - under secure aggregation (the stores' paths differ between parties: not in the agreed
#    plan) each store is settled to its party's eps;
#  - a run killed midway (SIGKILL to every rank) leaves each party's reservation open,
#    counted whole; resuming it is refused (exit 1: multi-party runs write no checkpoint) and
#    changes no store and nothing in the run directory;
#  - a party's Gaussian runs compose by their RDP curves, like one auto ledger: two dp-sgd-rdp
#    runs (central) and one under secure aggregation (the guard's parts) settle each party's
#    store to the party's RDP curve; python3 verifies the chain and recomputes the composition
#    (per-order sums, Mironov 2017 Prop. 3 / Balle et al. 2020 Thm 21), below the runs' sum;
#  - one store for per-party files (privacy.store with parties.data) is refused (exit 1:
#    settings that exclude each other, as doc/reference.md's exit statuses say), and so is a
#    seeded run with party stores (exit 1);
#  - dpopt tune charges each party's store once, for its one charge (the repetitions charge
#    none); a tune that does not fit party 1's store is refused (exit 3) naming only party 1;
#    a multi-party tune under local trust is refused (its score is noised by the coordinator).
. "$(dirname "$0")/../lib/testlib.sh"
export DPOPT_JOURNAL_KEY="$T/journal.key"
sums() { cat "$T"/st0/records.jsonl "$T"/st1/records.jsonl "$T"/st2/records.jsonl | sha256sum; }
spent() { "$DPOPT" budget show "$1" | awk '/^spent/ { print $4 }' | tr -d ,; }
runs() { "$DPOPT" budget show "$1" | awk '/^runs/ { print $2 }'; }

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$S/data/a9a" "$T/parts/p%d"
expect 0 "$DPOPT" budget init "$T/st0" --eps 5 --delta 1e-5 --data "$T/parts/p0"
expect 0 "$DPOPT" budget init "$T/st1" --eps 1.5 --delta 1e-5 --data "$T/parts/p1"
expect 0 "$DPOPT" budget init "$T/st2" --eps 5 --delta 1e-5 --data "$T/parts/p2"
P0="--dim 123 --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --quiet \
  --set parties.count=3 --set parties.data=$T/parts/p%d"
P="$P0 --iters 10"

# ---- a run at eps 1 per party: each store holds one run, settled to the party's account
expect 0 $MPI -np 3 "$DPOPT" train $P --eps 1 --set "parties.budget_store=$T/st%d" --out "$T/r1"
for k in 0 1 2; do
  [ "$(runs "$T/st$k")" = 1 ] && ok || bad "store $k: $(runs "$T/st$k") runs after one run"
  has "$T/st$k/records.jsonl" '"kind":"reserve"' "store $k: reserved"
  has "$T/st$k/records.jsonl" '"kind":"settle"' "store $k: settled"
  close "$(spent "$T/st$k")" 1 1e-9 "store $k: spent the party's eps"
done
"$DPOPT" ledger "$T/r1" >"$T/led" 2>&1
has "$T/led" 'party 1:   eps = 1 of 1' "the ledger charged party 1 its eps"

# ---- a second run at eps 1 does not fit party 1's store: refused before anything
sums >"$T/s1"
expect 3 $MPI -np 3 "$DPOPT" train $P --eps 1 --set "parties.budget_store=$T/st%d" --out "$T/r2"
has "$T/err" "party 1: its budget store refused the run" "the refusal names party 1"
hasnot "$T/err" "party 0" "the refusal names no other party"
hasnot "$T/err" "0\.5" "the refusal does not say what party 1 has left"
[ ! -e "$T/r2" ] && ok || bad "a refused run left a run directory"
sums | cmp -s - "$T/s1" && ok || bad "a refused run changed a store"

# ---- a party whose store does not register its file
expect 0 "$DPOPT" budget init "$T/other" --eps 5 --data "$T/parts/p0"
cp "$T/other/records.jsonl" "$T/o1"
expect 1 $MPI -np 3 "$DPOPT" train $P --eps 0.2 --set "parties.budget_store=$T/st%d" \
  --set "party.2.budget_store=$T/other" --out "$T/r3"
has "$T/err" "party 2: its budget store refused the run" "the refusal names party 2"
has "$T/err" "is not registered in the budget store" "the file is not registered"
[ ! -e "$T/r3" ] && ok || bad "a refused run left a run directory"
cmp -s "$T/other/records.jsonl" "$T/o1" && sums | cmp -s - "$T/s1" && ok ||
  bad "a refused run changed a store"

# ---- the stores compose per party: eps 0.4 fits party 1's store (1 + 0.4 <= 1.5)
expect 0 $MPI -np 3 "$DPOPT" train $P --eps 0.4 --set "parties.budget_store=$T/st%d" --out "$T/r4"
for k in 0 1 2; do
  [ "$(runs "$T/st$k")" = 2 ] && ok || bad "store $k: $(runs "$T/st$k") runs after two runs"
  close "$(spent "$T/st$k")" 1.4 1e-9 "store $k: the two runs composed"
done
# party 0's store has room for another eps 1 run, party 1's has not: party 1 is refused
expect 3 $MPI -np 3 "$DPOPT" train $P --eps 1 --set "parties.budget_store=$T/st%d" --out "$T/r5"
has "$T/err" "party 1: its budget store refused" "party 1 refused on its own account"

# ---- secure aggregation: the plan the parties agree leaves the stores (local paths) out
for k in 0 1 2; do
  expect 0 "$DPOPT" budget init "$T/sa$k" --eps 50 --data "$T/parts/p$k"
done
expect 0 $MPI -np 3 "$DPOPT" train $P --eps 1 --clip l2:1 --set privacy.trust=secagg \
  --set "parties.budget_store=$T/sa%d" --set party.2.budget_store="$T/sa2/" --set parties.out="$T/sa.p%d" --out "$T/sa"
for k in 0 1 2; do
  close "$(spent "$T/sa$k")" 1 1e-5 "secagg: store $k settled to the party's eps"
done

# ---- a run killed midway (every rank, SIGKILL) leaves each party's reservation spent whole
setsid $MPI -np 3 "$DPOPT" train $P0 --iters 200000 --eps 2 \
  --set "parties.budget_store=$T/sa%d" --out "$T/kill" >/dev/null 2>&1 &
pid=$!
n=0
while [ $n -lt 150 ] && ! grep -qs '"mechanism"' "$T/kill/ledger.jsonl"; do
  sleep 0.2
  n=$((n + 1))
done
# Open MPI puts each rank in a process group of its own: kill the whole session setsid made
# (mpirun and every rank), and wait until none is left, or a rank still writing its journal
# races the sums below
pkill -9 -s $pid 2>/dev/null || kill -9 $pid
wait $pid 2>/dev/null
n=0
while [ $n -lt 100 ] && pgrep -s $pid >/dev/null; do sleep 0.1; n=$((n + 1)); done
has "$T/kill/ledger.jsonl" '"mechanism"' "the killed run had released"
for k in 0 1 2; do
  tail -n 1 "$T/sa$k/records.jsonl" >"$T/last"
  has "$T/last" '"kind":"reserve"' "killed: store $k's reservation is open"
  close "$(spent "$T/sa$k")" 3 1e-5 "killed: store $k counts the reservation whole"
done
# resuming it is refused (a resume settles a party's store against the party's own journal,
# which central-trust parties do not keep), before anything is written
cat "$T"/sa0/records.jsonl "$T"/sa1/records.jsonl "$T"/sa2/records.jsonl | sha256sum >"$T/sa.sum"
(cd "$T/kill" && find . -type f | sort | xargs sha256sum) >"$T/kill.sum"
expect 1 $MPI -np 3 "$DPOPT" train --resume "$T/kill" --quiet
has "$T/err" "party 1 keeps a budget store but no journal of its own" "killed: the resume is refused"
cat "$T"/sa0/records.jsonl "$T"/sa1/records.jsonl "$T"/sa2/records.jsonl | sha256sum |
  cmp -s - "$T/sa.sum" && ok || bad "a refused resume changed a store"
(cd "$T/kill" && find . -type f | sort | xargs sha256sum) >"$T/kill.sum2"
cmp -s "$T/kill.sum2" "$T/kill.sum" && ok ||
  bad "a refused resume changed the run directory: $(diff "$T/kill.sum" "$T/kill.sum2" | tr '\n' ' ')"

# ---- a party's Gaussian runs compose by their RDP curves (not by adding their eps)
G="--dim 123 --row-l2-bound 3.75 --clip l2:1 --algo dp-sgd-rdp --batch 256 --iters 50 \
  --delta 1e-6 --quiet --set parties.count=2 --set parties.data=$T/parts/p%d \
  --set parties.budget_store=$T/g%d"
for k in 0 1; do
  expect 0 "$DPOPT" budget init "$T/g$k" --eps 3 --delta 1e-5 --data "$T/parts/p$k"
done
expect 0 $MPI -np 2 "$DPOPT" train $G --eps 1 --out "$T/g_r1"
expect 0 $MPI -np 2 "$DPOPT" train $G --eps 1 --out "$T/g_r2"
# under secagg the coordinator may not draw the batches (not amplified against it): the third
# run takes full batches of the two parties' 21708 rows, still replace-one and RDP-charged
expect 0 $MPI -np 2 "$DPOPT" train $(echo "$G" | sed 's/--batch 256/--batch 21708/') --eps 1 \
  --set privacy.trust=secagg --set parties.out="$T/g_r3.p%d" --out "$T/g_r3"
for k in 0 1; do
  e=$(spent "$T/g$k")
  check "store $k: three eps-1 runs compose below 3 (spent $e)" awk -v e="$e" \
    'BEGIN { exit !(e > 0.5 && e < 2) }'
  py=$(store_compose "$T/g$k/records.jsonl" "$DPOPT_JOURNAL_KEY")
  case $py in
    3\ *) close "$e" "${py#3 }" 1e-8 "store $k: spent = the RDP composition of its three runs (its conversion rounds up by 1e-9 relative)" ;;
    *) bad "store $k: python3 says $py" ;;
  esac
done

# ---- one store for per-party files; seeded runs
expect 1 $MPI -np 3 "$DPOPT" train $P --eps 0.1 --budget-store "$T/st0" --out "$T/r6"
has "$T/err" "give each party its own store" "one store for per-party files"
expect 1 $MPI -np 3 "$DPOPT" train $P --eps 0.1 --seed 3 --set "parties.budget_store=$T/st%d" \
  --out "$T/r7"
has "$T/err" "NOT private" "a seeded run with party stores"
# ---- dpopt tune with party stores: the tune's one charge bounds every party's rows, so each
# party's first rank reserves the tune's (eps, delta) in its own store and settles it to the
# tune ledger's parts; its repetitions charge no store.  Party 1's store (1.5) then refuses a
# second tune at eps 1 before anything is read or written, naming only party 1
TU="--data $S/data/a9a --valid $S/data/a9a.t --algos dp-nag-opt --steps 1,2 --row-l1-bound 14 --row-l2-bound 3.75 --quiet \
  --set parties.count=3 --set parties.data=$T/parts/p%d --set parties.budget_store=$T/tu%d"
expect 0 "$DPOPT" budget init "$T/tu0" --eps 3 --delta 1e-5 --data "$T/parts/p0"
expect 0 "$DPOPT" budget init "$T/tu1" --eps 1.5 --delta 1e-5 --data "$T/parts/p1"
expect 0 "$DPOPT" budget init "$T/tu2" --eps 3 --delta 1e-5 --data "$T/parts/p2"
expect 0 $MPI -np 3 "$DPOPT" tune $TU --eps 1 --out "$T/tu_r1"
led=$("$DPOPT" ledger "$T/tu_r1" | awk '/^spent:/ { print $4 }' | tr -d ,)
for k in 0 1 2; do
  [ "$(runs "$T/tu$k")" = 1 ] && ok || bad "tune store $k: $(runs "$T/tu$k") runs after one tune"
  "$DPOPT" budget show "$T/tu$k" >"$T/show"
  has "$T/show" " tune  *settled" "tune store $k: the tune's record, settled"
  close "$(spent "$T/tu$k")" "$led" 1e-9 "tune store $k: spent = the tune ledger's eps ($led)"
done
cat "$T"/tu0/records.jsonl "$T"/tu1/records.jsonl "$T"/tu2/records.jsonl | sha256sum >"$T/tu.sum"
expect 3 $MPI -np 3 "$DPOPT" tune $TU --eps 1 --out "$T/tu_r2"
has "$T/err" "party 1: its budget store refused the tune" "tune: the refusal names party 1"
hasnot "$T/err" "party 0" "tune: the refusal names no other party"
[ ! -e "$T/tu_r2" ] && ok || bad "a refused tune left a directory"
cat "$T"/tu0/records.jsonl "$T"/tu1/records.jsonl "$T"/tu2/records.jsonl | sha256sum |
  cmp -s - "$T/tu.sum" && ok || bad "a refused tune changed a store"
# a search's score is an exact held-out count that rank 0 noises: several parties need central
# trust (the coordinator trusted with it), any other trust mode is refused, writing nothing
expect 1 $MPI -np 3 "$DPOPT" tune $TU --eps 1 --set privacy.trust=local --out "$T/tu_l"
has "$T/err" "runs under central trust only" "a multi-party tune under local trust is refused"
[ ! -e "$T/tu_l" ] && ok || bad "a tune refused for its trust mode left a directory"
expect 1 $MPI -np 3 "$DPOPT" tune $TU --eps 0.1 --seed 3 --out "$T/tu_r3"
has "$T/err" "NOT private" "a seeded tune with party stores"
finish test_budget_parties
