#!/bin/sh
# dpopt tune stops and resumes (src/run/tune_ckpt.c).
#  - geometric search (seeded): stopped by run.stop_after after 1 finished repetition (exit 5,
#    an owner-only checkpoint, no model yet) and resumed with --resume DIR, it ends with the
#    uninterrupted run's chosen candidate, noisy score, model bytes and journal (charge, totals
#    and one "repetition finished" line per repetition);
#  - SIGTERM to the ranks mid-tune: exit 5, and the resume ends as the uninterrupted tune;
#  - refused, writing nothing (every file of the directory unchanged): a journal holding a
#    repetition the checkpoint does not know (the checkpoint of the stop after 1 beside the
#    journal of the stop after 2: a repetition finished, its score maybe used, after the
#    checkpoint), a checkpoint edited with a valid file hash (the best score moved: the keyed
#    seal fails), a changed setting (--eps), and a finished tune;
#  - search by parallel composition (seeded): stopped after 1 candidate and resumed, the same
#    chosen candidate, model bytes and journal as the uninterrupted tune;
#  - a tune without a grid (train's recipe once) stops and resumes as train's run does;
#  - a budget store: a private (split) tune stopped and resumed spends in its store what the same
#    tune uninterrupted spends in another (its one charge, once; the reservation carried over
#    under the journal's run id);
#  - a multi-party tune without party budget stores (two parties on --data's rank blocks,
#    central trust) stops after 1 repetition and resumes as the two-party tune (a changed
#    parties.count refused) to the uninterrupted tune's candidate, score, model and journal.
. "$(dirname "$0")/../lib/testlib.sh"
head -n 1000 "$S/data/a9a" > "$T/tr"
head -n 500 "$S/data/a9a.t" > "$T/te"
C="--data $T/tr --valid $T/te --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --quiet"
G="$C --eps 6 --algos dp-nag-opt,dp-gd --mean 3"
# the journal without its per-journal nonce and chain tags
lines() { grep -v '"nonce"' "$1/ledger.jsonl" | jq -c 'del(.chain)'; }
# every file of a directory, hidden ones too
sums() { (cd "$1" && find . -type f | sort | xargs sha256sum); }
same() { # same chosen candidate, score, model bytes and journal
  [ "$(jq -c '[.chosen, .heldout_correct_noisy, .privacy.spent_eps]' "$1/summary.json")" = \
    "$(jq -c '[.chosen, .heldout_correct_noisy, .privacy.spent_eps]' "$2/summary.json")" ] &&
    cmp -s "$1/model.txt" "$2/model.txt" && [ "$(lines "$1")" = "$(lines "$2")" ]
}

# ---- the geometric search: uninterrupted, and stopped after 1 repetition then resumed
expect 0 $MPI -np 2 "$DPOPT" tune $G --seed 3 --out "$T/f"
k=$(grep -c '"tune: repetition finished"' "$T/f/ledger.jsonl")
[ "$k" -ge 3 ] && ok || bad "seed 3 should run 3 or more repetitions (ran $k): the stops below need them"
expect 5 $MPI -np 2 "$DPOPT" tune $G --seed 3 --out "$T/s" --set run.stop_after=1
has "$T/err" "interrupted between repetitions: checkpoint written, continue with dpopt tune --resume" "stop message"
[ "$(stat -c %a "$T/s/checkpoint")" = 600 ] && ok || bad "checkpoint not owner-only"
[ -e "$T/s/model.txt" ] && bad "a stopped tune released a model" || ok
[ "$(grep -c '"tune: repetition finished"' "$T/s/ledger.jsonl")" = 1 ] && ok || bad "stop after 1: journal"
cp -a "$T/s" "$T/s1"
expect 0 $MPI -np 2 "$DPOPT" tune --resume "$T/s" --quiet
check "geometric: stop after 1 + resume = the uninterrupted tune" same "$T/s" "$T/f"
[ -e "$T/s/checkpoint" ] && bad "a finished tune keeps its checkpoint" || ok

