/* The "auto" accountant (pure and Gaussian releases in one budget) and the neighbouring
 * relation of the ledger (issue 11).  Golden values come from an independent re-implementation
 * of the conversion in Python (float64, same order grid, min of Mironov 2017 Prop. 3 and Balle
 * et al. 2020 Thm 21), with rdp-rho releases (curve alpha rho^2 / 2, exact) and Laplace releases
 * given by their eps, so nothing depends on the grid snapping:
 *   R = rho 0.5; P' = sum min(eps_i, alpha eps_i^2/2); delta = 1e-5
 *   eps(R)                       = 2.168010636783972
 *   R + 1 x 0.5    A = B         = 2.668010636783972
 *   R + 10 x 0.05  A = 2.668..., B = 2.284179575297868
 *   100 x 0.01     A = 1 (delta 0), B = 0.37529875639664073
 *   1 x 1.0        A = 1 (delta 0), B = 1.0194890340925526
 *   (eps 0.3, delta 1e-6) classic + R: A = 0.3 + eps_R(9e-6) = 2.4797173607459522 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"

#define CLOSE(x, want) cr_assert(fabs((x) - (want)) <= 1e-8 * (want), "%.17g vs %.17g", x, want)

static const dpo_charge_t RHO = {.mechanism = DPO_MECH_RDP_RHO, .rho = 0.5,
                                 .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_RDP};

static dpo_charge_t lap(double eps) {
  dpo_charge_t c = {.mechanism = DPO_MECH_LAPLACE, .eps = eps, .sampling = DPO_SAMPLING_NONE,
                    .accounting = DPO_ACCOUNTING_PURE};
  return c;
}

static void charge_ok(dpo_ledger_t *L, dpo_charge_t c, int64_t step) {
  c.step = step;
  int st = dpo_ledger_charge(L, &c, NULL);
  cr_assert_eq(st, DPO_OK, "step %lld: %s", (long long)step, dpo_errmsg());
}

static void spent(dpo_ledger_t *L, double *e, double *d) {
  cr_assert_eq(dpo_ledger_spent(L, e, d), DPO_OK);
}

static dpo_ledger_t *open_auto(double eps, double delta, const char *path) {
  dpo_ledger_t *L = NULL;
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, eps, delta, path, 0, "auto",
                                  DPO_NEIGHBOURS_REPLACE_ONE, &L), DPO_OK, "%s", dpo_errmsg());
  return L;
}

Test(auto, pure_and_gaussian_both_orders) {
  double e1, e2, d;
  for (int order = 0; order < 2; order++) {
    dpo_ledger_t *L = open_auto(10, 1e-5, NULL);
    if (order == 0) {
      charge_ok(L, RHO, 0);
      charge_ok(L, lap(0.5), 1);
    } else {
      charge_ok(L, lap(0.5), 0);
      charge_ok(L, RHO, 1);
    }
    spent(L, order ? &e2 : &e1, &d);
    cr_assert_eq(d, 1e-5);
    dpo_ledger_close(L);
  }
  CLOSE(e1, 2.668010636783972);
  cr_assert_eq(e1, e2, "the order of two releases changed the total");
  /* many small pure releases next to the Gaussian: the RDP route (B) is tighter */
  for (int order = 0; order < 2; order++) {
    dpo_ledger_t *L = open_auto(10, 1e-5, NULL);
    if (order == 0) charge_ok(L, RHO, 0);
    for (int i = 0; i < 10; i++) charge_ok(L, lap(0.05), i + 1);
    if (order == 1) charge_ok(L, RHO, 11);
    spent(L, order ? &e2 : &e1, &d);
    dpo_ledger_close(L);
  }
  CLOSE(e1, 2.284179575297868);
  CLOSE(e2, 2.284179575297868);
}

