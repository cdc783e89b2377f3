# The dense dpopt binary file as the Python peers of jobs/bench/e2e read it (layout in
# include/dpopt/data.h): labels (+1/-1) and rows, float64, read whole into memory.
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        h = f.read(40)
    if h[:8] != b"DPOBIN01":
        sys.exit("%s: not a dpopt binary file" % path)
    n, d, sparse = struct.unpack_from("<qii", h, 8)
    if sparse:
        sys.exit("%s: sparse; the peers read dense files" % path)
    y = np.fromfile(path, dtype="<f8", count=n, offset=40)
    X = np.fromfile(path, dtype="<f8", count=n * d, offset=40 + 8 * n).reshape(n, d)
    return X, y
