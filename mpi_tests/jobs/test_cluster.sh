#!/bin/sh
# The cluster in a box (jobs/cluster): two network namespaces joined through a bridge, Open MPI
# over TCP between them, each node on cores of its own.  A seeded 2-rank dp-gd train on a9a
# across the nodes gives the model of the same run over shared memory digit for digit (no
# tolerance: Open MPI's reduction of 2
# ranks sums in the same order whatever the transport), MPI sees 2 nodes, the run's ledger is
# the same; a 2 s link cut during a run changes no weight; an interrupted `run` leaves no
# process in the nodes; a node killed in a private run
# ends the run (journal and budget store verify, the run reserved) and --resume finishes it
# within its budget (settled in the store); the 2-node version of jobs/clusterstudy writes its
# table (dp-gd and HAMSI, whose ring bytes modelled by jobs/costmodel are those the runs
# counted; their meetings an iteration counted and a per-meeting cost fitted) and leaves no box; `up` removes leftovers of a killed box; `down` leaves no namespace,
# link or state.
# Skipped (77) when not root or when this kernel gives no network namespaces.
. "$(dirname "$0")/../lib/testlib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: jobs/cluster needs root (network namespaces)"; exit 77; }
for c in ip unshare tc; do
  command -v $c >/dev/null || { echo "SKIP: $c not found (apt-get install -y iproute2 util-linux)"; exit 77; }
done
name=dpot$$
ip netns add "$name-probe" 2>/dev/null && ip netns del "$name-probe" ||
  { echo "SKIP: cannot create network namespaces here"; exit 77; }
box="$T/box"
CL="sh $S/jobs/cluster --name $name --state $box"
# whatever happens below, the box goes (the namespaces outlive this shell otherwise)
trap '$CL down > /dev/null 2>&1; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
export OPENBLAS_NUM_THREADS=1
hostlinks() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }
hostlinks > "$T/links0"

# ---- bad input: one clear message, non-zero exit, nothing made
expect 1 $CL up 0
has "$T/err" "expected 1..64" "up 0 refused"
expect 1 $CL up 2 --net 8.8.8
has "$T/err" "private /24" "a public net refused"
expect 1 $CL loss 0 5
has "$T/err" "no box '$name'" "a fault without a box"
check "refused commands made no namespace" sh -c "! ip netns list | grep -q '^$name-'"
expect 0 $CL --help
has "$T/out" "loss K P" "--help lists the faults"

# ---- leftovers of a killed box are removed by up
ip netns add "$name-n5"
expect 0 $CL up 2 --rate 1gbit
check "up removed the leftover node 5" sh -c "! ip netns list | grep -q '^$name-n5'"
expect 0 $CL status
has "$T/out" "node 1: $name-n1 10.77.0.2/24 link UP tbf" "status: node 1 up and shaped"
hostlinks > "$T/links_up"
check "nothing new in the host's own namespace" cmp -s "$T/links0" "$T/links_up"

# ---- each node has cores of its own: on a machine of 2 or more cores the two nodes' ranks run
# on different ones (Open MPI in every node bound its rank to core 0, one core for both)
expect 0 timeout 60 $CL run -- mpirun -np 2 sh -c 'echo "$(hostname) $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
sort "$T/out" > "$T/cpus"
if [ "$(nproc)" -ge 2 ]; then
  check "the nodes' ranks run on different cores ($(tr '\n' ' ' < "$T/cpus"))" \
    awk 'END { exit !(NR == 2 && a[1] != a[2]) } { a[NR] = $2 }' "$T/cpus"
fi

# ---- the same seeded run over the box's TCP and over shared memory
run="train --data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --delta 1e-5 --iters 20 --seed 11 --quiet --no-trace-loss"
expect 0 timeout 120 $CL run -- mpirun -np 2 "$DPOPT" $run --out "$T/tcp"
expect 0 timeout 120 $MPI -np 2 "$DPOPT" $run --out "$T/shm"
has "$T/tcp/summary.json" '"nodes": *2' "MPI saw 2 nodes in the box"
has "$T/shm/summary.json" '"nodes": *1' "shared memory: 1 node"
# the weights (the model file's non-comment lines; its header names the run directory)
grep -v '^#' "$T/tcp/model.txt" > "$T/a" 2>/dev/null; grep -v '^#' "$T/shm/model.txt" > "$T/b" 2>/dev/null
check "model.txt: 124 weights in each run" [ "$(cat "$T/a" "$T/b" | wc -l)" -eq 248 ]
check "the box (TCP across 2 nodes) and shared memory give the same weights, digit for digit" cmp -s "$T/a" "$T/b"
unchained "$T/tcp/ledger.jsonl" > "$T/l1"; unchained "$T/shm/ledger.jsonl" > "$T/l2"
check "the two runs' ledgers charge the same" cmp -s "$T/l1" "$T/l2"

