/* The ledger on sub-communicators of 1..4 ranks: open is collective and agrees on failure,
 * charge_all returns the same status and charge on every rank, refusal happens exactly at the
 * budget, only rank 0 holds state, and the journal written by rank 0 resumes to the same totals
 * whatever the number of ranks.  Deferred fsync (dpo_ledger_set_sync(L, 0)): each line is still
 * in the file when its charge returns (a killed process loses none), and the journal resumes. */
#include "dpopt/privacy.h"
#include "dpopt/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/mpitest.h"

/* lines in the file, read through a descriptor of its own (what a reader after a kill sees) */
static int file_lines(const char *path) {
  FILE *f = fopen(path, "r");
  int n = 0, ch;
  if (!f) return -1;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

/* rank 0, serial: the lines of a deferring ledger are written by the charge, not by the sync */
static void deferred(int k, const char *dir) {
  char path[256];
  snprintf(path, sizeof path, "%s/deferred_%d.jsonl", dir, k);
  unlink(path);
  dpo_ledger_t *L = NULL;
  int st = dpo_ledger_open(MPI_COMM_NULL, 1.0, 0.0, path, 0, &L);
  T_CHECK(st == DPO_OK, "k=%d: deferred open %s", k, dpo_errmsg());
  if (st) return;
  int dfr = -1;
  T_CHECK(dpo_ledger_set_sync(L, 0, &dfr) == DPO_OK && dfr == 1, "k=%d: set_sync(0) %s", k,
          dpo_errmsg());
  T_CHECK(dpo_ledger_sync(L) == DPO_OK, "k=%d: sync with nothing written", k);
  dpo_charge_t c = {.mechanism = DPO_MECH_LAPLACE, .eps = 0.25, .sampling = DPO_SAMPLING_NONE,
                    .accounting = DPO_ACCOUNTING_PURE};
  for (int i = 0; i < 3; i++) {
    c.step = i;
    T_CHECK(dpo_ledger_charge(L, &c, NULL) == DPO_OK, "k=%d: deferred charge %d", k, i);
    /* the header and i + 1 charges, before any sync */
    T_CHECK(file_lines(path) == i + 2, "k=%d: %d lines after charge %d, want %d", k,
            file_lines(path), i, i + 2);
  }
  T_CHECK(dpo_ledger_sync(L) == DPO_OK, "k=%d: sync %s", k, dpo_errmsg());
  T_CHECK(dpo_ledger_set_sync(L, 1, &dfr) == DPO_OK && dfr == 0, "k=%d: set_sync(1)", k);
  c.step = 3;
  T_CHECK(dpo_ledger_charge(L, &c, NULL) == DPO_OK && file_lines(path) == 5, "k=%d: 4th", k);
  dpo_ledger_close(L);
  dpo_ledger_t *R = NULL;
  double e = -1;
  st = dpo_ledger_open(MPI_COMM_NULL, 1.0, 0.0, path, 1, &R);
  T_CHECK(st == DPO_OK && dpo_ledger_spent(R, &e, NULL) == DPO_OK && e == 1.0 &&
              dpo_ledger_count(R) == 4, "k=%d: deferred journal resumed to %g", k, e);
  /* an in-memory ledger has no lines to defer */
  dpo_ledger_t *M = NULL;
  if (dpo_ledger_open(MPI_COMM_NULL, 1.0, 0.0, NULL, 0, &M) == DPO_OK) {
    T_CHECK(dpo_ledger_set_sync(M, 0, &dfr) == DPO_OK && dfr == 0, "k=%d: no journal", k);
    dpo_ledger_close(M);
  }
  /* without a ledger: refused, like every rank-0 call */
  T_CHECK(dpo_ledger_sync(NULL) == DPO_EINVAL, "k=%d: sync(NULL)", k);
  dpo_ledger_close(R);
  unlink(path);
}

static void run(int k, const char *dir) {
  MPI_Comm comm = dpo_t_subcomm(k);
  if (comm == MPI_COMM_NULL) return;
  int rank;
  MPI_Comm_rank(comm, &rank);
  char path[256];
  snprintf(path, sizeof path, "%s/ledger_%d.jsonl", dir, k);
  if (rank == 0) unlink(path);

  dpo_ledger_t *L = NULL;
  /* invalid budget: every rank gets the same refusal */
  T_CHECK(dpo_ledger_open(comm, -1.0, 0.0, path, 0, &L) == DPO_EINVAL, "k=%d", k);
  /* resume of a journal that does not exist: rank 0 fails, all ranks report it */
  T_CHECK(dpo_ledger_open(comm, 1.0, 0.0, path, 1, &L) == DPO_EIO, "k=%d", k);

  int st = dpo_ledger_open(comm, 1.0, 0.0, path, 0, &L);
  T_CHECK(st == DPO_OK, "k=%d: %s", k, dpo_errmsg());
  if (st) goto out;
  dpo_charge_t c = {.mechanism = DPO_MECH_LAPLACE, .eps = 0.25, .sampling = DPO_SAMPLING_NONE,
                    .accounting = DPO_ACCOUNTING_PURE};
  for (int i = 0; i < 4; i++) {
    double ch = -1;
    c.step = i;
    st = dpo_ledger_charge_all(L, &c, &ch);
    T_CHECK(st == DPO_OK && ch == 0.25, "k=%d step %d: st=%d ch=%g", k, i, st, ch);
  }
  c.step = 4;
  c.eps = 1e-15;
  T_CHECK(dpo_ledger_charge_all(L, &c, NULL) == DPO_EBUDGET, "k=%d: over-budget not refused", k);
  double e = -1;
  if (rank == 0) {
    T_CHECK(dpo_ledger_spent(L, &e, NULL) == DPO_OK && e == 1.0, "k=%d: spent %g", k, e);
  } else {
    T_CHECK(dpo_ledger_spent(L, &e, NULL) == DPO_EINVAL, "k=%d: state off rank 0", k);
    T_CHECK(dpo_ledger_charge(L, &c, NULL) == DPO_EINVAL, "k=%d: charge off rank 0", k);
  }
  dpo_ledger_close(L);
  if (rank == 0) deferred(k, dir);

  /* resume on a different communicator size (serial here): same totals */
  if (rank == 0) {
    dpo_ledger_t *R = NULL;
    st = dpo_ledger_open(MPI_COMM_NULL, 1.0, 0.0, path, 1, &R);
    T_CHECK(st == DPO_OK, "k=%d: resume %s", k, dpo_errmsg());
    if (st == DPO_OK) {
      T_CHECK(dpo_ledger_spent(R, &e, NULL) == DPO_OK && e == 1.0, "k=%d: resumed %g", k, e);
      T_CHECK(dpo_ledger_count(R) == 4, "k=%d: count %lld", k, (long long)dpo_ledger_count(R));
      dpo_ledger_close(R);
    }
    unlink(path);
  }

  /* an add-remove ledger: the relation is known on every rank, and a charge calibrated for
   * replace-one is refused with the same status everywhere; a mixed pure + Gaussian charge
   * sequence goes through the auto accountant on any number of ranks */
  st = dpo_ledger_open_ex(comm, 5.0, 1e-5, NULL, 0, "auto", DPO_NEIGHBOURS_ADD_REMOVE, &L);
  T_CHECK(st == DPO_OK, "k=%d: open_ex %s", k, dpo_errmsg());
  if (st == DPO_OK) {
    T_CHECK(dpo_ledger_neighbours(L) == DPO_NEIGHBOURS_ADD_REMOVE, "k=%d: relation", k);
    c.eps = 0.5;
    c.neighbours = DPO_NEIGHBOURS_REPLACE_ONE;
    T_CHECK(dpo_ledger_charge_all(L, &c, NULL) == DPO_EINVAL, "k=%d: relation mismatch", k);
    c.neighbours = DPO_NEIGHBOURS_ADD_REMOVE;
    T_CHECK(dpo_ledger_charge_all(L, &c, NULL) == DPO_OK, "k=%d: pure charge", k);
    dpo_charge_t g = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = 4, .sensitivity = 1, .dim = 1,
                      .m = 10, .n = 1000, .sampling = DPO_SAMPLING_POISSON,
                      .accounting = DPO_ACCOUNTING_RDP, .neighbours = DPO_NEIGHBOURS_ADD_REMOVE};
    T_CHECK(dpo_ledger_charge_all(L, &g, NULL) == DPO_OK, "k=%d: Gaussian charge", k);
    dpo_ledger_close(L);
  }
out:
  MPI_Comm_free(&comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char dir[64] = "/tmp/dpo_ledger_XXXXXX";
  if (rank == 0 && !mkdtemp(dir)) dir[0] = 0;
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  T_CHECK(dir[0] != 0, "mkdtemp failed");
  for (int k = 1; k <= size && k <= 4 && dir[0]; k++) run(k, dir);
  if (rank == 0 && dir[0]) rmdir(dir);
  return dpo_t_finish("test_ledger");
}
