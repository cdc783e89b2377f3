#!/bin/sh
# Checkpoints and --resume of add-remove runs without a declared size (no --public-n), whose
# schedule is built on a noisy row count charged first (a Laplace release at step -1), on the
# first 4000 rows of a9a:
#  - a seeded run stopped at a checkpoint and resumed writes the uninterrupted run's model.txt
#    byte for byte, its journal holds the same charges (the count's once) and `dpopt ledger`
#    replays the same spent eps: dp-sgd-rdp with Poisson batches at 1 and 2 ranks, dp-nag-opt
#    (the DP-GD family's noisy count) at 2;
#  - the resume takes the count from the checkpoint and checks it against the journal: a count
#    edited in the checkpoint (its checksum made good again) is refused, as are a checkpoint
#    without the count, one naming another journal line as its charge, and a config.ini that
#    declares a size since (the count unused); each before anything is charged or written; a
#    run stopped twice keeps the count through both resumes;
#  - unseeded, with a budget store: stopped and resumed, the store settles the run's journal,
#    which holds the count's charge once.
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1 DPOPT_JOURNAL_KEY="$T/journal.key"
head -n 4000 "$S/data/a9a" >"$T/a4k"
AR="--dim 123 --set privacy.neighbours=add-remove --quiet --eps 1 --delta 1e-5 --row-l2-bound 3.75"
SGD="--algo dp-sgd-rdp --set algo.sampling=poisson --iters 30 --batch 200 --lambda 0.01"
NAG="--algo dp-nag-opt --iters 20 --clip l1:5"
spent() { "$DPOPT" ledger "$1" 2>/dev/null | sed -n 's/^spent: *eps = \([0-9.eE+-]*\).*/\1/p'; }
counts() { grep -c '"step":-1,"mechanism":"laplace"' "$1/ledger.jsonl"; }
same() {
  if cmp -s "$1" "$2"; then ok; else bad "$3: $1 and $2 differ"; diff "$1" "$2" | head -n 6; fi
}

# NP NAME ARGS...: the seeded run, and the same stopped before iteration 13 and resumed
pair() {
  np=$1; name=$2; shift 2
  full="$T/$name-full" part="$T/$name-part"
  expect 0 $MPI -np "$np" "$DPOPT" train --data "$T/a4k" $AR "$@" --seed 11 --out "$full"
  expect 5 $MPI -np "$np" "$DPOPT" train --data "$T/a4k" $AR "$@" --seed 11 --out "$part" \
    --checkpoint-every 4 --set run.stop_after=13
  [ "$(counts "$part")" = 1 ] && ok || bad "$name: the stopped run's journal lacks its count"
  expect 0 $MPI -np "$np" "$DPOPT" train --resume "$part" --quiet
  same "$full/model.txt" "$part/model.txt" "$name (np $np): model.txt"
  unchained "$full/ledger.jsonl" >"$T/a"; unchained "$part/ledger.jsonl" >"$T/b"
  same "$T/a" "$T/b" "$name (np $np): the journal"
  [ "$(counts "$part")" = 1 ] && ok || bad "$name (np $np): $(counts "$part") count charges"
  sf=$(spent "$full"); sp=$(spent "$part")
  [ -n "$sf" ] && [ "$sf" = "$sp" ] && ok || bad "$name (np $np): spent eps $sp, uninterrupted $sf"
}
pair 1 sgd1 $SGD
pair 2 sgd2 $SGD
pair 2 nag2 $NAG
# the comparison can fail: another seed draws another count and model
expect 0 $MPI -np 1 "$DPOPT" train --data "$T/a4k" $AR $SGD --seed 12 --out "$T/seed12"
cmp -s "$T/seed12/model.txt" "$T/sgd1-full/model.txt" && bad "seeds 11 and 12 gave one model" || ok

