#!/bin/sh
# The ledger journal's keyed hash chain (issue 37) on a private dp-nag run over data/a9a:
#  - every tampering with the journal -- a line deleted, one digit of a charge edited, two
#    lines swapped, a line duplicated, a cut inside a line that is not the last (with and
#    without the lines after it), the charges after the checkpoint deleted, the whole journal
#    replaced by an older copy -- is refused by --resume (status 2) naming ledger.jsonl:LINE,
#    and the refused resume leaves the run directory byte-identical (sha256 of every file);
#  - a symlinked ledger.jsonl is refused (and the file it points to is untouched);
#  - `dpopt ledger` verifies the chain (summary by default, --all lists every charge) and
#    refuses a tampered journal naming the line; a journal needs its key (another key, none,
#    a symlinked key or one others can read is refused), and a run cannot start without one;
#  - a torn last line (crash inside its write) is still tolerated: resume drops it;
#  - an old (version 1, unchained) journal is refused by --resume with a clear message.
. "$(dirname "$0")/../lib/testlib.sh"
KEY=$T/journal.key
export DPOPT_JOURNAL_KEY="$KEY"
P="--data $S/data/a9a --dim 123 --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-nag --eps 1 --iters 30 --quiet"
sums() { (cd "$1" && find . -type f -exec sha256sum {} + | sort); }
# refused DIR LINE WHAT [args]: --resume exits 2 naming ledger.jsonl:LINE, DIR unchanged
refused() {
  d=$1; line=$2; what=$3; shift 3
  sums "$d" >"$T/before"
  expect 2 $MPI -np 2 "$DPOPT" train --resume "$d" --quiet "$@"
  grep -q "ledger.jsonl:$line\\b" "$T/err" && ok || { bad "$what: the refusal does not name ledger.jsonl:$line"; head -n 5 "$T/err"; }
  sums "$d" >"$T/after"
  if cmp -s "$T/before" "$T/after"; then ok; else bad "$what: the refused resume changed $d"; diff "$T/before" "$T/after" | head; fi
}
fresh() { rm -rf "$T/x"; cp -a "$1" "$T/x"; }

# ---- a run stopped after 3 steps (5 lines: header, plan, 3 charges), resumed to 6 (8 lines)
expect 5 $MPI -np 2 "$DPOPT" train $P --out "$T/a" --set run.stop_after=3
[ -f "$KEY" ] && ok || bad "the journal key was not created on first use"
[ "$(stat -c %a "$KEY")" = 600 ] && ok || bad "key mode $(stat -c %a "$KEY"), want 600"
cp -a "$T/a" "$T/s3"
expect 5 $MPI -np 2 "$DPOPT" train --resume "$T/a" --quiet --set run.stop_after=6
cp -a "$T/a" "$T/s6"
[ "$(wc -l <"$T/s6/ledger.jsonl")" = 8 ] && ok || bad "journal of 6 steps: $(wc -l <"$T/s6/ledger.jsonl") lines, want 8"
grep -c '"chain":"[0-9a-f]\{64\}"}$' "$T/s6/ledger.jsonl" | grep -qx 8 && ok || bad "not every line ends in its chain tag"

# ---- dpopt ledger: summary, --all, verification
expect 0 "$DPOPT" ledger "$T/s6"
has "$T/out" "^chain: *verified, 8 lines" "dpopt ledger: chain verified"
has "$T/out" "^charges: 6" "dpopt ledger: charge count"
has "$T/out" "^plan: *dp-nag, per-step" "dpopt ledger: plan"
has "$T/out" "^remaining:" "dpopt ledger: remaining"
has "$T/out" "^bound:" "dpopt ledger: bound"
hasnot "$T/out" "laplace" "dpopt ledger (summary) lists no charges"
expect 0 "$DPOPT" ledger --all "$T/s6"
[ "$(grep -c ' laplace ' "$T/out")" = 6 ] && ok || bad "dpopt ledger --all: $(grep -c ' laplace ' "$T/out") charge rows, want 6"
head -c 32 /dev/urandom >"$T/other.key"; chmod 600 "$T/other.key"
expect 2 "$DPOPT" ledger --journal-key "$T/other.key" "$T/s6"
has "$T/err" "ledger.jsonl:1" "another key: refused at line 1"
expect 2 env DPOPT_JOURNAL_KEY="$T/none.key" "$DPOPT" ledger "$T/s6"
[ ! -e "$T/none.key" ] && ok || bad "dpopt ledger created a key"
# the key file itself: a symlink, or one others can read, is refused
ln -s "$KEY" "$T/sym.key"
expect 2 "$DPOPT" ledger --journal-key "$T/sym.key" "$T/s6"
has "$T/err" "symbolic link" "a symlinked key is refused"
cp "$KEY" "$T/open.key"; chmod 644 "$T/open.key"
expect 2 "$DPOPT" ledger --journal-key "$T/open.key" "$T/s6"
has "$T/err" "readable or writable by others" "a key others can read is refused"

