#!/bin/sh
# The privacy settings are read once, in src/run/ (dpopt/spec.h, src/run/run_spec.c): below the
# run (every room of src/ but src/run/ and src/cli/) no file reads a privacy.* key of the config.
#  1. No call dpo_config_*(CFG, "privacy.KEY" ...) in those files, a call split over lines too.
#  2. No bare key literal "privacy.KEY" in them (a key kept in a variable and read later), but
#     for the names table of src/privacy/spec.c, which calls no dpo_config_* function.
#  3. No dpo_config_*(CFG, dpo_privacy_spec_key(...)) in them.
# Messages may still name a key ("privacy.eps = %g: ..."): a literal with more than the key.
# The checker is checked on planted files (a read split over lines is found).
. "$(dirname "$0")/../lib/testlib.sh"

# reads FILE...: print "FILE: CALL" for every privacy.* read (the files flattened to one line
# each, so a call split over lines is seen whole)
reads() {
  for f in "$@"; do
    tr '\n' ' ' <"$f" |
      grep -oE 'dpo_config_[a-z_]+[[:space:]]*\([^,;"]*,[[:space:]]*("privacy\.|dpo_privacy_spec_key)[^)]*' |
      sed "s|^|$f: |"
  done
}
# below FILE...: the bare key literals, but the names table
literals() {
  for f in "$@"; do
    case "$f" in */src/privacy/spec.c) continue ;; esac
    grep -HnoE '"privacy\.[a-z_]+"' "$f"
  done
}

files=$(find "$S/src" -name '*.[ch]' ! -path "$S/src/run/*" ! -path "$S/src/cli/*" | sort)
[ -n "$files" ] || { bad "no source files under $S/src"; finish test_privacy_keys; }
# shellcheck disable=SC2086
reads $files >"$T/reads"
if [ -s "$T/reads" ]; then bad "privacy.* keys read below src/run/:"; sed 's/^/  /' "$T/reads"
else ok; fi
# shellcheck disable=SC2086
literals $files >"$T/lits"
if [ -s "$T/lits" ]; then bad "privacy.* key literals below src/run/ (read them in run_spec.c):"; sed 's/^/  /' "$T/lits"
else ok; fi
if grep -q 'dpo_config_' "$S/src/privacy/spec.c"; then bad "src/privacy/spec.c calls dpo_config_*"
else ok; fi
# the reader really is src/run/run_spec.c: it reads the keys the others no longer do
has "$S/src/run/run_spec.c" 'dpo_config_get_double(cfg, "privacy.eps"' "run_spec.c reads privacy.eps"

# ---- the checker itself
mkdir -p "$T/plant"
printf 'int f(const dpo_config_t *c) {\n  double e;\n  return dpo_config_get_double(dpo_solver_config(s),\n      "privacy.eps", 0, &e);\n}\n' >"$T/plant/a.c"
printf 'static const char *k = "privacy.delta";\n' >"$T/plant/b.c"
printf 'int g(void) { return dpo_err(1, "privacy.eps = %%g: eps must be > 0", e); }\n' >"$T/plant/c.c"
printf 'int h(void) { return !dpo_config_get(cfg, dpo_privacy_spec_key(DPO_SPEC_EPS)); }\n' >"$T/plant/d.c"
reads "$T/plant/a.c" "$T/plant/c.c" "$T/plant/d.c" >"$T/p1"
has "$T/p1" 'a.c: dpo_config_get_double(dpo_solver_config(s),' "checker: a read split over lines is found"
has "$T/p1" 'd.c: dpo_config_get(cfg, dpo_privacy_spec_key' "checker: a read through the names table is found"
hasnot "$T/p1" 'c.c' "checker: a message naming a key is no read"
literals "$T/plant/b.c" "$T/plant/c.c" >"$T/p2"
has "$T/p2" 'b.c:1:"privacy.delta"' "checker: a key kept in a variable is found"
hasnot "$T/p2" 'c.c' "checker: a message is no key literal"
finish test_privacy_keys