Test(auto, pure_only_takes_the_better_of_sum_and_rdp) {
  double e, d;
  dpo_ledger_t *L = open_auto(2, 1e-5, NULL);
  charge_ok(L, lap(1.0), 0);
  spent(L, &e, &d);
  cr_assert_eq(e, 1.0); /* basic composition, exactly, and no delta */
  cr_assert_eq(d, 0.0);
  dpo_ledger_close(L);
  L = open_auto(2, 1e-5, NULL);
  for (int i = 0; i < 100; i++) charge_ok(L, lap(0.01), i);
  spent(L, &e, &d);
  CLOSE(e, 0.37529875639664073);
  cr_assert_eq(d, 1e-5);
  dpo_ledger_close(L);
  /* delta budget 0: exactly the basic accountant; a Gaussian release is refused clearly */
  L = open_auto(2, 0, NULL);
  for (int i = 0; i < 100; i++) charge_ok(L, lap(0.01), i);
  spent(L, &e, &d);
  CLOSE(e, 1.0);
  cr_assert_eq(d, 0.0);
  dpo_charge_t g = RHO;
  cr_assert_eq(dpo_ledger_charge(L, &g, NULL), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "delta budget > 0"), "%s", dpo_errmsg());
  dpo_ledger_close(L);
}

Test(auto, approx_release_uses_its_delta) {
  double e, d;
  dpo_ledger_t *L = open_auto(10, 1e-5, NULL);
  dpo_charge_t h = {.mechanism = DPO_MECH_GAUSSIAN, .eps = 0.3, .delta = 1e-6,
                    .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_PURE};
  charge_ok(L, h, 0);
  spent(L, &e, &d);
  cr_assert_eq(e, 0.3);
  cr_assert_eq(d, 1e-6);
  charge_ok(L, RHO, 1);
  spent(L, &e, &d);
  CLOSE(e, 2.4797173607459522);
  cr_assert_eq(d, 1e-5);
  dpo_ledger_close(L);
}

Test(auto, budget_refuses_and_journal_replays) {
  char path[] = "/tmp/dpo_auto_ledgerXXXXXX";
  int fd = mkstemp(path);
  close(fd);
  unlink(path);
  /* budget 2.5: R (2.168) + 0.5 pure = 2.668 does not fit, R + 0.05 pure does */
  dpo_ledger_t *L = open_auto(2.5, 1e-5, path);
  charge_ok(L, RHO, 0);
  dpo_charge_t c = lap(0.5);
  cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_EBUDGET);
  charge_ok(L, lap(0.05), 1);
  double e, e2, d2;
  spent(L, &e, NULL);
  cr_assert_eq(dpo_ledger_count(L), 2);
  cr_assert_str_eq(dpo_ledger_accountant(L), "auto");
  dpo_ledger_close(L);
  /* resume: same totals; explicit rdp and basic are other accountants */
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 2.5, 1e-5, path, 1, "rdp",
                                  DPO_NEIGHBOURS_REPLACE_ONE, &L), DPO_EINVAL);
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 2.5, 1e-5, path, 1, "auto",
                                  DPO_NEIGHBOURS_REPLACE_ONE, &L), DPO_OK, "%s", dpo_errmsg());
  spent(L, &e2, &d2);
  cr_assert_eq(e2, e);
  cr_assert_eq(d2, 1e-5);
  cr_assert_eq(dpo_ledger_count(L), 2);
  dpo_ledger_close(L);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cr_assert_eq(dpo_ledger_print(path, m), DPO_OK);
  fclose(m);
  cr_assert(strstr(buf, "accountant auto, replace-one neighbours"), "%s", buf);
  cr_assert(strstr(buf, "rdp-rho") && strstr(buf, "laplace"), "%s", buf);
  free(buf);
  unlink(path);
}

Test(relation, sens_is_the_one_conversion) {
  cr_assert_eq(dpo_sens(DPO_NEIGHBOURS_REPLACE_ONE, 1.5), 3.0);
  cr_assert_eq(dpo_sens(DPO_NEIGHBOURS_ADD_REMOVE, 1.5), 1.5);
  dpo_neighbours_t r;
  cr_assert_eq(dpo_neighbours_parse(NULL, &r), DPO_OK);
  cr_assert_eq(r, DPO_NEIGHBOURS_REPLACE_ONE);
  cr_assert_eq(dpo_neighbours_parse("add-remove", &r), DPO_OK);
  cr_assert_eq(r, DPO_NEIGHBOURS_ADD_REMOVE);
  cr_assert_str_eq(dpo_neighbours_name(r), "add-remove");
  cr_assert_eq(dpo_neighbours_parse("swap", &r), DPO_EINVAL);
}