# ---- node 1's link down for 2 s in mid-run: TCP carries the run over the gap, and the seeded
# weights are those of the same run over shared memory.  Node 1's link is shaped to 1mbit
# first, so each iteration takes milliseconds on any machine and the cut, made once the first
# checkpoint exists, falls inside the iterations (checked).  (A cut while the ranks were still
# starting, before their first messages, hung a run until mpirun --timeout: results.md.)
cr="train --data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --delta 1e-5 --iters 300 --seed 5 --checkpoint-every 5 --quiet --no-trace-loss"
$CL shape 1 1mbit
timeout 120 $CL run -- mpirun --quiet --timeout 100 -np 2 "$DPOPT" $cr --out "$T/cut" > "$T/cut.txt" 2>&1 &
rp=$!
i=0
while [ $i -lt 600 ] && [ ! -e "$T/cut/checkpoint" ]; do sleep 0.05; i=$((i + 1)); done
$CL cut 1; sleep 2; $CL mend 1
check "the run was still iterating when the link came back" kill -0 $rp
wait $rp; st=$?
$CL shape 1 none
check "the run over a 2 s cut completes (exit $st)" [ "$st" -eq 0 ]
expect 0 timeout 120 $MPI -np 2 "$DPOPT" $cr --out "$T/cutref"
grep -v '^#' "$T/cut/model.txt" > "$T/a" 2>/dev/null; grep -v '^#' "$T/cutref/model.txt" > "$T/b" 2>/dev/null
check "a 2 s cut changes no weight (against the run over shared memory)" sh -c "[ -s '$T/a' ] && cmp -s '$T/a' '$T/b'"

# the nodes empty within 10 s (under make check's load the ranks' exits can trail mpirun's)
nodes_empty() {
  i=0
  while [ $i -lt 50 ] && [ -n "$(ip netns pids "$name-n0"; ip netns pids "$name-n1")" ]; do
    sleep 0.2; i=$((i + 1))
  done
  [ -z "$(ip netns pids "$name-n0"; ip netns pids "$name-n1")" ]
}
# ---- an interrupted run stops every process in the nodes
$CL run -- mpirun -np 2 sleep 60 > "$T/sl.out" 2>&1 &
rp=$!
i=0
while [ $i -lt 50 ] && [ -z "$(ip netns pids "$name-n1" 2>/dev/null)" ]; do sleep 0.2; i=$((i + 1)); done
check "the ranks started in node 1" [ -n "$(ip netns pids "$name-n1")" ]
kill -TERM $rp
wait $rp; st=$?
check "interrupted run exits non-zero ($st)" [ "$st" -ne 0 ]
check "no process left in the nodes (within 10 s)" nodes_empty

# ---- a node's death in a private run with a budget store: the run ends (no hang: mpirun sees
# its daemon die), journal and store verify with the run still reserved, --resume on the
# healthy box finishes it and the store settles it
"$DPOPT" budget init "$T/st" --eps 100 --delta 1e-3 --data "$S/data/a9a" > /dev/null
pr="train --data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --delta 1e-6 --iters 400 --budget-store $T/st --checkpoint-every 5 --quiet --no-trace-loss"
timeout 120 $CL run -- mpirun --quiet --timeout 100 -np 2 "$DPOPT" $pr --out "$T/pk" > "$T/pk.txt" 2>&1 &
rp=$!
i=0
while [ $i -lt 300 ] && [ ! -e "$T/pk/checkpoint" ]; do sleep 0.1; i=$((i + 1)); done
check "the private run wrote a checkpoint" [ -e "$T/pk/checkpoint" ]
$CL kill 1
wait $rp; st=$?
check "the run ends non-zero when node 1 dies ($st; 124: killed by the test's timeout)" sh -c "[ $st -ne 0 ] && [ $st -ne 124 ]"
check "no process left in the nodes after the death (within 10 s)" nodes_empty
expect 0 "$DPOPT" ledger "$T/pk"
expect 0 "$DPOPT" budget show "$T/st"
has "$T/out" "train  reserved" "the dead run stays reserved in the store"
# the charges journalled after the last checkpoint stay spent (design.md, rule 7), so the
# resumed run may stop at its budget a few steps short of 400: exit 3, a clean stop
timeout 120 $CL run -- mpirun --quiet --timeout 100 -np 2 "$DPOPT" $pr --out "$T/pk" --resume "$T/pk" > "$T/rs.txt" 2>&1
st=$?
case $st in 0|3) ok ;; *) bad "--resume after the node's death: exit $st (want 0, or 3 at the budget)"; tail -n 5 "$T/rs.txt" ;; esac
check "the resumed run completed or stopped at its budget" grep -Eq '"status": *"(ok|budget_exhausted)"' "$T/pk/summary.json"
expect 0 "$DPOPT" ledger "$T/pk"
sp=$(awk '$1 == "spent:" { sub(",", "", $4); print $4 }' "$T/out")
check "the resumed journal verifies and spends at most its eps 1 ($sp)" awk -v s="$sp" 'BEGIN { exit !(s != "" && s <= 1 + 1e-9) }'
expect 0 "$DPOPT" budget show "$T/st"
has "$T/out" "train  settled" "the store settled the resumed run"
hasnot "$T/out" "reserved" "no reservation left"

