/* auto_plan KEY=VALUE...: the settings an embedding program gets from the run API
 * (dpo_run_create) for the given keys, printed as "key = value" for the keys the method
 * auto-pick decides; test_auto_plan.sh compares them with dpopt train's config.ini. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "dpopt/config.h"
#include "dpopt/run.h"
#include "dpopt/status.h"

int main(int argc, char **argv) {
  static const char *const keys[] = {"algo.name", "privacy.neighbours", "privacy.clip",
                                     "algo.sampling", "algo.m", "algo.epochs", "algo.eta",
                                     "algo.eta_rule", "algo.c", "algo.iters", "algo.choose_T",
                                     "algo.beta", NULL};
  MPI_Init(&argc, &argv);
  dpo_config_t *cfg = NULL;
  dpo_run_t *run = NULL;
  int rc = dpo_config_create(&cfg);
  for (int i = 1; !rc && i < argc; i++) {
    char k[256];
    const char *eq = strchr(argv[i], '=');
    if (!eq || eq - argv[i] >= (int)sizeof k) rc = dpo_err(DPO_EINVAL, "expected KEY=VALUE");
    else {
      snprintf(k, sizeof k, "%.*s", (int)(eq - argv[i]), argv[i]);
      rc = dpo_config_set(cfg, k, eq + 1, "argv");
    }
  }
  if (!rc) rc = dpo_run_create(MPI_COMM_WORLD, cfg, &run);
  for (int i = 0; !rc && keys[i]; i++) {
    const char *v = dpo_config_get(dpo_run_config(run), keys[i]);
    if (v) printf("%s = %s\n", keys[i], v);
  }
  if (rc) fprintf(stderr, "auto_plan: %s\n", dpo_errmsg());
  dpo_run_destroy(run);
  dpo_config_destroy(cfg);
  MPI_Finalize();
  return rc ? 1 : 0;
}
