#!/bin/sh
# The user documentation holds together: every relative link of README.md and doc/*.md,
# doc/howto/*.md names a file that exists and, with #anchor, a heading of that file (GitHub's
# anchors: lower case, punctuation dropped, spaces as hyphens); the README stays short (at most
# 250 lines); user documentation cites no issue numbers ("issue 14") and no paper codes
# ("003 (4.6)"): papers by author and year (doc/references.md maps the codes that --help uses).
# The cluster how-to shows every batch script and names every variable its header lists.
# Every documented mpirun launch (README, doc/, the man pages' examples, jobs/: the scripts and
# their comments) runs `mpirun --quiet`, so a failed run prints dpopt's one error line and none
# of Open MPI's notice (lib/mpirun_quiet.awk; test_readme runs the documented form).
. "$(dirname "$0")/../lib/testlib.sh"
export LC_ALL=C
cd "$S" || exit 1
docs="README.md $(ls doc/*.md doc/howto/*.md | grep -v '^doc/design\.md$')"
slugs() { sed -n 's/^#\{1,6\} //p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9_ -]//g; s/ /-/g'; }
for f in $docs; do
  d=$(dirname "$f")
  grep -o '\](\([^)# ]*\)\(#[^) ]*\)\{0,1\})' "$f" | sed 's/^](//; s/)$//' | grep -v '^[a-z]*:' | sort -u >"$T/links"
  while IFS= read -r l; do
    p=${l%%#*}; a=""; case "$l" in *'#'*) a=${l#*#} ;; esac
    if [ -n "$p" ]; then t="$d/$p"; else t="$f"; fi
    if [ -e "$t" ]; then ok; else bad "$f: link to a missing file: $l"; continue; fi
    if [ -n "$a" ]; then
      if slugs "$t" | grep -qxF -- "$a"; then ok; else bad "$f: no heading '#$a' in $t"; fi
    fi
  done <"$T/links"
done
n=$(wc -l <README.md)
check "README.md has at most 250 lines ($n)" [ "$n" -le 250 ]
for f in $docs; do
  hasnot "$f" '[Ii]ssue [0-9]' "$f cites an issue number"
  [ "$f" = doc/references.md ] && continue # the map from codes to papers
  hasnot "$f" '\b00[0-4] (\|\[00[0-4]\]\|the 00[0-4] \|00[0-4]'"'"'s' "$f cites a paper by code"
done

# doc/howto/clusters.md follows the batch scripts: every script it submits exists, and every
# variable a script's header lists under "Environment" is named there
c=doc/howto/clusters.md
grep -o '\(sbatch\|qsub\) .*jobs/[a-z]*/[a-z]*\.\(sbatch\|pbs\)' "$c" | grep -o 'jobs/[a-z]*/[a-z]*\.\(sbatch\|pbs\)' | sort -u >"$T/scripts"
check "clusters.md submits scripts" test -s "$T/scripts"
while IFS= read -r s; do check "clusters.md: $s exists" test -f "$s"; done <"$T/scripts"
for s in jobs/slurm/*.sbatch jobs/pbs/*.pbs; do
  has "$c" "$s" "clusters.md shows $s"
  for v in $(sed -n '/^# Environment/,/^#$/p' "$s" | sed -n 's/^#   \([A-Z_][A-Z_]*\) .*/\1/p'); do
    has "$c" "\`$v\`" "clusters.md names $s's variable $v"
  done
done
# every documented mpirun is quiet; the checker itself finds a loud one of each form
Q="$S/mpi_tests/lib/mpirun_quiet.awk"
awk -f "$Q" README.md $(find doc -name '*.md' | sort) doc/man-examples $(find jobs -type f | sort) >"$T/loud"
check "every documented mpirun line has --quiet" [ ! -s "$T/loud" ]
sed 's/^/    /' "$T/loud"
printf '%s\n' 'run `mpirun -np 2 build/dpopt train`' 'MPIRUN=${MPIRUN:-mpirun}' 'MPIRUN=mpirun sbatch x' \
  '  mpirun --oversubscribe -np "$P" "$DPOPT" train' '$ mpirun --mca btl self -np 2 dpopt eval' \
  'mpirun --quiet -np 2 dpopt x' 'mpirun -q --oversubscribe -np 2 "$B/dpopt"' \
  'MPIRUN=${MPIRUN:-mpirun --quiet}' '`mpirun --timeout 60` ends; mpirun stops every rank' >"$T/q.txt"
check "the mpirun checker finds the 5 loud lines and only them" \
  [ "$(awk -f "$Q" "$T/q.txt" | cut -d: -f2 | tr '\n' ' ')" = "1 2 3 4 5 " ]
finish test_docs
