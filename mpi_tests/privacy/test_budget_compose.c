/* Budget stores (dpopt/budget.h): the store's composition of runs is the composition one
 * ledger makes of all their releases (the runs' plans charged into a single "auto" ledger: an
 * independent path, acct_auto.c, from the store's budget_compose.c); refusal at the budget; a
 * run id reserved twice is charged once; unregistered and changed files are refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/budget.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"

static char dir[256], store[300], data[300], key[300];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/dpo_budget_XXXXXX");
  cr_assert(mkdtemp(dir));
  snprintf(store, sizeof store, "%s/store", dir);
  snprintf(data, sizeof data, "%s/data.svm", dir);
  snprintf(key, sizeof key, "%s/key", dir);
  FILE *f = fopen(data, "w");
  fprintf(f, "+1 1:0.5 2:1\n-1 1:1\n");
  fclose(f);
}
static void teardown(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}
TestSuite(budget, .init = setup, .fini = teardown);

static dpo_charge_t poisson(double z) {
  dpo_charge_t c = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = z, .sensitivity = 1, .dim = 10,
                    .sampling = DPO_SAMPLING_POISSON, .accounting = DPO_ACCOUNTING_RDP, .m = 256,
                    .n = 32561, .neighbours = DPO_NEIGHBOURS_ADD_REMOVE};
  return c;
}
static dpo_charge_t laplace(double eps) {
  dpo_charge_t c = {.mechanism = DPO_MECH_LAPLACE, .eps = eps, .sampling = DPO_SAMPLING_NONE,
                    .accounting = DPO_ACCOUNTING_PURE, .neighbours = DPO_NEIGHBOURS_ADD_REMOVE};
  return c;
}

static dpo_ledger_t *ledger(double eps, double delta) {
  dpo_ledger_t *L = NULL;
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, eps, delta, NULL, 0, "auto",
                                  DPO_NEIGHBOURS_ADD_REMOVE, &L), DPO_OK, "%s", dpo_errmsg());
  return L;
}
static void charge(dpo_ledger_t *L, dpo_charge_t c, int n) {
  for (int i = 0; i < n; i++)
    cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK, "%s", dpo_errmsg());
}
static void id(char *b, int k) {
  for (int i = 0; i < 64; i++) b[i] = "0123456789abcdef"[(k + i) % 16];
  b[64] = '\0';
}

/* three runs (Gaussian z = 1.1 x 300, Gaussian z = 2 x 100 plus a Laplace 0.05, Laplace 0.1 x
 * 4): the store's spent = one auto ledger charged with all 405 releases */
Test(budget, composition_is_one_ledger_of_all_plans) {
  const char *files[1] = {data};
  cr_assert_eq(dpo_budget_init(store, 100, 1e-5, files, 1, key), DPO_OK, "%s", dpo_errmsg());
  dpo_budget_t *B = NULL;
  cr_assert_eq(dpo_budget_open(store, key, files, 1, &B), DPO_OK, "%s", dpo_errmsg());
  dpo_ledger_t *all = ledger(100, 1e-5), *run[3];
  run[0] = ledger(10, 1e-6);
  charge(run[0], poisson(1.1), 300);
  charge(all, poisson(1.1), 300);
  run[1] = ledger(10, 1e-6);
  charge(run[1], poisson(2), 100);
  charge(run[1], laplace(0.05), 1);
  charge(all, poisson(2), 100);
  charge(all, laplace(0.05), 1);
  run[2] = ledger(10, 0);
  charge(run[2], laplace(0.1), 4);
  charge(all, laplace(0.1), 4);
  for (int k = 0; k < 3; k++) {
    char rid[65];
    dpo_ledger_parts_t p;
    id(rid, k);
    cr_assert_eq(dpo_budget_reserve(B, rid, 10, k < 2 ? 1e-6 : 0, "train", 0), DPO_OK, "%s",
                 dpo_errmsg());
    cr_assert_eq(dpo_ledger_parts(run[k], &p), DPO_OK);
    cr_assert_eq(dpo_budget_settle(B, rid, &p), DPO_OK, "%s", dpo_errmsg());
    dpo_ledger_close(run[k]);
  }
  double e, d, want, wd;
  cr_assert_eq(dpo_budget_spent(store, key, NULL, NULL, &e, &d), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_ledger_spent(all, &want, &wd), DPO_OK);
  cr_assert(fabs(e - want) <= 1e-12 * want, "store %.17g vs one ledger %.17g", e, want);
  cr_assert(e < 10, "composed %.17g, not the sum of the runs' budgets", e);
  cr_assert_eq(d, wd);
  dpo_ledger_close(all);
  dpo_budget_close(B);
}

Test(budget, refusal_at_the_budget_and_one_charge_per_run_id) {
  const char *files[1] = {data};
  char a[65], b[65], c[65];
  id(a, 1), id(b, 2), id(c, 3);
  cr_assert_eq(dpo_budget_init(store, 1.5, 1e-5, files, 1, key), DPO_OK, "%s", dpo_errmsg());
  dpo_budget_t *B = NULL;
  cr_assert_eq(dpo_budget_open(store, key, files, 1, &B), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_budget_reserve(B, a, 1, 1e-6, "train", 0), DPO_OK, "%s", dpo_errmsg());
  double e0, e1;
  cr_assert_eq(dpo_budget_spent(store, key, NULL, NULL, &e0, NULL), DPO_OK);
  cr_assert_eq(e0, 1); /* an open reservation is its whole budget */
  /* the same run again (a resumed run): no second charge */
  cr_assert_eq(dpo_budget_reserve(B, a, 1, 1e-6, "train", 0), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_budget_spent(store, key, NULL, NULL, &e1, NULL), DPO_OK);
  cr_assert_eq(e1, e0);
  cr_assert_eq(dpo_budget_reserve(B, b, 0.6, 1e-6, "train", 1), DPO_EBUDGET);
  cr_assert_eq(dpo_budget_reserve(B, b, 0.6, 1e-6, "train", 0), DPO_EBUDGET);
  cr_assert_eq(dpo_budget_reserve(B, c, 0.5, 1e-6, "train", 0), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_budget_spent(store, key, NULL, NULL, &e1, NULL), DPO_OK);
  cr_assert_eq(e1, 1.5);
  dpo_budget_close(B);
}

