#!/bin/sh
# HAMSI's step schedule with a knee (--eta-late E after --eta-from T, issue 15):
# beta_t = (eta t)^gamma up to epoch T, then (eta T + E (t - T))^gamma.  Checked against the
# closed form through runs that must give the same bits:
#  - E = eta is the plain schedule (eta T + eta (t - T) = eta t exactly for eta = 1);
#  - T = 0 is the plain schedule with eta = E (0 + E t = E t);
#  - with T = 5 and E = 0.1 the first 5 epochs are those of the plain run (the trace's training
#    RMSE identical) and the later ones are not; summary.json records E and T;
#  - a negative E or T is refused, naming the options, once;
#  - the --plain HAMSI defaults are eta 0.2, E 0.1, T 15 and the metric diag(sqrt(deg dbar))
#    (--metric-pow 0.5; the same bits as these given explicitly, unlike eta 1 without a knee or
#    the metric diag(deg)), recorded in summary.json; mb-GD with --plain and the biased default
#    model keep eta 1 without a knee and diag(deg); a metric power outside [0, 1] is refused;
#  - --metric-pow 0, 0.5, 1: one mb-GD step on 4 ratings equals its closed form.
# The identities run with the schedule given in full (eta 1 and E 0 = off are the thesis's).
. "$(dirname "$0")/../lib/testlib.sh"
R="$T/r.txt"
expect 0 "$DPOPT" gen ratings --users 300 --items 500 --ratings 20000 --realistic "$R"
run() { # NAME OPTIONS...
  n=$1; shift
  expect 0 $MPI -np 2 "$DPOPT" mf --plain --rank 20 --epochs 20 --holdout 0 --seed 3 --eval-every 1 \
    --eval-budget 0 --out "$T/$n" "$@" "$R"
}
same() { # A B MSG
  check "$3 (X1)" cmp -s "$T/$1/X1.txt" "$T/$2/X1.txt"
  check "$3 (X2t)" cmp -s "$T/$1/X2t.txt" "$T/$2/X2t.txt"
}
rmse() { grep -v '^#' "$T/$1/trace.csv" | awk -F, -v e="$2" '$1 == e {print $4}'; }
run plain --eta 1 --eta-late 0
run late1 --eta 1 --eta-late 1
same plain late1 "eta-late = eta gives the plain schedule"
run eta25 --eta 0.25 --eta-late 0
run from0 --eta 1 --eta-late 0.25 --eta-from 0
same eta25 from0 "eta-from 0 gives the plain schedule with eta = eta-late"
run knee --eta 1 --eta-late 0.1 --eta-from 5
for e in 1 3 5; do
  check "epoch $e before the knee as the plain run" test "$(rmse plain $e)" = "$(rmse knee $e)"
done
check "epoch 6 after the knee differs" test "$(rmse plain 6)" != "$(rmse knee 6)"
check "epoch 20 differs" test "$(rmse plain 20)" != "$(rmse knee 20)"
check "summary records eta_late" test "$(jq -r .eta_late "$T/knee/summary.json")" = 0.1
check "summary records eta_from" test "$(jq -r .eta_from "$T/knee/summary.json")" = 5
check "no eta_late in a plain run's summary" \
  test "$(jq -r .eta_late "$T/plain/summary.json")" = null
# the --plain HAMSI defaults
run def
run defx --eta 0.2 --eta-late 0.1 --eta-from 15 --metric-pow 0.5
same def defx "--plain HAMSI defaults are --eta 0.2 --eta-late 0.1 --eta-from 15 --metric-pow 0.5"
check "the defaults are not eta 1 without a knee" test "$(rmse plain 20)" != "$(rmse def 20)"
run defd --metric-pow 1
check "the default metric is not diag(deg)" test "$(rmse def 20)" != "$(rmse defd 20)"
check "summary records the default eta, eta_late, eta_from, metric_pow" \
  jq -e '.eta == 0.2 and .eta_late == 0.1 and .eta_from == 15 and .metric_pow == 0.5' "$T/def/summary.json"
