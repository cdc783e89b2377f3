#!/bin/sh
# test_secagg at 5 ranks: the masked sums at 2, 3 and 5 ranks (32- and 64-bit words, complete
# and sparse mask graphs) equal the sums in the clear; the rest of test_secagg at 5 ranks too.
. "$(dirname "$0")/../lib/testlib.sh"
$MPI -np 5 "$B/mpi_tests/privacy/test_secagg"
exit $?
