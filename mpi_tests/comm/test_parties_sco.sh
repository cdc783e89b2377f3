#!/bin/sh
# dp-sgd-rdp, pnsgd and DP-ADMM under privacy.trust = central and local with 2 parties (issue
# 12, coverage; before it they were refused: "a release must name the parties it touches").
# On a 4000-row slice of a9a, seeded (so NOT private):
#  - each run exits 0, every charge names both parties, the per-party totals equal the global
#    one (every party is in every batch), and `dpopt ledger` replays the journal;
#  - local charges un-amplified (sampling none) where central charges the sampled batch, and
#    carries sqrt(P) more noise: the sd on the sum in the plan line (--verbose) is sqrt(2) times the charged
#    sigma (dp-sgd-rdp), sqrt(2) times central's at the same multiplier (pnsgd), DP-ADMM's
#    reported sigma is sqrt(2) times central's (same rdp calibration);
#  - add-remove under central: the noisy count names the parties; under local refused;
#  - phased methods and pnsgd release = final stay refused, with the reason.
. "$(dirname "$0")/../lib/testlib.sh"

head -n 4000 "$S/data/a9a" > "$T/a9a"
cp "$S/data/a9a.schema" "$T/a9a.schema" # the public schema (123 features) of the rows taken
COMMON="--verbose --data $T/a9a --row-l2-bound 3.75 --clip l2:1 --eps 2 --delta 1e-5 --seed 3 \
  --set parties.count=2"
num() { sed -n "s/.*$1 \([0-9.e+-]*\)[ ;:,].*/\1/p" "$2" | head -n 1; }
# the last charge line: global total and the two party totals
totals() { grep '"parties":\[0,1\]' "$1" | tail -n 1 |
  sed -n 's/.*"total_eps":\([0-9.e+-]*\),.*"party_total_eps":\[\([0-9.e+-]*\),\([0-9.e+-]*\)\].*/\1 \2 \3/p'; }
accounts() { # journal, want charges, label
  c=$(grep -c '"mechanism":[^,]*,.*"parties":\[0,1\],"party_total_eps"' "$1")
  [ "$c" = "$2" ] && ok || bad "$3: $c charges name both parties (want $2)"
  set -- $(totals "$1") "$3"
  close "$1" "$2" 0 "$4: party 0 total = global"
  close "$1" "$3" 0 "$4: party 1 total = global"
}

# local: each party's guard journals in its own run directory (parties.out)
po() { [ "$1" = local ] && echo "--set parties.out=$2.p%d"; }
for tr in central local; do
  expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgd-rdp --set privacy.trust=$tr \
    $(po $tr "$T/d$tr") --out "$T/d$tr"
  cp "$T/out" "$T/d$tr.out"
  accounts "$T/d$tr/ledger.jsonl" 63 "dp-sgd-rdp $tr"
  has "$T/d$tr/ledger.jsonl" "\"event\":\"trust $tr: " "dp-sgd-rdp $tr: journal label"
  expect 0 "$DPOPT" ledger "$T/d$tr"
  expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo pnsgd --set algo.T=40 --set algo.D=1 \
    --set privacy.trust=$tr $(po $tr "$T/p$tr") --out "$T/p$tr"
  cp "$T/out" "$T/p$tr.out"
  accounts "$T/p$tr/ledger.jsonl" 40 "pnsgd $tr"
  c=$(grep -c '"mechanism":"gaussian","sampling":"disjoint"' "$T/p$tr/ledger.jsonl")
  [ "$c" = 40 ] && ok || bad "pnsgd $tr: $c disjoint Gaussian charges (want 40)"
  expect 0 "$DPOPT" ledger "$T/p$tr"
