#!/bin/sh
# privacy.trust = secagg for the SCO algorithms whose release is a batch SUM (issue 12):
#  - dp-sgd-rdp with full batches (wor, m = n) at 2, 3, 4 parties (seeded, so NOT private):
#    every step is one un-amplified rdp-rho charge (sampling none) to the global account and to
#    every party, the calibration spends the budget (>= 0.99 eps, <= eps), the journal replays,
#    and the model learns (test accuracy above a9a's majority rate 0.7638); subsampled wor
#    batches (the coordinator draws them: no amplification) are refused naming what to set;
#  - pnsgd at 2 parties: every step a disjoint-pass rdp-rho charge (parallel composition: the
#    pass costs one step), an explicit algo.release = final refused (every party sees every
#    iterate);
#  - the phased methods (output perturbation of a nonlinear phase output) refused, naming why;
#  - dp-sgd-rdp with Poisson batches (add-remove, public n) at 2 parties: every party samples its
#    own rows, each step one amplified Gaussian charge (sampling poisson) equal to central's at
#    the honest multiplier (central with algo.z = z_eff spends the same; dpopt calibrate gives
#    the same multiplier on an RDP ledger); the charge is the same for 2 parties on 4 ranks and
#    for 3 parties with collude 2 (one honest share each); no public n, or trust local: refused;
#  - each party's own journal (ledger.partyK.jsonl, one a party, kept by its first rank after
#    the coordinator) replays with `dpopt ledger` to the coordinator's party_total_eps[K] with
#    as many charges (2 parties, 2 parties on 4 ranks, 3 parties);
#  - party counts (per-party files, add-remove): runs whose parties' files differ by one row
#    print and save the same (ledger, messages, trace, summary but the model's test metrics);
#    without a public n refused;
#  - dpopt audit in secagg mode passes for both (bound below the charge, alpha 1e-4);
#  - dpopt admm --method dpaccadmm at 2 and 3 parties, dpadmm at 2 (one per rank): the journal says
#    "trust secagg" and holds T + 1 rdp-rho charges, the noise on the released gradient is the
#    central one times sqrt(P / (P - k)) (within 3%: integer sigma, rounding inflation), the
#    test accuracy is central's within 0.01 and the training objective is withheld; every party's
#    guard journals what it priced (PARTYDIR/ledger.partyK.jsonl in its own run directory,
#    parties.out: 61 charges, the coordinator's total),
#    and one that announces a smaller noise is refused by every party (dpopt-test); consensus,
#    --sigma, --trace and consensus under trust local without the parties' own directories
#    are refused with the reason.
. "$(dirname "$0")/../lib/testlib.sh"

COMMON="--data $S/data/a9a --test $S/data/a9a.t --row-l2-bound 3.75 --clip l2:1 --eps 10 \
  --delta 1e-5 --seed 3 --set privacy.trust=secagg"
acc() { sed -n 's/^test accuracy *\([0-9.]*\).*/\1/p' "$1"; }
spent() { tail -n 1 "$1" | sed -n 's/.*"total_eps":\([0-9.e+-]*\).*/\1/p'; }

# the default wor batch (m = 181 of 32561) drawn by the coordinator: refused before any release
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-sgd-rdp --set parties.count=2 --set parties.out="$T/sw.p%d" --out "$T/sw"
has "$T/err" "batches of m = 181 of n = 32561 rows drawn by the coordinator (algo.sampling = wor) get no amplification" "subsampled wor under secagg refused"
has "$T/err" "privacy.neighbours = add-remove, algo.sampling = poisson and privacy.public_n" "the refusal says what to set"
hasnot "$T/sw/ledger.jsonl" '"mechanism"' "refused wor: nothing charged"
for np in 2 3 4; do
  expect 0 $MPI -np $np "$DPOPT" train $COMMON --algo dp-sgd-rdp --set algo.m=32561 --iters 30 \
    --lr 4 --set parties.count=$np --set parties.out="$T/s$np.p%d" --out "$T/s$np"
  a=$(acc "$T/out")
  check "$np parties: dp-sgd-rdp test accuracy $a learns" awk -v a="$a" 'BEGIN {exit !(a > 0.8)}'
  c=$(grep -c '"mechanism":"rdp-rho","sampling":"none","accounting":"rdp"' "$T/s$np/ledger.jsonl")
  [ "$c" = 30 ] && ok || bad "$np parties: $c un-amplified rdp-rho charges (want 30)"
  has "$T/s$np/ledger.jsonl" "\"event\":\"trust secagg, collude 1 of $np: " "collude label"
  has "$T/s$np/ledger.jsonl" '"plan":"per-step","steps":30,"what":"30 steps, each charged for its securely aggregated' "plan"
  has "$T/s$np/ledger.jsonl" '"party_total_eps":\[' "per-party accounts"
  e=$(spent "$T/s$np/ledger.jsonl")
  check "$np parties: spent $e of 10" awk -v e="$e" 'BEGIN {exit !(e >= 9.9 && e <= 10)}'
  expect 0 "$DPOPT" ledger "$T/s$np"
  echo "dp-sgd-rdp secagg, $np parties: test accuracy $a, spent eps $e"
