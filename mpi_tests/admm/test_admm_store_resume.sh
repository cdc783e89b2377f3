#!/bin/sh
# dpopt admm --method dpadmm with a budget store (privacy.store) checkpoints and resumes as
# dpopt train does (doc/design.md, "Budget stores", Resume):
#  - stopped by run.stop_after at iteration 6, the store holds the run settled to its 7
#    releases; --resume reserves the whole budget again under the same run id and settles it to
#    the 13 releases of the finished run: one run in the store, spending what an uninterrupted
#    run on another store spends (never twice, never less), the journal's 13 charges;
#  - a stopped run whose journal was cut back by one line is refused on resume (the store's
#    journal head), writing nothing in the store or the run directory;
#  - a stopped run whose store a train run on its file spent meanwhile is refused on resume
#    (exit 3), the error saying when (before its next release: its data were loaded) and
#    nothing written in the store or the run directory;
#  - under secagg, the last party's rank killed in release 9 (dpopt-test's --test-party-kill):
#    the resume keeps the run's one record, and settles it to what the resumed journal holds
#    (the redone releases charged again: the budget is spent whole, exit 3).
. "$(dirname "$0")/../lib/testlib.sh"
head -n 3000 "$S/data/a9a" > "$T/a3k"
cp "$S/data/a9a.schema" "$T/a3k.schema" # the public schema (123 features)
R="--method dpadmm --clip 1 --eps 1 --delta 1e-5 --row-l2-bound 3.75 --lambda 1e-4 --maxit 12"
charges() { grep -c '"mechanism"' "$1"; }
sspent() { "$DPOPT" budget show "$1" | sed -n 's/^spent *eps = \([0-9.e+-]*\),.*/\1/p'; }
# the run's settled eps in the store (its ledger's own spent bound, printed %.6g)
rspent() { "$DPOPT" budget show "$1" | sed -n 's/^  run .* settled  *eps = \([0-9.e+-]*\),.*/\1/p'; }
jspent() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }
runs() { "$DPOPT" budget show "$1" | sed -n 's/^runs *\([0-9]*\)$/\1/p'; }
for s in u s c k; do
  expect 0 "$DPOPT" budget init "$T/st.$s" --eps 10 --delta 1e-4 --data "$T/a3k"
done

# ---- stopped and resumed: one run, settled to what the uninterrupted run spends
expect 0 $MPI -np 2 "$DPOPT" admm $R --budget-store "$T/st.u" --out "$T/u" "$T/a3k"
expect 5 $MPI -np 2 "$DPOPT" admm $R --budget-store "$T/st.s" --checkpoint-every 3 \
  --set run.stop_after=6 --out "$T/s" "$T/a3k"
[ -f "$T/s/checkpoint" ] && [ "$(charges "$T/s/ledger.jsonl")" = 7 ] && ok ||
  bad "stopped: want a checkpoint and 7 charges"
"$DPOPT" budget show "$T/st.s" > "$T/show"
has "$T/show" "settled .*(7 Gaussian" "stopped: the store holds the run settled to its 7 releases"
close "$(rspent "$T/st.s")" "$(jspent "$T/s/ledger.jsonl")" 1e-5 "stopped: the run settled to the journal's total"
expect 0 $MPI -np 2 "$DPOPT" admm --resume "$T/s"
has "$T/err" "resuming $T/s at iteration 7" "resumed at iteration 7"
[ "$(charges "$T/s/ledger.jsonl")" = 13 ] && ok || bad "resumed: $(charges "$T/s/ledger.jsonl") charges (want 13)"
[ "$(runs "$T/st.s")" = 1 ] && ok || bad "resumed: the store holds $(runs "$T/st.s") runs (want 1)"
"$DPOPT" budget show "$T/st.s" > "$T/show"
has "$T/show" "settled .*(13 Gaussian" "resumed: settled to the 13 releases"
close "$(sspent "$T/st.s")" "$(sspent "$T/st.u")" 1e-12 "resumed: the store spent what the uninterrupted run's spent"
[ ! -e "$T/s/checkpoint" ] && [ -f "$T/s/model.txt" ] && ok || bad "resumed: model written, checkpoint gone"