done
has "$T/dcentral/ledger.jsonl" '"mechanism":"gaussian","sampling":"wor"' "central: amplified by sampling"
has "$T/dlocal/ledger.jsonl" '"mechanism":"gaussian","sampling":"none"' "local: not amplified"
hasnot "$T/dlocal/ledger.jsonl" '"sampling":"wor"' "local: no amplified charge"
# dp-sgd-rdp local: every party adds the charged sigma, the sum carries sqrt(2) of it
sg=$(grep -m1 '"step":0,' "$T/dlocal/ledger.jsonl" | sed -n 's/.*"noise_scale":\([0-9.e+-]*\),.*/\1/p')
sd=$(num "sd" "$T/dlocal.out")
check "dp-sgd-rdp local: sd $sd on the sum = sqrt(2) x charged sigma $sg" awk -v a="$sd" -v b="$sg" \
  'BEGIN {exit !(b > 0 && a / (b * sqrt(2)) > 1 - 1e-8 && a / (b * sqrt(2)) < 1 + 1e-8)}'
# pnsgd: the same charge (multiplier 1/rho), local adds it once per party
sc=$(num "sd" "$T/pcentral.out") sl=$(num "sd" "$T/plocal.out")
s1=$(num "sigma" "$T/pcentral.out") s2=$(num "sigma" "$T/plocal.out")
close "$s1" "$s2" 0 "pnsgd: central and local charge the same sigma"
check "pnsgd: local sd $sl = sqrt(2) x central $sc" awk -v a="$sl" -v b="$sc" \
  'BEGIN {exit !(b > 0 && a / (b * sqrt(2)) > 1 - 1e-8 && a / (b * sqrt(2)) < 1 + 1e-8)}'
echo "dp-sgd-rdp local: sigma $sg per party, sd $sd on the sum; pnsgd sd central $sc local $sl"

# add-remove: central's noisy count names both parties; local refuses (not amplified)
AR="--set algo.sampling=poisson --set privacy.neighbours=add-remove"
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgd-rdp $AR --out "$T/ar"
has "$T/ar/ledger.jsonl" '"step":-1,"mechanism":"laplace".*"parties":\[0,1\]' "noisy count names the parties"
expect 0 "$DPOPT" ledger "$T/ar"
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgd-rdp $AR --set privacy.trust=local \
  --set parties.out="$T/r1.p%d" --out "$T/r1"
has "$T/err" "under privacy.trust = local the coordinator draws the batch" "local add-remove refused"
expect 4 $MPI -np 2 "$DPOPT" train $COMMON --algo pnsgd --set algo.release=final \
  --set privacy.trust=local --set parties.out="$T/r2.p%d" --out "$T/r2"
has "$T/err" "algo.release = final is not private under privacy.trust = local" "release final refused"
for tr in central local; do
  expect 4 $MPI -np 2 "$DPOPT" train $COMMON --algo phased-sgd --set privacy.trust=$tr \
    $(po $tr "$T/r3$tr") --out "$T/r3"
  has "$T/err" "phased-sgd releases only a noised phase output" "phased-sgd $tr refused"
done

# DP-ADMM, one party per rank: central (parties.count = 2) and local
ADMM="--method dpadmm --eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --seed 5 --maxit 30 \
  --set privacy.sigma_rule=rdp"
sig() { sed -n 's/^sigma *\([0-9.e+-]*\) .*/\1/p' "$1"; }
for tr in central local; do
  expect 0 $MPI -np 2 "$DPOPT" admm $ADMM --set parties.count=2 --set privacy.trust=$tr \
    $(po $tr "$T/a$tr") --out "$T/a$tr" "$T/a9a"
  cp "$T/out" "$T/a$tr.out"
  accounts "$T/a$tr/ledger.jsonl" 31 "dpadmm $tr"
  has "$T/a$tr/ledger.jsonl" "\"event\":\"trust $tr: " "dpadmm $tr: journal label"
  expect 0 "$DPOPT" ledger "$T/a$tr/ledger.jsonl"
done
a=$(sig "$T/acentral.out") b=$(sig "$T/alocal.out")
check "dpadmm: local sigma $b = sqrt(2) x central $a" awk -v a="$b" -v b="$a" \
  'BEGIN {exit !(b > 0 && a / (b * sqrt(2)) > 1 - 1e-5 && a / (b * sqrt(2)) < 1 + 1e-5)}'
has "$T/alocal.out" "the training objective is withheld" "dpadmm local: no training objective"
echo "dpadmm sigma central $a local $b"
finish test_parties_sco
