#!/bin/sh
# The public schema of a private run (issue 35): nothing about the rows leaves outside the
# ledger, and no slip turns privacy off.
#  - The width comes from a declaration (--dim, a FILE.schema beside the data, or a format that
#    fixes it), never from a sparse file's largest index: two data sets that differ in the one
#    row holding the largest index (or in a label outside the label set that only that row has)
#    give the same released files and lines, numbers apart.
#  - A private run with no declaration, a key nothing reads, a section typo, a value config.ini
#    could not hold, or a request for privacy with an algorithm that adds no noise: exit 1,
#    nothing written.  Non-private runs keep inferring the width and refuse rows outside it.
. "$(dirname "$0")/../lib/testlib.sh"
head -n 300 "$S/data/a9a" >"$T/base"
check "the base rows hold no index 123 (the test needs it)" sh -c "! grep -q ' 123:' '$T/base'"
{ cat "$T/base"; echo "+1 3:1 40:1 123:1"; } >"$T/d1" # the only row with index 123
{ cat "$T/base"; echo "-1 1:1"; } >"$T/d2"
{ cat "$T/base"; echo "2 3:1 40:1"; } >"$T/d3"        # label 2: outside {-1, +1, 0, 1}
{ cat "$T/base"; echo "-1 3:1 40:1"; } >"$T/d4"
PRIV="--row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --iters 5 --seed 7"
# every released file with its floating-point numbers masked (noise, losses, times)
# (and the journal's per-run nonce and keyed chain tags, random by design)
mask() { sed -E 's/"(nonce|chain)":"[0-9a-f]*"/"\1":H/g; s/-?[0-9]+\.[0-9]+(e[-+]?[0-9]+)?/F/g;
  s/-?[0-9]+e[-+]?[0-9]+/F/g' "$@"; }
released() { # DIR: stdout, model shape, summary, journal, trace header, config
  { mask "$T/$1.out"; wc -l <"$T/$1/model.txt"; sed -n 1,2p "$T/$1/model.txt";
    mask "$T/$1/summary.json"; mask "$T/$1/ledger.jsonl"; grep '^#' "$T/$1/trace.csv";
  } | sed -E "s#$T/##g; s/\brd[0-9]\b/RUN/g; s/\bd[0-9]\b/DATA/g" # the names differ
}
pair() { # A B WHAT: a private run on each, the released outputs compared
  for f in "$1" "$2"; do
    cp "$S/data/a9a.schema" "$T/$f.schema"
    expect 0 $MPI -np 2 "$DPOPT" train --data "$T/$f" $PRIV --out "$T/r$f"
    cp "$T/out" "$T/r$f.out"
  done
  released "r$1" >"$T/rel1"; released "r$2" >"$T/rel2"
  check "$3: the released outputs are the same: $(diff "$T/rel1" "$T/rel2" | head -n 6)" \
    cmp -s "$T/rel1" "$T/rel2"
}
pair d1 d2 "the row holding the largest index"
has "$T/rd1/summary.json" '"d":124' "the declared width (123 features + intercept)"
pair d3 d4 "a label outside the label set"
# the declaration by flag does what the schema file does
rm -f "$T/d1.schema"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/d1" --dim 123 $PRIV --out "$T/rflag"
check "--dim 123 = d1.schema" cmp -s "$T/rflag/model.txt" "$T/rd1/model.txt"
# a feature index above the declared width is dropped in a private run (the same model as
# without that entry), refused with file:line in a non-private one
{ cat "$T/base"; echo "+1 3:1 40:1"; } >"$T/d5"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/d1" --dim 122 $PRIV --out "$T/r122"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/d5" --dim 122 $PRIV --out "$T/r5"
tail -n +2 "$T/r122/model.txt" >"$T/m1"; tail -n +2 "$T/r5/model.txt" >"$T/m2"
check "private: an index over the declared width is dropped" cmp -s "$T/m1" "$T/m2"
expect 2 "$DPOPT" train --data "$T/d1" --dim 122 --algo gd --iters 2 --out "$T/g122"
has "$T/err" "d1:301: feature index 123 > declared dimension 122" "non-private: file:line"
expect 2 "$DPOPT" train --data "$T/d3" --algo gd --iters 2 --out "$T/g3"
has "$T/err" "d3:301: unknown label '2'" "non-private: a label outside the set, file:line"
expect 0 "$DPOPT" train --data "$T/d5" --algo gd --iters 2 --row-l2-bound 3.75 --out "$T/g5"
w=$(awk '{ for (i = 2; i <= NF; i++) { split($i, a, ":"); if (a[1] + 0 > m) m = a[1] + 0 } } END { print m + 1 }' "$T/d5")
has "$T/out" "x $w features" "non-private runs infer the width (largest index + intercept)"

# ---- refusals: exit 1, one message, nothing written
refused() { # WHAT PATTERN ARGS...: exit 1, PATTERN in the message, no run directory
  w=$1 p=$2; shift 2
  rm -rf "$T/ref"
  expect 1 "$DPOPT" train --data "$T/d5" --quiet "$@" --out "$T/ref"
  has "$T/err" "$p" "$w"
  check "$w: nothing written" test ! -e "$T/ref"
  check "$w: printed once" test "$(grep -c 'error:' "$T/err")" = 1
}
refused "private run, no declared width" "needs the number of features declared: --dim D" \
  --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1
# every missing requirement in one message: the row bound dp-sgd-rdp needs and the width
refused "no row bound, no width: both named" \
  "two requirements are missing: (1) dp-sgd-rdp: declare data.row_l2_bound .*; (2) .*needs the number of features declared: --dim D" \
  --eps 1 --delta 1e-5
refused "pure eps: no sensitivity, no width: both named" \
  "two requirements are missing: (1) no public sensitivity .*; (2) .*needs the number of features declared" --eps 1
# no budget either: the budget, the row bound and the width, in one message (an edited
# message that dropped the plan's refusal after a missing --eps names only two)
refused "no budget, no row bound, no width: all three named" \
  "three requirements are missing: (1) algorithm 'dp-sgd-rdp' is private: give the budget with --eps E .*; (2) dp-sgd-rdp: needs a public Lipschitz bound: .*data.row_l2_bound.*; (3) .*needs the number of features declared: --dim D" \
  --algo dp-sgd-rdp --delta 1e-5
refused "no budget, no row bound (width declared): both named" \
  "two requirements are missing: (1) algorithm 'dp-sgd-rdp' is private: give the budget .*; (2) dp-sgd-rdp: needs a public Lipschitz bound: .*data.row_l2_bound" \
  --algo dp-sgd-rdp --delta 1e-5 --dim 123
printf '[privacy]\nesp = 1\n' >"$T/c1.ini"
refused "[privacy] esp" "c1.ini:2: unknown setting 'privacy.esp': did you mean 'privacy.eps'?" \
  --config "$T/c1.ini"
printf '[privcy]\neps = 1\n' >"$T/c2.ini"
refused "[privcy] eps" "c2.ini:2: unknown setting 'privcy.eps': did you mean 'privacy.eps'?" \
  --config "$T/c2.ini"
refused "--set data.row_l2_bnd" "unknown setting 'data.row_l2_bnd': did you mean 'data.row_l2_bound'" \
  --dim 123 --algo dp-gd --eps 1 --row-l2-bound 3 --set data.row_l2_bnd=3
refused "a key of another command" "setting 'mf.rank' is not used by dpopt train" \
  --algo gd --set mf.rank=3
refused "a flag the algorithm does not read" "algo.lr is not read by algorithm gd" \
  --algo gd --row-l2-bound 3.75 --lr 0.1
refused "a newline in a value" "control character" --algo gd --set "run.fstar=1
x = 2"
# a request for privacy with an algorithm that adds no noise never runs non-private
for ask in "--eps 1" "--delta 1e-5" "--set privacy.trust=local" "--clip l2:1" \
           "--set parties.count=2" "--set privacy.neighbours=add-remove"; do
  refused "$ask with gd" "asks for privacy but algorithm 'gd' adds no noise" --algo gd $ask
done
# the only private request labelled NOT PRIVATE is --seed, and it says so
expect 0 "$DPOPT" train --data "$T/d5" --dim 123 --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --seed 1 --out "$T/s1"
has "$T/out" "NOT PRIVATE: seeded run" "--seed says the run is not private"
expect 0 "$DPOPT" train --data "$T/d5" --dim 123 --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --out "$T/s2"
has "$T/out" "privacy         PRIVATE" "unseeded: private"
# a schema file with a typo is refused too
printf '[schema]\nfeatures = 123\nfeature = 3\n' >"$T/d5.schema"
refused "schema typo" "d5.schema:3: unknown setting 'schema.feature'" --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1
finish test_schema
