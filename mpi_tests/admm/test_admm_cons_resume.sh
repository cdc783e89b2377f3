#!/bin/sh
# Consensus ADMM checkpoints every rank's own part (x_i, u_i, rho, the L-BFGS memory, a seeded
# stream's position) and resumes (doc/design.md, "Checkpoints"):
#  - private (--private, 3 ranks), seeded, stopped by run.stop_after at iteration 4 (a
#    checkpoint every 2): rank 0's checkpoint and ranks 1, 2's parts of iteration 4 only; the
#    journal holds the 4 x 3 party charges of the releases done; --resume gives the
#    uninterrupted run's model.txt bytes and charges, and leaves no part behind;
#  - a resume on 2 ranks is refused naming the 3 it needs, writing nothing; one with a rank's
#    part missing is refused naming it;
#  - the non-private run (L-BFGS x-update, residual balancing) stopped at 40 and resumed: the
#    uninterrupted model's bytes;
#  - charges journalled after the last checkpoint (the process died before the next one) stay
#    spent: the releases redone from it are charged again, and the run stops with the budget
#    exhausted (exit 3) rather than spend beyond it;
#  - SIGTERM to the ranks (exit 5): every rank stops after the same iteration K with its part,
#    the journal holds K x 2 charges (K + 1 was not charged), and rank 1's part is the bytes of
#    the same seeded run stopped at K by run.stop_after.
. "$(dirname "$0")/../lib/testlib.sh"
head -n 3000 "$S/data/a9a" > "$T/a3k"
cp "$S/data/a9a.schema" "$T/a3k.schema" # the public schema (123 features)
P="--private --clip 1 --eps 1 --delta 1e-5 --lambda 1e-4 --maxit 10 --seed 7"
charges() { if [ -f "$1" ]; then grep -c '"mechanism"' "$1"; else echo 0; fi; }
jcharges() { jq -c 'select(.step != null) | del(.chain)' "$1"; }
tree() { (cd "$T" && find "$@" -type f | sort | xargs sha256sum); }

# ---- private, seeded: stop at 4, resume, the uninterrupted bytes
expect 0 $MPI -np 3 "$DPOPT" admm $P --out "$T/f" "$T/a3k"
expect 5 $MPI -np 3 "$DPOPT" admm $P --checkpoint-every 2 --set run.stop_after=4 --out "$T/s" "$T/a3k"
has "$T/err" "stopped after iteration 4 of 10, checkpoint written" "stopped at 4"
[ "$(cd "$T/s" && ls checkpoint* | tr '\n' ' ')" = "checkpoint checkpoint.rank1.it4 checkpoint.rank2.it4 " ] &&
  ok || bad "stopped: the parts are $(cd "$T/s" && ls checkpoint* | tr '\n' ' ')"
[ "$(charges "$T/s/ledger.jsonl")" = 12 ] && ok || bad "stopped: $(charges "$T/s/ledger.jsonl") charges (want 4 x 3)"
cp -r "$T/s" "$T/m"
tree s > "$T/s.sum"
expect 1 $MPI -np 2 "$DPOPT" admm --resume "$T/s"
has "$T/err" "written by 3 ranks and this resume has 2" "another rank count is refused"
tree s | cmp -s - "$T/s.sum" && ok || bad "the refused resume wrote something"
expect 0 $MPI -np 3 "$DPOPT" admm --resume "$T/s"
has "$T/err" "resuming $T/s at iteration 5" "resumed at 5"
cmp -s "$T/f/model.txt" "$T/s/model.txt" && ok || bad "private: the resumed model differs from the uninterrupted one"
jcharges "$T/f/ledger.jsonl" > "$T/a.j"; jcharges "$T/s/ledger.jsonl" > "$T/b.j"
[ "$(wc -l < "$T/a.j")" = 30 ] && cmp -s "$T/a.j" "$T/b.j" && ok || bad "private: the resumed journal's charges differ"
[ -z "$(cd "$T/s" && ls checkpoint* 2>/dev/null)" ] && ok || bad "parts left after the run completed"

# ---- a rank's part missing
rm "$T/m/checkpoint.rank2.it4"
expect 2 $MPI -np 3 "$DPOPT" admm --resume "$T/m"
has "$T/err" "checkpoint.rank2.it4: rank 2's part of the checkpoint of iteration 4 is missing" "a missing part is named"

