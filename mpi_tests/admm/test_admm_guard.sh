#!/bin/sh
# dpopt admm under privacy.trust = secagg holds the parties' plan and keys as dpopt train does
# (doc/design.md, "Threat model"): before any release the parties agree on the plan by digest
# and, when every party lists an identity key (dpopt party-key, party.K.public_key), sign their
# per-run key-agreement keys over it.  Checked, one party per rank, 3 parties:
#  - with identity keys a DP-ADMM run completes, and its parties' journals hold every release,
#    each in the party's own run directory (parties.out = DIR%d: PARTYDIR/ledger.partyK.jsonl),
#    none in the coordinator's --out;
#  - a party without its own directory, party.0.out (rank 0 is party 0 alone: nothing would be
#    written there), a party directory outside secagg, and a party directory that holds another
#    run's journal are refused before anything is written;
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
expect 0 $MPI -np 3 "$DPOPT" admm $ADMM $K --set parties.out="$T/ok.p%d" --out "$T/ok" "$S/data/a9a"
[ "$(charges "$T/ok/ledger.jsonl")" -ge 11 ] && ok || bad "signed keys: $(charges "$T/ok/ledger.jsonl") charges"
for k in 1 2; do
  expect 0 "$DPOPT" ledger "$T/ok.p$k/ledger.party$k.jsonl"
  has "$T/out" "^charges: *11$" "signed keys: party $k journalled the 11 releases in its own directory"
done
[ "$(ls "$T/ok" | grep -c '^ledger\.party')" = 0 ] && [ ! -e "$T/ok.p0" ] && ok ||
  bad "a party journal in the coordinator's --out, or a directory for party 0"

# each party's own directory: missing, party 0's, outside secagg, another run's journal
expect 1 $MPI -np 3 "$DPOPT" admm $ADMM --out "$T/nd" "$S/data/a9a"
has "$T/err" "party [12] keeps its own journal in its own run directory, and none is given" "admm: a party without its own directory refused"
expect 1 $MPI -np 3 "$DPOPT" admm $ADMM --set parties.out="$T/z.p%d" --set party.0.out="$T/z0" \
  --out "$T/z" "$S/data/a9a"
has "$T/err" "party 0's only rank is the coordinator's" "admm: party.0.out refused"
expect 1 $MPI -np 3 "$DPOPT" admm $(echo "$ADMM" | sed 's/--set privacy.trust=secagg//') \
  --set parties.out="$T/c.p%d" --out "$T/c" "$S/data/a9a"
has "$T/err" "setting 'parties.out' is not used by dpopt admm" "admm: a party directory outside secagg refused"
expect 1 $MPI -np 3 "$DPOPT" admm $ADMM $K --set parties.out="$T/ok.p%d" --out "$T/again" "$S/data/a9a"
has "$T/err" "already holds party [12]'s journal of another run" "admm: another run's party journal refused"
for d in nd z z0 z.p1 z.p2 c c.p1 c.p2 again; do
  [ -e "$T/$d" ] && bad "a refused admm run wrote $T/$d" || ok
done
for k in 1 2; do
  expect 0 "$DPOPT" ledger "$T/ok.p$k/ledger.party$k.jsonl"
  has "$T/out" "^charges: *11$" "the refused run left party $k's journal as it was"
done

# a substituted key: every party stops before the first release
expect 1 $MPI -np 3 "$DPOPT_TEST" admm --test-coordinator key $ADMM $K --set parties.out="$T/k.p%d" --out "$T/k" \
  "$S/data/a9a"
has "$T/err" "rank 0's key-agreement key is not signed by the identity key listed for its party (party.0.public_key) over this plan and run: a substituted or unsigned key; the run stops before any release" "admm: a substituted key refused"
[ "$(charges "$T/k/ledger.jsonl")" = 0 ] && ok || bad "substituted key: $(charges "$T/k/ledger.jsonl") charges (want 0)"

# another plan at the coordinator: refused by the parties, naming the setting
expect 1 $MPI -np 1 "$DPOPT" admm $ADMM --maxit 11 --set parties.out="$T/p.p%d" --out "$T/p" "$S/data/a9a" : \
  -np 2 "$DPOPT" admm $ADMM --set parties.out="$T/p.p%d" --out "$T/p" "$S/data/a9a"
has "$T/err" "the parties do not agree on the plan (rank 1's digest differs from the coordinator's): admm.maxit is '10' here, '11' at the coordinator; nothing was released" "admm: another plan refused, naming admm.maxit"
[ "$(charges "$T/p/ledger.jsonl")" = 0 ] && ok || bad "another plan: $(charges "$T/p/ledger.jsonl") charges (want 0)"
finish test_admm_guard
