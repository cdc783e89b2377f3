/* dpopt budget init | add | show: a data set's budget store (dpopt/budget.h does the work). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/budget.h"
#include "dpopt/status.h"

#define DPO__BMAXPOS 66

static const char dpo__budget_more[] =
    "A budget store holds one privacy budget for a data set: every private run on the data\n"
    "(dpopt train, dpopt tune, warm starts, retraining, resumed runs) that names the store\n"
    "(--budget-store STORE) spends from it.  Keep it beside the data, where only the data\n"
    "holder can write.\n\n"
    "  init STORE --eps E [--delta D] [--data FILE] [FILE...]  create it, register the files\n"
    "  add STORE FILE...                                         register more files\n"
    "  show STORE                          budget, spent (composed), remaining, files, runs\n\n"
    "Files are known by a keyed hash of their content: the same bytes under another path are\n"
    "the same data set, and a run reading a file the store does not know (or one changed\n"
    "since it was registered) is refused.  Before it loads the data a run checks that its\n"
    "whole budget (eps, delta) fits what is left, and reserves it before its first release; a\n"
    "run that does not fit is refused (exit 3) and writes nothing.  When its releases are over\n"
    "the reservation becomes what its ledger composed, and the store\n"
    "composes the runs as the ledger composes releases (RDP curves added per order), so runs\n"
    "cost their composition, not the sum of their eps.  A run killed before it ends keeps its\n"
    "whole reservation spent; resuming it charges nothing again.\n"
    "The store's records are chained with the journal key (--journal-key, else\n"
    "$DPOPT_JOURNAL_KEY, else ~/.config/dpopt/journal.key): an edited, deleted or reordered\n"
    "record is refused (exit 2).  Whoever has the key and write access to the store can\n"
    "rewrite it.\n";

int dpo_cmd_budget(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {
      {"--eps", "budget.eps", "E", "init: the data set's budget epsilon"},
      {"--delta", "budget.delta", "D", "init: the data set's budget delta (default 0)"},
      {"--data", "budget.data", "FILE", "init: a data file to register (more as further "
                                        "arguments)"},
      {"--journal-key", "privacy.journal_key", "FILE", "key of the store's hash chain (default "
       "$DPOPT_JOURNAL_KEY, else ~/.config/dpopt/journal.key, made by init on first use)"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[DPO__BMAXPOS];
  const char *files[DPO__BMAXPOS];
  int npos = 0, rc = DPO_OK, ex, nf = 0;
  if ((ex = dpo_cli_start(ctx, "budget", argc, argv, opts,
                          "usage: dpopt budget init|add|show STORE [FILE...] [options]",
                          dpo__budget_more, &cfg, pos, DPO__BMAXPOS, &npos, NULL)) >= 0)
    goto out;
  ex = 0;
  const char *key = NULL, *data = NULL, *sub = npos > 0 ? pos[0] : "";
  double eps = NAN, delta = 0;
  dpo_config_get_str(cfg, "privacy.journal_key", NULL, &key);
  dpo_config_get_str(cfg, "budget.data", NULL, &data);
  if ((rc = dpo_config_get_double(cfg, "budget.eps", NAN, &eps)) ||
      (rc = dpo_config_get_double(cfg, "budget.delta", 0.0, &delta)))
    goto fail;
  if (data) files[nf++] = data;
  for (int i = 2; i < npos; i++) files[nf++] = pos[i];
  int is_init = !strcmp(sub, "init"), is_add = !strcmp(sub, "add"), is_show = !strcmp(sub, "show");
  if (npos < 2 || !(is_init || is_add || is_show)) {
    rc = dpo_err(DPO_EINVAL, "expected init, add or show and a STORE directory (see --help)");
    goto fail;
  }
  if (!is_init && (!isnan(eps) || dpo_config_get(cfg, "budget.delta") || data)) {
    rc = dpo_err(DPO_EINVAL, "--eps, --delta and --data belong to budget init (a store's budget "
                 "is fixed when it is created)");
    goto fail;
  }
  if ((is_show && nf) || (is_add && !nf)) {
    rc = dpo_err(DPO_EINVAL, is_show ? "budget show takes only the STORE"
                                     : "budget add: name the data files to register");
    goto fail;
  }
  if (is_init && isnan(eps)) {
    rc = dpo_err(DPO_EINVAL, "budget init: give the data set's budget with --eps E");
    goto fail;
  }
  if (ctx->rank == 0) {
    if (is_init && !(rc = dpo_budget_init(pos[1], eps, delta, files, nf, key)))
      printf("budget store %s: eps = %g, delta = %g, %d data file%s registered\n", pos[1], eps,
             delta, nf, nf == 1 ? "" : "s");
    else if (is_add) rc = dpo_budget_add(pos[1], files, nf, key, stdout);
    else if (is_show) rc = dpo_budget_show(pos[1], key, stdout);
  }
  if (!(rc = dpo_agree(ctx->comm, rc))) goto out;
fail:
  ex = dpo_cli_fail(ctx, "budget", rc);
out:
  dpo_config_destroy(cfg);
  return ex;
}