# ---- SIGTERM to the ranks once the charge is journalled (seed 5: 14 repetitions): exit 5 at a
# boundary or inside a repetition's training (restarted from scratch), and the resume ends with
# the uninterrupted tune's result whichever it was
expect 0 $MPI -np 2 "$DPOPT" tune $G --seed 5 --out "$T/f5"
$MPI -np 2 "$DPOPT" tune $G --seed 5 --out "$T/g" > "$T/gout" 2> "$T/gerr" &
term_ranks_when $! 60 grep -qs '"cost_eps"' "$T/g/ledger.jsonl"
[ $st = 5 ] && ok || { bad "SIGTERM: exit $st (want 5)"; head -n 3 "$T/gerr"; }
expect 0 $MPI -np 2 "$DPOPT" tune --resume "$T/g" --quiet
check "SIGTERM + resume = the uninterrupted tune" same "$T/g" "$T/f5"

# ---- refusals, each writing nothing
cp -a "$T/s1" "$T/s2"
expect 5 $MPI -np 2 "$DPOPT" tune --resume "$T/s2" --quiet --set run.stop_after=2
cp -a "$T/s2" "$T/mix" && cp -p "$T/s1/checkpoint" "$T/mix/checkpoint"
h=$(sums "$T/mix")
expect 2 $MPI -np 2 "$DPOPT" tune --resume "$T/mix" --quiet
has "$T/err" "holds 1 line(s) after the checkpoint's: a repetition finished (journalled) after the checkpoint" \
  "a journal with a repetition the checkpoint does not know"
[ "$(sums "$T/mix")" = "$h" ] && ok || bad "refused resume (unknown repetition) wrote"
cp -a "$T/s1" "$T/ed"
# the best score moved by 50, the file's own hash recomputed (checkpoint.c's layout)
/usr/bin/python3 - "$T/ed/checkpoint" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
n, = struct.unpack_from('<Q', b, 8); o = 16
for _ in range(n):
    kl, = struct.unpack_from('<I', b, o); k = bytes(b[o + 4:o + 4 + kl]); o += 4 + kl
    t = b[o]; cnt, = struct.unpack_from('<Q', b, o + 1); o += 9
    if k == b'tune.score':
        struct.pack_into('<d', b, o, struct.unpack_from('<d', b, o)[0] + 50)
    o += cnt * (1 if t == 3 else 8)
h = 0xcbf29ce484222325
for c in b[:o]:
    h = ((h ^ c) * 1099511628211) & 0xffffffffffffffff
struct.pack_into('<Q', b, o, h)
open(sys.argv[1], 'wb').write(bytes(b))
EOF
cmp -s "$T/ed/checkpoint" "$T/s1/checkpoint" && bad "the checkpoint was not edited" || ok
h=$(sums "$T/ed")
expect 2 $MPI -np 2 "$DPOPT" tune --resume "$T/ed" --quiet
has "$T/err" "checkpoint does not carry the seal of this tune's journal key" "an edited checkpoint"
[ "$(sums "$T/ed")" = "$h" ] && ok || bad "refused resume (edited checkpoint) wrote"
h=$(sums "$T/s1")
expect 1 $MPI -np 2 "$DPOPT" tune --resume "$T/s1" --eps 5 --quiet
has "$T/err" "cannot change privacy.eps (the run has '6')" "a changed setting"
[ "$(sums "$T/s1")" = "$h" ] && ok || bad "refused resume (changed setting) wrote"
expect 1 $MPI -np 2 "$DPOPT" tune --resume "$T/f" --quiet
has "$T/err" "the tune finished" "a finished tune"

# ---- the search by parallel composition: stopped after 1 candidate, resumed
P="--data $T/tr --test $T/te --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --quiet
  --eps 1 --algos dp-nag-opt,dp-gd --split 0.5 --public-n 1000 --set privacy.neighbours=add-remove --seed 4"