# ---- a journal cut back by one line: refused by the store's head, nothing written
expect 5 $MPI -np 2 "$DPOPT" admm $R --budget-store "$T/st.c" --set run.stop_after=6 --out "$T/c" "$T/a3k"
n=$(wc -l < "$T/c/ledger.jsonl")
head -n $((n - 1)) "$T/c/ledger.jsonl" > "$T/cut" && cat "$T/cut" > "$T/c/ledger.jsonl"
(cd "$T" && find c st.c -type f | sort | xargs sha256sum) > "$T/c.sum"
expect 2 $MPI -np 2 "$DPOPT" admm --resume "$T/c"
has "$T/err" "journal head" "a cut-back journal is refused by the store's head"
(cd "$T" && find c st.c -type f | sort | xargs sha256sum) | cmp -s - "$T/c.sum" && ok ||
  bad "a refused resume wrote something"

# ---- a resume the store can no longer hold (a train run on the file spent it meanwhile)
expect 0 "$DPOPT" budget init "$T/st.f" --eps 3 --delta 1e-4 --data "$T/a3k"
expect 5 $MPI -np 2 "$DPOPT" admm $R --budget-store "$T/st.f" --checkpoint-every 3 \
  --set run.stop_after=6 --out "$T/f" "$T/a3k"
expect 0 "$DPOPT" train --data "$T/a3k" --dim 123 --row-l1-bound 14 --row-l2-bound 3.75 \
  --algo dp-gd --iters 10 --eps 2.2 --budget-store "$T/st.f" --quiet --out "$T/tf"
(cd "$T" && find f st.f -type f | sort | xargs sha256sum) > "$T/f.sum"
expect 3 $MPI -np 2 "$DPOPT" admm --resume "$T/f"
has "$T/err" "by 1 other run; .*the resumed run is refused before its next release: nothing more was released, nothing written" \
  "a resume the store cannot hold: the error says when it came and counts the other run"
hasnot "$T/err" "before the data were loaded" "a refused resume does not claim its data were not loaded"
(cd "$T" && find f st.f -type f | sort | xargs sha256sum) | cmp -s - "$T/f.sum" && ok ||
  bad "a resume the store cannot hold wrote something"

# ---- secagg, a party killed in release 9: the one record kept, settled to the journal
S3="$R --set privacy.sigma_rule=rdp --set privacy.trust=secagg"
$MPI -np 3 "$DPOPT_TEST" admm --test-party-kill 9 $S3 --checkpoint-every 3 --budget-store "$T/st.k" \
  --set parties.out="$T/k.p%d" --out "$T/k" "$T/a3k" > "$T/out" 2> "$T/err"
[ "$?" != 0 ] && [ -f "$T/k/checkpoint" ] && ok || bad "killed: want a failed run with a checkpoint"
[ "$(runs "$T/st.k")" = 1 ] && ok || bad "killed: the store holds $(runs "$T/st.k") runs (want 1)"
expect 3 $MPI -np 3 "$DPOPT" admm --resume "$T/k"
has "$T/err" "resuming $T/k at iteration 7" "killed: resumed at iteration 7"
[ "$(runs "$T/st.k")" = 1 ] && ok || bad "killed, resumed: the store holds $(runs "$T/st.k") runs (want 1)"
"$DPOPT" budget show "$T/st.k" > "$T/show"
has "$T/show" "settled .*($(charges "$T/k/ledger.jsonl") Gaussian" "killed, resumed: settled to every journalled release"
close "$(rspent "$T/st.k")" "$(jspent "$T/k/ledger.jsonl")" 1e-5 "killed, resumed: the run settled to the journal's total"
finish test_admm_store_resume
