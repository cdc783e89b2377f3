#!/bin/sh
# The neighbouring relation and the default accountant (pld: issue 13) through
# `dpopt train`, `dpopt ledger` and `dpopt calibrate` on data/a9a (L = row bound 3.75):
#  - dp-sgd-rdp, pnsgd, phased-sgd run with only --eps 1 --delta 1e-5 (no privacy.accountant):
#    exit 0, and the privacy line, summary.json and the journal header state the relation;
#  - dp-sgd-rdp with Poisson batches under replace-one (the default) is refused: its bound
#    (Mironov-Talwar-Zhang 2019) is for add/remove neighbours (main charged it sensitivity L
#    under a replace-one ledger); under add-remove it runs and is charged sensitivity L = 3.75,
#    while wor batches under replace-one are charged 2L = 7.5;
#  - an algorithm analysed for replace-one refuses add-remove; a bad relation is a usage error;
#  - a resume under another relation is refused (the ledger checks the journal's header);
#  - calibrate: --bound B gives sigma = 2 B z (replace-one) or B z (add-remove).
. "$(dirname "$0")/../lib/testlib.sh"
# no intercept: the sensitivities below are the closed forms 2L and L of the feature bound
COMMON="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --lambda 0.01 --quiet --no-intercept"

for a in dp-sgd-rdp pnsgd phased-sgd; do
  expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo $a --eps 1 --delta 1e-5 --out "$T/$a" --verbose
  has "$T/out" "^privacy .*replace-one neighbours" "$a: privacy line"
  has "$T/out" "^privacy spent .*accountant pld, bound [a-z]*, replace-one neighbours" "$a: --verbose spent line"
  has "$T/out" "^spent  *eps [0-9.]* of 1 and delta [0-9.e-]* of 1e-05 in [0-9]* steps (" "$a: plain spent line"
  has "$T/$a/summary.json" '"neighbours": *"replace-one"' "$a: summary.json relation"
  has "$T/$a/ledger.jsonl" '"accountant":"pld","neighbours":"replace-one"' "$a: journal header"
done
# the journal's sensitivity for wor batches: 2L
has "$T/dp-sgd-rdp/ledger.jsonl" '"sampling":"wor".*"sensitivity":7.5,' "wor charged 2L"
expect 0 "$DPOPT" ledger "$T/pnsgd"
has "$T/out" "accountant pld, replace-one neighbours" "dpopt ledger states the relation"

# Poisson under replace-one: refused before anything is charged
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgd-rdp --eps 1 --delta 1e-5 \
  --set algo.sampling=poisson --out "$T/p1"
has "$T/err" "poisson is analysed for add-remove neighbours" "Poisson under replace-one refused"
hasnot "$T/p1/ledger.jsonl" '"step"' "refused run charged nothing"
# ... and run under add-remove with sensitivity L
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgd-rdp --eps 1 --delta 1e-5 \
  --set algo.sampling=poisson --set privacy.neighbours=add-remove --out "$T/p2"
has "$T/out" "^privacy .*add-remove neighbours" "add-remove privacy line"
has "$T/p2/summary.json" '"neighbours": *"add-remove"' "add-remove summary.json"
has "$T/p2/ledger.jsonl" '"neighbours":"add-remove"' "add-remove journal header"
has "$T/p2/ledger.jsonl" '"sampling":"poisson".*"sensitivity":3.75,' "poisson charged L"
# wor under add-remove, and replace-one analyses under add-remove: refused
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgd-rdp --eps 1 --delta 1e-5 \
  --set privacy.neighbours=add-remove --out "$T/p3"
has "$T/err" "wor is analysed for replace-one" "wor under add-remove refused"
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgdws --batch 100 --eps 1 \
  --set privacy.neighbours=add-remove --out "$T/p4"
has "$T/err" "replace-one neighbours" "dp-sgdws (m of n batches) under add-remove refused"
# the full-batch DP-GD family takes add-remove: the noisy count first, then the steps, every
# charge at the clip bound itself (not twice it) over the public size
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 \
  --set privacy.neighbours=add-remove --out "$T/p4b"
head -2 "$T/p4b/ledger.jsonl" | tail -1 | grep -q '"step":-1,"mechanism":"laplace".*"sensitivity":1,"dim":1' &&
  ok || bad "dp-nag-opt under add-remove: the noisy count is the first charge"
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --public-n 30000 \
  --set privacy.neighbours=add-remove --out "$T/p4c"
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --out "$T/p4d"
s_ar=$(grep -o '"step":0,.*"sensitivity":[0-9.e+-]*' "$T/p4c/ledger.jsonl" | sed 's/.*"sensitivity"://')
s_ro=$(grep -o '"step":0,.*"sensitivity":[0-9.e+-]*' "$T/p4d/ledger.jsonl" | sed 's/.*"sensitivity"://')
awk -v a="$s_ar" -v r="$s_ro" 'BEGIN {q = (a * 30000) / (r * 32561); exit !(q > 0.4999 && q < 0.5001)}' &&
  ok || bad "add-remove sensitivity $s_ar = half of replace-one's $s_ro, over n_pub 30000 not n 32561"
expect 1 $MPI -np 1 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 \
  --set privacy.neighbours=swap-two --out "$T/p5"
has "$T/err" "expected replace-one or add-remove" "unknown relation"
# the explicit accountants stay: rdp for a Gaussian algorithm, basic for a Laplace one
expect 0 $MPI -np 1 "$DPOPT" train $COMMON --algo phased-sgd --eps 1 --delta 1e-5 \
  --set privacy.accountant=rdp --out "$T/r1"
has "$T/r1/ledger.jsonl" '"accountant":"rdp","neighbours":"replace-one"' "rdp accountant kept"
expect 0 $MPI -np 1 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --iters 20 \
  --set privacy.accountant=basic --out "$T/r2"
has "$T/r2/ledger.jsonl" '"accountant":"basic"' "basic accountant kept"

# resume under another relation: refused by --resume, and by the ledger if config.ini is edited
expect 5 $MPI -np 1 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --iters 30 --out "$T/rs" \
  --set run.stop_after=5
expect 1 "$DPOPT" train --resume "$T/rs" --quiet --set privacy.neighbours=add-remove
has "$T/err" "cannot change privacy.neighbours" "--resume cannot change the relation"
echo "privacy.neighbours = add-remove" >> "$T/rs/config.ini"
expect 1 "$DPOPT" train --resume "$T/rs" --quiet
has "$T/err" "journal's neighbouring relation is replace-one, not add-remove" "ledger refuses"

# calibrate: the per-example bound doubles under replace-one only
expect 0 "$DPOPT" calibrate --eps 1 --delta 1e-5 --bound 1
z=$(awk '/^noise_multiplier/ {print $2}' "$T/out"); s=$(awk '/^sigma/ {print $2}' "$T/out")
close "$s" "$(awk -v z="$z" 'BEGIN {printf "%.9g", 2 * z}')" 1e-6 "replace-one sigma = 2 B z"
expect 0 "$DPOPT" calibrate --eps 1 --delta 1e-5 --bound 1 --neighbours add-remove
s=$(awk '/^sigma/ {print $2}' "$T/out")
close "$s" "$z" 1e-6 "add-remove sigma = B z"
expect 1 "$DPOPT" calibrate --eps 1 --delta 1e-5 --sampling poisson --batch 10 --n 100 \
  --neighbours replace-one
has "$T/err" "analysed for add-remove" "calibrate refuses Poisson under replace-one"
finish test_relation_cli
