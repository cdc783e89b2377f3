#!/bin/sh
# The exit-status table of doc/reference.md, the exit-status paragraph of `dpopt --help` and the
# DPO_EXIT_* codes of src/cli/cli.h name the same statuses, and every table row is one of them
# (test_errors.sh runs a case of each status).
. "$(dirname "$0")/../lib/testlib.sh"
h=$(sed -n 's/^ *DPO_EXIT_[A-Z]* *= *\([0-9]*\).*/\1/p' "$S/src/cli/cli.h" | sort -n | tr '\n' ' ')
r=$(awk '/^### Exit status/ { f = 1; next } f && /^#/ { f = 0 } f && $1 == "|" && $2 ~ /^[0-9]+$/ { print $2 }' \
  "$S/doc/reference.md" | sort -n | tr '\n' ' ')
expect 0 "$DPOPT" --help
u=$(sed -n '/^Exit status/,$p' "$T/out" | tr '\n' ' ' | grep -o '\(status:\|;\) *[0-9]* ' | grep -o '[0-9]*' | sort -n | tr '\n' ' ')
check "cli.h has the statuses 0 to 6: '$h'" [ "$h" = "0 1 2 3 4 5 6 " ]
check "reference.md exit-status table '$r' = cli.h '$h'" [ "$r" = "$h" ]
check "dpopt --help exit statuses '$u' = cli.h '$h'" [ "$u" = "$h" ]
# the table's row for 2 names a missing data file, the row for 1 an unreadable --config file
has "$S/doc/reference.md" '^| 2 | bad input data or file: a data file that is missing' "reference.md: a missing data file is 2"
has "$S/doc/reference.md" '^| 1 | usage or configuration error:.*unreadable `--config` file' "reference.md: an unreadable config is 1"
finish test_exit_table
