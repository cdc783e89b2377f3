#!/bin/sh
# Budget stores under SIGKILL: TRIALS (default 24) private dp-sgd-rdp runs on data/a9a charge one
# store and each is killed (SIGKILL) at a random point (0 to 1.6 s: before, during or after its
# reservation, its releases, its settlement).  After every kill:
#  - the store verifies (`dpopt budget show` exits 0; a torn last line is tolerated) and its
#    spent eps never exceeds the budget;
#  - no charge is lost: every run directory whose journal holds a charge has a reservation in
#    the store under the journal's nonce (the reservation is fsynced before the first release);
#  - no double count: each run id has one reservation;
#  - the totals replay identically: show twice gives the same lines, and python3 recomputes the
#    spent eps from the records (settled runs by their RDP curves, reserved ones whole, the
#    smaller of the two bounds, as doc/design.md says) to 1e-8 (the library rounds up).
# Prints the number of kills that left a reservation open, settled, or no record.
. "$(dirname "$0")/../lib/testlib.sh"
export DPOPT_JOURNAL_KEY="$T/journal.key"
TRIALS=${TRIALS:-24}
R="--delta 1e-7 --algo dp-sgd-rdp --batch 256 --iters 60 --clip l2:1 --row-l2-bound 3.75 --quiet"
expect 0 "$DPOPT" budget init "$T/st" --eps 30 --delta 1e-5 --data "$S/data/a9a"
open=0 settled=0 none=0 refused=0
i=0
while [ $i -lt "$TRIALS" ]; do
  i=$((i + 1))
  "$DPOPT" train --data "$S/data/a9a" --budget-store "$T/st" --eps 1 $R --out "$T/r$i" \
    >"$T/run.out" 2>&1 &
  pid=$!
  sleep "$(awk -v s="$i" 'BEGIN { srand(s * 7919 + 13); printf "%.3f", rand() * 1.6 }')"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  st=$?
  [ "$st" = 3 ] && refused=$((refused + 1))
  if ! "$DPOPT" budget show "$T/st" >"$T/show1" 2>"$T/err"; then
    bad "trial $i: the store does not verify after the kill: $(cat "$T/err")"
    continue
  fi
  ok
  "$DPOPT" budget show "$T/st" >"$T/show2" 2>&1
  cmp -s "$T/show1" "$T/show2" && ok || bad "trial $i: show is not reproducible"
  e=$(awk '/^spent/ { print $4 }' "$T/show1" | tr -d ,)
  awk -v e="$e" 'BEGIN { exit !(e <= 30) }' && ok || bad "trial $i: spent $e over the budget 30"
  # every journal with a charge has its reservation
  if [ -f "$T/r$i/ledger.jsonl" ]; then
    id=$(head -n 1 "$T/r$i/ledger.jsonl" | sed -n 's/.*"nonce":"\([0-9a-f]\{64\}\)".*/\1/p')
    charges=$(grep -c '"mechanism"' "$T/r$i/ledger.jsonl")
    nres=0
    [ -n "$id" ] && nres=$(grep '"kind":"reserve"' "$T/st/records.jsonl" | grep -c "\"run\":\"$id\"")
    if [ "$charges" -gt 0 ] && [ "$nres" != 1 ]; then
      bad "trial $i: $charges charges in the journal, $nres reservations in the store"
    else ok; fi
    if [ -n "$id" ] && grep "\"run\":\"$id\"" "$T/st/records.jsonl" | grep -q '"kind":"settle"'; then
      settled=$((settled + 1))
    elif [ "$nres" = 1 ]; then open=$((open + 1)); else none=$((none + 1)); fi
  else none=$((none + 1)); fi
  if command -v python3 >/dev/null; then
    py=$(python3 - "$T/st/records.jsonl" <<'EOF'
import json, math, sys
recs, runs = [], {}
for ln in open(sys.argv[1], 'rb').read().split(b'\n'):
    try: recs.append(json.loads(ln))
    except ValueError: pass  # a torn last line
hdr = recs[0]; orders, D = hdr['orders'], hdr['budget_delta']
for o in recs[1:]:
    if o['kind'] in ('reserve', 'settle'): runs[o['run']] = o
def conv(R, d):
    if not any(R): return 0.0
    return min(min(r + math.log(1 / d) / (a - 1),
                   r + math.log1p(-1 / a) - (math.log(d) + math.log(a)) / (a - 1))
               for a, r in zip(orders, R))
def total(parts):
    ae = ad = 0.0; R = [0.0] * len(orders); nr = 0
    for o in runs.values():
        if parts and o['kind'] == 'settle':
            ae += o['approx_eps']; ad += o['approx_delta']
            if o['n_rdp']: nr += 1; R = [x + y for x, y in zip(R, o['rdp'])]
        elif o['eps'] > 0 or o['delta'] > 0:
            ae += o['eps']; ad += o['delta']
    if nr == 0: return ae
    return ae + conv(R, D - ad) if D - ad > 0 else float('inf')
print('%.17g' % min(total(True), total(False)))
EOF
)
    close "$e" "$py" 1e-8 "trial $i: spent = the composition recomputed from the records"
  fi
done
echo "kills: $TRIALS trials; reservation open (whole eps spent) $open, settled $settled, no record $none; refused (budget full) $refused"
finish test_budget_kill.sh
