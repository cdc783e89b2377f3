#!/bin/sh
# The audit of dpopt tune's geometric search through its score (`dpopt audit --tune --mean M
# --canary valid`): at delta > 0 a repetition's cost is mostly its score, Laplace(1/eps0)
# noise on the count of correct validation predictions, so the canary is a validation row
# every model predicts right (D' adds 1 to every count) while the candidates train on zero
# rows in d = 2 (a model's type: how many of its two signs are >= 0, chances 1/4, 1/2, 1/4).
# The released (type, score) has density g p_t f_b(s - c_t - [D']) / (1 - (1 - g) Q(s))^2
# (Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", 2022,
# geometric K, g = 1 / M; Q the chance one repetition scores below s); the event "both signs
# >= 0 and score in [1, 2]" is likelier on D.  At eps 1, delta 1e-5 with the dp-sgd-rdp grid
# (eps0 = 0.2926) its log ratio is 0.62 intact and 1.15 with the score's noise halved
# (jobs/audit/tune-valid-canary.py, doc/results.md): the counts must match the closed form,
# the intact tune pass (20000 trials a set) and the halved noise be a VIOLATION (60000, exit
# 6); seeded (--test-seed 39), unseeded the intact check fails with probability at most
# alpha = 0.05.  Halving the training noise changes no probability here.
. "$(dirname "$0")/../lib/testlib.sh"

lb() { awk 'NR == 2 {print $4}' "$T/out"; }
claim() { awk 'NR == 2 {print $2}' "$T/out"; }
below() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0)}'; }
# pv EPS0 SET: the event's probability (Simpson's rule over s in [1, 2]) at Laplace scale
# 1 / EPS0 on D (SET 0) or D' (1)
pv() {
  awk -v e="$1" -v w="$2" 'function F(u) {return u < 0 ? exp(u * e) / 2 : 1 - exp(-u * e) / 2}
    function f(s,  Q, u) {Q = (F(s - 2 - w) + 2 * F(s - 1 - w) + F(s - w)) / 4; u = s - 2 - w
      return g / 4 * e / 2 * exp(-e * (u < 0 ? -u : u)) / (1 - (1 - g) * Q) ^ 2}
    BEGIN {g = 0.2; n = 200; h = 1 / n; t = f(1) + f(2)
      for (i = 1; i < n; i++) t += (i % 2 ? 4 : 2) * f(1 + i * h)
      print t * h / 3}'
}
# near COUNT N P: COUNT of N within 4.5 standard deviations of N P
near() { awk -v k="$1" -v n="$2" -v p="$3" 'BEGIN {exit !((k - n * p) ^ 2 <= 20.25 * n * p * (1 - p))}'; }
cnt() { sed -n "s/.*(\([0-9]*\) \/ \([0-9]*\) on D, D').*/\\$1/p" "$T/out"; }
law() { # law EPS0 N WHAT: both sets' counts match the closed form
  check "$3: $(cnt 1) of $2 on D near $2 x $(pv "$1" 0)" near "$(cnt 1)" "$2" "$(pv "$1" 0)"
  check "$3: $(cnt 2) of $2 on D' near $2 x $(pv "$1" 1)" near "$(cnt 2)" "$2" "$(pv "$1" 1)"
}

R="--tune --algos dp-sgd-rdp --steps 0.5,1,2 --mean 5 --eps 1 --delta 1e-5 --clip l2:1
  --row-l2-bound 4 --batch 10 --canary valid --quiet --test-seed 39"
# shellcheck disable=SC2086
expect 0 "$DPOPT_TEST" audit $R --trials 20000 --out "$T/v" --json "$T/v.json"
check "intact: bound $(lb) below the claim $(claim)" below "$(lb)" "$(claim)"
has "$T/out" "^tune  *1  *1e-05 " "the claim is the tune's (eps, delta)"
e0=$(sed -n 's/.*(eps0 = \([0-9.]*\)).*/\1/p' "$T/out")
check "eps0 = $e0 is printed (0.29)" below 0.29 "$e0"
has "$T/v.json" '"method":"tune-mean-valid"' "json method"
law "$e0" 20000 "intact"
# shellcheck disable=SC2086
expect 6 "$DPOPT_TEST" audit $R --trials 60000 --test-break-noise --out "$T/vh"
check "score's noise halved: bound $(lb) above the claim $(claim)" below "$(claim)" "$(lb)"
has "$T/out" "VIOLATION" "score's noise halved: reported"
law "$(awk -v e="$e0" 'BEGIN {print 2 * e}')" 60000 "halved"

# refused, naming why: the validation canary without the geometric search or without a tune,
# an unknown place
expect 1 "$DPOPT_TEST" audit --tune --algos dp-gd --steps 1 --eps 1 --clip l1:1 --row-l1-bound 4 \
  --canary valid --quiet --out "$T/r1"
has "$T/err" "give --mean too" "--canary valid without --mean is refused"
expect 1 "$DPOPT_TEST" audit --algo dp-gd --eps 1 --clip l1:1 --row-l1-bound 4 --row-l2-bound 10 \
  --iters 1 --canary valid --quiet --out "$T/r3"
has "$T/err" "give --tune --mean too" "--canary without --tune is refused"
check "the refused audit wrote nothing" test ! -e "$T/r3"
# shellcheck disable=SC2086
expect 1 "$DPOPT_TEST" audit $R --canary model --trials 10 --out "$T/r2"
has "$T/err" "give train or valid" "--canary model is refused"
finish test_audit_tune_valid
