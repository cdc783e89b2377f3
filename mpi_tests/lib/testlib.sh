# Shared preamble of the shell tests in mpi_tests/ROOM/, sourced first thing:
#   . "$(dirname "$0")/testlib.sh"
# Sets B and S (absolute build and source directories), DPOPT, DPOPT_TEST (dpopt-test: dpopt
# with the audit's test switches, built by make check, never installed), MPIRUN, MPI (mpirun with
# --oversubscribe), a temporary directory T removed at exit, the counters pass and fail, and:
#   ok / bad MSG               count a passed / failed check (bad prints "FAIL: MSG")
#   expect STATUS CMD...       run CMD with stdout, stderr in $T/out, $T/err; check its status
#                              (on failure the last 20 lines of both are shown)
#   has FILE PATTERN MSG       FILE contains PATTERN (grep; shows FILE when it does not)
#   hasnot FILE PATTERN MSG    FILE does not contain PATTERN
#   check MSG CMD...           CMD succeeds
#   close A B TOL MSG          |A - B| <= TOL, both numbers present
#   finish NAME                print the tally; the exit status is 0 only if nothing failed
#   need_numpy                 PY = a python3 that imports numpy (python3, /usr/bin/python3),
#                              else the test is skipped (exit 77)
#   DPO_TEST_TIMES=FILE       (environment) expect appends "SECONDS STATUS CMD" to FILE for
#                              each command it runs: where a slow test spends its time
#   unchained JOURNAL          the journal without its per-journal nonce, chain tags and run
#                              id line (two runs' journals differ in those even when their
#                              charges agree)
#   term_ranks_when PID SECS CMD...  PID a backgrounded mpirun: wait until CMD succeeds
#                              (checked every 0.05 s, at most SECS seconds), SIGTERM the ranks
#                              (PID's children), wait for PID; its exit status in st
set -u
B=$(cd "${top_builddir:-.}" && pwd)
S=$(cd "${top_srcdir:-..}" && pwd)
DPOPT="$B/dpopt"
DPOPT_TEST="$B/dpopt-test"
MPIRUN=${MPIRUN:-mpirun}
MPI="$MPIRUN --oversubscribe"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# the calibration cache (calib_cache.c) of the runs below stays in T, not in the user's home
export XDG_CACHE_HOME="$T/cache"
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect() {
  want=$1; shift
  [ -n "${DPO_TEST_TIMES:-}" ] && t0=$(date +%s.%N)
  "$@" >"$T/out" 2>"$T/err"; got=$?
  [ -n "${DPO_TEST_TIMES:-}" ] &&
    echo "$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.2f", $2 - $1}') $got $*" >>"$DPO_TEST_TIMES"
  if [ "$got" = "$want" ]; then ok; else
    bad "exit $got (want $want): $*"
    cat "$T/err" "$T/out" | sed 's/^/    /' | tail -n 20
  fi
}
has() {
  if grep -q -- "$2" "$1"; then ok; else bad "$3: no '$2' in $1:"; sed 's/^/    /' "$1" | head -n 20; fi
}
hasnot() { if grep -q -- "$2" "$1"; then bad "$3: '$2' in $1"; else ok; fi; }
check() {
  d=$1; shift
  if "$@"; then ok; else bad "$d"; fi
}
close() {
  if awk -v a="$1" -v b="$2" -v t="$3" \
      'BEGIN {d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t)}'; then
    ok
  else
    bad "$4: '$1' vs '$2' (tolerance $3)"
  fi
}
term_ranks_when() {
  _pid=$1 _n=$(($2 * 20)) _i=0
  shift 2
  while ! "$@" && [ $_i -lt $_n ]; do sleep 0.05; _i=$((_i + 1)); done
  kill -TERM $(ps -o pid= --ppid $_pid) 2>/dev/null
  wait $_pid; st=$?
}
unchained() { sed '/"event":"run_id /d; s/,"nonce":"[0-9a-f]*"//; s/,"chain":"[0-9a-f]*"}$/}/' "$1"; }
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" = 0 ]
  exit $?
}
# softmax3_data SEED N OUT: N rows of three Gaussian classes (labels 0..2, 5 features, chance 1/3)
softmax3_data() {
  awk -v seed="$1" -v n="$2" 'BEGIN { srand(seed); for (i = 0; i < n; i++) { c = i % 3;
    printf "%d", c; for (j = 1; j <= 5; j++) { u1 = rand(); u2 = rand();
      z = sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
      printf " %d:%.6f", j, (j == c + 1 ? 1.2 : 0) + (j == 4 ? 0.5 : 0) + 0.6 * z }
    printf "\n" } }' > "$3"
  printf '[schema]\nfeatures = 5\n' > "$3.schema" # the generator's public width
}
# idx_head SRC-PREFIX N OUT-PREFIX: the first N images / labels of an IDX set (gzipped
# SRC-PREFIX-{images-idx3,labels-idx1}-ubyte.gz) as IDX files: the header with count N, the bytes
idx_head() {
  n=$2
  h=$(printf '\\%03o\\%03o\\%03o\\%03o' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))
  { printf '\000\000\010\003'; printf "$h"; printf '\000\000\000\034\000\000\000\034'
    gzip -dc "$1-images-idx3-ubyte.gz" | tail -c +17 | head -c $((n * 784)); } > "$3-images-idx3-ubyte"
  { printf '\000\000\010\001'; printf "$h"
    gzip -dc "$1-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$n"; } > "$3-labels-idx1-ubyte"
}
# store_compose RECORDS KEY: independently of dpopt (python3), verify a budget store's keyed
# BLAKE2b chain and compose its runs' settled Gaussian RDP curves (per-order sums, the min over
# orders of Mironov 2017 Prop. 3 and Balle et al. 2020 Thm 21 at the store's delta), or, when
# smaller, their basic composition (the sum of the runs' settled eps, if their deltas sum to at
# most the store's delta: a PLD-calibrated run's eps can be well below its RDP curve's).  Prints
# "RUNS EPS", "chain-bad LINE" or "not-rdp KIND" (a run not settled to an RDP curve alone).
store_compose() {
  python3 - "$1" "$2" <<'EOF'
import hashlib, json, math, sys
lines = open(sys.argv[1], 'rb').read().split(b'\n')[:-1]
key = open(sys.argv[2], 'rb').read()
runs = {}
for i, ln in enumerate(lines):
    body, tag = ln[:-(10 + 64 + 2)], ln[-(64 + 2):-2].decode()
    o = json.loads(ln)
    if i == 0:
        head = bytes.fromhex(o['nonce'])
        orders, D = o['orders'], o['budget_delta']
    h = hashlib.blake2b(head + body + b'}', key=key, digest_size=32).digest()
    if h.hex() != tag:
        print('chain-bad', i + 1); sys.exit(0)
    head = h
    if o['kind'] in ('reserve', 'settle'):
        runs[o['run']] = o
R = [0.0] * len(orders)
for o in runs.values():
    if o['kind'] != 'settle' or not o['n_rdp'] or o['n_pure'] or o['n_approx']:
        print('not-rdp', o['kind']); sys.exit(0)
    R = [a + b for a, b in zip(R, o['rdp'])]
rdp = min(min(r + math.log(1 / D) / (a - 1),
              r + math.log1p(-1 / a) - (math.log(D) + math.log(a)) / (a - 1))
          for a, r in zip(orders, R))
basic = sum(o['eps'] for o in runs.values())
if sum(o['delta'] for o in runs.values()) <= D:
    rdp = min(rdp, basic)
print('%d %.17g' % (len(runs), rdp))
EOF
}

need_numpy() {
  PY=
  for p in python3 /usr/bin/python3; do
    if "$p" -c "import numpy" 2>/dev/null; then PY=$p; return 0; fi
  done
  echo "SKIP: no python3 with numpy"
  exit 77
}
