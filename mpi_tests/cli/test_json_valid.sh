#!/bin/sh
# Issue 14: every JSON file dpopt writes parses (jq), with null for missing values -- NaN and
# Infinity are not JSON (jq 1.6 silently reads NaN as null, so the tokens are grepped too):
# summary.json and ledger.jsonl of a non-private and a private train run, mf --holdout 0 (no
# test RMSE), and a private consensus admm journal.  Also: mf --time alone runs until the
# time is up instead of stopping after the default 20 epochs.
. "$(dirname "$0")/../lib/testlib.sh"
COMMON="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --lambda 0.01 --quiet"
valid() { # FILE: one or more JSON values, no NaN / Infinity literals
  if jq -e . "$1" >/dev/null 2>&1 && ! grep -Eqi '[:,[][[:space:]]*-?(nan|infinity|inf)[[:space:]]*[],}]' "$1"
  then ok; else bad "$1 is not valid JSON"; head -c 400 "$1"; fi
}
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo gd --iters 3 --out "$T/np"
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --iters 5 --out "$T/p"
"$DPOPT" gen ratings --users 60 --items 40 --ratings 600 --seed 2 "$T/ratings.txt" >/dev/null
expect 0 "$DPOPT" mf --holdout 0 --epochs 2 --rank 3 --out "$T/mf" "$T/ratings.txt"
has "$T/mf/summary.json" '"test_rmse":null' "mf --holdout 0: test_rmse is null"
expect 0 $MPI -np 2 "$DPOPT" admm "$S/data/a9a" --private --eps 1 --clip 1 --maxit 3 --out "$T/admm"
n=0
for f in "$T"/np/*.json* "$T"/p/*.json* "$T"/mf/*.json* "$T"/admm/*.json*; do
  [ -f "$f" ] || continue
  valid "$f"
  n=$((n + 1))
done
check "at least 5 JSON files checked ($n)" test "$n" -ge 5

# mf --time without --epochs: the time decides (a tiny problem does far more than 20 epochs
# in 0.5 s; the old behaviour stopped at exactly 20)
expect 0 "$DPOPT" mf --time 0.5 --eval-every 0 --rank 3 --out "$T/mft" "$T/ratings.txt"
ep=$(jq .epochs "$T/mft/summary.json")
check "mf --time alone ran past 20 epochs ($ep)" test "$ep" -gt 20
expect 0 "$DPOPT" mf --time 5 --epochs 3 --rank 3 --out "$T/mfe" "$T/ratings.txt"
check "mf --time with --epochs 3 stops at 3" test "$(jq .epochs "$T/mfe/summary.json")" -eq 3
finish test_json_valid
