# awk -f mpirun_quiet.awk FILE...: print FILE:LINE: TEXT for every documented mpirun launch that
# would print Open MPI's notice after a failed rank: `mpirun`, its options, then a program
# (dpopt, build/..., ./prog, "$VAR") with no --quiet / -q among the options; and every launcher
# variable (MPIRUN=, MPI=, ${MPIRUN:-...}) set to mpirun without it.  Prose such as
# "`mpirun --timeout`" or "mpirun stops every rank" names no program and is not a launch.
function val(o) { # the mpirun options that take a value
  return o ~ /^(-np|-n|--np|-c|--timeout|--hostfile|-hostfile|--host|-H|-x|--map-by|--bind-to|--rank-by|-wdir|--wdir|--with-ft|--prefix)$/
}
{
  s = $0
  while ((i = index(s, "mpirun")) > 0) {
    pre = substr(s, 1, i - 1); s = substr(s, i + 6)
    if (pre ~ /(MPIRUN|MPI)=("|[$][{]MPIRUN:-)?$/ && s !~ /^ (--quiet|-q)( |"|}|$)/) { print FILENAME ":" FNR ": " $0; next }
    if (s ~ /^[A-Za-z_]/ || pre ~ /[A-Za-z_\/.-]$/) continue # mpirun_x, jobs/mpirun, ...
    t = s; j = index(t, "`"); if (j) t = substr(t, 1, j - 1) # the code span only
    n = split(t, w, /[ \t]+/); q = 0; k = (w[1] == "") ? 2 : 1
    for (; k <= n; k++) {
      if (w[k] == "--quiet" || w[k] == "-q") q = 1
      else if (w[k] == "--mca") k += 2
      else if (w[k] ~ /^-/) { if (val(w[k])) k++ }
      else break
    }
    if (!q && k <= n && w[k] ~ /dpopt|^\.\/|^"?[$]|^build\//) { print FILENAME ":" FNR ": " $0; next }
  }
}