# ---- the checkpoint's count checked against the journal (refusals charge and write nothing)
# ckedit IN OUT KEY VALUE|+K|-: the checkpoint with solver.KEY (an integer) set to VALUE or
# raised by K, or with -, every solver.count* record removed; its FNV-1a checksum recomputed
# (the file format of checkpoint.c)
ckedit() {
  python3 - "$@" <<'EOF'
import struct, sys
src, dst, key, val = sys.argv[1:5]
b = open(src, "rb").read()
n = struct.unpack_from("=Q", b, 8)[0]; p = 16; recs = []
for _ in range(n):
    kl = struct.unpack_from("=I", b, p)[0]; k = b[p + 4:p + 4 + kl]; p += 4 + kl
    t, c = struct.unpack_from("=BQ", b, p); p += 9
    sz = c * (1 if t == 3 else 8); recs.append((k, t, c, b[p:p + sz])); p += sz
if val == "-":
    recs = [r for r in recs if not r[0].startswith(b"solver.count")]
else:
    def new(d):
        return struct.pack("=q", struct.unpack("=q", d)[0] + int(val[1:]) if val[0] == "+" else int(val))
    recs = [(k, t, c, new(d) if k == ("solver." + key).encode() else d) for k, t, c, d in recs]
out = b"DPOCKPT1" + struct.pack("=Q", len(recs))
for k, t, c, d in recs:
    out += struct.pack("=I", len(k)) + k + struct.pack("=BQ", t, c) + d
h = 14695981039346656037
for x in out:
    h = ((h ^ x) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
open(dst, "wb").write(out + struct.pack("=Q", h))
EOF
}
R="$T/tam"
expect 5 $MPI -np 1 "$DPOPT" train --data "$T/a4k" $AR $SGD --seed 11 --out "$R" \
  --checkpoint-every 4 --set run.stop_after=9
cp "$R/checkpoint" "$T/ck"
refuse() { # STATUS PATTERN MSG: the resume refused, the run directory as it was
  (cd "$R" && sha256sum *) >"$T/sum"
  expect "$1" $MPI -np 1 "$DPOPT" train --resume "$R" --quiet
  has "$T/err" "$2" "$3"
  (cd "$R" && sha256sum *) | cmp -s - "$T/sum" && ok || bad "$3: the refused resume wrote"
}
ckedit "$T/ck" "$R/checkpoint" count +1
refuse 2 "noisy row count [0-9]* does not carry the seal" "a count edited in the checkpoint"
ckedit "$T/ck" "$R/checkpoint" count -
refuse 1 "the checkpoint holds no noisy row count" "a checkpoint without the count"
ckedit "$T/ck" "$R/checkpoint" count_line 4 # step 0
refuse 2 "journal line 4, which the checkpoint names as the noisy row count's charge, is a gaussian" \
  "a checkpoint naming another line as the count's charge"
# a public size declared since (config.ini edited): the checkpoint's count is not used
cp "$R/config.ini" "$T/cfg"
echo "privacy.public_n = 4000" >>"$R/config.ini"
cp "$T/ck" "$R/checkpoint"
refuse 1 "holds the run's noisy row count, which this run does not use" "a size declared since"
cp "$T/cfg" "$R/config.ini"
# the edit tool itself changes nothing else: the untouched value resumes; stopped again, the
# resumed run's own checkpoint keeps the count for the next resume
ckedit "$T/ck" "$R/checkpoint" count +0
expect 5 $MPI -np 1 "$DPOPT" train --resume "$R" --quiet --set run.stop_after=21
expect 0 $MPI -np 1 "$DPOPT" train --resume "$R" --quiet
same "$T/sgd1-full/model.txt" "$R/model.txt" "stopped twice and resumed: model.txt"
unchained "$T/sgd1-full/ledger.jsonl" >"$T/a"; unchained "$R/ledger.jsonl" >"$T/b"
same "$T/a" "$T/b" "stopped twice and resumed: the journal"

# ---- a budget store (unseeded: private) sees the count charged once
expect 0 "$DPOPT" budget init "$T/st" --eps 3 --delta 1e-5 --data "$T/a4k"
R="$T/store"
expect 5 $MPI -np 2 "$DPOPT" train --data "$T/a4k" $AR $SGD --budget-store "$T/st" --out "$R" \
  --checkpoint-every 4 --set run.stop_after=13
expect 0 $MPI -np 2 "$DPOPT" train --resume "$R" --quiet
[ "$(counts "$R")" = 1 ] && ok || bad "store: $(counts "$R") count charges in the journal"
expect 0 "$DPOPT" budget show "$T/st"
has "$T/out" "runs            1" "store: the stopped and resumed run is one account"
st=$(awk '/^spent/ { print $4 }' "$T/out" | tr -d ,)
close "$st" "$(spent "$R")" 1e-6 "store: spent eps against the run's journal"

finish test_ckpt_count