# ---- tampering, each refused by --resume naming the first bad line, the directory unchanged
fresh "$T/s6"; sed -i 4d "$T/x/ledger.jsonl"
refused "$T/x" 4 "a charge line deleted"
expect 2 "$DPOPT" ledger "$T/x"
has "$T/err" "ledger.jsonl:4" "dpopt ledger names the deleted line's successor"
fresh "$T/s6"; sed -i '5s/"step":2,/"step":7,/' "$T/x/ledger.jsonl"
refused "$T/x" 5 "one digit of a charge edited"
fresh "$T/s6"; awk 'NR == 4 { h = $0; next } NR == 5 { print; print h; next } { print }' "$T/s6/ledger.jsonl" >"$T/x/ledger.jsonl"
refused "$T/x" 4 "two lines swapped"
fresh "$T/s6"; sed -i '4p' "$T/x/ledger.jsonl"
refused "$T/x" 5 "a line duplicated"
fresh "$T/s6"; sed -i '4s/^\(.\{40\}\).\{12\}/\1/' "$T/x/ledger.jsonl"
refused "$T/x" 4 "bytes cut inside line 4"
fresh "$T/s6"; n=$(head -n 5 "$T/s6/ledger.jsonl" | wc -c); head -c $((n + 50)) "$T/s6/ledger.jsonl" >"$T/x/ledger.jsonl"
refused "$T/x" 6 "the journal truncated inside line 6 (not the last)"
fresh "$T/s6"; cp "$T/s3/ledger.jsonl" "$T/x/ledger.jsonl"
refused "$T/x" 6 "the journal replaced by an older copy"
# another run's journal (same key, same settings) in its place: the chain differs at line 8
expect 5 $MPI -np 2 "$DPOPT" train $P --out "$T/b" --set run.stop_after=6
fresh "$T/s6"; cp "$T/b/ledger.jsonl" "$T/x/ledger.jsonl"
refused "$T/x" 8 "the journal replaced by another run's"
# charges after the checkpoint (the process died between a charge and the next checkpoint):
# resume to 9, put the 6-step checkpoint back (3 orphan charges, lines 9-11), delete them
fresh "$T/s6"; cp "$T/s6/checkpoint" "$T/ck6"
expect 5 $MPI -np 2 "$DPOPT" train --resume "$T/x" --quiet --set run.stop_after=9
cp "$T/ck6" "$T/x/checkpoint"; sed -i '9,$d' "$T/x/ledger.jsonl"
refused "$T/x" 9 "the charges after the checkpoint deleted"

# an emptied journal (it used to get a new header on resume): refused, nothing written
fresh "$T/s6"; : >"$T/x/ledger.jsonl"
sums "$T/x" >"$T/before"
expect 2 $MPI -np 2 "$DPOPT" train --resume "$T/x" --quiet
has "$T/err" "no complete header" "an empty journal: the message says why"
sums "$T/x" >"$T/after"; cmp -s "$T/before" "$T/after" && ok || bad "empty journal: directory changed"

# ---- a symlinked journal is refused; its target is untouched
fresh "$T/s6"; mv "$T/x/ledger.jsonl" "$T/outside.jsonl"; ln -s "$T/outside.jsonl" "$T/x/ledger.jsonl"
sha256sum "$T/outside.jsonl" >"$T/o1"
sums "$T/x" >"$T/before"
expect 2 $MPI -np 2 "$DPOPT" train --resume "$T/x" --quiet
has "$T/err" "symbolic link" "symlinked journal: the message says why"
sha256sum "$T/outside.jsonl" >"$T/o2"
cmp -s "$T/o1" "$T/o2" && ok || bad "the symlink's target changed"
sums "$T/x" >"$T/after"; cmp -s "$T/before" "$T/after" && ok || bad "symlinked journal: directory changed"
expect 2 "$DPOPT" ledger "$T/x"

# ---- no key, no journal: a new private run fails before its first release
expect 2 env DPOPT_JOURNAL_KEY="$T/nodir/k" $MPI -np 2 "$DPOPT" train $P --out "$T/nokey"
has "$T/err" "journal key" "no key: the message names the key"
[ ! -e "$T/nokey/ledger.jsonl" ] && ok || bad "a journal was written without a key"
# resume with another key: refused at line 1, nothing written
fresh "$T/s6"
sums "$T/x" >"$T/before"
expect 2 $MPI -np 2 "$DPOPT" train --resume "$T/x" --quiet --journal-key "$T/other.key"
has "$T/err" "ledger.jsonl:1" "resume with another key: refused at line 1"
sums "$T/x" >"$T/after"; cmp -s "$T/before" "$T/after" && ok || bad "resume with another key: directory changed"

# ---- a torn last line (crash inside its write) is still dropped, and the run resumes
fresh "$T/s6"; printf '{"step":6,"mechanism":"lapl' >>"$T/x/ledger.jsonl"
expect 0 "$DPOPT" ledger "$T/x"
has "$T/out" "torn last line" "dpopt ledger reports the torn line"
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/x" --quiet
expect 0 "$DPOPT" ledger "$T/x"
has "$T/out" "^charges: 30" "resumed past a torn line: 30 charges"
hasnot "$T/out" "torn" "the torn line is gone after the resume"

# ---- an old journal (version 1, no chain): printed unverified, refused by --resume
fresh "$T/s6"
sed 's/,"chain":"[0-9a-f]*"}$/}/; 1s/"version":2/"version":1/; 1s/,"nonce":"[0-9a-f]*"//' "$T/s6/ledger.jsonl" >"$T/x/ledger.jsonl"
expect 0 "$DPOPT" ledger "$T/x"
has "$T/out" "NOT verified" "a version 1 journal is printed as unverified"
sums "$T/x" >"$T/before"
expect 2 $MPI -np 2 "$DPOPT" train --resume "$T/x" --quiet
has "$T/err" "version 1 journal" "version 1: the message says why"
sums "$T/x" >"$T/after"; cmp -s "$T/before" "$T/after" && ok || bad "version 1: directory changed"

finish test_journal_chain
