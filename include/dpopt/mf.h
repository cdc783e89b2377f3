/* Matrix factorization runs from a configuration (what dpopt mf does).  The algorithms,
 * partitions and options are in dpopt/hamsi.h. */
#ifndef DPOPT_MF_H
#define DPOPT_MF_H

#include <mpi.h>
#include <stdio.h>

#include "dpopt/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective on comm: factorize the ratings file `ratings` with the mf.* keys of dpopt mf
 * --help (method, partition, schedule, rank, strata, step sizes, epochs or time, held-out
 * fraction, seed, mf.zero_based).  mf.out names a NEW directory, claimed before the ratings
 * are read (an existing non-empty one is DPO_EINVAL), that receives X1.txt, X2t.txt,
 * trace.csv and summary.json.  Rank 0 writes the report to `report`.  Seeded and without
 * noise: the output is NOT private.  Returns the same status on every rank. */
int dpo_mf_run_config(MPI_Comm comm, const dpo_config_t *cfg, const char *ratings, FILE *report);

#ifdef __cplusplus
}
#endif
#endif