Test(budget, unregistered_or_changed_files_are_refused) {
  const char *files[1] = {data};
  char other[320];
  cr_assert_eq(dpo_budget_init(store, 1, 0, files, 1, key), DPO_OK, "%s", dpo_errmsg());
  snprintf(other, sizeof other, "%s/copy/data.svm", dir);
  char cmd[1000];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/copy' && cp '%s' '%s'", dir, data, other);
  cr_assert_eq(system(cmd), 0);
  const char *copy[1] = {other};
  dpo_budget_t *B = NULL;
  cr_assert_eq(dpo_budget_open(store, key, copy, 1, &B), DPO_OK, "the same bytes elsewhere");
  dpo_budget_close(B);
  FILE *f = fopen(other, "a");
  fprintf(f, "+1 2:1\n");
  fclose(f);
  B = NULL;
  cr_assert_eq(dpo_budget_open(store, key, copy, 1, &B), DPO_EINVAL);
  cr_assert(B == NULL);
  cr_assert(strstr(dpo_errmsg(), "dpopt budget add"), "%s", dpo_errmsg());
  cr_assert(strstr(dpo_errmsg(), "differs"), "%s", dpo_errmsg());
  cr_assert_eq(dpo_budget_add(store, copy, 1, key, NULL), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_budget_open(store, key, copy, 1, &B), DPO_OK, "%s", dpo_errmsg());
  dpo_budget_close(B);
}

static void same_parts(const dpo_ledger_parts_t *a, const dpo_ledger_parts_t *b) {
  cr_assert_eq(a->eps, b->eps);
  cr_assert_eq(a->delta, b->delta);
  cr_assert_eq(a->pure_eps, b->pure_eps);
  cr_assert_eq(a->approx_eps, b->approx_eps);
  cr_assert_eq(a->n_pure, b->n_pure);
  cr_assert_eq(a->n_approx, b->n_approx);
  cr_assert_eq(a->n_rdp, b->n_rdp);
  cr_assert_eq(a->rdp.n, b->rdp.n);
  for (int i = 0; i < a->rdp.n; i++) {
    cr_assert_eq(a->rdp.rdp[i], b->rdp.rdp[i], "order %g", a->rdp.alpha[i]);
    cr_assert_eq(a->pure_rdp.rdp[i], b->pure_rdp.rdp[i], "order %g", a->rdp.alpha[i]);
  }
}

/* a party's parts (what its own store keeps) are those of a ledger charged with only the
 * releases that touched the party; the per-part max of two accounts bounds both */
Test(budget, party_parts_are_the_party_releases_alone) {
  dpo_ledger_t *L = ledger(50, 1e-6), *own[2] = {ledger(50, 1e-6), ledger(50, 1e-6)};
  double be[2] = {50, 50}, bd[2] = {1e-6, 1e-6};
  cr_assert_eq(dpo_ledger_set_parties(L, 2, be, bd), DPO_OK, "%s", dpo_errmsg());
  int both[2] = {0, 1}, p0[1] = {0}, p1[1] = {1};
  dpo_charge_t g1 = poisson(1.1), g2 = poisson(2), l = laplace(0.05);
  for (int i = 0; i < 100; i++)
    cr_assert_eq(dpo_ledger_charge_parties(L, &g1, 2, both, NULL, NULL), DPO_OK);
  for (int i = 0; i < 50; i++)
    cr_assert_eq(dpo_ledger_charge_parties(L, &g2, 1, p0, NULL, NULL), DPO_OK);
  for (int i = 0; i < 2; i++)
    cr_assert_eq(dpo_ledger_charge_parties(L, &l, 1, p1, NULL, NULL), DPO_OK);
  charge(own[0], g1, 100);
  charge(own[0], g2, 50);
  charge(own[1], g1, 100);
  charge(own[1], l, 2);
  dpo_ledger_parts_t pp[2], op[2];
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(dpo_ledger_party_parts(L, k, &pp[k]), DPO_OK, "%s", dpo_errmsg());
    cr_assert_eq(dpo_ledger_parts(own[k], &op[k]), DPO_OK);
    same_parts(&pp[k], &op[k]);
  }
  cr_assert_eq(pp[0].n_rdp, 150);
  cr_assert_eq(pp[1].n_pure, 2);
  cr_assert_eq(dpo_ledger_party_parts(L, 2, &pp[0]), DPO_EINVAL);
  dpo_ledger_parts_t m = op[0];
  cr_assert_eq(dpo_budget_parts_max(&m, &op[1]), DPO_OK);
  cr_assert_eq(m.pure_eps, op[1].pure_eps);
  cr_assert_eq(m.n_rdp, 150);
  for (int i = 0; i < m.rdp.n; i++)
    cr_assert_eq(m.rdp.rdp[i], fmax(op[0].rdp.rdp[i], op[1].rdp.rdp[i]));
  for (int k = 0; k < 2; k++) dpo_ledger_close(own[k]);
  dpo_ledger_close(L);
}