# ---- non-private: stop at 40, resume, the same bytes
N="--lambda 1e-2" # converges in 125 iterations, rho moved 3 times
expect 0 $MPI -np 2 "$DPOPT" admm $N --out "$T/nf" "$T/a3k"
expect 5 $MPI -np 2 "$DPOPT" admm $N --set run.stop_after=40 --out "$T/ns" "$T/a3k"
expect 0 $MPI -np 2 "$DPOPT" admm --resume "$T/ns"
cmp -s "$T/nf/model.txt" "$T/ns/model.txt" && ok || bad "non-private: the resumed model differs"

# ---- charges after the last checkpoint stay spent: stop at 4 (a copy of its parts kept), go
# on to 5 (its release and checkpoint done), put the iteration-4 checkpoint back as if the run
# had died before writing its next one.  The redone iteration 5 is charged again, on top: its
# parties' charges are a new disjoint group, not the open one of the first iteration 5
expect 5 $MPI -np 3 "$DPOPT" admm $P --checkpoint-every 4 --set run.stop_after=4 --out "$T/k" "$T/a3k"
mkdir "$T/k4" && cp "$T/k"/checkpoint* "$T/k4/"
expect 5 $MPI -np 3 "$DPOPT" admm --resume "$T/k" --set run.stop_after=5
[ "$(charges "$T/k/ledger.jsonl")" = 15 ] && ok || bad "on to 5: $(charges "$T/k/ledger.jsonl") charges (want 15)"
cp "$T/k/ledger.jsonl" "$T/k5.j"
rm "$T/k"/checkpoint*; cp "$T/k4"/checkpoint* "$T/k/"
expect 3 $MPI -np 3 "$DPOPT" admm --resume "$T/k"
head -n "$(wc -l < "$T/k5.j")" "$T/k/ledger.jsonl" | cmp -s - "$T/k5.j" && ok ||
  bad "the journal's charges after the checkpoint were lost or changed"
jq -r 'select(.step != null) | .total_eps' "$T/k/ledger.jsonl" > "$T/tot"
check "the redone iteration 5 costs more on top of the first one" awk -v n=15 \
  'NR == n {a = $1} NR == n + 3 {b = $1} END {exit !(b > a * (1 + 1e-9))}' "$T/tot"
check "the spent total stays within the budget" awk -v e="$(tail -n 1 "$T/tot")" \
  'BEGIN {exit !(e > 0 && e <= 1)}'

# ---- SIGTERM to the ranks: rank 0's flag rides in an iteration's reduce, every rank stops
# after that iteration with its part written and the next iteration not charged; the parts are
# those of the same seeded run stopped there by run.stop_after
G="--private --clip 1 --eps 1 --delta 1e-5 --lambda 1e-4 --seed 7 --maxit 100000"
$MPI -np 2 "$DPOPT" admm $G --out "$T/g" "$T/a3k" > "$T/sout" 2> "$T/serr" &
charged20() { [ "$(charges "$T/g/ledger.jsonl" 2>/dev/null)" -ge 20 ] 2>/dev/null; }
term_ranks_when $! 60 charged20
[ $st = 5 ] && ok || { bad "SIGTERM: exit $st (want 5)"; head -n 5 "$T/serr"; }
K=$(sed -n 's/.*stopped after iteration \([0-9]*\) of 100000, checkpoint written.*/\1/p' "$T/serr" | head -n 1)
[ -n "$K" ] && [ "$(charges "$T/g/ledger.jsonl")" = $((2 * K)) ] && [ -f "$T/g/checkpoint.rank1.it$K" ] && ok ||
  bad "SIGTERM: stopped after '$K' with $(charges "$T/g/ledger.jsonl") charges (want 2 x K) and rank 1's part"
expect 5 $MPI -np 2 "$DPOPT" admm $G --set run.stop_after="$K" --out "$T/g2" "$T/a3k"
cmp -s "$T/g/checkpoint.rank1.it$K" "$T/g2/checkpoint.rank1.it$K" && ok ||
  bad "SIGTERM: rank 1's part differs from the run stopped at $K by run.stop_after"
finish test_admm_cons_resume