# ---- jobs/clusterstudy, 2-node version on a small problem: its table and the model beside it;
# HAMSI's predicted ring bytes (jobs/costmodel --mf-bytes) are those the 2-node runs counted
expect 0 timeout 150 sh "$S/jobs/clusterstudy" --quick --workloads "dp-gd hamsi" --name "${name}s" \
  --out "$T/study" --dpopt "$DPOPT" --bench "$B/jobs/bench/allreduce_bench"
check "study: 8 rows (2 workloads, strong, weak at 1 and 2 nodes)" [ "$(tail -n +2 "$T/study/study.csv" | wc -l)" -eq 8 ]
badrow=$(awk -F, '$2 == "hamsi" && !($4 == 1 ? $10 == 0 && $11 == 0 : $10 > 0 && $10 == $11) {print NR}' "$T/study/study.csv")
check "study: hamsi's modelled ring bytes are the run's (bad rows: $badrow)" [ -z "$badrow" ]
badrow=$(awk -F, 'NR > 1 && !($6 > 0 && $7 > 0 && $8 >= $7 && ($4 > 1 || $6 == $7)) {print NR}' "$T/study/study.csv")
check "study: times positive, the 1-node row is its own prediction, box >= cluster (bad rows: $badrow)" [ -z "$badrow" ]
check "study: latency, bandwidth and alpha measured in the box" \
  awk -F, 'NR == 2 { exit !($2 > 0 && $3 > 0 && $4 > 0 && $6 > 0) } END { exit NR != 2 }' "$T/study/net.csv"
# the meetings counted through MPI's profiling interface (jobs/bench/mpicount.c): a dp-gd
# iteration inside one data holder makes one meeting (the one-meeting step's allgather, which
# under the forced sleeping wait is its own gate), a whole number of them, never more gates
# than collectives
check "study: dp-gd's meetings counted ($(grep '^dp-gd,' "$T/study/meetings.csv"))" \
  awk -F, '$1 == "dp-gd" { k++; if (!($2 >= 1 && $2 == int($2) && $3 <= $2)) exit 1 } END { exit k != 1 }' "$T/study/meetings.csv"
check "study: hamsi's meetings counted" grep -q '^hamsi,[1-9]' "$T/study/meetings.csv"
# the cost is fitted per wait: the spinning one (column 8) only when some ranks spun, which a
# loaded machine's auto wait never chooses, so one of the two (the wait the runs used) is > 0
check "study: a per-meeting cost fitted (net.csv column 8 or 9 > 0: $(sed -n 2p "$T/study/net.csv" | cut -d, -f8,9))" \
  awk -F, 'NR == 2 { exit !($8 >= 0 && $9 >= 0 && $8 + $9 > 0) }' "$T/study/net.csv"
badrow=$(awk -F, 'NR > 1 && !($14 > 0 && ($4 > 1 ? $13 > 0 : $13 == 0 && $14 == $6)) {print NR}' "$T/study/study.csv")
check "study: the per-meeting model's rows (bad rows: $badrow)" [ -z "$badrow" ]
has "$T/study/study.md" "| none | dp-gd | weak | 2 |" "study.md: the table"
has "$T/study/study.md" "Within 20% of the per-meeting model:" "study.md: the agreement counted"
check "study: its box is gone" sh -c "! ip netns list | grep -q '^${name}s-'"

# ---- down: no namespace, no link, no state
expect 0 $CL down
check "no namespace of the box left" sh -c "! ip netns list | grep -q '^$name-'"
check "the state directory is gone" [ ! -e "$box" ]
hostlinks > "$T/links1"
check "the host's links are those before" cmp -s "$T/links0" "$T/links1"
finish test_cluster
