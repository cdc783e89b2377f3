#!/bin/sh
# Per-data-set budget stores (dpopt budget, --budget-store), on private dp-sgd-rdp runs over
# data/a9a:
#  - a store of eps 1.5: after a run at eps 1, a second run at eps 1 is refused before the data
#    are loaded (exit 3; no run directory, the store byte-identical), one at eps 0.5 is accepted;
#  - the same data copied to another path hits the same account; a file not registered, or
#    changed since it was registered, is refused (naming `dpopt budget add`), nothing written;
#  - the store's spent eps equals an independent composition of the two runs' RDP curves
#    (python3: per-order sums, min over orders of Mironov 2017 Prop. 3 and Balle et al. 2020
#    Thm 21 at the store's delta) and is below the sum of their eps; python3 also verifies every
#    record's keyed BLAKE2b chain tag;
#  - an edited record is refused (exit 2) by show and by a run;
#  - a run stopped early and resumed is one account (one run id), a warm start (--x0) is
#    another run on it, and a killed run's
#    reservation stays spent whole; resuming it charges nothing again; a run directory rolled
#    back behind what the store settled for it is refused on resume (exit 2);
#  - the store keeps each run's journal head (line count and chain tag, keyed): a journal cut
#    back to its checkpoint (last_release.txt deleted: a consistent, validly chained directory)
#    is refused on resume naming the line, run directory and store byte-identical after; an
#    edited head is refused; the run resumed from where it was completes;
#  - two runs started at once on a store with room for one: exactly one passes, and the other
#    (checked and refused under the same lock) leaves no run directory;
#  - dpopt tune reserves its whole budget once (its repetitions charge nothing more), composes
#    with a train on the same store, and is refused like a train;
#  - dpopt admm (DP-ADMM, with its journal) charges the same account;
#  - a seeded (not private) run naming a store is refused.
. "$(dirname "$0")/../lib/testlib.sh"
export DPOPT_JOURNAL_KEY="$T/journal.key"
# dp-nag (pure eps) can be stopped and resumed; dp-sgd-rdp (Gaussian) cannot
P="--dim 123 --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-nag --iters 30 --quiet"
R="--delta 1e-6 --algo dp-sgd-rdp --batch 256 --iters 50 --clip l2:1 --row-l2-bound 3.75 --quiet"
sums() { sha256sum "$1/records.jsonl"; }
spent() { "$DPOPT" budget show "$1" | awk '/^spent/ { print $4 }' | tr -d ,; }

expect 0 "$DPOPT" budget init "$T/st" --eps 1.5 --delta 1e-5 --data "$S/data/a9a"
[ "$(stat -c %a "$T/st/records.jsonl")" = 600 ] && ok || bad "records.jsonl is not 0600"
expect 0 "$DPOPT" budget show "$T/st"
has "$T/out" "eps = 1.5, delta = 1e-05" "show: the budget"
has "$T/out" "runs            0" "show: no runs yet"
expect 1 "$DPOPT" budget init "$T/st" --eps 3 --data "$S/data/a9a"
has "$T/err" "already there" "a second init over a store"

# ---- files: unregistered, changed
cp "$S/data/a9a" "$T/a9a.copy"
awk 'NR == 1 { $1 = ($1 == "-1" ? "+1" : "-1") } { print }' "$S/data/a9a" >"$T/a9a.changed"
cmp -s "$S/data/a9a" "$T/a9a.changed" && bad "the changed copy is not changed"
cp "$T/a9a.changed" "$T/a9a"
sums "$T/st" >"$T/s0"
expect 1 "$DPOPT" train --data "$S/data/a9a.t" --dim 123 --budget-store "$T/st" --eps 0.1 $R --out "$T/u1"
has "$T/err" "is not registered in the budget store" "an unregistered file"
has "$T/err" "dpopt budget add $T/st" "the refusal says how to register it"
expect 1 "$DPOPT" train --data "$T/a9a" --dim 123 --budget-store "$T/st" --eps 0.1 $R --out "$T/u2"
has "$T/err" "differs from the file of that name" "a changed file"
[ ! -e "$T/u1" ] && [ ! -e "$T/u2" ] && ok || bad "a refused run left a run directory"
sums "$T/st" | cmp -s - "$T/s0" && ok || bad "a refused run changed the store"
# a seeded run is not private: it cannot charge a store
expect 1 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/st" --eps 0.1 $R --seed 3 --out "$T/u3"
has "$T/err" "NOT private" "a seeded run with a store"

