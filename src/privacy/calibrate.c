/* The report of dpopt calibrate (dpo_rdp_calibrate_report in dpopt/privacy.h): the Gaussian
 * noise needed for a target (eps, delta), given the sampling and the number of steps, from the
 * Renyi accountant or the PLD accountant (pld.c; --accountant rdp|pld|auto, auto = the smaller
 * multiplier, both valid) (bisection on the noise multiplier, rounded up so the target is never
 * exceeded).  Pure arithmetic on public parameters: no data is read.
 * The neighbouring relation (--neighbours) decides the sensitivity of a per-example bound
 * (--bound B: dpo_sens, 2B replace-one, B add-remove) and which sampling analyses apply
 * (poisson: add-remove, wor: replace-one; the default is the sampling's own relation).
 * Not collective. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"

int dpo_rdp_calibrate_report(const dpo_config_t *cfg, FILE *out) {
  double eps, delta, sens, mu, bound;
  int64_t steps, m, n;
  const char *sampling, *rel_s, *acct;
  dpo_neighbours_t rel;
  int rc;
  if ((rc = dpo_config_get_double(cfg, "calibrate.eps", NAN, &eps)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.delta", NAN, &delta)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.sensitivity", NAN, &sens)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.bound", NAN, &bound)) ||
      (rc = dpo_config_get_str(cfg, "calibrate.neighbours", NULL, &rel_s)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.admm_mu", NAN, &mu)) ||
      (rc = dpo_config_get_int(cfg, "calibrate.steps", 1, &steps)) ||
      (rc = dpo_config_get_int(cfg, "calibrate.batch", 0, &m)) ||
      (rc = dpo_config_get_int(cfg, "calibrate.n", 0, &n)) ||
      (rc = dpo_config_get_str(cfg, "calibrate.sampling", "none", &sampling)) ||
      (rc = dpo_config_get_str(cfg, "calibrate.accountant", "auto", &acct)))
    return rc;
  int use_rdp = !strcmp(acct, "rdp"), use_pld = !strcmp(acct, "pld");
  if (!use_rdp && !use_pld && strcmp(acct, "auto"))
    return dpo_err(DPO_EINVAL, "--accountant %s: expected rdp, pld or auto", acct);
  /* wor: replace-one (checked below), the pair of Zhu, Dong and Wang 2022 (pld.c) */
  int pld_ok = !strcmp(sampling, "none") || !strcmp(sampling, "poisson") ||
               !strcmp(sampling, "wor");
  if (use_pld && !pld_ok)
    return dpo_err(DPO_EINVAL, "--accountant pld covers --sampling none, poisson or wor (not %s)",
                   sampling);
  if (!(eps > 0) || !(delta > 0 && delta < 1))
    return dpo_err(DPO_EINVAL, "give the target with --eps E (> 0) and --delta D (in (0, 1))");
  int poisson = !strcmp(sampling, "poisson"), sampled = strcmp(sampling, "none") != 0;
  if (!rel_s) rel = poisson ? DPO_NEIGHBOURS_ADD_REMOVE : DPO_NEIGHBOURS_REPLACE_ONE;
  else if ((rc = dpo_neighbours_parse(rel_s, &rel))) return rc;
  if (sampled && poisson != (rel == DPO_NEIGHBOURS_ADD_REMOVE))
    return dpo_err(DPO_EINVAL, "--sampling %s is analysed for %s neighbours, not %s", sampling,
                   poisson ? "add-remove (Mironov-Talwar-Zhang 2019)"
                           : "replace-one (Wang-Balle-Kasiviswanathan 2019)",
                   dpo_neighbours_name(rel));
  if (!isnan(bound) && !isnan(sens))
    return dpo_err(DPO_EINVAL, "give --bound (per-example) or --sensitivity, not both");
  if (!isnan(bound)) {
    if (!(bound > 0) || !isfinite(bound)) return dpo_err(DPO_EINVAL, "--bound must be > 0");
    sens = dpo_sens(rel, bound);
  } else if (isnan(sens)) {
    sens = 1.0;
  }
  if (!(sens > 0) || !isfinite(sens))
    return dpo_err(DPO_EINVAL, "--sensitivity must be > 0");
  if (sampled && (m < 1 || n < m))
    return dpo_err(DPO_EINVAL, "--sampling %s needs --batch M and --n N with 1 <= M <= N",
                   sampling);
  double z, e, a_opt, zr, er, zp = NAN, ep = NAN;
  if ((rc = dpo_rdp_calibrate(sampling, m, n, steps, eps, delta, &zr))) return rc;
  dpo_rdp_curve_t c;
  dpo_rdp_curve_init(&c);
  if ((rc = dpo_rdp_curve_add(&c, sampling, m, n, zr, steps)) ||
      (rc = dpo_rdp_eps(&c, delta, &er, &a_opt)))
    return rc;
  const int64_t nc0 = dpo_pld_compositions();
  if (!use_rdp && pld_ok) {
    if ((rc = dpo_pld_calibrate(sampling, m, n, steps, eps, delta, &zp)) ||
        (rc = dpo_pld_eps(sampling, m, n, zp, steps, delta, dpo_pld_auto_h(eps, steps), &ep)))
      return rc;
  }
  /* both multipliers meet the target under their own (valid) accountant: take the smaller */
  int pld_wins = !isnan(zp) && (use_pld || zp < zr);
  z = pld_wins ? zp : zr;
  e = pld_wins ? ep : er;
  fprintf(out, "# Gaussian noise for (eps=%g, delta=%g) over %lld step%s, sampling %s", eps, delta,
          (long long)steps, steps == 1 ? "" : "s", sampling);
  if (sampled)
    fprintf(out, " (%s %lld of %lld, q = %.6g)", strcmp(sampling, "poisson") ? "m" : "expected",
            (long long)m, (long long)n, (double)m / (double)n);
  fprintf(out, "\n# Renyi accountant: orders 1.25..256, conversion min(classic, Balle et al. 2020 "
               "Thm 21); PLD accountant: connect-the-dots grid h=%g, FFT composition; noise "
               "rounded up\n", dpo_pld_auto_h(eps, steps));
  fprintf(out, "accountant        %s\n", pld_wins ? "pld" : "rdp");
  fprintf(out, "neighbours        %s\n", dpo_neighbours_name(rel));
  fprintf(out, "noise_multiplier  %.9g\n", z);
  fprintf(out, "sigma             %.9g   (= multiplier * sensitivity %g)\n", z * sens, sens);
  if (pld_wins) fprintf(out, "achieved_eps      %.9g   (PLD; target %g)\n", e, eps);
  else fprintf(out, "achieved_eps      %.9g   (at order %g; target %g)\n", e, a_opt, eps);
  fprintf(out, "rdp_multiplier    %.9g   (achieved eps %.9g)\n", zr, er);
  if (!isnan(zp)) {
    fprintf(out, "pld_multiplier    %.9g   (achieved eps %.9g)\n", zp, ep);
    fprintf(out, "pld_compositions  %lld   (the search's PLD compositions)\n",
            (long long)(dpo_pld_compositions() - nc0));
  }
  if (steps == 1 && !sampled) {
    double s_an;
    if ((rc = dpo_gauss_analytic_sigma(sens, eps, delta, &s_an))) return rc;
    fprintf(out, "analytic_sigma    %.9g   (Balle-Wang 2018, exact for one release)\n", s_an);
  }
  if (!isnan(mu)) {
    double s8, a8;
    if (sampled) return dpo_err(DPO_EINVAL, "--admm-mu compares full-batch steps: --sampling none");
    /* 004 eq. (8) with c/n = sensitivity */
    if ((rc = dpo_admm_thm1_sigma(sens, 1, steps, eps, delta, mu, &s8, &a8))) return rc;
    fprintf(out, "admm_eq8_sigma    %.9g   (Xu et al. 2020, Thm 1 eq. (8), mu=%g, alpha=%g; ratio to RDP "
                 "%.4g)\n", s8, mu, a8, s8 / (z * sens));
  }
  return DPO_OK;
}
