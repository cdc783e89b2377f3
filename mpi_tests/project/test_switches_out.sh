#!/bin/sh
# Test switches out of the product (issue 36).  The audit's test switches (faults planted on
# purpose: every noise scale halved, a noise share dropped, every row kept while a sampled rate
# is charged, seeded trials) are compiled only into make check's libdpopt_test.la and
# dpopt-test (-DDPO_TEST_SWITCHES; privacy/test_switches.h).  After `make install prefix=DIR`:
#  - the installed libdpopt.so defines no test switch (nm -D --defined-only; nor its full
#    symbol table), and no installed header declares one;
#  - the installed dpopt refuses every test option ("unknown option"), holds no option name in
#    its binary, and neither its --help nor its man pages list one;
#  - dpopt-test, libdpopt_test and libdpopt_common (the objects both libraries share) are not
#    installed.
# The checker itself: the same patterns find the switches in dpopt-test, and dpopt-test still
# catches halved noise while the intact mechanism passes (test_audit.sh, test_audit_admm.sh and
# test_secagg_cli.sh run the full audits with every switch).
. "$(dirname "$0")/../lib/testlib.sh"
if ! command -v nm >/dev/null 2>&1; then echo "SKIP: no nm (binutils)"; exit 77; fi
# a test switch's symbols and declarations; its option names and build flag
SYM='dpo__test_|dpo__oracle_test|test_noise|noise_factor|drop_share|keep_all|audit_seed'
OPT='--test-(break-noise|drop-share|keep-all-rows|seed|coordinator|party-fail)|test_switches|DPO_TEST_SWITCHES'
none() { # none FILE PATTERN MSG: no line of FILE matches the extended regular expression
  if grep -Eq -- "$2" "$1"; then bad "$3:"; grep -E -- "$2" "$1" | sed 's/^/    /' | head -n 10
  else ok; fi
}

P="$T/p"
expect 0 make -C "$B" install prefix="$P"
so=$(ls "$P"/lib/libdpopt.so.*.*.* 2>/dev/null | head -n 1)
check "libdpopt.so installed" test -n "$so"
so=${so:-"$P/lib/libdpopt.so"}

# ---- the installed library: exported and local symbols
nm -D --defined-only "$so" >"$T/dyn" 2>&1
check "nm -D lists libdpopt.so's exports ($(wc -l <"$T/dyn"))" test "$(wc -l <"$T/dyn")" -ge 100
has "$T/dyn" ' dpo_audit_run$' "libdpopt.so exports the audit (dpo_audit_run)"
has "$T/dyn" ' dpo_mech_laplace' "libdpopt.so exports the mechanisms"
none "$T/dyn" "$SYM" "test switch exported by the installed libdpopt.so (nm -D --defined-only)"
nm "$so" >"$T/all" 2>/dev/null || : # empty when stripped
none "$T/all" "$SYM" "test switch in the installed libdpopt.so's symbol table"
nm -D --defined-only "$B/.libs/libdpopt.so" >"$T/bdyn" 2>&1
none "$T/bdyn" "$SYM" "test switch exported by the build tree's libdpopt.so"

# ---- the installed headers (and dpopt.pc)
check "headers installed" test -f "$P/include/dpopt/audit.h"
grep -rEn -- "$SYM|$OPT" "$P/include" >"$T/hdr" || :
check "no installed header declares a test switch$(sed 's/^/\n    /' "$T/hdr")" test ! -s "$T/hdr"
none "$P/lib/pkgconfig/dpopt.pc" "$OPT" "dpopt.pc carries the test build's flag"

# ---- the installed dpopt: refuses every test option, names none, lists none
D="$P/bin/dpopt"
check "dpopt installed" test -x "$D"
export LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for sw in --test-break-noise --test-drop-share --test-keep-all-rows "--test-seed 12"; do
  # shellcheck disable=SC2086
  expect 1 "$D" audit --mechanism laplace --eps 1 --trials 10 --quiet $sw
  has "$T/err" "unknown option" "installed dpopt audit refuses $sw"
done
# train's: a coordinator that deviates from the agreed plan, a party that fails (test_party_guard.sh)
for sw in "--test-coordinator sigma" "--test-party-fail 1"; do
  # shellcheck disable=SC2086
  expect 1 "$D" train --data "$S/data/a9a" --iters 1 --quiet --out "$T/r" $sw
  has "$T/err" "unknown option" "installed dpopt train refuses $sw"
done
strings "$D" >"$T/str"
none "$T/str" "$OPT|$SYM" "test option named in the installed dpopt"
expect 0 "$D" audit --help
none "$T/out" "$OPT|dpopt-test" "installed dpopt audit --help lists a test switch"
check "man pages installed" test -f "$P/share/man/man1/dpopt-audit.1"
cat "$P"/share/man/man1/*.1 | sed 's/\\-/-/g' >"$T/man"
none "$T/man" "$OPT|dpopt-test" "installed man page lists a test switch"

# ---- nothing of the test build installed
(cd "$P" && find . \( -name '*dpopt-test*' -o -name '*dpopt_test*' -o -name '*libdpopt_common*' \) \
  -print) >"$T/extra"
check "no test program or library installed$(sed 's/^/\n    /' "$T/extra")" test ! -s "$T/extra"
expect 0 make -C "$B" uninstall prefix="$P"

# ---- the checker sees what it looks for: dpopt-test has the switches ...
check "dpopt-test built (make check)" test -x "$DPOPT_TEST"
nm "$DPOPT_TEST" >"$T/tnm" 2>&1
for s in dpo__test_noise_factor dpo__test_drop_share dpo__test_keep_all_rows dpo__test_audit_seed \
    dpo__oracle_test_keep_all dpo__oracle_test_deviate dpo__oracle_test_party_fail \
    dpo__secagg_test_substitute_key; do
  has "$T/tnm" " T $s\$" "dpopt-test defines $s (the pattern would see it)"
done
strings "$DPOPT_TEST" >"$T/tstr"
has "$T/tstr" "--test-break-noise" "dpopt-test names its option (the pattern would see it)"
has "$T/tstr" "--test-coordinator" "dpopt-test names train's option (the pattern would see it)"
# ... and still catches halved noise (true eps 2 against a claim of 1), while the intact
# mechanism passes (the claim is tight there: alpha 1e-4, as in test_audit.sh)
expect 6 "$DPOPT_TEST" audit --mechanism laplace --eps 1 --quiet --test-break-noise
has "$T/out" "VIOLATION" "dpopt-test: halved noise is reported as a violation"
has "$T/out" "TEST: noise halved" "dpopt-test: the table says the noise was halved"
expect 0 "$DPOPT_TEST" audit --mechanism laplace --eps 1 --alpha 1e-4 --quiet
hasnot "$T/out" "TEST:" "dpopt-test without a switch: an ordinary audit"
hasnot "$T/out" "VIOLATION" "dpopt-test without a switch: the intact mechanism passes"
finish test_switches_out