# ---- two runs: eps 1, then eps 1 refused, eps 0.5 (the data under another path) accepted
expect 0 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/st" --eps 1 $R --out "$T/r1"
sums "$T/st" >"$T/s1"
expect 3 "$DPOPT" train --data "$T/a9a.copy" --dim 123 --budget-store "$T/st" --eps 1 $R --out "$T/r2"
has "$T/err" "does not fit" "the second run at eps 1"
has "$T/err" "before the data were loaded" "refused before loading"
[ ! -e "$T/r2" ] && ok || bad "the refused run left $T/r2"
sums "$T/st" | cmp -s - "$T/s1" && ok || bad "the refused run changed the store"
expect 0 "$DPOPT" train --data "$T/a9a.copy" --dim 123 --budget-store "$T/st" --eps 0.5 $R --out "$T/r3"
has "$T/out" "data set budget eps = .* of 1.5, .* (budget store $T/st)" "the run prints the data set's account"
[ "$(jq -r .privacy.budget_store.settled "$T/r3/summary.json")" = true ] && ok || bad "summary.json: budget_store.settled"
expect 0 "$DPOPT" budget show "$T/st"
has "$T/out" "runs            2" "two runs in one account (the copy is the same data)"
[ "$(grep -c 'settled' "$T/out")" = 2 ] && ok || bad "both runs settled"
e=$(spent "$T/st")
awk -v e="$e" 'BEGIN { exit !(e > 0.5 && e < 1.5) }' && ok || bad "spent $e not in (0.5, 1.5)"

# independent: the chain and the composition of the stored curves, in python3
if command -v python3 >/dev/null; then
  py=$(store_compose "$T/st/records.jsonl" "$DPOPT_JOURNAL_KEY")
  case $py in
    2\ *) close "$e" "${py#2 }" 1e-9 "spent = the smaller of the RDP and the basic composition of the two runs" ;;
    *) bad "python3 (store_compose): $py" ;;
  esac
fi

# ---- an edited record is refused
cp -a "$T/st" "$T/ed"
n=$(grep -n '"kind":"reserve"' "$T/ed/records.jsonl" | head -n 1 | cut -d: -f1)
sed -i "${n}s/\"eps\":1,/\"eps\":0.1,/" "$T/ed/records.jsonl"
cmp -s "$T/st/records.jsonl" "$T/ed/records.jsonl" && bad "the edit did not change line $n"
expect 2 "$DPOPT" budget show "$T/ed"
has "$T/err" "records.jsonl:$n" "show names the edited line"
expect 2 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/ed" --eps 0.1 $R --out "$T/e1"
[ ! -e "$T/e1" ] && ok || bad "a run on an edited store left a run directory"

# ---- resume: one run id; a killed run stays reserved and is not charged again
expect 0 "$DPOPT" budget init "$T/rs" --eps 3 --delta 1e-5 --data "$S/data/a9a"
expect 5 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/rs" --eps 1 $P --out "$T/q" --set run.stop_after=10
expect 0 "$DPOPT" budget show "$T/rs"
has "$T/out" "settled  eps = " "a run stopped early is settled"
cp -a "$T/q" "$T/q10"
expect 0 "$DPOPT" train --resume "$T/q" --quiet
expect 0 "$DPOPT" budget show "$T/rs"
has "$T/out" "runs            1" "a resumed run is the same account"
# the run directory rolled back to its stop at step 10 (journal behind the settlement): refused
sha256sum "$T/rs/records.jsonl" >"$T/rs0"
expect 2 "$DPOPT" train --resume "$T/q10" --quiet
has "$T/err" "ledger.jsonl:[0-9]*: missing: .* the budget store's journal head follows line" \
  "a rolled-back run directory (behind the store's journal head)"
