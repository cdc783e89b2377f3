#!/bin/sh
# A secure-aggregation run that loses a party's rank resumes (dp-sgd-rdp with party-local
# Poisson batches, 3 parties on 3 ranks, each its own file of a9a, collude 1; doc/design.md,
# "Dropouts"):
#  - the last party's rank dies by SIGKILL in release 13 (dpopt-test's --test-party-kill 13:
#    after its guard journalled the release, before its share is sent): Open MPI aborts the
#    job, no model.txt, the coordinator's checkpoint (every 5 steps: step 10) and every journal
#    intact; the journals reach release 13 (the coordinator's charged it before asking);
#  - `dpopt train --resume RUN` with the three parties completes the plan: the coordinator's
#    journal then holds the 50 steps plus the 3 charges after its checkpoint (they stay spent,
#    steps 11-13 are charged again when redone), every Gaussian charge at the one noise scale
#    of the plan; each party's guard reopened its own journal (PARTYDIR/ledger.partyK.jsonl)
#    and charged every redone and later release before contributing: party 2, killed after
#    journalling release 13, holds 13 + 40 charges, as many as the coordinator, and replays
#    (`dpopt ledger`) to the coordinator's view party_total_eps[2]; party 1 holds 52 or 53 (it
#    may have been stopped before admitting release 13) and never more than the coordinator's;
#  - the same killed run resumed WITHOUT the lost party (2 ranks, --set parties.count=2: the
#    last party's file leaves with it): the coordinator's journal holds 13 charges naming
#    parties 0-2, then 40 naming 0 and 1; every one of the 53 at the plan's multiplier z = 3
#    (noise_scale / sensitivity, the honest shares' noise: re-derived for P' - k = 1 honest
#    share); the noise on the released sum grows by sqrt(4/3) (sqrt(P/(P-k)) -> sqrt(P'/(P'-k)),
#    printed sd); the lost party's journal is byte for byte as the kill left it and replays to
#    the coordinator's last view of it; party 1's journal replays, charged the 40 releases, and
#    never above the coordinator's view; more parties than the run had are refused, writing
#    nothing;
#  - a resume without a party's journal is refused before anything is written, naming the
#    missing journal; pnsgd under secagg refuses checkpoints, saying why, writing nothing
#    (dpopt admm's secagg resume: test_admm_secagg_resume.sh).
. "$(dirname "$0")/../lib/testlib.sh"

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$S/data/a9a" "$T/parts/p%d"
AR="--dim 123 --set parties.data=$T/parts/p%d --row-l2-bound 3.75 --clip l2:1 --eps 1 --delta 1e-5 --algo dp-sgd-rdp \
  --set algo.sampling=poisson --set privacy.neighbours=add-remove --public-n 32561 --batch 256 \
  --iters 50 --set algo.z=3 --seed 4 --set privacy.trust=secagg --set parties.count=3"
charges() { grep -c '"mechanism":"gaussian"' "$1"; }
sdsum() { sed -n 's/.*noise sd on the sum \([0-9.e+-]*\)).*/\1/p' "$1"; }
ptotal() { tail -n 1 "$1" | sed -n 's/.*"party_total_eps":\[\([^]]*\)\].*/\1/p' |
  awk -F, -v k="$2" '{print $(k + 1)}'; }

# the killed run: the job ends non-zero, the journals and the checkpoint stay
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 13 $AR --checkpoint-every 5 \
  --set parties.out="$T/k.p%d" --out "$T/k" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" != 0 ] && ok || bad "the job with a killed rank exited 0"
[ -f "$T/k/checkpoint" ] && [ ! -e "$T/k/model.txt" ] && ok ||
  bad "killed: want a checkpoint and no model.txt in $T/k"
[ "$(charges "$T/k/ledger.jsonl")" = 13 ] && ok ||
  bad "killed: the coordinator's journal holds $(charges "$T/k/ledger.jsonl") charges (want 13)"
[ "$(charges "$T/k.p2/ledger.party2.jsonl")" = 13 ] && ok ||
  bad "killed: party 2 journalled $(charges "$T/k.p2/ledger.party2.jsonl") releases (want 13)"
p1=$(charges "$T/k.p1/ledger.party1.jsonl")
[ "$p1" = 12 ] || [ "$p1" = 13 ] && ok || bad "killed: party 1 journalled $p1 releases (want 12 or 13)"
expect 0 "$DPOPT" ledger "$T/k.p2/ledger.party2.jsonl"
cp -r "$T/k.p2" "$T/k.p2.killed"

