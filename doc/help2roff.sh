#!/bin/sh
# Write the man pages of dpopt from its own --help text, so that they cannot drift from it:
#   doc/help2roff.sh DPOPT OUTDIR EXAMPLES
# runs `DPOPT --help` and `DPOPT --version`, writes OUTDIR/dpopt.1, then one page
# OUTDIR/dpopt-CMD.1 per command listed under "Commands:" (from `DPOPT CMD --help`), and
# OUTDIR/pages, the list of pages written.  A new subcommand therefore gets its page without
# any list to edit.  Fails (non-zero) if a --help fails or prints nothing, or if EXAMPLES
# (doc/man-examples: "[PAGE]" blocks of text lines and "$ COMMAND" lines) has no block for a
# page: every page has an EXAMPLES section.
#
# The conversion (awk below) knows the shape every dpopt help shares (src/cli/cli.c):
#   usage: LINE              -> SYNOPSIS
#   Options: / Commands:     -> OPTIONS / COMMANDS, one .TP per "  TAG  text" row
#   "Heading:" + indented rows -> .SS Heading with one .TP per row; a row's own rows
#                                 ("      KEY  text", e.g. an algorithm's algo.* keys) -> a
#                                 nested .TP list (.RS/.RE), one key per item
#   other lines              -> filled paragraphs; a paragraph "Exit status: ..." -> EXIT STATUS
# Paper codes (000..004, as the help texts cite them) get a REFERENCES section with the full
# citation (doc/design.md, "References", is the longer list).
set -e
[ $# = 3 ] || { echo "usage: $0 DPOPT OUTDIR EXAMPLES" >&2; exit 1; }
dpopt=$1
out=$2
examples=$3
[ -r "$examples" ] || { echo "$0: cannot read '$examples'" >&2; exit 1; }
mkdir -p "$out"
tmp="$out/.help.$$"
trap 'rm -f "$tmp" "$tmp.top"' EXIT

v=$("$dpopt" --version) || { echo "$0: '$dpopt --version' failed" >&2; exit 1; }
# the first line ("dpopt 0.1.0"): the .TH source field; the rest (kernels, MPI) is the machine's
version=$(printf '%s\n' "$v" | sed -n 1p)
[ -n "$version" ] || { echo "$0: '$dpopt --version' printed nothing" >&2; exit 1; }
"$dpopt" --help >"$tmp.top" || { echo "$0: '$dpopt --help' failed" >&2; exit 1; }
[ -s "$tmp.top" ] || { echo "$0: '$dpopt --help' printed nothing" >&2; exit 1; }
cmds=$(awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }' "$tmp.top")
[ -n "$cmds" ] || { echo "$0: no commands in '$dpopt --help'" >&2; exit 1; }

conv() { # conv PAGE-NAME ONE-LINE-SUMMARY < help text > roff
  awk -v page="$1" -v summary="$2" -v version="$version" -v cmds="$cmds" -v exfile="$examples" '
  function esc(s) { # roff-safe text: backslash, hyphen-minus, leading control characters
    gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
    if (s ~ /^[.'\'']/) s = "\\&" s
    return s
  }
  function tag(t,   n, i, w, r, parts) { # "-h, --help" / "--data FILE" / "logistic"
    n = split(t, parts, / /); r = ""
    for (i = 1; i <= n; i++) {
      w = parts[i]
      c = ""; if (w ~ /,$/) { c = ","; w = substr(w, 1, length(w) - 1) }
      if (w ~ /^-/ || i == 1) r = r (i > 1 ? " " : "") "\\fB" esc(w) "\\fR" c
      else r = r " \\fI" esc(w) "\\fR" c
    }
    return r
  }
  function add(sec, s) { body[sec] = body[sec] s "\n" }
  function endrs() { if (rs) { add(rssec, ".RE"); rs = 0 } } # close a nested list of keys
  function text(sec, s) { # a line of a paragraph (a blank line before it starts a new one)
    endrs()
    if (pp[sec] && body[sec] != "") add(sec, ".PP")
    pp[sec] = 0; add(sec, s)
  }
  { all = all " " $0 }
  BEGIN { sec = "DESCRIPTION"; if (summary != "") add(sec, esc(toupper(substr(summary, 1, 1)) substr(summary, 2)) ".") }
  NR == 1 && /^usage: / { syn = esc(substr($0, 8)); insyn = 1; next }
  insyn && /^$/ { insyn = 0; next }
  insyn { t = $0; sub(/^ +/, "", t); syn = syn "\n.br\n" esc(t); next }
  /^Options:$/ { endrs(); sec = "OPTIONS"; list = 1; next }
  /^Commands:$/ { endrs(); sec = "COMMANDS"; list = 1; next }
  /^$/ { endrs(); if (list || sec == "EXIT STATUS") { list = 0; sec = "DESCRIPTION" }; pp[sec] = 1; next }
  /^Exit status:/ { endrs(); sec = "EXIT STATUS"; list = 0; pp[sec] = 1 }
  /^[^ ].*:$/ { # a heading: indented rows follow
    endrs()
    if (sec != "DESCRIPTION") sec = "DESCRIPTION"
    add(sec, ".SS " esc(substr($0, 1, length($0) - 1))); pp[sec] = 0; list = 1; next
  }
  /^      / && list { # a row continued: its own keys ("algo.alpha   text") as a nested list
    t = $0; sub(/^ +/, "", t)
    if (t ~ /^[a-z_]+\.[A-Za-z_0-9.]+  +[^ ]/) {
      i = index(t, "  "); k = substr(t, 1, i - 1); d = substr(t, i); sub(/^ +/, "", d)
      if (!rs) { add(sec, ".RS"); rs = 1; rssec = sec }
      add(sec, ".TP 20\n\\fB" esc(k) "\\fR\n" esc(d)) # 20n: most keys fit beside their text
    } else add(sec, esc(t))
    next
  }
  /^  [^ ]/ && list {
    endrs()
    line = substr($0, 3)
    if (line ~ /^-/) { # an option: its tag ends at two spaces
      i = index(line, "  "); t = i ? substr(line, 1, i - 1) : line; d = i ? substr(line, i) : ""
    } else { # a name: one word
      i = index(line, " "); t = i ? substr(line, 1, i - 1) : line; d = i ? substr(line, i) : ""
    }
    sub(/^ +/, "", d)
    if (sec == "COMMANDS") t = "dpopt-" t
    add(sec, ".TP\n" tag(t) (sec == "COMMANDS" ? "(1)" : "") "\n" esc(d)); next
  }
  { if (list) pp["DESCRIPTION"] = 1 # text after a list starts a new paragraph
    if (sec != "EXIT STATUS") { list = 0; sec = "DESCRIPTION" }
    t = $0; sub(/^ +/, "", t); text(sec, esc(t)) }
  END {
    endrs()
    up = toupper(page)
    # EXAMPLES: the [PAGE] block of the examples file (text lines, "$ COMMAND" lines)
    want = page == "dpopt" ? "dpopt" : substr(page, 7); on = 0; found = 0; ex = ""
    while ((getline l < exfile) > 0) {
      if (l ~ /^#/ || l == "") continue
      if (l ~ /^\[[^]]*\]$/) { on = (l == "[" want "]"); if (on) found = 1; continue }
      if (!on) continue
      if (l ~ /^\$ /) ex = ex ".RS 4\n.nf\n\\fB" esc(substr(l, 3)) "\\fR\n.fi\n.RE\n"
      else ex = ex ".PP\n" esc(l) "\n"
    }
    close(exfile)
    if (!found || ex == "") {
      printf "help2roff.sh: no [%s] block of examples in %s\n", want, exfile > "/dev/stderr"
      exit 1
    }
    printf ".\\\" Generated by doc/help2roff.sh from `%s --help`: do not edit.\n", page == "dpopt" ? "dpopt" : "dpopt " substr(page, 7)
    printf ".TH %s 1 \"\" \"%s\" \"dpopt manual\"\n", esc(up), esc(version)
    printf ".SH NAME\n%s \\- %s\n", esc(page), esc(summary == "" ? "distributed, differentially private optimization on MPI" : summary)
    printf ".SH SYNOPSIS\n%s\n", syn
    if (page == "dpopt") {
      printf ".SH DESCRIPTION\n%s", body["DESCRIPTION"]
      printf ".SH COMMANDS\n%s", body["COMMANDS"]
      printf ".SH OPTIONS\n.TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nthe list of commands (this text)\n"
      printf ".TP\n\\fB\\-\\-version\\fR\nprint \\(lq%s\\(rq\n", esc(version)
    } else {
      printf ".SH DESCRIPTION\n%s", body["DESCRIPTION"]
      if (body["OPTIONS"] != "") printf ".SH OPTIONS\n%s", body["OPTIONS"]
    }
    if (body["EXIT STATUS"] != "") printf ".SH EXIT STATUS\n%s", body["EXIT STATUS"]
    printf ".SH EXAMPLES\n%s", ex
    ref["000"] = "N. Kuru, \\fINovel gradient\\-based methods for data distribution and privacy in data science\\fR, PhD thesis, Sabanc\\[u0131] University, Istanbul, 2019 (\\(lqthesis\\(rq)."
    ref["001"] = "N. Kuru, \\[u015E]. \\[u0130]. Birbil, M. G\\[u00FC]rb\\[u00FC]zbalaban, S. Y\\[u0131]ld\\[u0131]r\\[u0131]m, \\fIDifferentially private accelerated optimization algorithms\\fR, SIAM J. Optim., 2022, doi:10.1137/20M1355847."
    ref["003"] = "V. Feldman, T. Koren, K. Talwar, \\fIPrivate stochastic convex optimization: optimal rates in linear time\\fR, Proc. 52nd ACM Symposium on Theory of Computing (STOC 2020), 2020, arXiv:2005.04763."
    ref["004"] = "T. Xu, F. Shang, Y. Liu, H. Liu, L. Shen, M. Gong, \\fIDifferentially private ADMM algorithms for machine learning\\fR, arXiv:2011.00164, 2020."
    refs = ""
    for (k = 0; k <= 4; k++) {
      c = sprintf("%03d", k)
      if ((c in ref) && (page == "dpopt" || all ~ ("(^|[^0-9.])" c "([^0-9]|$)")))
        refs = refs ".TP\n\\fB" c "\\fR\n" ref[c] "\n"
    }
    if (page == "dpopt" || all ~ /thesis/) {
      if (refs !~ /fB000/) refs = ".TP\n\\fB000\\fR\n" ref["000"] "\n" refs
    }
    if (refs != "")
      printf ".SH REFERENCES\nThe papers cited by code (000 .. 004) in this text; the design document doc/design.md of the source tree maps every citation.\n%s", refs
    printf ".SH SEE ALSO\n"
    if (page == "dpopt") {
      n = split(cmds, cl, /\n/); s = ""
      for (i = 1; i <= n; i++) s = s (i > 1 ? ",\n" : "") "\\fBdpopt\\-" esc(cl[i]) "\\fR(1)"
      printf "%s\n", s
    } else printf "\\fBdpopt\\fR(1)\n"
  }'
}

: >"$tmp.pages"
trap 'rm -f "$tmp" "$tmp.top" "$tmp.pages"' EXIT
conv dpopt "" <"$tmp.top" >"$out/dpopt.1"
echo dpopt.1 >>"$tmp.pages"
for c in $cmds; do
  "$dpopt" "$c" --help >"$tmp" || { echo "$0: '$dpopt $c --help' failed" >&2; exit 1; }
  [ -s "$tmp" ] || { echo "$0: '$dpopt $c --help' printed nothing" >&2; exit 1; }
  summary=$(awk -v c="$c" '/^Commands:/ { on = 1; next } on && $1 == c { $1 = ""; sub(/^ +/, ""); print; exit }' "$tmp.top")
  conv "dpopt-$c" "$summary" <"$tmp" >"$out/dpopt-$c.1"
  echo "dpopt-$c.1" >>"$tmp.pages"
done
mv "$tmp.pages" "$out/pages"
