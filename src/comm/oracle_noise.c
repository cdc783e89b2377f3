/* The oracle's local / shares path (privacy.trust = local, shares): every rank's guard, its
 * noise on its own sum, the withheld round; and the disjoint-pass check the secagg path shares
 * (oracle_int.h).  Split from oracle.c, which serves the requests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/oracle_int.h"
#include "dpopt/comm.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "privacy/guard.h" /* the party guard */

/* Noise of a local/shares request, added by this rank to its own local sums BEFORE the reduce
 * (so every value that leaves the rank is noised).  The loss of a noised request is not
 * computed into the reduction (it would travel un-noised).  Local noise: the exact grid
 * mechanism on the rank's sum (snapped first, see privacy.h), only on ranks with rows in the
 * batch; shares: every rank (share index = its rank, nshares = the communicator's size) snaps
 * its sum to the grid of the total scale and adds its exact integer share
 * (dpo_mech_laplace_share), whether or not it has rows, so the reduced sum carries exactly
 * one central discrete Laplace (the values are integers times Lambda; the double-double
 * reduction adds them exactly, the total's one rounding to a double is post-processing). */
static int dpo__local_noise(dpo_oracle_t *o, const int64_t hdr[DPO__HDR]) {
  const int32_t d = o->d;
  double scale;
  memcpy(&scale, &hdr[6], sizeof scale);
  int kind = (int)hdr[4], nsh = (int)hdr[5];
  int64_t used = (int64_t)o->acc[d + 1].hi;
  o->acc[d].hi = o->acc[d].lo = 0.0;
  if ((kind == DPO_ONOISE_LOCAL_LAPLACE || kind == DPO_ONOISE_LOCAL_GAUSSIAN) && used == 0)
    return DPO_OK;
  if (!o->noise_rng)
    return dpo_err(DPO_EINVAL, "oracle: rank %d has no noise stream for a %s-noised request "
                   "(dpo_oracle_set_noise_rng)", o->rank,
                   kind >= DPO_ONOISE_SHARE_LAPLACE ? "shares" : "locally");
  int rc;
  for (int32_t j = 0; j < d; j++) o->g[j] = o->acc[j].hi + o->acc[j].lo;
  switch (kind) {
  case DPO_ONOISE_LOCAL_LAPLACE: rc = dpo_mech_laplace(o->noise_rng, scale, o->g, d); break;
  case DPO_ONOISE_LOCAL_GAUSSIAN: rc = dpo_mech_gaussian(o->noise_rng, scale, o->g, d); break;
  case DPO_ONOISE_SHARE_LAPLACE: /* share index = rank: the pieces of one discrete Laplace */
    rc = nsh == o->size ? dpo_mech_laplace_share(o->noise_rng, scale, o->rank, nsh, o->g, d)
                        : dpo_err(DPO_EINVAL, "oracle: %d shares for %d ranks", nsh, o->size);
    break;
  case DPO_ONOISE_SHARE_GAUSSIAN:
    rc = nsh == o->size ? dpo_mech_gaussian_share(o->noise_rng, scale, o->rank, nsh, o->g, d)
                        : dpo_err(DPO_EINVAL, "oracle: %d shares for %d ranks", nsh, o->size);
    break;
  default: rc = dpo_err(DPO_EINVAL, "oracle: unknown noise kind %d", kind);
  }
  if (rc) return rc;
  for (int32_t j = 0; j < d; j++) {
    o->acc[j].hi = o->g[j];
    o->acc[j].lo = 0.0;
  }
  return DPO_OK;
}

/* The party guard's check of a batch charged as one of a disjoint pass (parallel composition):
 * none of this rank's rows may have been in an earlier batch of the same pass. */
int dpo__guard_pass(dpo_oracle_t *o, const int64_t hdr[DPO__HDR]) {
  const int64_t n = o->shard->n;
  if (hdr[2] == DPO__M_LOCAL)
    return dpo_err(DPO_EINVAL, "party guard: a party-local sample charged as a disjoint pass");
  if (!o->pass_used && !(o->pass_used = calloc((size_t)(n > 0 ? n : 1), 1)))
    return dpo_err(DPO_ENOMEM, "party guard: out of memory");
  if (hdr[11] != o->pass) memset(o->pass_used, 0, (size_t)(n > 0 ? n : 1)), o->pass = hdr[11];
  const int64_t used = (int64_t)o->acc[o->d + 1].hi;
  for (int64_t k = 0; k < (hdr[2] == DPO__M_ALL ? n : used); k++) {
    int64_t i = hdr[2] == DPO__M_ALL ? k : o->lrows[k];
    if (o->pass_used[i])
      return dpo_err(DPO_EINVAL, "rank %d refuses: row %lld of its shard was in an earlier "
                     "batch of the pass the coordinator charges as disjoint (parallel "
                     "composition); nothing contributed, the round is withheld",
                     o->rank, (long long)(i + o->shard->row0));
    o->pass_used[i] = 1;
  }
  return DPO_OK;
}

/* A local / shares request on every rank, whatever its status lrc: the party guard prices the
 * announced noise from the party's own plan and charges its own account (privacy/guard.h),
 * for the releases its rows are in (as under secagg), before the rank adds its noise.  Then a
 * failure flag is all-reduced: if any rank failed or refused, every rank zeroes its sums, so
 * nothing is reduced (under shares, a missing share would leave the others' sums with less
 * noise than charged) and only the failing ranks report a status. */
int dpo__local_round(dpo_oracle_t *o, const int64_t hdr[DPO__HDR], int lrc) {
  const int32_t d = o->d;
  int rc = lrc;
  const int64_t used = (int64_t)o->acc[d + 1].hi;
  const int mine = hdr[2] == DPO__M_ALL ? o->shard->n > 0 : used > 0;
  if (!rc && o->guard && mine) {
    double claim;
    memcpy(&claim, &hdr[10], sizeof claim);
    dpo_guard_lreq_t q = {(int)hdr[4], 0.0, hdr[5], claim, hdr[11] - 1};
    memcpy(&q.scale, &hdr[6], sizeof q.scale);
    rc = hdr[11] > 0 ? dpo__guard_pass(o, hdr) : DPO_OK;
    if (!rc) rc = dpo_guard_admit_local(o->guard, &q);
  }
  if (!rc) rc = dpo__local_noise(o, hdr);
  int bad = rc != DPO_OK, any = bad;
  if (MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, o->comm) != MPI_SUCCESS) {
    any = 1;
    if (!rc) rc = dpo_err(DPO_EMPI, "oracle: MPI_Allreduce failed");
  }
  if (any)
    for (int32_t j = 0; j <= d; j++) o->acc[j].hi = o->acc[j].lo = 0.0;
  return rc;
}
