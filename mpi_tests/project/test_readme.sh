#!/bin/sh
# The README's tutorial cannot drift: the ```sh block after the "<!-- tutorial -->" comment of
# README.md is run command by command, as a user would run it from the top of the source tree
# (here a scratch directory holding data/ and build/dpopt, so nothing is written to the tree),
# with the build's dpopt and the harness's mpirun flags substituted.  Every command must
# succeed and leave what the README says it leaves; doc/tutorial.md must show the same commands,
# and its own commands (the README's and more) must run in order too; jobs/demo's training is
# the first of them.
. "$(dirname "$0")/../lib/testlib.sh"

# readme_block FILE: the lines of the first ```sh block after <!-- tutorial -->
readme_block() {
  awk '/^<!-- tutorial -->$/ { t = 1; next } t == 1 && /^```sh$/ { t = 2; next }
       t == 2 && /^```$/ { exit } t == 2 { print }' "$1"
}
# sh_commands FILE: every command of the ```sh blocks of FILE (indented ones too), continuation
# lines joined
sh_commands() {
  awk '/^ *```sh$/ { on = 1; next } /^ *```$/ { on = 0; next }
       on { sub(/^ +/, ""); if (sub(/ *\\$/, " ")) { c = c $0; next } print c $0; c = "" }' "$1"
}

readme_block "$S/README.md" >"$T/cmds"
n=$(grep -c . "$T/cmds")
check "README has a tutorial block of 5 commands (found $n)" [ "$n" = 5 ]
check "every tutorial command is a dpopt command" [ "$(grep -vc '^\(mpirun --quiet -np [0-9]* \)\{0,1\}build/dpopt ' "$T/cmds")" = 0 ]
check "the tutorial's mpirun commands are quiet" [ "$(grep -c '^mpirun -np' "$T/cmds")" = 0 ]

# jobs/demo trains as the tutorial's first command does (train's default recipe, no --config
# or --algo), with its budget store and run directory added
first=$(sed -n '1{s/^mpirun --quiet -np 2 build\/dpopt train //; s/ --out .*//; p;}' "$T/cmds")
sh_demo=$(awk '/build\/dpopt train/ { on = 1 } on { sub(/^ +/, ""); if (sub(/ *\\$/, " ")) { c = c $0; next } print c $0; exit }' "$S/jobs/demo")
case "$sh_demo" in
*"build/dpopt train $first --budget-store "*) ok ;;
*) bad "jobs/demo does not run the tutorial's first command ($first): $sh_demo" ;;
esac
case "$sh_demo" in *--config* | *--algo*) bad "jobs/demo sets its own method: $sh_demo" ;; *) ok ;; esac

# doc/tutorial.md walks through the same commands
sh_commands "$S/doc/tutorial.md" | sed 's/  */ /g' >"$T/tut"
while IFS= read -r c; do
  if grep -qxF -- "$(printf %s "$c" | sed 's/  */ /g')" "$T/tut"; then ok; else bad "doc/tutorial.md lacks the README command: $c"; fi
done <"$T/cmds"

# run them where a user would: data/ and build/dpopt beside each other
W="$T/w"
mkdir -p "$W/build" "$T/home"
ln -s "$S/data" "$W/data"
ln -s "$DPOPT" "$W/build/dpopt"
export HOME="$T/home" OPENBLAS_NUM_THREADS=1 # the journal key is made in this HOME
i=0
while IFS= read -r c; do
  i=$((i + 1))
  run=$(printf %s "$c" | sed "s#^mpirun #$MPI #")
  (cd "$W" && sh -c "$run") </dev/null >"$T/out.$i" 2>"$T/err.$i"
  s=$?
  if [ "$s" = 0 ]; then ok; else
    bad "README tutorial command $i exits $s: $c"
    sed 's/^/    /' "$T/err.$i" "$T/out.$i" | tail -n 20
  fi
done <"$T/cmds" # (each command reads /dev/null: mpirun would eat the list)