done

expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo pnsgd --set algo.T=40 --set algo.D=1 \
  --set parties.count=2 --set parties.out="$T/pn.p%d" --out "$T/pn"
c=$(grep -c '"mechanism":"rdp-rho","sampling":"disjoint","accounting":"rdp"' "$T/pn/ledger.jsonl")
[ "$c" = 40 ] && ok || bad "pnsgd: $c disjoint rdp-rho charges (want 40)"
f=$(grep -m1 '"mechanism":"rdp-rho"' "$T/pn/ledger.jsonl" | sed -n 's/.*"total_eps":\([0-9.e+-]*\).*/\1/p')
e=$(spent "$T/pn/ledger.jsonl") a=$(acc "$T/out")
close "$f" "$e" 1e-9 "pnsgd: one disjoint pass costs one step"
expect 0 "$DPOPT" ledger "$T/pn"
echo "pnsgd secagg, 2 parties, T 40: test accuracy $a, spent eps $e"
expect 4 $MPI -np 2 "$DPOPT" train $COMMON --algo pnsgd --set algo.release=final \
  --set parties.count=2 --set parties.out="$T/r0.p%d" --out "$T/r0"
has "$T/err" "algo.release = final is not private under privacy.trust = secagg" "release final refused"

for algo in phased-sgd phased-erm phased-sc sc-reduce; do
  expect 4 $MPI -np 2 "$DPOPT" train $COMMON --algo $algo --lambda 1e-3 --set parties.count=2 \
    --set parties.out="$T/r-$algo.p%d" --out "$T/r-$algo"
  has "$T/err" "$algo releases only a noised phase output" "$algo refused"
  has "$T/err" "not a sum of per-party contributions" "$algo: why"
  [ -e "$T/r-$algo" ] || [ -e "$T/r-$algo.p1" ] && bad "$algo: a refused run left a run directory" || ok
done

# dp-sgd-rdp with Poisson batches under secagg (add-remove, privacy.public_n declared): every
# party samples its own rows on its own stream, so the release is the subsampled Gaussian with
# the honest shares' noise, charged as central charges it (src/privacy/secagg.c)
AR="--data $S/data/a9a --test $S/data/a9a.t --row-l2-bound 3.75 --clip l2:1 --eps 1 --delta 1e-5 \
  --algo dp-sgd-rdp --set algo.sampling=poisson --set privacy.neighbours=add-remove \
  --public-n 32561 --batch 256 --iters 50 --seed 4"
# party-local sampling sums only the rows each party kept: one step of 8 rows of 32561 (noise
# small at eps 10) moves the model as far as central's 8-row step, not as far as a full pass
# (a full pass over every party's rows, charged as 8 sampled rows, moved it ~1000x farther)
xnorm() { awk '!/^#/ {s += $1 * $1} END {printf "%.9g", sqrt(s)}' "$1/model.txt"; }
ONE=$(echo "$AR" | sed 's/--eps 1 /--eps 10 /; s/--batch 256 --iters 50/--batch 8 --iters 1/')
expect 0 $MPI -np 2 "$DPOPT" train $ONE --set parties.count=2 --out "$T/o1c"
expect 0 $MPI -np 2 "$DPOPT" train $ONE --set parties.count=2 --set privacy.trust=secagg --set parties.out="$T/o1s.p%d" --out "$T/o1s"
xc=$(xnorm "$T/o1c"); xs=$(xnorm "$T/o1s")
check "one 8-row step: ||x|| secagg $xs vs central $xc" awk -v a="$xs" -v b="$xc" \
  'BEGIN {exit !(a > 0 && b > 0 && a < 10 * b && b < 10 * a)}'
