#!/bin/sh
# Man pages (doc/Makefile.inc, doc/help2roff.sh): after the build, doc/man/ holds dpopt.1 and
# one dpopt-CMD.1 for every command `dpopt --help` lists (no more, no fewer), each page
# carries every option its command's --help lists (as roff: \fB\-\-eps\fR) and its usage line,
# and doc/man/pages names exactly these pages (what make install installs).  Every page has one
# well-formed .TH line (title, section 1, date, "dpopt VERSION" from the first line of
# --version, manual: five fields on one line), an EXAMPLES section (doc/man-examples) whose
# commands run that page's command, and dpopt-train(1) lists each algorithm's keys as a nested
# list, one key an item.  The converter itself is checked on a fake program whose help text
# holds roff control characters, and fails on a page without examples.  When groff is present,
# every page renders without warnings and shows the options as typed; when man is, `man -l`
# renders every page with its name and version.  Every --help's mpirun lines (the pages'
# synopses) run `mpirun --quiet`, as the documentation does (lib/mpirun_quiet.awk).
. "$(dirname "$0")/../lib/testlib.sh"
M="$B/doc/man"

hasF() { if grep -qF -- "$2" "$1"; then ok; else bad "$3: no '$2' in $1"; fi; }
roffopt() { printf '\\fB%s\\fR' "$(printf %s "$1" | sed 's/-/\\-/g')"; }
opts() { # the options of a --help text: first word(s) of the rows under "Options:"
  awk '/^Options:$/ { on = 1; next } on && /^$/ { exit }
       on && /^  -/ { sub(/^  /, ""); i = index($0, "  "); t = i ? substr($0, 1, i - 1) : $0
                      n = split(t, w, / /); for (k = 1; k <= n; k++) if (w[k] ~ /^-/) { sub(/,$/, "", w[k]); print w[k] } }' "$1"
}

expect 0 "$DPOPT" --help
cp "$T/out" "$T/top"
awk -f "$S/mpi_tests/lib/mpirun_quiet.awk" "$T/top" >"$T/loud"
check "dpopt --help: its mpirun lines are quiet: $(cat "$T/loud")" [ ! -s "$T/loud" ]
cmds=$(awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }' "$T/top")
check "dpopt --help lists commands" test -n "$cmds"
check "doc/man/pages exists" test -s "$M/pages"
{ echo dpopt.1; for c in $cmds; do echo "dpopt-$c.1"; done; } >"$T/want"
check "doc/man/pages is dpopt.1 + one page per command of dpopt --help" cmp -s "$T/want" "$M/pages"
ls "$M" | grep '\.1$' | sort >"$T/have"
sort "$T/want" >"$T/want.s"
check "doc/man holds exactly the pages of doc/man/pages" cmp -s "$T/want.s" "$T/have"

check "dpopt.1 exists" test -s "$M/dpopt.1"
hasF "$M/dpopt.1" "$(roffopt --version)" "dpopt.1 documents --version"
has "$M/dpopt.1" '^\.SH EXIT STATUS' "dpopt.1 has the exit statuses"
for c in $cmds; do
  hasF "$M/dpopt.1" "$(roffopt "dpopt-$c")(1)" "dpopt.1 lists $c"
  p="$M/dpopt-$c.1"
  check "dpopt-$c.1 exists" test -s "$p"
  [ -s "$p" ] || continue
  expect 0 "$DPOPT" "$c" --help
  o=$(opts "$T/out")
  check "dpopt $c --help has options" test -n "$o"
  for f in $o; do
    if grep -qF -- "$(roffopt "$f")" "$p"; then ok; else bad "dpopt-$c.1 lacks $f"; fi
  done
  awk -f "$S/mpi_tests/lib/mpirun_quiet.awk" "$T/out" >"$T/loud" # the synopsis as documented
  check "dpopt $c --help: its mpirun lines are quiet: $(cat "$T/loud")" [ ! -s "$T/loud" ]
  u=$(sed -n '1s/^usage: //p' "$T/out" | sed 's/-/\\-/g')
  if grep -qxF -- "$u" "$p"; then ok; else bad "dpopt-$c.1: no synopsis '$u'"; fi
  ti=".TH $(echo "DPOPT-$c" | tr a-z A-Z | sed 's/-/\\-/g') 1 "
  if grep -qF -- "$ti" "$p"; then ok; else bad "dpopt-$c.1: no '$ti'"; fi
  cx=$(printf 'dpopt %s ' "$c" | sed 's/-/\\-/g')
  if sed -n '/^\.SH EXAMPLES$/,/^\.SH /p' "$p" | grep -qF -- "$cx"; then ok; else bad "dpopt-$c.1: no example of '$cx'"; fi
done

# the .TH line of every page: one line, five fields, the version's first line only
ver=$("$DPOPT" --version | sed -n 1p | sed 's/-/\\-/g')
for p in $(cat "$M/pages"); do
  p="$M/$p"
  check "$p: one .TH line" [ "$(grep -c '^\.TH' "$p")" = 1 ]
  th=$(grep '^\.TH' "$p")
  if printf '%s\n' "$th" | grep -qx '\.TH [A-Z\\-]* 1 "[^"]*" "[^"]*" "dpopt manual"'; then ok; else bad "$p: malformed '$th'"; fi
  if printf '%s\n' "$th" | grep -qF "\"$ver\""; then ok; else bad "$p: .TH source is not '$ver': '$th'"; fi
  check "$p: .SH NAME follows .TH" [ "$(sed -n '/^\.TH/{n;p;}' "$p")" = ".SH NAME" ]
  has "$p" '^\.SH EXAMPLES$' "$p has EXAMPLES"
  check "$p: EXAMPLES shows a command" [ "$(sed -n '/^\.SH EXAMPLES$/,/^\.SH /p' "$p" | grep -c '^\.nf$')" -ge 1 ]
