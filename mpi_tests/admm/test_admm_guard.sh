#!/bin/sh
# dpopt admm under privacy.trust = secagg holds the parties' plan and keys as dpopt train does
# (doc/design.md, "Threat model"): before any release the parties agree on the plan by digest
# and, when every party lists an identity key (dpopt party-key, party.K.public_key), sign their
# per-run key-agreement keys over it.  Checked, one party per rank, 3 parties:
#  - with identity keys a DP-ADMM run completes, and its parties' journals hold every release;
#  - a coordinator that publishes another key-agreement key than the one it signed (dpopt-test's
#    --test-coordinator key; never in the installed dpopt) is refused by every party before any
#    release: the journal holds no charge;
#  - a coordinator that announces another plan (its ranks run with admm.maxit 11, the parties'
#    with 10: mpirun's MPMD form, no switch) is refused by every party, naming the setting, with
#    no charge.
. "$(dirname "$0")/../lib/testlib.sh"

ADMM="--method dpadmm --eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --maxit 10 \
  --set privacy.sigma_rule=rdp --set privacy.trust=secagg"
charges() { if [ -f "$1" ]; then grep -c '"mechanism"' "$1"; else echo 0; fi; }

for k in 0 1 2; do expect 0 "$DPOPT" party-key "$T/party$k.key"; done
K="--set parties.key=$T/party%d.key"
for k in 0 1 2; do K="$K --set party.$k.public_key=$(cat "$T/party$k.key.pub")"; done

# signed keys: the run completes, every party journals the 11 releases (u0's and T = 10)
expect 0 $MPI -np 3 "$DPOPT" admm $ADMM $K --out "$T/ok" "$S/data/a9a"
[ "$(charges "$T/ok/ledger.jsonl")" -ge 11 ] && ok || bad "signed keys: $(charges "$T/ok/ledger.jsonl") charges"
for k in 1 2; do
  expect 0 "$DPOPT" ledger "$T/ok/ledger.party$k.jsonl"
  has "$T/out" "^charges: *11$" "signed keys: party $k journalled the 11 releases"
done

# a substituted key: every party stops before the first release
expect 1 $MPI -np 3 "$DPOPT_TEST" admm --test-coordinator key $ADMM $K --out "$T/k" \
  "$S/data/a9a"
has "$T/err" "rank 0's key-agreement key is not signed by the identity key listed for its party (party.0.public_key) over this plan and run: a substituted or unsigned key; the run stops before any release" "admm: a substituted key refused"
[ "$(charges "$T/k/ledger.jsonl")" = 0 ] && ok || bad "substituted key: $(charges "$T/k/ledger.jsonl") charges (want 0)"

# another plan at the coordinator: refused by the parties, naming the setting
expect 1 $MPI -np 1 "$DPOPT" admm $ADMM --maxit 11 --out "$T/p" "$S/data/a9a" : \
  -np 2 "$DPOPT" admm $ADMM --out "$T/p" "$S/data/a9a"
has "$T/err" "the parties do not agree on the plan (rank 1's digest differs from the coordinator's): admm.maxit is '10' here, '11' at the coordinator; nothing was released" "admm: another plan refused, naming admm.maxit"
[ "$(charges "$T/p/ledger.jsonl")" = 0 ] && ok || bad "another plan: $(charges "$T/p/ledger.jsonl") charges (want 0)"
finish test_admm_guard