# what the README says each step leaves
has "$T/out.1" '^privacy  *PRIVATE' "1: a private run"
has "$T/out.1" '^spent  *eps 1\.000 of 1 in [0-9]* steps' "1: the spent line says eps 1 of 1 spent"
has "$T/out.1" '^spent .* in [0-9]* steps (T = [0-9]*' "1: the spent line says how T was set"
hasnot "$T/out.1" "accountant" "1: the accountant is --verbose's, not the first screen's"
check "1: runs/first holds model.txt, summary.json, ledger.jsonl" \
  test -s "$W/runs/first/model.txt" -a -s "$W/runs/first/summary.json" -a -s "$W/runs/first/ledger.jsonl"
acc=$(sed -n 's/^accuracy  *//p' "$T/out.2")
sacc=$(sed -n 's/.*"test_accuracy": *\([0-9.eE+-]*\).*/\1/p' "$W/runs/first/summary.json" | head -n 1)
close "$acc" "$sacc" 1e-12 "2: predict's accuracy is the run's test_accuracy"
check "2: one prediction per row of data/a9a.t" [ "$(wc -l <"$W/predictions.txt")" = "$(grep -c . "$S/data/a9a.t")" ]
check "3: the store exists" test -d "$W/a9a-budget"
has "$T/out.4" '^data set budget  *eps = .* of 3' "4: the run charged the store"
has "$T/out.5" '^runs  *1$' "5: budget show lists the one run"
has "$T/out.5" '^remaining  *eps = ' "5: budget show says what is left"

# doc/tutorial.md's own commands, in order, in a fresh scratch directory: each must succeed
W="$T/w2"
mkdir -p "$W/build"
ln -s "$S/data" "$W/data"
ln -s "$DPOPT" "$W/build/dpopt"
sh_commands "$S/doc/tutorial.md" >"$T/tcmds"
check "doc/tutorial.md has commands" [ "$(grep -c 'build/dpopt' "$T/tcmds")" -ge 6 ]
i=0
while IFS= read -r c; do
  i=$((i + 1))
  run=$(printf %s "$c" | sed "s#^mpirun #$MPI #")
  (cd "$W" && sh -c "$run") </dev/null >"$T/tout.$i" 2>"$T/terr.$i"
  s=$?
  if [ "$s" = 0 ]; then ok; else
    bad "doc/tutorial.md command $i exits $s: $c"
    sed 's/^/    /' "$T/terr.$i" "$T/tout.$i" | tail -n 20
  fi
done <"$T/tcmds"

# the documented `mpirun --quiet`: a refused run prints dpopt's error once and none of Open MPI's
# notice (the harness's flags, which the commands above ran with, plus --quiet): every line on
# stderr is dpopt's (its note of the auto-picked method, then the error), one is an error, and
# the refused run writes nothing.  The same with orte_execute_quiet = 1 in the user's
# $HOME/.openmpi/mca-params.conf (doc/tutorial.md) instead of --quiet; without either, Open MPI's
# notice follows (what the two remove).
refused() { # refused NAME MPIRUN-ARGS...
  q=$1; shift
  (cd "$W" && "$@" -np 2 build/dpopt train --data data/a9a --eps 1 --delta 1e-5 --out "runs/$q") \
    </dev/null >"$T/$q.out" 2>"$T/$q.err"
  check "$q: the refused run exits 1" [ $? = 1 ]
  check "$q: one error line on stderr" [ "$(grep -c '^dpopt train: error: ' "$T/$q.err")" = 1 ]
  check "$q: nothing on stdout" [ ! -s "$T/$q.out" ]
  check "$q: the refused run wrote nothing" [ ! -e "$W/runs/$q" ]
}
refused quiet $MPI --quiet
check "quiet: every stderr line is dpopt's" [ "$(grep -vc '^dpopt' "$T/quiet.err")" = 0 ]
hasnot "$T/quiet.err" "Primary job\|mpirun detected\|----------" "mpirun --quiet: no Open MPI notice"
refused loud $MPI
has "$T/loud.err" "Primary job" "plain mpirun: Open MPI's notice follows the error"
mkdir -p "$HOME/.openmpi"
echo "orte_execute_quiet = 1" >"$HOME/.openmpi/mca-params.conf"
refused conf $MPI
check "mca-params.conf: every stderr line is dpopt's" [ "$(grep -vc '^dpopt' "$T/conf.err")" = 0 ]
finish test_readme