zeff() { grep -m1 '"mechanism":"gaussian","sampling":"poisson"' "$1" |
  sed -n 's/.*"noise_scale":\([0-9.e+-]*\),"sensitivity":\([0-9.e+-]*\),.*/\1 \2/p' |
  awk '{printf "%.17g", $1 / $2}'; }
sdsum() { sed -n 's/.*noise sd on the sum \([0-9.e+-]*\)).*/\1/p' "$1"; }
# each party's own journal (ledger.partyK.jsonl, written by the party's first rank after the
# coordinator before it contributes, in the party's own run directory party.K.out: here
# parties.out = RUN.p%d) replays with `dpopt ledger` to the coordinator's view of that party
# (party_total_eps[K]) and holds as many charges as the coordinator's journal
pjournal() { # RUN PARTY LABEL [PARTY_DIR]
  j="${4:-$1.p$2}/ledger.party$2.jsonl"
  expect 0 "$DPOPT" ledger "$j"
  pe=$(sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p' "$T/out")
  ce=$(tail -n 1 "$1/ledger.jsonl" | sed -n 's/.*"party_total_eps":\[\([^]]*\)\].*/\1/p' |
    awk -F, -v k="$2" '{print $(k + 1)}')
  close "$pe" "$ce" 1e-12 "$3: party $2's own journal replays to the coordinator's view"
  pc=$(sed -n 's/^charges: *\([0-9]*\).*/\1/p' "$T/out")
  cc=$(grep -c '"mechanism":"gaussian"' "$1/ledger.jsonl")
  [ "$pc" = "$cc" ] && ok || bad "$3: party $2's journal has $pc charges, the coordinator's $cc"
}
# the PLD path (the default accountant): 10 steps, not 50; every party's guard prices each
# charge by PLD and the party journal replays by PLD, about 3 s of CPU a step a party on a
# loaded 2-core machine (50 steps: 147 s for the run, 73 s for the replay)
AP=$(echo "$AR" | sed 's/--iters 50/--iters 10/')
expect 0 $MPI -np 2 "$DPOPT" train $AP --set parties.count=2 --set privacy.trust=secagg --set parties.out="$T/ps2.p%d" --out "$T/ps2"
pjournal "$T/ps2" 1 "2 parties"
[ ! -e "$T/ps2/ledger.party0.jsonl" ] && [ ! -e "$T/ps2.p0" ] && ok ||
  bad "party 0 (the coordinator's rank only) has no journal of its own"
[ "$(ls "$T/ps2" | grep -c '^ledger\.party')" = 0 ] && ok || bad "no party writes in the coordinator's --out"
c=$(grep -c '"mechanism":"gaussian","sampling":"poisson","accounting":"rdp".*"m":256,"n":32561' "$T/ps2/ledger.jsonl")
[ "$c" = 10 ] && ok || bad "secagg poisson: $c amplified Gaussian charges (want 10)"
hasnot "$T/ps2/ledger.jsonl" '"rdp-rho"' "secagg poisson: no un-amplified rdp-rho charge"
has "$T/ps2/ledger.jsonl" '"what":"10 steps, each charged for its securely aggregated subsampled Gaussian release before it is made (every party samples its own rows, q = 256.*32561, n declared' "secagg poisson plan"
has "$T/ps2/ledger.jsonl" '"party_total_eps":\[' "secagg poisson: per-party accounts"
e=$(spent "$T/ps2/ledger.jsonl") z=$(zeff "$T/ps2/ledger.jsonl")
check "secagg poisson: spent $e of 1" awk -v e="$e" 'BEGIN {exit !(e >= 0.99 && e <= 1)}'
expect 0 "$DPOPT" ledger "$T/ps2"
# the same charge as central at the honest multiplier: central with algo.z = z_eff spends the same
expect 0 $MPI -np 2 "$DPOPT" train $AP --set parties.count=2 --set algo.z=$z --out "$T/pc2"
ec=$(spent "$T/pc2/ledger.jsonl")
close "$e" "$ec" 1e-6 "secagg poisson charge (z_eff $z) = central's at the same (q, sigma_h, T)"
# the runs below charge by the RDP accountant (ARR): the PLD ledger's calibration and every
# party guard's PLD pricing took 2-4 minutes a run on a loaded 2-core machine, and what they
# check (the charge's invariance, the journals' places) does not depend on the accountant;
# ps2 above keeps the PLD path under secagg, its party journal's replay included (the
# party-count runs below keep it too: under RDP their messages differed once in five runs).
# An independent calibration (dpopt calibrate, RDP ledger): the run's honest multiplier is the
# calibrated one, rounded up by the integer share only (gamma s sqrt(P - k) >= sigma: < 1e-4)
ARR="$AR --set privacy.accountant=rdp"
expect 0 $MPI -np 2 "$DPOPT" train $ARR --set parties.count=2 --set privacy.trust=secagg \
  --set parties.out="$T/pr2.p%d" --out "$T/pr2"
zr=$(zeff "$T/pr2/ledger.jsonl") er=$(spent "$T/pr2/ledger.jsonl") sd2=$(sdsum "$T/err")
check "secagg poisson, rdp: spent $er of 1" awk -v e="$er" 'BEGIN {exit !(e >= 0.99 && e <= 1)}'
pjournal "$T/pr2" 1 "2 parties, rdp"
expect 0 "$DPOPT" calibrate --eps 1 --delta 1e-5 --steps 50 --sampling poisson --batch 256 \
  --n 32561 --accountant rdp
zc=$(sed -n 's/^noise_multiplier *\([0-9.e+-]*\).*/\1/p' "$T/out")
check "secagg poisson, rdp: multiplier $zr = calibrate's $zc (up to the share's rounding)" \
  awk -v a="$zr" -v b="$zc" 'BEGIN {exit !(b > 0 && a / b > 1 - 1e-6 && a / b < 1 + 2e-4)}'
# invariance: the charge depends only on the public m, n_pub, T and the P - k honest parties, not
# on the ranks or the split (the batches do: each party samples its own rows on its own stream):
# 2 parties on 4 ranks and 3 parties with collude 2 charge exactly what 2 parties on 2 ranks do
# (pr2);
# the released sum carries the honest noise times sqrt(P / (P - k))
expect 0 $MPI -np 4 "$DPOPT" train $ARR --set parties.count=2 --set privacy.trust=secagg --set parties.out="$T/ps4.p%d" --out "$T/ps4"
close "$er" "$(spent "$T/ps4/ledger.jsonl")" 0 "secagg poisson: 2 parties on 4 ranks, the same charge"
pjournal "$T/ps4" 0 "2 parties on 4 ranks"
pjournal "$T/ps4" 1 "2 parties on 4 ranks"
[ "$(ls "$T/ps4" "$T/ps4.p0" "$T/ps4.p1" | grep -c '^ledger\.party')" = 2 ] &&
  [ "$(ls "$T/ps4" | grep -c '^ledger\.party')" = 0 ] && ok ||
  bad "4 ranks: one journal a party, each in its party's own directory"
expect 0 $MPI -np 3 "$DPOPT" train $ARR --set parties.count=3 --set privacy.collude=2 \
  --set privacy.trust=secagg --set parties.out="$T/ps3.p%d" --out "$T/ps3"
sd3=$(sdsum "$T/err")
close "$zr" "$(zeff "$T/ps3/ledger.jsonl")" 0 "secagg poisson: 3 parties collude 2, the same honest noise"
close "$er" "$(spent "$T/ps3/ledger.jsonl")" 0 "secagg poisson: 3 parties collude 2, the same charge"
pjournal "$T/ps3" 1 "3 parties"
pjournal "$T/ps3" 2 "3 parties"
# each party names its own run directory in its own configuration (an MPMD job: one app
# context a party, party.K.out given only to party K's rank; no shared file system needed):
# each journal lands in its party's directory and replays to the coordinator's view
AR3="$ARR --set parties.count=3 --set privacy.collude=2 --set privacy.trust=secagg --iters 5"
expect 0 $MPI -np 1 "$DPOPT" train $AR3 --out "$T/mp" : -np 1 "$DPOPT" train $AR3 \
  --set party.1.out="$T/mp-one" --out "$T/mp" : -np 1 "$DPOPT" train $AR3 \
  --set party.2.out="$T/mp-two/run" --out "$T/mp"
pjournal "$T/mp" 1 "own directories" "$T/mp-one"
pjournal "$T/mp" 2 "own directories" "$T/mp-two/run"
[ "$(ls "$T/mp" | grep -c '^ledger\.party')" = 0 ] && ok || bad "MPMD: a party wrote in --out"
# refused before anything is written: a party without its own directory (named, with the key
# to give), party 0's when the coordinator is its only rank, one outside secagg, a directory
# that holds a journal already (a second run into it would mix two runs' accounts)
expect 1 $MPI -np 3 "$DPOPT" train $AR3 --set party.1.out="$T/nd1" --out "$T/nd"
has "$T/err" "party 2 keeps its own journal in its own run directory, and none is given on its rank 2: give party.2.out = DIR (or parties.out = DIR%d)" "a party without its own directory refused"
[ "$(grep -c 'keeps its own journal' "$T/err")" = 1 ] && ok || bad "the refusal is printed once"
[ ! -e "$T/nd" ] && [ ! -e "$T/nd1" ] && ok || bad "a refused run wrote a directory"
expect 1 $MPI -np 3 "$DPOPT" train $AR3 --set parties.out="$T/nd.p%d" --set party.0.out="$T/nd0" --out "$T/nd"
has "$T/err" "party 0's only rank is the coordinator's: its account is the coordinator's journal" "party.0.out with the coordinator alone refused"
expect 1 $MPI -np 2 "$DPOPT" train $ARR --set parties.count=2 --set parties.out="$T/nd.p%d" --out "$T/nd"
has "$T/err" "holds its guard's journal under privacy.trust = secagg, local or shares, not central" "party.K.out under central trust refused"
expect 1 $MPI -np 3 "$DPOPT" train $AR3 --set party.1.out="$T/mp-one" --set party.2.out="$T/nd2" --out "$T/nd"
has "$T/err" "already holds party 1's journal of another run" "a party directory with a journal refused"
[ ! -e "$T/nd" ] && [ ! -e "$T/nd2" ] && ok || bad "a refused run (journal exists) wrote a directory"
check "secagg poisson: sd on the sum $sd2 (2 of 1 honest) / $sd3 (3 of 1 honest) = sqrt(2/3)" \
  awk -v a="$sd2" -v b="$sd3" 'BEGIN {r = a / b / sqrt(2 / 3); exit !(r > 1 - 1e-3 && r < 1 + 1e-3)}'
echo "secagg poisson: z_eff $z, spent $e (central at z_eff: $ec); rdp: z_eff $zr, spent $er, calibrate $zc; sd on the sum $sd2 / $sd3"
expect 1 $MPI -np 2 "$DPOPT" train $(echo "$AR" | sed 's/--public-n 32561//') --set parties.count=2 \
  --set privacy.trust=secagg --set parties.out="$T/r-pn.p%d" --out "$T/r-pn"
has "$T/err" "declare the public data set size (privacy.public_n" "secagg poisson without a public n refused"
expect 1 $MPI -np 2 "$DPOPT" train $AR --set parties.count=2 --set privacy.trust=local \
  --set parties.out="$T/r-loc.p%d" --out "$T/r-loc"
has "$T/err" "under privacy.trust = local the coordinator draws the batch" "local poisson still refused"

# Party counts (secagg, add-remove, per-party files): a party's row count is private, so no
# rank learns another party's count.  Every party loads its own file on its own communicator
# (MPI_Comm_split by party), numbers its rows within the party (dpo__finish_rows on that
# communicator: ranks of one party are one trust domain), and nothing reduces, scans or gathers
# a count over the whole communicator (src/run/run_parties.c, dpo_oracle_create with n_public:
# only the dimension is reduced; every rank keeps just its own count); the size everything uses
# is the declared public n.  Checked here from the outside: two parties with different counts
# (16281 / 16280) and the same split with one row fewer in party 1 give the same ledger, the
# same messages, the same trace (but its time column) and the same summary (but times, paths
# and the test metrics, which depend on the model): nothing printed or saved holds a count.
expect 0 "$DPOPT" simulate --parties 2 --seed 2 "$S/data/a9a" "$T/pc.%d"
cp "$T/pc.0" "$T/pd.0"
sed '$d' "$T/pc.1" > "$T/pd.1"
for k in 0 1; do cp "$T/pc.$k.schema" "$T/pd.$k.schema"; done # the parties' public schema
PC="$(echo "$AR" | sed "s|--data [^ ]*||") --iters 20 --set parties.count=2 \
  --set privacy.trust=secagg"
strip() { # (phases_s: rank 0's own times, one object)
  tr -d '\n' < "$1" | sed 's/"phases_s": *{[^}]*}//' | tr ',' '\n' |
    grep -v 'time_s\|"test_\|journal\|"train"\|"data"\|"dir"'
}
expect 0 $MPI -np 2 "$DPOPT" train $PC --set parties.data="$T/pc.%d" --set parties.out="$T/cc.p%d" --out "$T/cc"
sed "s|$T/pc|X|g" "$T/err" > "$T/cc.err"
expect 0 $MPI -np 2 "$DPOPT" train $PC --set parties.data="$T/pd.%d" --set parties.out="$T/cd.p%d" --out "$T/cd"
sed "s|$T/pd|X|g" "$T/err" > "$T/cd.err"
has "$T/cc.err" "public size 32561 (privacy.public_n; the parties' row counts are private)" \
  "party counts: the public size is the one printed"
check "party counts: the same messages" cmp "$T/cc.err" "$T/cd.err"
unchained "$T/cc/ledger.jsonl" | sed "s|$T/cc|X|g" > "$T/cc.l" # (each journal its own chain)
unchained "$T/cd/ledger.jsonl" | sed "s|$T/cd|X|g" > "$T/cd.l"
check "party counts: the same ledger" cmp "$T/cc.l" "$T/cd.l"
strip "$T/cc/summary.json" > "$T/cc.s"
strip "$T/cd/summary.json" > "$T/cd.s"
check "party counts: the same summary" cmp "$T/cc.s" "$T/cd.s"
cut -d, -f1,3- "$T/cc/trace.csv" > "$T/cc.t"
cut -d, -f1,3- "$T/cd/trace.csv" > "$T/cd.t"
check "party counts: the same trace" cmp "$T/cc.t" "$T/cd.t"
hasnot "$T/cc/summary.json" '"rows"' "party counts: no per-party rows in the summary"
has "$T/cc/summary.json" '"n":32561,' "party counts: the summary's n is the public one"
c=$(grep -c '"sampling":"poisson".*"m":256,"n":32561' "$T/cc/ledger.jsonl")
[ "$c" = 20 ] && ok || bad "party counts: $c charges at the public n (want 20)"
expect 1 $MPI -np 2 "$DPOPT" train $(echo "$PC" | sed 's/--public-n 32561//') \
  --set parties.data="$T/pc.%d" --set parties.out="$T/r-pc.p%d" --out "$T/r-pc"
has "$T/err" "the parties' row counts are private and are not exchanged" \
  "party counts: per-party data without a public n refused"

# audits: one party per trial (MPI_COMM_SELF): encoding, share, rdp-rho charge
for a in "dp-sgd-rdp --iters 1 --set algo.m=10 --row-l2-bound 4" "pnsgd --row-l2-bound 1 --set algo.D=1"; do
  expect 0 $MPI -np 2 "$DPOPT" audit --algo $a --eps 4 --delta 1e-5 --clip l2:1 \
    --trials 2000 --alpha 1e-4 --quiet --set privacy.trust=secagg
  lb=$(awk 'NR == 2 {print $4}' "$T/out"); cl=$(awk 'NR == 2 {print $2}' "$T/out")
  check "secagg audit of ${a%% *}: bound $lb below the claim $cl" awk -v a="$lb" -v b="$cl" \
    'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0 && b + 0 > 3.9)}'
  echo "audit ${a%% *} secagg: eps_lb $lb, claimed $cl"
done
# DP-ADMM: the noised gradient is a sum over the ranks
ADMM="--eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --test $S/data/a9a.t --seed 5 \
  --maxit 60 --set privacy.sigma_rule=rdp"
sig() { sed -n 's/^sigma *\([0-9.e+-]*\) .*/\1/p' "$1"; }
tacc() { sed -n 's/^test *accuracy \([0-9.]*\).*/\1/p' "$1"; }
for m in dpadmm dpaccadmm; do
  for np in 2 3; do
    [ $m = dpadmm ] && [ $np = 3 ] && continue
    expect 0 $MPI -np $np "$DPOPT" admm --method $m $ADMM --out "$T/c$m$np" \
      "$S/data/a9a"
    cp "$T/out" "$T/c.out"
    expect 0 $MPI -np $np "$DPOPT" admm --method $m $ADMM --set privacy.trust=secagg \
      --set parties.out="$T/s$m$np.p%d" --out "$T/s$m$np" "$S/data/a9a"
    sc=$(sig "$T/c.out") ss=$(sig "$T/out") ac=$(tacc "$T/c.out") as=$(tacc "$T/out")
    check "$m $np parties: secagg sigma $ss = central $sc x sqrt(P/(P-1))" awk -v c="$sc" -v s="$ss" \
      -v p=$np 'BEGIN {r = s / (c * sqrt(p / (p - 1))); exit !(c > 0 && r >= 1 && r < 1.03)}'
    close "$ac" "$as" 0.01 "$m $np parties: secagg vs central test accuracy"
    has "$T/out" "the training objective is withheld" "$m: no training objective under secagg"
    has "$T/s$m$np/ledger.jsonl" "\"event\":\"trust secagg, collude 1 of $np: " "$m: journal label"
    c=$(grep -c '"mechanism":"rdp-rho","sampling":"none"' "$T/s$m$np/ledger.jsonl")
    [ "$c" = 61 ] && ok || bad "$m $np parties: $c rdp-rho charges (want 61)"
    # each party's guard priced every release and journalled it in its own run directory
    # (parties.out), none in the coordinator's --out
    [ "$(ls "$T/s$m$np" | grep -c '^ledger\.party')" = 0 ] && ok ||
      bad "$m $np parties: a party journal in the coordinator's --out"
    k=1
    while [ $k -lt $np ]; do
      expect 0 "$DPOPT" ledger "$T/s$m$np.p$k/ledger.party$k.jsonl"
      has "$T/out" "^charges: *61$" "$m $np parties: party $k's own journal holds the 61 releases"
      pe=$(sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p' "$T/out")
      close "$pe" "$(spent "$T/s$m$np/ledger.jsonl")" 1e-12 "$m $np parties: party $k's journal = the coordinator's view"
      k=$((k + 1))
    done
    echo "$m $np parties: sigma central $sc secagg $ss; test accuracy central $ac secagg $as"
  done
done
# a coordinator that announces half the share sigma from release 3 on (dpopt-test's switch):
# every party's guard refuses, the round is withheld, no party journals more than it admitted
expect 1 $MPI -np 3 "$DPOPT_TEST" admm --test-coordinator sigma:3 --method dpadmm $ADMM \
  --set privacy.trust=secagg --set parties.out="$T/dev.p%d" --out "$T/dev" "$S/data/a9a"
has "$T/err" "party [12] refuses release 3 of the coordinator: its noise (share sigma" "admm: a smaller noise refused"
has "$T/err" "nothing contributed, the round is withheld" "admm: the round withheld"
for k in 1 2; do
  expect 0 "$DPOPT" ledger "$T/dev.p$k/ledger.party$k.jsonl"
  has "$T/out" "^charges: *2$" "admm: party $k admitted and journalled releases 1 and 2 only"
done
expect 4 $MPI -np 2 "$DPOPT" admm --method dpadmm --sigma 0.1 $ADMM --set privacy.trust=secagg "$S/data/a9a"
has "$T/err" "calibrates its own noise" "--sigma refused"
# the trace would show the coordinator exact training sums: under secagg it has no rows
expect 0 $MPI -np 2 "$DPOPT" admm --method dpadmm $ADMM --maxit 3 --set privacy.trust=secagg \
  --set parties.out="$T/tr.p%d" --out "$T/tr" "$S/data/a9a"
has "$T/tr/trace.csv" "no per-iteration rows" "secagg: the trace says why it has no rows"
[ "$(grep -vc '^#' "$T/tr/trace.csv")" = 0 ] && ok || bad "secagg: trace.csv has rows"
expect 4 $MPI -np 2 "$DPOPT" admm --method consensus --private $ADMM --set privacy.trust=secagg "$S/data/a9a"
has "$T/err" "noises each agent's own clipped message" "consensus refused with the reason"
# (consensus under local runs with every party's own journal: test_admm_cons_local.sh)
expect 1 $MPI -np 2 "$DPOPT" admm --method consensus --private $ADMM --set privacy.trust=local "$S/data/a9a"
has "$T/err" "party 1 keeps its own journal in its own run directory, and none is given" "consensus under local without party.K.out refused"
finish test_secagg_sco
