#!/bin/sh
# The jobs find the built dpopt in either layout (jobs/lib/build.sh): the out-of-tree ./build of
# jobs/build and the README, or an in-tree build; neither is one message naming both, exit 1.
. "$(dirname "$0")/../lib/testlib.sh"
lib="$S/jobs/lib/build.sh"
mkdir -p "$T/out-of-tree/build" "$T/in-tree" "$T/none" "$T/both/build"
for f in out-of-tree/build/dpopt in-tree/dpopt both/build/dpopt both/dpopt; do
  printf '#!/bin/sh\n' >"$T/$f"; chmod +x "$T/$f"
done
where() { (unset BUILD; . "$lib"; dpo_job_build "$1" && echo "$BUILD $DPOPT"); }
check "out-of-tree build found" test "$(where "$T/out-of-tree")" = "$T/out-of-tree/build $T/out-of-tree/build/dpopt"
check "in-tree build found" test "$(where "$T/in-tree")" = "$T/in-tree $T/in-tree/dpopt"
check "./build first when both exist" test "$(where "$T/both")" = "$T/both/build $T/both/build/dpopt"
expect 1 sh -c ". '$lib'; unset BUILD; dpo_job_build '$T/none'"
has "$T/err" "$T/none/build (jobs/build) nor in $T/none" "neither: both places named"
check "neither: one line" test "$(grep -c . "$T/err")" = 1
expect 1 sh -c ". '$lib'; BUILD='$T/none'; dpo_job_build '$T/in-tree'"
has "$T/err" "$T/none/dpopt: not found" "--build DIR without dpopt named"
# the paper jobs use it: a tree without a build stops before doing anything, naming both places
expect 1 sh -c "cd '$T' && mkdir -p src/jobs/lib src/jobs/thesis4 && cp '$lib' src/jobs/lib/ &&
  cp '$S/jobs/thesis4/run' src/jobs/thesis4/run && sh src/jobs/thesis4/run --out '$T/t4'"
has "$T/err" "nor in $T/src (an in-tree build)" "thesis4 names both places"
check "thesis4 wrote nothing" test ! -e "$T/t4"
finish test_jobs_build