sha256sum -c --quiet "$T/rs0" && ok || bad "the refused resume changed the store"
# the journal cut back to its checkpoint (with last_release.txt, which is not keyed): the
# directory is consistent and the chain valid, but the store's journal head is further on
expect 0 "$DPOPT" budget init "$T/hs" --eps 5 --delta 1e-5 --data "$S/data/a9a"
H="--data $S/data/a9a --budget-store $T/hs --eps 1 $P --checkpoint-every 10"
expect 5 "$DPOPT" train $H --out "$T/h" --set run.stop_after=25
ls "$T/hs"/head-* >/dev/null 2>&1 && ok || bad "no journal head in the store"
cp -a "$T/h" "$T/h25"
expect 5 "$DPOPT" train --resume "$T/h" --quiet --set run.stop_after=28
n=$(grep -c . "$T/h/ledger.jsonl")
mv "$T/h" "$T/h28" && cp -a "$T/h25" "$T/h" && rm "$T/h/last_release.txt"
(cd "$T/h" && sha256sum *) >"$T/h.sum"
sha256sum "$T/hs"/* >"$T/hs.sum"
expect 2 "$DPOPT" train --resume "$T/h" --quiet
m=$(($(grep -c . "$T/h25/ledger.jsonl") + 1))
has "$T/err" "ledger.jsonl:$m: missing: .* the budget store's journal head follows line $n" \
  "a journal cut back to its checkpoint is refused, naming the line"
(cd "$T/h" && sha256sum *) | cmp -s - "$T/h.sum" && ok || bad "the refused resume changed the run"
sha256sum "$T/hs"/* | cmp -s - "$T/hs.sum" && ok || bad "the refused resume changed the store"
# an edited head is refused; the run resumed from where it really was completes
cp "$T/hs"/head-* "$T/head.bak"
printf '\001' | dd of="$(ls "$T/hs"/head-*)" bs=1 seek=40 conv=notrunc 2>/dev/null
rm -rf "$T/h" && cp -a "$T/h25" "$T/h"
expect 2 "$DPOPT" train --resume "$T/h" --quiet
has "$T/err" "fails its keyed check" "an edited journal head"
cp "$T/head.bak" "$(ls "$T/hs"/head-*)"
expect 0 "$DPOPT" train --resume "$T/h28" --quiet
expect 0 "$DPOPT" budget show "$T/hs"
hasnot "$T/out" "reserved" "the run resumed to its end is settled"
# a reservation left open (the run killed after it reserved): the resume does not add to it
id=$(head -n 1 "$T/q/ledger.jsonl" | sed 's/.*"nonce":"\([0-9a-f]*\)".*/\1/')
# (a warm start from the first run's model: another run on the same account)
expect 5 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/rs" --eps 1 $P --x0 "$T/q/model.txt" --out "$T/k" --set run.stop_after=10
kid=$(head -n 1 "$T/k/ledger.jsonl" | sed 's/.*"nonce":"\([0-9a-f]*\)".*/\1/')
grep "\"run\":\"$kid\"" "$T/rs/records.jsonl" | grep -q '"kind":"reserve"' && ok || bad "no reservation under the journal's nonce"
# the store as a kill after the reservation leaves it: without the run's settle line (its last)
n=$(grep -n "\"kind\":\"settle\",\"run\":\"$kid\"" "$T/rs/records.jsonl" | cut -d: -f1)
head -n $((n - 1)) "$T/rs/records.jsonl" >"$T/rs/x" && mv "$T/rs/x" "$T/rs/records.jsonl" && chmod 600 "$T/rs/records.jsonl"
expect 0 "$DPOPT" budget show "$T/rs"
has "$T/out" "reserved eps = 1, delta = 0" "a killed run's reservation stays spent whole"
before=$(grep -c '"kind":"reserve"' "$T/rs/records.jsonl")
expect 0 "$DPOPT" train --resume "$T/k" --quiet
after=$(grep -c '"kind":"reserve"' "$T/rs/records.jsonl")
[ "$before" = "$after" ] && ok || bad "the resumed run reserved again ($before -> $after)"
expect 0 "$DPOPT" budget show "$T/rs"
has "$T/out" "runs            2" "two runs"
hasnot "$T/out" "reserved" "every run settled after the resume"
[ -n "$id" ] && ok || bad "no journal nonce"

