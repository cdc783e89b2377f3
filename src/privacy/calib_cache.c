/* The calibration cache: a noise multiplier found by a PLD search, kept across processes
 * under the user's cache directory ($XDG_CACHE_HOME/dpopt/calib, else $HOME/.cache/dpopt/calib),
 * one file per plan, named by the BLAKE2b digest of the plan's canonical text.  The file holds
 * that text and the answer; a lookup returns it only when the stored text is byte for byte the
 * plan asked for (so a digest collision or an edited file cannot substitute another plan's
 * answer).  The cache holds public arithmetic only (the plan is config and public sizes, no
 * data), and it is never trusted for privacy: the caller has the run's ledger confirm a cached
 * multiplier before using it, and the ledger charges every release as before.
 * Writes are best effort (a temporary file renamed into place): a cache that cannot be written
 * costs the next run a search, nothing else.  DPOPT_CALIB_CACHE=off turns the cache off. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpopt/privacy.h"

/* the cache directory into dir (created when mk); 0 when there is none */
static int dpo__calib_dir(char *dir, size_t sz, int mk) {
  const char *off = getenv("DPOPT_CALIB_CACHE"), *x = getenv("XDG_CACHE_HOME"),
             *home = getenv("HOME");
  char base[PATH_MAX];
  if (off && !strcmp(off, "off")) return 0;
  if (x && x[0] == '/') snprintf(base, sizeof base, "%s", x);
  else if (home && home[0] == '/') snprintf(base, sizeof base, "%s/.cache", home);
  else return 0;
  if ((size_t)snprintf(dir, sz, "%s/dpopt/calib", base) >= sz) return 0;
  if (mk) { /* base, base/dpopt, base/dpopt/calib: private to the user */
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s", base);
    if (mkdir(p, 0700) && errno != EEXIST) return 0;
    snprintf(p, sizeof p, "%s/dpopt", base);
    if (mkdir(p, 0700) && errno != EEXIST) return 0;
    if (mkdir(dir, 0700) && errno != EEXIST) return 0;
  }
  return 1;
}

static int dpo__calib_path(const char *plan, char *path, size_t sz, int mk) {
  char dir[PATH_MAX], hex[65];
  unsigned char h[32];
  if (!plan || !dpo__calib_dir(dir, sizeof dir, mk) || sodium_init() < 0) return 0;
  crypto_generichash(h, sizeof h, (const unsigned char *)plan, strlen(plan), NULL, 0);
  sodium_bin2hex(hex, sizeof hex, h, sizeof h);
  return (size_t)snprintf(path, sz, "%s/%s", dir, hex) < sz;
}

int dpo_calib_cache_get(const char *plan, double *z, int *fits) {
  char path[PATH_MAX + 80], text[2048], line[128];
  if (!dpo__calib_path(plan, path, sizeof path, 0)) return 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t len = strlen(plan);
  int hit = 0;
  double v;
  int fv;
  /* the plan text (one line), then "z <hex float> fits <0|1>" */
  if (len + 2 < sizeof text && fgets(text, sizeof text, f) && strlen(text) == len + 1 &&
      !memcmp(text, plan, len) && text[len] == '\n' && fgets(line, sizeof line, f) &&
      sscanf(line, "z %la fits %d", &v, &fv) == 2 && v > 0 && isfinite(v) &&
      (fv == 0 || fv == 1)) {
    *z = v;
    *fits = fv;
    hit = 1;
  }
  fclose(f);
  return hit;
}

void dpo_calib_cache_put(const char *plan, double z, int fits) {
  char path[PATH_MAX + 80], tmp[PATH_MAX + 120];
  if (strchr(plan, '\n') || !dpo__calib_path(plan, path, sizeof path, 1)) return;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  int bad = fprintf(f, "%s\nz %a fits %d\n", plan, z, fits ? 1 : 0) < 0;
  if (fclose(f) || bad || rename(tmp, path)) unlink(tmp);
}
