# Sourced by the jobs: where the built dpopt is.  dpo_job_build SRC sets BUILD (unless the
# caller set it, e.g. from --build) to the first tree that holds a built dpopt: SRC/build (the
# out-of-tree build of jobs/build and the README) or SRC itself (an in-tree
# `./configure && make`), and DPOPT to BUILD/dpopt.  Neither: a message naming both, exit 1.
dpo_job_build() {
  if [ -z "${BUILD:-}" ]; then
    if [ -x "$1/build/dpopt" ]; then BUILD=$1/build
    elif [ -x "$1/dpopt" ]; then BUILD=$1
    else
      echo "$0: no built dpopt in $1/build (jobs/build) nor in $1 (an in-tree build); build it first or pass --build DIR" >&2
      exit 1
    fi
  fi
  [ -x "$BUILD/dpopt" ] || { echo "$0: $BUILD/dpopt: not found (--build DIR names the build tree)" >&2; exit 1; }
  DPOPT=$BUILD/dpopt
}