# ---- dpopt tune charges the store once (its repetitions do not); a train after it composes
C="--data $S/data/a9a --valid $S/data/a9a.t --dim 123 --row-l1-bound 14 --row-l2-bound 3.75 --quiet"
expect 0 "$DPOPT" budget init "$T/tn" --eps 4 --data "$S/data/a9a"
expect 1 "$DPOPT" tune $C --eps 3 --algos dp-nag-opt,dp-gd --mean 2 --budget-store "$T/tn" --out "$T/t0"
has "$T/err" "a9a.t: is not registered" "tune: the held-out file must be registered too"
expect 0 "$DPOPT" budget add "$T/tn" "$S/data/a9a.t"
expect 0 "$DPOPT" tune $C --eps 3 --algos dp-nag-opt,dp-gd --mean 2 --budget-store "$T/tn" --out "$T/t1"
expect 3 "$DPOPT" tune $C --eps 3 --algos dp-nag-opt,dp-gd --mean 2 --budget-store "$T/tn" --out "$T/t2"
[ ! -e "$T/t2" ] && ok || bad "a refused tune left its directory"
expect 0 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/tn" --eps 1 $P --out "$T/t3"
expect 3 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/tn" --eps 0.5 $P --out "$T/t4"
expect 0 "$DPOPT" budget show "$T/tn"
has "$T/out" "tune   settled  eps = 3, delta = 0" "the tune's one charge"
has "$T/out" "runs            2" "a tune and a train in one account"

# ---- dpopt admm (DP-ADMM) charges the same account under its journal's run id (RUN/ledger.jsonl)
A="--method dpadmm --clip 1 --delta 1e-6 --maxit 10 --row-l2-bound 3.75 --lambda 1e-4"
expect 0 "$DPOPT" budget init "$T/ad" --eps 1.5 --delta 1e-5 --data "$S/data/a9a"
expect 1 "$DPOPT" admm "$S/data/a9a" $A --eps 1 --budget-store "$T/ad" --journal "$T/ad1.jsonl"
has "$T/err" "replaced by --out" "admm's old --journal names --out"
expect 0 "$DPOPT" admm "$S/data/a9a" $A --eps 1 --budget-store "$T/ad" --out "$T/ad1"
expect 3 "$DPOPT" admm "$S/data/a9a" $A --eps 1 --budget-store "$T/ad" --out "$T/ad2"
[ ! -e "$T/ad2" ] && ok || bad "a refused admm wrote its run directory"
expect 0 "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/ad" --eps 0.4 $R --out "$T/ad3"
expect 0 "$DPOPT" budget show "$T/ad"
has "$T/out" "admm   settled  eps = " "the admm run settled"
has "$T/out" "runs            2" "admm and train in one account"

# ---- concurrency: room for one run of eps 1, two start at once
for i in 1 2 3; do
  rm -rf "$T/cc" "$T/c1" "$T/c2"
  expect 0 "$DPOPT" budget init "$T/cc" --eps 1.2 --delta 1e-5 --data "$S/data/a9a"
  "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/cc" --eps 1 $R --out "$T/c1" >"$T/c1.out" 2>&1 &
  p1=$!
  "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/cc" --eps 1 $R --out "$T/c2" >"$T/c2.out" 2>&1 &
  p2=$!
  wait $p1; s1=$?
  wait $p2; s2=$?
  [ "$s1$s2" = 03 ] || [ "$s1$s2" = 30 ] && ok || { bad "two concurrent runs: exits $s1 and $s2 (want 0 and 3)"; cat "$T/c1.out" "$T/c2.out" | tail -n 5; }
  [ "$(grep -c '"kind":"reserve"' "$T/cc/records.jsonl")" = 1 ] && ok || bad "two concurrent runs: not exactly one reservation"
  # checked and reserved under one lock: the loser is refused before it claims anything
  n=0; [ -e "$T/c1" ] && n=$((n + 1)); [ -e "$T/c2" ] && n=$((n + 1))
  [ $n = 1 ] && ok || bad "two concurrent runs: $n run directories (want 1: the refused one writes nothing)"
done

finish test_budget_store.sh