Test(relation, ledger_refuses_another_relation) {
  char path[] = "/tmp/dpo_rel_ledgerXXXXXX";
  int fd = mkstemp(path);
  close(fd);
  unlink(path);
  dpo_ledger_t *L = NULL;
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 5, 1e-5, path, 0, NULL,
                                  DPO_NEIGHBOURS_ADD_REMOVE, &L), DPO_OK);
  cr_assert_eq(dpo_ledger_neighbours(L), DPO_NEIGHBOURS_ADD_REMOVE);
  /* a charge that does not state add-remove (its sensitivity assumed replace-one) */
  dpo_charge_t c = lap(0.1);
  cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "calibrated for replace-one neighbours, but the ledger's "
                                 "relation is add-remove"), "%s", dpo_errmsg());
  double ce;
  cr_assert_eq(dpo_ledger_check(L, &c, &ce, NULL), DPO_EINVAL);
  c.neighbours = DPO_NEIGHBOURS_ADD_REMOVE;
  charge_ok(L, c, 0);
  /* sampling without replacement and one-pass bounds are replace-one analyses */
  dpo_charge_t w = {.mechanism = DPO_MECH_LAPLACE, .eps = 0.1, .sampling = DPO_SAMPLING_WOR,
                    .m = 10, .n = 100, .accounting = DPO_ACCOUNTING_SUBSAMPLED,
                    .neighbours = DPO_NEIGHBOURS_ADD_REMOVE};
  cr_assert_eq(dpo_ledger_charge(L, &w, NULL), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "sampling without replacement is a replace-one analysis"), "%s",
            dpo_errmsg());
  dpo_charge_t r = RHO;
  r.neighbours = DPO_NEIGHBOURS_ADD_REMOVE;
  cr_assert_eq(dpo_ledger_charge(L, &r, NULL), DPO_EINVAL);
  /* Poisson with the add/remove sensitivity is fine here */
  dpo_charge_t p = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = 4, .sensitivity = 1, .dim = 1,
                    .m = 10, .n = 1000, .sampling = DPO_SAMPLING_POISSON,
                    .accounting = DPO_ACCOUNTING_RDP, .neighbours = DPO_NEIGHBOURS_ADD_REMOVE};
  charge_ok(L, p, 1);
  cr_assert_eq(dpo_ledger_count(L), 2);
  dpo_ledger_close(L);
  /* resume under the other relation: refused, the journal's is kept */
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 5, 1e-5, path, 1, NULL,
                                  DPO_NEIGHBOURS_REPLACE_ONE, &L), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "relation is add-remove, not replace-one"), "%s", dpo_errmsg());
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 5, 1e-5, path, 1, NULL,
                                  DPO_NEIGHBOURS_ADD_REMOVE, &L), DPO_OK);
  cr_assert_eq(dpo_ledger_count(L), 2);
  dpo_ledger_close(L);
  unlink(path);
  /* replace-one ledger: Poisson is refused (MTZ 2019 is add/remove), whatever the accountant */
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 5, 1e-5, NULL, 0, "rdp",
                                  DPO_NEIGHBOURS_REPLACE_ONE, &L), DPO_OK);
  p.neighbours = DPO_NEIGHBOURS_REPLACE_ONE;
  p.sensitivity = 2;
  cr_assert_eq(dpo_ledger_charge(L, &p, NULL), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "Poisson subsampling is analysed for add-remove"), "%s",
            dpo_errmsg());
  dpo_ledger_close(L);
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 5, 1e-5, NULL, 0, "fancy",
                                  DPO_NEIGHBOURS_REPLACE_ONE, &L), DPO_EINVAL);
}