expect 0 $MPI -np 2 "$DPOPT" mf --plain --method mbgd --rank 20 --epochs 1 --holdout 0 --out "$T/gd" "$R"
check "mb-GD --plain keeps eta 1, no knee, diag(deg)" \
  jq -e '.eta == 1 and .eta_late == null and .metric_pow == 1' "$T/gd/summary.json"
expect 0 $MPI -np 2 "$DPOPT" mf --rank 20 --epochs 1 --out "$T/bz" "$R"
check "the biased default keeps eta 1, no knee, diag(deg)" \
  jq -e '.eta == 1 and .eta_late == null and .metric_pow == 1' "$T/bz/summary.json"
# the metric against its closed form: one mb-GD epoch of one stratum (no safeguard) from given
# factors is x -= (sigma0 / beta_1) D^-1 g with beta_1 = 1, g = 2 e x_partner (e = x1'x2 - y,
# rank 1), D = diag(deg^P dbar^(1-P)); users of degree 2, 1, 1 (dbar 4/3), items 2, 2 (dbar 2)
printf '1::1::3\n1::2::4\n2::1::5\n3::2::2\n' >"$T/t.txt"
mkdir -p "$T/t0"
printf '# dpopt mf factors: 3 x 1\n1\n0.5\n2\n' >"$T/t0/X1.txt"
printf '# dpopt mf factors: 2 x 1\n1.5\n1\n' >"$T/t0/X2t.txt"
for P in 0 0.5 1; do
  expect 0 "$DPOPT" mf --plain --method mbgd --rank 1 --strata 1 --epochs 1 --holdout 0 --reject-tol -1 \
    --x0 "$T/t0" --metric-pow $P --quiet --out "$T/m$P" "$T/t.txt"
  got=$(cat "$T/m$P/X1.txt" "$T/m$P/X2t.txt" | grep -v '^#' | tr '\n' ' ')
  check "--metric-pow $P: one gradient step in diag(deg^P dbar^(1-P)) (got $got)" awk -v P=$P -v got="$got" 'BEGIN {
    x[1] = 1; x[2] = 0.5; x[3] = 2; z[1] = 1.5; z[2] = 1
    split("1 1 2 3", u, " "); split("1 2 1 2", it, " "); split("3 4 5 2", y, " ")
    for (k = 1; k <= 4; k++) {
      e = x[u[k]] * z[it[k]] - y[k]
      g1[u[k]] += 2 * e * z[it[k]]; g2[it[k]] += 2 * e * x[u[k]]; d1[u[k]]++; d2[it[k]]++
    }
    split(got, v, " ")
    for (a = 1; a <= 3; a++) w[a] = x[a] - 0.2 * g1[a] / (d1[a] ^ P * (4 / 3) ^ (1 - P))
    for (b = 1; b <= 2; b++) w[3 + b] = z[b] - 0.2 * g2[b] / (d2[b] ^ P * 2 ^ (1 - P))
    for (j = 1; j <= 5; j++) if ((v[j] - w[j]) ^ 2 > 1e-24 * (1 + w[j] ^ 2)) exit 1
  }'
done
check "--metric-pow moves the user of degree 2: 0 and 1 differ" \
  test "$(grep -v "^#" "$T/m0/X1.txt" | head -n 1)" != "$(grep -v "^#" "$T/m1/X1.txt" | head -n 1)"
for bad in -0.5 1.5; do
  expect 1 $MPI -np 2 "$DPOPT" mf --plain --rank 20 --epochs 5 --holdout 0 --metric-pow $bad "$R"
  has "$T/err" "metric_pow in \\[0, 1\\]" "--metric-pow $bad refused"
  check "--metric-pow $bad: refused once" test "$(grep -c 'bad options' "$T/err")" = 1
done
for bad in "--eta-late -1" "--eta-from -2"; do
  expect 1 $MPI -np 2 "$DPOPT" mf --plain --rank 20 --epochs 5 --holdout 0 $bad "$R"
  has "$T/err" "eta_late, eta_from" "$bad refused"
  check "$bad: refused once" test "$(grep -c 'bad options' "$T/err")" = 1
done
finish test_mf_schedule
