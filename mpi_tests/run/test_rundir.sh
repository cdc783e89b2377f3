#!/bin/sh
# Run directories (issue 11, item 7): a fresh run never touches an existing run directory.
#  - `dpopt train --out DIR` on a finished run exits 1 (usage) naming DIR and --resume, before
#    the data are loaded, and leaves every file of DIR byte-identical (no FAILED);
#  - the same on an interrupted run, which can still be resumed afterwards (and then equals
#    the uninterrupted run);
#  - the default runs/ALGO-DATE-TIME takes a suffix when the name is taken; an empty existing
#    --out directory is accepted; `dpopt mf --out` refuses an existing directory too;
#  - a private run whose journal cannot be keyed is refused before its directory exists.
. "$(dirname "$0")/../lib/testlib.sh"
COMMON="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --lambda 0.01 --quiet"
sums() { (cd "$1" && ls -A && cksum ./*) ; }
same() { if cmp -s "$1" "$2"; then ok; else bad "$3"; diff "$1" "$2" | head -n 6; fi; }

# ---- a finished run
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --iters 20 --seed 3 --out "$T/fin"
sums "$T/fin" >"$T/fin.before"
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --iters 20 --seed 3 --out "$T/fin"
has "$T/err" "run directory $T/fin exists" "the refusal names the directory"
has "$T/err" "resume" "the refusal suggests --resume"
sums "$T/fin" >"$T/fin.after"
same "$T/fin.before" "$T/fin.after" "a second train --out damaged the finished run"
# checked before the data are loaded: a missing data file does not matter (exit 1, not 2)
expect 1 "$DPOPT" train --data "$T/no-such-file" --algo gd --out "$T/fin"
has "$T/err" "exists and is not empty" "directory check before loading data"
same "$T/fin.before" "$T/fin.after" "a refused run with bad data touched the run"
sums "$T/fin" >"$T/fin.after"
same "$T/fin.before" "$T/fin.after" "a refused run with bad data touched the run"

# ---- an interrupted run stays resumable
expect 5 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-hb --eps 1 --iters 20 --seed 5 --out "$T/int" \
  --checkpoint-every 3 --set run.stop_after=7
sums "$T/int" >"$T/int.before"
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-hb --eps 1 --iters 20 --seed 5 --out "$T/int"
sums "$T/int" >"$T/int.after"
same "$T/int.before" "$T/int.after" "a second train --out damaged the interrupted run"
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/int" --quiet
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-hb --eps 1 --iters 20 --seed 5 --out "$T/int-full"
same "$T/int-full/model.txt" "$T/int/model.txt" "resumed after the refusal: model"
unchained "$T/int-full/ledger.jsonl" >"$T/a"; unchained "$T/int/ledger.jsonl" >"$T/b"
same "$T/a" "$T/b" "resumed after the refusal: journal"
# a completed run cannot be resumed, and the refusal leaves it as it was (no FAILED)
sums "$T/int" >"$T/int.done"
expect 2 "$DPOPT" train --resume "$T/int" --quiet
has "$T/err" "no checkpoint" "resume of a completed run"
sums "$T/int" >"$T/int.done2"
same "$T/int.done" "$T/int.done2" "a refused --resume touched the completed run"

# ---- default names: runs/gd-DATE-TIME is taken for the next minute, so the run adds -2
mkdir -p "$T/cwd/runs"
now=$(date +%s) i=0
while [ $i -le 60 ]; do
  d="$T/cwd/runs/gd-$(date -d "@$((now + i))" +%Y%m%d-%H%M%S)"
  mkdir -p "$d" && echo keep >"$d/mine"
  i=$((i + 1))
done
(cd "$T/cwd" && "$DPOPT" train --data "$S/data/a9a" --row-l2-bound 3.75 --algo gd --iters 2 --quiet) >"$T/out" 2>"$T/err"
check "default run directory with a suffix: $(cat "$T/err")" \
  grep -q "^run directory   runs/gd-[0-9]*-[0-9]*-2$" "$T/out"
check "the taken directories are untouched" \
  test "$(cat "$T/cwd"/runs/gd-*/mine | wc -l)" = 61 -a "$(ls "$T/cwd"/runs/gd-*-2 | wc -l)" -ge 4
# an empty existing directory is fine
mkdir "$T/empty"
expect 0 "$DPOPT" train --data "$S/data/a9a" --row-l2-bound 3.75 --algo gd --iters 2 --quiet --out "$T/empty"
check "run written into the empty directory" test -s "$T/empty/summary.json"

# ---- dpopt mf --out: a new directory only
"$DPOPT" gen ratings --users 60 --items 40 --ratings 600 --seed 2 "$T/ratings.txt" >/dev/null
expect 0 "$DPOPT" mf --epochs 1 --rank 3 --out "$T/mf" "$T/ratings.txt"
sums "$T/mf" >"$T/mf.before"
expect 1 "$DPOPT" mf --epochs 1 --rank 3 --out "$T/mf" "$T/ratings.txt"
has "$T/err" "exists and is not empty" "mf refuses an existing directory"
sums "$T/mf" >"$T/mf.after"
same "$T/mf.before" "$T/mf.after" "a second mf --out damaged the first"
# ---- a journal that cannot be keyed is found before the directory is claimed: nothing written
# (no HOME, XDG_CONFIG_HOME or DPOPT_JOURNAL_KEY: the key has no place)
for cmd in "train $COMMON --algo dp-gd --eps 1 --iters 2" "audit --one-run $COMMON --eps 1 --delta 1e-5"; do
  expect 2 env -u HOME -u XDG_CONFIG_HOME -u DPOPT_JOURNAL_KEY $MPI -np 2 "$DPOPT" $cmd --out "$T/nokey"
  has "$T/err" "no journal key" "${cmd%% *} without a key's place: the reason"
  # the one-run audit runs train's stages: its failure names its own command
  has "$T/err" "^dpopt ${cmd%% *} (run directory): " "${cmd%% *} without a key's place: the command named"
  check "${cmd%% *} without a key's place: nothing written" test ! -e "$T/nokey"
done
# a non-private run has no journal and needs no key
expect 0 env -u HOME -u XDG_CONFIG_HOME -u DPOPT_JOURNAL_KEY "$DPOPT" train $COMMON --algo gd --iters 2 --out "$T/nokey-np"
check "a non-private run needs no key" test -s "$T/nokey-np/summary.json"

finish test_rundir