done
# dpopt-train: each algorithm's keys are items of a nested list, not one run-together paragraph
tr1="$M/dpopt-train.1"
has "$tr1" '^\\fBalgo\.beta\\fR$' "dpopt-train.1: algo.beta is a list item"
check "dpopt-train.1: nested key lists open and close" [ "$(grep -c '^\.RS' "$tr1")" = "$(grep -c '^\.RE$' "$tr1")" ]
check "dpopt-train.1: every algorithm with keys opens a key list" [ "$(grep -c '^\.RS$' "$tr1")" -ge 20 ]

# the converter on a fake program: roff control characters in the help text stay text
cat >"$T/fake.top" <<'EOF'
usage: fake COMMAND

Commands:
  zap       .starts with a dot

EOF
cat >"$T/fake.zap" <<'EOF'
usage: fake zap [options] \X

Options:
  --dry-run                    'quoted and \fBbold\fR
  -q, --quiet N                .dot
  -h, --help                   show this help

.TH injected
EOF
cat >"$T/fake.ex" <<'EOF'
# examples of the fake pages
[dpopt]
The top page:
$ fake zap
[zap]
Zap a file (text with a .dot and a \backslash):
$ fake zap --dry-run -q 1 .file
EOF
cat >"$T/fake" <<EOF
#!/bin/sh
case "\$1 \$2" in
  "--version ") printf 'fake 1.0\\nsecond line: a detail\\n' ;;
  "--help ") cat "$T/fake.top" ;;
  "zap --help") cat "$T/fake.zap" ;;
  *) exit 1 ;;
esac
EOF
chmod +x "$T/fake"
expect 0 sh "$S/doc/help2roff.sh" "$T/fake" "$T/man" "$T/fake.ex"
z="$T/man/dpopt-zap.1"
hasF "$z" "$(roffopt --dry-run)" "fake: option row"
has "$z" '^\\&\.dot$' "fake: a leading dot is escaped"
has "$z" "^\\\\&'quoted and \\\\efBbold\\\\efR$" "fake: leading quote and backslashes escaped"
has "$z" '^\\&\.TH injected$' "fake: a .TH line in the text stays text"
has "$z" '^fake zap \[options\] \\eX$' "fake: synopsis"
has "$z" '^\.TH DPOPT\\-ZAP 1 "" "fake 1\.0" "dpopt manual"$' "fake: .TH with the version's first line"
hasnot "$z" 'second line' "fake: the rest of --version stays out"
has "$z" '^\\fBfake zap \\-\\-dry\\-run \\-q 1 \.file\\fR$' "fake: the example command, escaped"
has "$z" '^Zap a file (text with a \.dot and a \\ebackslash):$' "fake: the example text, escaped"
sed '/^\[zap\]/,$d' "$T/fake.ex" >"$T/fake.ex2"
expect 1 sh "$S/doc/help2roff.sh" "$T/fake" "$T/man3" "$T/fake.ex2"
has "$T/err" 'no \[zap\] block of examples' "a page without examples fails the generation"
hasnot "$z" '^\.TH injected' "fake: no injected request"
check "fake pages list" test "$(cat "$T/man/pages")" = "dpopt.1
dpopt-zap.1"
printf '#!/bin/sh\n[ "$1" = --version ] && echo v\n[ "$1" = --help ] && printf "usage: x\\n\\nCommands:\\n  bad  fails\\n"\n[ "$1" = bad ] && exit 1\nexit 0\n' >"$T/broken"
chmod +x "$T/broken"
printf '[dpopt]\n$ x\n[bad]\n$ x bad\n' >"$T/broken.ex"
expect 1 sh "$S/doc/help2roff.sh" "$T/broken" "$T/man2" "$T/broken.ex"
has "$T/err" "'$T/broken bad --help' failed" "a failing --help fails the generation"

if command -v groff >/dev/null 2>&1; then
  for p in "$M"/*.1 "$z"; do
    w=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
    if [ -z "$w" ]; then ok; else bad "groff warns on $p: $w"; fi
  done
  groff -man -Tascii "$M/dpopt-train.1" 2>/dev/null | col -b >"$T/train.txt"
  has "$T/train.txt" '--row-l2-bound B' "rendered options read as typed"
  has "$T/train.txt" '^[[:space:]]*algo\.beta[[:space:]][[:space:]]' "rendered: an algorithm's key starts its own line"
fi
if command -v man >/dev/null 2>&1; then
  for p in $(cat "$M/pages"); do
    n=${p%.1}
    MANWIDTH=80 man -l "$M/$p" 2>"$T/manerr" | col -bx >"$T/man.txt"
    if grep -q '^NAME' "$T/man.txt" && grep -q "^ *$n  *- " "$T/man.txt" && grep -q 'dpopt [0-9]' "$T/man.txt" && ! [ -s "$T/manerr" ]; then ok
    else bad "man -l $p does not render NAME, '$n - ' and the version cleanly"; sed 's/^/    /' "$T/manerr" | head -n 5; fi
  done
fi
finish test_man