# resumed with its parties: completes, every account intact
expect 0 $MPI -np 3 "$DPOPT" train --resume "$T/k"
has "$T/err" "resuming $T/k at iteration 10" "resumed at the checkpoint"
has "$T/err" "the journal holds 3 charge(s) after the checkpoint: they stay spent" "orphans stay spent"
[ -f "$T/k/model.txt" ] && [ ! -e "$T/k/checkpoint" ] && ok || bad "resumed: model.txt written, checkpoint removed"
[ "$(charges "$T/k/ledger.jsonl")" = 53 ] && ok ||
  bad "resumed: the coordinator's journal holds $(charges "$T/k/ledger.jsonl") charges (want 50 + 3)"
[ "$(grep -c '"step":12[,}]' "$T/k/ledger.jsonl")" = 2 ] && ok || bad "step 12 not charged twice"
ns=$(grep '"mechanism":"gaussian"' "$T/k/ledger.jsonl" | sed -n 's/.*"noise_scale":\([0-9.e+-]*\),.*/\1/p' | sort -u)
[ "$(echo "$ns" | wc -l)" = 1 ] && [ -n "$ns" ] && ok || bad "resumed: noise scales $ns (want the plan's one)"
expect 0 "$DPOPT" ledger "$T/k"
for k in 1 2; do
  j="$T/k.p$k/ledger.party$k.jsonl"
  expect 0 "$DPOPT" ledger "$j"
  pe=$(sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p' "$T/out")
  ce=$(ptotal "$T/k/ledger.jsonl" $k)
  check "party $k: its own total $pe <= the coordinator's view $ce" awk -v p="$pe" -v c="$ce" \
    'BEGIN {exit !(p > 0 && p <= c * (1 + 1e-12))}'
  ns2=$(grep '"mechanism":"gaussian"' "$j" | sed -n 's/.*"noise_scale":\([0-9.e+-]*\),.*/\1/p' | sort -u)
  [ "$ns2" = "$ns" ] && ok || bad "party $k priced noise scales $ns2 (the plan's: $ns)"
done
[ "$(charges "$T/k.p2/ledger.party2.jsonl")" = 53 ] && ok ||
  bad "party 2 holds $(charges "$T/k.p2/ledger.party2.jsonl") charges (want 13 + 40)"
close "$(sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p' "$T/out")" "$(ptotal "$T/k/ledger.jsonl" 2)" 1e-12 \
  "party 2's own journal replays to the coordinator's view"
head -n "$(wc -l <"$T/k.p2.killed/ledger.party2.jsonl")" "$T/k.p2/ledger.party2.jsonl" |
  cmp -s - "$T/k.p2.killed/ledger.party2.jsonl" && ok || bad "party 2's journal lost or changed a line"
p1r=$(charges "$T/k.p1/ledger.party1.jsonl")
[ "$p1r" = $((p1 + 40)) ] && ok || bad "party 1 holds $p1r charges (want $p1 + 40)"

# ---- resumed WITHOUT the lost party: --resume RUN on 2 ranks with parties.count = 2
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 13 $AR --checkpoint-every 5 \
  --set parties.out="$T/d.p%d" --out "$T/d" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" != 0 ] && ok || bad "drop: the job with a killed rank exited 0"
sd3=$(sdsum "$T/err")
cp -r "$T/d.p2" "$T/d.p2.killed"
p1=$(charges "$T/d.p1/ledger.party1.jsonl")
# anything but dropping the last parties is refused, before anything is written
(cd "$T/d" && find . -type f | sort | xargs sha256sum) >"$T/d.sum"
expect 1 $MPI -np 3 "$DPOPT" train --resume "$T/d" --set parties.count=4
has "$T/err" "--resume cannot change parties.count" "drop: more parties refused"
(cd "$T/d" && find . -type f | sort | xargs sha256sum) | cmp -s - "$T/d.sum" && ok ||
  bad "drop: a refused resume wrote something"
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/d" --set parties.count=2
sd2=$(sdsum "$T/err")
has "$T/err" "the journal holds 3 charge(s) after the checkpoint: they stay spent" "drop: orphans stay spent"
[ -f "$T/d/model.txt" ] && ok || bad "drop: no model.txt"
# the journals: 13 releases of 3 parties, then the 40 redone and later ones of parties 0 and 1
[ "$(grep -c '"parties":\[0,1,2\]' "$T/d/ledger.jsonl")" = 13 ] && ok || bad "drop: want 13 charges of 3 parties"
[ "$(grep -c '"parties":\[0,1\]' "$T/d/ledger.jsonl")" = 40 ] && ok || bad "drop: want 40 charges of parties 0, 1"
expect 0 "$DPOPT" ledger "$T/d"
# every release is charged at the plan's multiplier (the honest noise over the sensitivity
# is algo.z = 3 before and after, rounded up by the integer share sigma), and the noise on the released sum follows the number of
# shares: gamma sigma sqrt(P) with the P - k honest ones carrying the charge, so the sum's sd
# is sqrt(3/2) sigma_h before and sqrt(2/1) sigma_h after (ratio sqrt(4/3))
grep '"mechanism":"gaussian"' "$T/d/ledger.jsonl" |
  sed -n 's/.*"noise_scale":\([0-9.e+-]*\),"sensitivity":\([0-9.e+-]*\),.*/\1 \2/p' >"$T/zs"
check "drop: 53 charges at the plan's multiplier 3" awk \
  '{z = $1 / $2; if (z < 3 || z > 3 * (1 + 1e-4)) b++; n++} END {exit !(n == 53 && !b)}' "$T/zs"
close "$sd2" "$(awk -v s="$sd3" 'BEGIN {printf "%.17g", s * sqrt(4 / 3)}')" 2e-4 \
  "drop: the sum's noise sd $sd3 -> $sd2 for 2 shares of which 1 honest"
# the lost party's journal is as it was left, and replays to the coordinator's view of it
cmp -s "$T/d.p2/ledger.party2.jsonl" "$T/d.p2.killed/ledger.party2.jsonl" && ok ||
  bad "drop: the lost party's journal changed"
expect 0 "$DPOPT" ledger "$T/d.p2/ledger.party2.jsonl"
# (the coordinator's view of party 2: its total on the last charge that named it)
grep '"parties":\[0,1,2\]' "$T/d/ledger.jsonl" | tail -n 1 >"$T/last3"
close "$(sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p' "$T/out")" "$(ptotal "$T/last3" 2)" 1e-12 \
  "drop: the lost party's journal replays to the coordinator's view"
expect 0 "$DPOPT" ledger "$T/d.p1/ledger.party1.jsonl"
pe=$(sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p' "$T/out")
check "drop: party 1's total $pe <= the coordinator's view" awk -v p="$pe" -v c="$(ptotal "$T/d/ledger.jsonl" 1)" \
  'BEGIN {exit !(p > 0 && p <= c * (1 + 1e-12))}'
[ "$(charges "$T/d.p1/ledger.party1.jsonl")" = $((p1 + 40)) ] && ok || bad "drop: party 1 charged the 40 releases"

# a resume that lacks a party's journal is refused before anything is written
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 7 $AR --checkpoint-every 5 \
  --set parties.out="$T/m.p%d" --out "$T/m" >"$T/out" 2>"$T/err"
rm -r "$T/m.p1"
(cd "$T/m" && find . -type f | sort | xargs sha256sum) >"$T/m.sum"
expect 1 $MPI -np 3 "$DPOPT" train --resume "$T/m"
has "$T/err" "--resume: party 1's journal $T/m.p1/ledger.party1.jsonl is missing" "a missing party journal refused"
(cd "$T/m" && find . -type f | sort | xargs sha256sum) | cmp -s - "$T/m.sum" && [ ! -e "$T/m.p1" ] && ok ||
  bad "a refused resume wrote something"

# pnsgd under secagg refuses checkpoints (its pass is the whole budget; the DP-GD family
# resumes: test_secagg_resume_gd.sh)
expect 1 $MPI -np 3 "$DPOPT" train $(echo "$AR" | sed 's/dp-sgd-rdp/pnsgd/; s/--set algo.sampling=poisson//; s/--set algo.z=3//') \
  --checkpoint-every 5 --set parties.out="$T/g.p%d" --out "$T/g"
has "$T/err" "pnsgd under privacy.trust = secagg cannot write or resume checkpoints: its steps are the batches of one disjoint pass" \
  "pnsgd under secagg refused, saying why"
[ ! -e "$T/g" ] && [ ! -e "$T/g.p1" ] && ok || bad "the refused pnsgd run wrote something"
finish test_secagg_resume