expect 0 $MPI -np 2 "$DPOPT" tune $P --out "$T/pf"
expect 5 $MPI -np 2 "$DPOPT" tune $P --out "$T/ps" --set run.stop_after=1
has "$T/err" "interrupted between candidates" "split: stop message"
expect 0 $MPI -np 2 "$DPOPT" tune --resume "$T/ps" --quiet
[ "$(jq -c .chosen "$T/ps/summary.json")" = "$(jq -c .chosen "$T/pf/summary.json")" ] &&
  cmp -s "$T/ps/model.txt" "$T/pf/model.txt" && [ "$(lines "$T/ps")" = "$(lines "$T/pf")" ] && ok ||
  bad "split: stop after 1 + resume differs from the uninterrupted tune"

# ---- a tune without a grid is train's run: it stops and resumes as one, from the tune command
N="--data $T/tr --test $T/te --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --quiet
  --eps 1 --delta 1e-5 --seed 3"
expect 0 $MPI -np 2 "$DPOPT" tune $N --out "$T/nf"
expect 5 $MPI -np 2 "$DPOPT" tune $N --out "$T/ns" --set run.stop_after=2
has "$T/err" "dpopt tune --resume $T/ns" "plain tune: the stop names the tune's resume"
expect 0 $MPI -np 2 "$DPOPT" tune --resume "$T/ns" --quiet
cmp -s "$T/ns/model.txt" "$T/nf/model.txt" && [ "$(lines "$T/ns")" = "$(lines "$T/nf")" ] && ok ||
  bad "plain tune: stop + resume differs from the uninterrupted run"

# ---- a budget store: the same spending with and without a stop (the split search: its
# candidates are public, so the stop after 1 always comes; a store needs an unseeded tune)
Q="${P% --seed 4}"
for b in a b; do
  expect 0 "$DPOPT" budget init "$T/st$b" --eps 20 --delta 1e-5 --data "$T/tr"
  expect 0 "$DPOPT" budget add "$T/st$b" "$T/te"
done
expect 0 $MPI -np 2 "$DPOPT" tune $Q --budget-store "$T/sta" --out "$T/ba"
expect 5 $MPI -np 2 "$DPOPT" tune $Q --budget-store "$T/stb" --out "$T/bb" --set run.stop_after=1
expect 0 $MPI -np 2 "$DPOPT" tune --resume "$T/bb" --quiet
spent() { "$DPOPT" budget show "$1" | awk '/^spent/ { print $4 }' | tr -d ,; }
runs() { "$DPOPT" budget show "$1" | awk '/^runs/ { print $2 }'; }
ea=$(spent "$T/sta"); eb=$(spent "$T/stb")
[ -n "$ea" ] && [ "$ea" = "$eb" ] && [ "$(runs "$T/stb")" = 1 ] && ok ||
  bad "store spent $eb over $(runs "$T/stb") run(s) after stop + resume, $ea uninterrupted"
close "$ea" 1 1e-9 "the store is charged the tune's one charge"

# ---- a multi-party tune without party stores checkpoints as a one-party tune does
M="$G --set parties.count=2 --seed 3"
expect 0 $MPI -np 2 "$DPOPT" tune $M --out "$T/mpf"
expect 5 $MPI -np 2 "$DPOPT" tune $M --out "$T/mps" --set run.stop_after=1
has "$T/err" "interrupted between repetitions: checkpoint written" "multi-party: stop message"
[ "$(grep -c '"tune: repetition finished"' "$T/mps/ledger.jsonl")" = 1 ] && ok ||
  bad "multi-party stop after 1: journal"
expect 1 $MPI -np 2 "$DPOPT" tune --resume "$T/mps" --quiet --set parties.count=1
has "$T/err" "cannot change parties.count (the run has '2')" "multi-party: the resume is the two-party tune's"
expect 0 $MPI -np 2 "$DPOPT" tune --resume "$T/mps" --quiet
check "multi-party: stop after 1 + resume = the uninterrupted tune" same "$T/mps" "$T/mpf"

finish test_tune_resume
