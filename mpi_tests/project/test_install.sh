#!/bin/sh
# Issue 14: `make install prefix=DIR` installs a dpopt.pc that points into DIR (not the
# configure-time prefix) and an umbrella header that is enough on its own: examples/ex1_train.c
# (includes only dpopt/dpopt.h) is compiled with mpicc and `pkg-config --cflags --libs dpopt`
# against the temporary install and run under mpirun on data/a9a.  Both the installed dpopt and
# that program start with a clean environment (no LD_LIBRARY_PATH, no ldconfig): the binary
# carries a RUNPATH relative to itself, dpopt.pc an rpath to its libdir.  The installed man
# page has a well-formed .TH line and renders with `man -l` in that environment.
. "$(dirname "$0")/../lib/testlib.sh"
P="$T/p"
expect 0 make -C "$B" install prefix="$P"
check "dpopt.pc installed" test -f "$P/lib/pkgconfig/dpopt.pc"
has "$P/lib/pkgconfig/dpopt.pc" "^prefix=$P\$" "dpopt.pc follows the install prefix"
hasnot "$P/lib/pkgconfig/dpopt.pc" "@" "no unsubstituted @VAR@ in dpopt.pc"
for h in admm parties hamsi optim privacy; do
  has "$P/include/dpopt/dpopt.h" "dpopt/$h.h" "umbrella header includes $h.h"
  check "$h.h installed" test -f "$P/include/dpopt/$h.h"
done
export PKG_CONFIG_PATH="$P/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
flags=$(pkg-config --cflags --libs dpopt)
check "pkg-config knows dpopt" test -n "$flags"
# shellcheck disable=SC2086
expect 0 mpicc -std=gnu11 "$S/examples/ex1_train.c" $flags -o "$T/ex1_train"
clean="env -i PATH=$PATH HOME=$T OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
expect 0 $clean "$P/bin/dpopt" --version
has "$T/out" "^dpopt " "the installed dpopt starts without LD_LIBRARY_PATH"
# the installed man page: a one-line .TH naming the installed version, rendered by man -l
ver=$(sed -n 1p "$T/out" | sed 's/-/\\-/g')
page="$P/share/man/man1/dpopt-train.1"
check "dpopt-train.1 installed" test -f "$page"
th=$(grep '^\.TH' "$page")
check "installed dpopt-train.1: .TH '$th' is one well-formed line" \
  [ "$th" = ".TH DPOPT\\-TRAIN 1 \"\" \"$ver\" \"dpopt manual\"" ]
if command -v man >/dev/null 2>&1; then
  $clean MANWIDTH=80 man -l "$page" 2>"$T/manerr" | col -bx >"$T/man.txt"
  has "$T/man.txt" '^ *dpopt-train  *- ' "man -l renders the installed page's NAME"
  has "$T/man.txt" '^EXAMPLES' "the installed page has EXAMPLES"
  check "man -l prints no error" test ! -s "$T/manerr"
fi
expect 0 $clean $MPI -np 2 "$T/ex1_train" "$S/data/a9a" 10
acc=$(sed -n 's/.*accuracy \([0-9.]*\).*/\1/p' "$T/out")
if awk -v a="$acc" 'BEGIN { exit !(a > 0.8) }'; then ok; else bad "ex1_train accuracy '$acc' (want > 0.8)"; cat "$T/out"; fi
expect 0 make -C "$B" uninstall prefix="$P"
check "uninstall removes dpopt.pc" test ! -f "$P/lib/pkgconfig/dpopt.pc"
finish test_install
