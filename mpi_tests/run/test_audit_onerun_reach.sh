#!/bin/sh
# dpopt audit --one-run --admm consensus is refused with the numbers of the run's own settings
# that show why one run would rarely see a lost noise (Steinke, Nasr and Jagielski 2023): one
# canary a party (a party clips its whole message, so its canaries share the clip), as many as
# ranks; the ceiling (every guess right); each canary at most mu-GDP with mu = sqrt(T) 2C /
# sigma; and the bound on the probability that the audit's bound passes the claim.  Checked
# against what does not come from the refusal's code: mu from `dpopt calibrate`'s RDP
# multiplier (sigma = 2C z for T releases), the ceiling from jobs/audit/one-run-reach.py's own
# implementation of the bound (1.031 at 16 canaries and delta 1e-3, 0.236 at 8), and the
# theorem (the intact probability is at most alpha; a claim above the ceiling is never passed).
. "$(dirname "$0")/../lib/testlib.sh"

num() { sed -n "s/.*$1.*/\\1/p" "$T/err" | head -n 1; }
A9="--admm consensus --private $S/data/a9a --dim 123 --clip 1 --quiet"

# 16 parties at eps 1 (admm's delta 1e-3, T = 200): the ceiling 1.031 just passes the claim
# shellcheck disable=SC2086
expect 1 $MPI -np 16 "$DPOPT" audit --one-run $A9 --eps 1 --out "$T/x"
check "the refusal printed once" test "$(grep -c 'not built' "$T/err")" = 1
has "$T/err" "one canary a party, 16 here (one a rank)" "16 parties, one canary each"
close "$(num 'bound would be \([0-9.]*\) (claimed')" 1.03 0.005 "ceiling at 16 canaries"
z=$("$DPOPT" calibrate --eps 1 --delta 1e-3 --steps 200 --sensitivity 1 | awk '$1 == "rdp_multiplier" {print $2}')
close "$(num 'at most \([0-9.]*\)-GDP')" "$(awk -v z="$z" 'BEGIN {print sqrt(200) / z}')" 0.001 \
  "mu = sqrt(T) / z, z the RDP multiplier of dpopt calibrate ($z)"
close "$(num 'at sigma \([0-9.]*\) C')" "$(awk -v z="$z" 'BEGIN {print 2 * z}')" 0.01 "sigma = 2 z C"
pi=$(num 'at most \([0-9.e-]*\) intact')
ph=$(num 'and \([0-9.e-]*\) with the noise halved')
check "intact: passes the claim with probability $pi <= alpha 0.05" awk -v p="$pi" 'BEGIN {exit !(p != "" && p <= 0.05)}'
check "halved: $ph > intact $pi, and below 0.5: no power" \
  awk -v a="$pi" -v b="$ph" 'BEGIN {exit !(a != "" && b + 0 > a + 0 && b < 0.5)}'
has "$T/err" "dpopt audit --admm consensus --white-box" "the audit that has power named"
# eps 8: the claim is above the ceiling, so neither run can pass it
# shellcheck disable=SC2086
expect 1 $MPI -np 16 "$DPOPT" audit --one-run $A9 --eps 8 --out "$T/x"
has "$T/err" "probability at most 0 intact and 0 with the noise halved" "eps 8: never passed"
# 8 parties: every guess right bounds eps by 0.236; a fixed sigma: mu = sqrt(100) 2 / 10 = 2
# shellcheck disable=SC2086
expect 1 $MPI -np 8 "$DPOPT" audit --one-run $A9 --eps 1 --sigma 10 --maxit 100 --out "$T/x"
has "$T/err" "8 here" "8 parties"
close "$(num 'bound would be \([0-9.]*\) (claimed')" 0.236 0.005 "ceiling at 8 canaries"
has "$T/err" "at most 2-GDP (100 messages of sensitivity 2C at sigma 10 C), 4 with" "fixed sigma: mu 2"
check "nothing left behind by the refusals" test ! -e "$T/x"
finish test_audit_onerun_reach
