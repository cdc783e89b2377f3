/* Synthetic data generators (serial; the CLI calls them on rank 0).  Deterministic in the
 * seed: every draw comes from one seeded dpo_rng stream in a fixed order.  Seeded streams are
 * not private, which is fine: this is public synthetic data. */
#include "data/data_internal.h"
#include "dpopt/rng.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DPO__GEN_LOGISTIC = 1, DPO__GEN_RIDGE = 2, DPO__GEN_RATINGS = 3 };

static int dpo__has_suffix(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Rows u with ||u||_p <= bound (p = 1 or 2): a Gaussian direction scaled to norm
 * bound * s, s uniform in (0, 1 - 1e-6).  The 1e-6 margin keeps the bound after the values
 * are printed with 9 significant digits (relative rounding <= 5e-9 per entry). */
static void dpo__gen_row(dpo_rng_t *rng, int32_t d, int p, double bound, double *u) {
  double nrm = 0;
  for (int32_t j = 0; j < d; j++) {
    u[j] = dpo_rng_normal(rng);
    nrm += p == 1 ? fabs(u[j]) : u[j] * u[j];
  }
  if (p == 2) nrm = sqrt(nrm);
  double s = dpo_rng_uniform(rng) * (1.0 - 1e-6) * bound / nrm;
  for (int32_t j = 0; j < d; j++) u[j] *= s;
}

/* Rows of the authors' code for (001, Sec. 5) (github.com/sibirbil/DPAccGradMethods,
 * main_compare_methods.m): u uniform in [0,1]^d, scaled down to ||u||_1 = bound if above it
 * (never for d <= bound).  Entries stay in [0,1] after printing with 9 digits, so
 * ||u||_2^2 <= d holds for the written rows: a public bound that follows from the range. */
static void dpo__gen_row01(dpo_rng_t *rng, int32_t d, double bound, double *u) {
  double nrm = 0;
  for (int32_t j = 0; j < d; j++) nrm += u[j] = dpo_rng_uniform(rng);
  if (nrm > bound)
    for (int32_t j = 0; j < d; j++) u[j] *= (1.0 - 1e-6) * bound / nrm;
}

/* Shared driver of the two regression generators: LIBSVM text, or dpopt binary (.bin). */
static int dpo__gen_regr(const char *path, int kind, int64_t n, int32_t d, double bound,
                         double noise_sd, uint64_t seed, int sign01, double *x_true) {
  int st = DPO_OK, fd = -1;
  FILE *f = NULL;
  dpo_rng_t *rng = NULL;
  double *x = NULL, *U = NULL, *Y = NULL;
  const int64_t chunk = 1024;
  int bin = dpo__has_suffix(path, ".bin");
  if (n < 1 || d < 1 || !(bound > 0) || !isfinite(bound) || !(noise_sd >= 0))
    return dpo_err(DPO_EINVAL, "%s: generator needs n >= 1, d >= 1, bound > 0, noise >= 0", path);
  st = dpo_rng_create(1, seed, (uint64_t)kind, &rng);
  if (st) return st;
  x = malloc((size_t)d * sizeof *x);
  U = malloc((size_t)chunk * d * sizeof *U);
  Y = malloc((size_t)chunk * sizeof *Y);
  if (!x || !U || !Y) {
    st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  if (bin) {
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      st = dpo_err(DPO_EIO, "%s: cannot create: %s", path, strerror(errno));
      goto out;
    }
    st = dpo__bin_write_header(fd, path, n, d, 0, 0,
                               kind == DPO__GEN_LOGISTIC ? DPO_LABELS_BINARY : DPO_LABELS_REAL);
    if (st) goto out;
  } else {
    f = fopen(path, "w");
    if (!f) {
      st = dpo_err(DPO_EIO, "%s: cannot create: %s", path, strerror(errno));
      goto out;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
  }
  /* the true parameter: standard normal entries */
  for (int32_t j = 0; j < d; j++) x[j] = dpo_rng_normal(rng);
  if (x_true) memcpy(x_true, x, (size_t)d * sizeof *x);
  for (int64_t i0 = 0; i0 < n; i0 += chunk) {
    int64_t c = n - i0 < chunk ? n - i0 : chunk;
    for (int64_t i = 0; i < c; i++) {
      double *u = U + i * d, t = 0;
      if (sign01) dpo__gen_row01(rng, d, bound, u);
      else dpo__gen_row(rng, d, kind == DPO__GEN_LOGISTIC ? 1 : 2, bound, u);
      for (int32_t j = 0; j < d; j++) t += u[j] * x[j];
      if (sign01) {
        /* the authors' code of (001, Sec. 5): y = sign(X w), no label noise */
        Y[i] = t > 0 ? 1.0 : -1.0;
      } else if (kind == DPO__GEN_LOGISTIC) {
        /* (001, Sec. 5): P(z = 1 | u, x) = 1 / (1 + exp(-u'x)) */
        double p1 = 1.0 / (1.0 + exp(-t));
        Y[i] = dpo_rng_uniform(rng) < p1 ? 1.0 : -1.0;
      } else {
        Y[i] = t + noise_sd * dpo_rng_normal(rng);
      }
    }
    if (bin) {
      if (dpo__pwrite_full(fd, Y, (size_t)c * 8, (off_t)(DPO__BIN_HDR + 8 * i0)) != c * 8 ||
          dpo__pwrite_full(fd, U, (size_t)(c * d) * 8, (off_t)(DPO__BIN_HDR + 8 * n + 8 * i0 * d)) != c * d * 8) {
        st = dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
        goto out;
      }
    } else {
      for (int64_t i = 0; i < c; i++) {
        if (kind == DPO__GEN_LOGISTIC) fputs(Y[i] > 0 ? "1" : "-1", f);
        else fprintf(f, "%.9g", Y[i]);
        for (int32_t j = 0; j < d; j++) fprintf(f, " %d:%.9g", j + 1, U[i * d + j]);
        fputc('\n', f);
      }
      if (ferror(f)) {
        st = dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
        goto out;
      }
    }
  }
  /* d is a public parameter here: declare it beside the text file for private runs */
  if (!bin) st = dpo_schema_write(path, d);
out:
  if (f && fclose(f) != 0 && !st) st = dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
  if (fd >= 0 && close(fd) != 0 && !st) st = dpo_err(DPO_EIO, "%s: close failed: %s", path, strerror(errno));
  dpo_rng_destroy(rng);
  free(x);
  free(U);
  free(Y);
  return st;
}

int dpo_gen_logistic(const char *path, int64_t n, int32_t d, double l1_bound, uint64_t seed) {
  return dpo__gen_regr(path, DPO__GEN_LOGISTIC, n, d, l1_bound, 0.0, seed, 0, NULL);
}

int dpo_gen_logistic_ex(const char *path, int64_t n, int32_t d, double l1_bound, uint64_t seed,
                        int sign01, double *x_true) {
  return dpo__gen_regr(path, DPO__GEN_LOGISTIC, n, d, l1_bound, 0.0, seed, sign01, x_true);
}

int dpo_gen_ridge(const char *path, int64_t n, int32_t d, double l2_bound, double noise_sd,
                  uint64_t seed) {
  return dpo__gen_regr(path, DPO__GEN_RIDGE, n, d, l2_bound, noise_sd, seed, 0, NULL);
}

/* ---- ratings ---- */

typedef struct { double key; int32_t idx; } dpo__kv_t;

static int dpo__kv_desc(const void *a, const void *b) {
  double x = ((const dpo__kv_t *)a)->key, y = ((const dpo__kv_t *)b)->key;
  return x < y ? 1 : x > y ? -1 : ((const dpo__kv_t *)a)->idx - ((const dpo__kv_t *)b)->idx;
}
static int dpo__int_asc(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Partial selection: move the k largest keys to a[0..k) (quickselect, order unspecified). */
static void dpo__select_top(dpo__kv_t *a, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    double piv = a[lo + (hi - lo) / 2].key;
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (a[i].key > piv) i++;
      while (a[j].key < piv) j--;
      if (i <= j) {
        dpo__kv_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k - 1 <= j) hi = j;
    else if (k - 1 >= i) lo = i;
    else break;
  }
}

static void dpo__shuffle(dpo_rng_t *rng, int32_t *p, int32_t n) {
  for (int32_t i = 0; i < n; i++) p[i] = i;
  for (int32_t i = n - 1; i > 0; i--) {
    int32_t j = (int32_t)dpo_rng_below(rng, (uint64_t)i + 1), t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
}

static char *dpo__utoa(char *p, uint64_t v) {
  char t[24];
  int k = 0;
  do t[k++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (k > 0) *p++ = t[--k];
  return p;
}

/* Power-law exponents of the user degrees and of the item popularity weights. */
#define DPO__ZIPF_USERS 0.6
#define DPO__ZIPF_ITEMS 0.7

int dpo_gen_ratings(const char *path, int32_t K, int32_t N, int64_t R, int32_t rank,
                    uint64_t seed) {
  return dpo_gen_ratings_ex(path, K, N, R, rank, seed, 0);
}

/* realistic = 1 (MovieLens-like statistics, see data.h): rating = 3.55 + b_u + b_i + signal
 * + noise, rounded and clipped to 1..5, with b_u ~ N(0, 0.45^2), b_i ~ N(0, 0.45^2) plus
 * 0.12 per standard deviation of log popularity (popular items are rated higher), signal
 * variance 0.3, noise sd 0.85; log-normal user activity and item popularity weights, and at
 * least min(20, R / K) ratings per user (MovieLens keeps users with >= 20).  The default (0)
 * draws exactly the stream it always did. */
#define DPO__REAL_MEAN 3.55
#define DPO__REAL_BU 0.45
#define DPO__REAL_BI 0.45
#define DPO__REAL_POP 0.12
#define DPO__REAL_USD 0.9
#define DPO__REAL_ISD 1.3
#define DPO__REAL_SIGNAL 0.3
#define DPO__REAL_NOISE 0.85
#define DPO__REAL_MINDEG 20

/* Step 1, the user degrees deg[0..K): Zipf weights (realistic: log-normal) over a random order
 * of the users; every user gets dmin, the other ratings are shared in proportion to the weights
 * (water-filling at the cap N, largest remainders for the integer rounding), so the total is
 * exactly R.  perm, wu, kv: work arrays. */
static void dpo__gen_degrees(dpo_rng_t *rng, int32_t K, int32_t N, int64_t R, int realistic,
                             int32_t *perm, double *wu, int32_t *deg, dpo__kv_t *kv) {
  dpo__shuffle(rng, perm, K);
  int32_t dmin = 1;
  if (realistic) {
    int64_t q = R / K;
    dmin = (int32_t)(q < DPO__REAL_MINDEG ? q : DPO__REAL_MINDEG);
    if (dmin > N) dmin = N;
  }
  for (int32_t k = 0; k < K; k++) {
    /* realistic: log-normal activity (MovieLens: median ~3x the minimum, max ~10x the mean;
     * a Zipf law cannot have both) */
    wu[perm[k]] = realistic ? exp(DPO__REAL_USD * dpo_rng_normal(rng))
                            : pow((double)k + 1.0, -DPO__ZIPF_USERS);
    deg[k] = dmin;
  }
  int64_t E = R - (int64_t)K * dmin;
  for (;;) {
    double W = 0;
    int changed = 0;
    for (int32_t k = 0; k < K; k++)
      if (deg[k] < N) W += wu[k];
    if (W <= 0) break;
    for (int32_t k = 0; k < K; k++)
      if (deg[k] < N && dmin + (double)E * wu[k] / W >= N) {
        E -= N - dmin;
        deg[k] = N;
        changed = 1;
      }
    if (!changed) {
      int64_t given = 0, na = 0;
      for (int32_t k = 0; k < K; k++)
        if (deg[k] < N) {
          double x = (double)E * wu[k] / W, fl = floor(x);
          deg[k] += (int32_t)fl;
          given += (int64_t)fl;
          kv[na].key = x - fl;
          kv[na++].idx = k;
        }
      qsort(kv, (size_t)na, sizeof *kv, dpo__kv_desc);
      for (int64_t t = 0; t < E - given; t++) deg[kv[t % na].idx]++;
      break;
    }
  }
}

/* Step 2: every item gets one owner among the users (round robin over a random user order,
 * within the users' degrees), so every item is rated at least once; the owned items of user
 * k are flist[fptr[k] .. fptr[k + 1]). */
static void dpo__gen_owners(dpo_rng_t *rng, int32_t K, int32_t N, int32_t *perm,
                            const int32_t *deg, int32_t *fc, int32_t *fptr, int32_t *flist,
                            int32_t *owner) {
  dpo__shuffle(rng, perm, K);
  int32_t pos = 0;
  int32_t *items = flist; /* temporary: random item order */
  dpo__shuffle(rng, items, N);
  for (int32_t t = 0; t < N; t++) {
    while (fc[perm[pos]] >= deg[perm[pos]]) pos = (pos + 1) % K;
    owner[items[t]] = perm[pos];
    fc[perm[pos]]++;
    pos = (pos + 1) % K;
  }
  for (int32_t k = 0; k < K; k++) fptr[k + 1] = fptr[k] + fc[k];
  memset(fc, 0, (size_t)K * sizeof *fc);
  for (int32_t i = 0; i < N; i++) {
    int32_t k = owner[i];
    flist[fptr[k] + fc[k]++] = i;
  }
}

/* Step 3's Vose alias table (prob, alias) of the item weights wi (sum Wi); small and large
 * are work lists of N entries. */
static void dpo__gen_alias(int32_t N, const double *wi, double Wi, double *prob, int32_t *alias,
                           int32_t *small, int32_t *large) {
  int32_t ns = 0, nl = 0;
  for (int32_t i = 0; i < N; i++) {
    prob[i] = wi[i] * N / Wi;
    alias[i] = i;
    if (prob[i] < 1.0) small[ns++] = i;
    else large[nl++] = i;
  }
  while (ns > 0 && nl > 0) {
    int32_t s = small[--ns], l = large[--nl];
    alias[s] = l;
    prob[l] -= 1.0 - prob[s];
    if (prob[l] < 1.0) small[ns++] = l;
    else large[nl++] = l;
  }
  while (nl > 0) prob[large[--nl]] = 1.0;
  while (ns > 0) prob[small[--ns]] = 1.0;
}

/* Step 5, user k's items into chosen (returns how many: deg): its owned items, then weighted
 * sampling without replacement (rejection on the alias table; if rejections pile up,
 * Efraimidis-Spirakis keys log(U)/w over the items not yet taken, which continues the same
 * successive-sampling law).  mark[i] == k + 1: item i taken. */
static int32_t dpo__gen_user_items(dpo_rng_t *rng, int32_t k, int32_t N, int32_t deg,
                                   const int32_t *own, int32_t nown, const double *prob,
                                   const int32_t *alias, const double *wi, int32_t *mark,
                                   dpo__kv_t *kv, int32_t *chosen) {
  int32_t m = 0, need = deg - nown;
  for (int32_t t = 0; t < nown; t++) {
    chosen[m++] = own[t];
    mark[own[t]] = k + 1;
  }
  int64_t tries = 0, max_tries = 4 * (int64_t)need + 64;
  while (need > 0 && tries < max_tries) {
    int32_t i = (int32_t)dpo_rng_below(rng, (uint64_t)N);
    if (dpo_rng_uniform(rng) >= prob[i]) i = alias[i];
    tries++;
    if (mark[i] == k + 1) continue;
    mark[i] = k + 1;
    chosen[m++] = i;
    need--;
  }
  if (need > 0) {
    int64_t na = 0;
    for (int32_t i = 0; i < N; i++)
      if (mark[i] != k + 1) {
        kv[na].key = log(dpo_rng_uniform(rng)) / wi[i];
        kv[na++].idx = i;
      }
    dpo__select_top(kv, na, need);
    for (int32_t t = 0; t < need; t++) {
      mark[kv[t].idx] = k + 1;
      chosen[m++] = kv[t].idx;
    }
  }
  return m;
}

int dpo_gen_ratings_ex(const char *path, int32_t K, int32_t N, int64_t R, int32_t rank,
                       uint64_t seed, int realistic) {
  int st = DPO_OK;
  FILE *f = NULL;
  dpo_rng_t *rng = NULL;
  int32_t *perm = NULL, *deg = NULL, *fc = NULL, *fptr = NULL, *flist = NULL, *owner = NULL;
  int32_t *alias = NULL, *mark = NULL, *chosen = NULL;
  double *wu = NULL, *wi = NULL, *prob = NULL, *V = NULL, *u = NULL, *bi = NULL;
  dpo__kv_t *kv = NULL;
  char *obuf = NULL;
  if (K < 1 || N < 1 || rank < 1 || R < (K > N ? K : N) || R > (int64_t)K * N)
    return dpo_err(DPO_EINVAL, "%s: ratings generator needs users, items, rank >= 1 and "
                   "max(users, items) <= ratings <= users * items", path);
  if ((st = dpo_rng_create(1, seed, DPO__GEN_RATINGS, &rng))) return st;
  size_t KN = (size_t)(K > N ? K : N);
  perm = malloc(KN * sizeof *perm);
  deg = malloc((size_t)K * sizeof *deg);
  fc = calloc((size_t)K, sizeof *fc);
  fptr = calloc((size_t)K + 1, sizeof *fptr);
  flist = malloc((size_t)N * sizeof *flist);
  owner = malloc((size_t)N * sizeof *owner);
  alias = malloc((size_t)N * sizeof *alias);
  mark = calloc((size_t)N, sizeof *mark);
  chosen = malloc((size_t)N * sizeof *chosen);
  wu = malloc((size_t)K * sizeof *wu);
  wi = malloc((size_t)N * sizeof *wi);
  prob = malloc((size_t)N * sizeof *prob);
  V = malloc((size_t)N * rank * sizeof *V);
  u = malloc((size_t)rank * sizeof *u);
  kv = malloc(KN * sizeof *kv);
  obuf = malloc(1 << 20);
  bi = calloc((size_t)N, sizeof *bi);
  if (!bi || !perm || !deg || !fc || !fptr || !flist || !owner || !alias || !mark || !chosen || !wu ||
      !wi || !prob || !V || !u || !kv || !obuf) {
    st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  /* 1. user degrees (Zipf or log-normal activity, exactly R in all) */
  dpo__gen_degrees(rng, K, N, R, realistic, perm, wu, deg, kv);
  /* 2. every item gets one owner, so every item is rated at least once */
  dpo__gen_owners(rng, K, N, perm, deg, fc, fptr, flist, owner);
  /* 3. item popularity: Zipf weights over a random item order; Vose alias table */
  dpo__shuffle(rng, perm, N);
  double Wi = 0;
  for (int32_t t = 0; t < N; t++)
    Wi += (wi[perm[t]] = realistic ? exp(DPO__REAL_ISD * dpo_rng_normal(rng))
                                   : pow((double)t + 1.0, -DPO__ZIPF_ITEMS));
  dpo__gen_alias(N, wi, Wi, prob, alias, owner, chosen); /* owner, chosen: work lists */
  /* 4. low-rank signal: factor entries N(0, 1/sqrt(rank)) so u'v has variance 1 */
  double fs = pow((double)rank, -0.25);
  for (size_t t = 0; t < (size_t)N * rank; t++) V[t] = fs * dpo_rng_normal(rng);
  double sscale = 1, nsd = 0.5, mean = 3.5;
  if (realistic) { /* item biases: own spread plus popularity (log w_i / ISD is N(0, 1)) */
    for (int32_t i = 0; i < N; i++)
      bi[i] = DPO__REAL_BI * dpo_rng_normal(rng) + DPO__REAL_POP * log(wi[i]) / DPO__REAL_ISD;
    sscale = sqrt(DPO__REAL_SIGNAL);
    nsd = DPO__REAL_NOISE;
    mean = DPO__REAL_MEAN;
  }
  f = fopen(path, "w");
  if (!f) {
    st = dpo_err(DPO_EIO, "%s: cannot create: %s", path, strerror(errno));
    goto out;
  }
  /* 5. stream the users: own items + weighted sampling without replacement, then ratings */
  size_t bl = 0;
  for (int32_t k = 0; k < K; k++) {
    int32_t m = dpo__gen_user_items(rng, k, N, deg[k], flist + fptr[k], fptr[k + 1] - fptr[k],
                                    prob, alias, wi, mark, kv, chosen);
    qsort(chosen, (size_t)m, sizeof *chosen, dpo__int_asc);
    for (int32_t j = 0; j < rank; j++) u[j] = fs * dpo_rng_normal(rng);
    double bu = realistic ? DPO__REAL_BU * dpo_rng_normal(rng) : 0;
    for (int32_t t = 0; t < m; t++) {
      const double *v = V + (size_t)chosen[t] * rank;
      double sig = 0;
      for (int32_t j = 0; j < rank; j++) sig += u[j] * v[j];
      /* default: 3.5 + sig + 0.5 N(0, 1), the stream it always was (+ 0 biases, x 1) */
      double r = realistic ? nearbyint(mean + bu + bi[chosen[t]] + sscale * sig + nsd * dpo_rng_normal(rng))
                           : nearbyint(3.5 + sig + 0.5 * dpo_rng_normal(rng));
      r = r < 1 ? 1 : r > 5 ? 5 : r;
      if (bl > (1 << 20) - 64) {
        if (fwrite(obuf, 1, bl, f) != bl) {
          st = dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
          goto out;
        }
        bl = 0;
      }
      char *p = obuf + bl;
      p = dpo__utoa(p, (uint64_t)k + 1);
      *p++ = ':';
      *p++ = ':';
      p = dpo__utoa(p, (uint64_t)chosen[t] + 1);
      *p++ = ':';
      *p++ = ':';
      *p++ = (char)('0' + (int)r);
      *p++ = '\n';
      bl = (size_t)(p - obuf);
    }
  }
  if (bl && fwrite(obuf, 1, bl, f) != bl) st = dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
out:
  if (f && fclose(f) != 0 && !st) st = dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
  dpo_rng_destroy(rng);
  free(perm);
  free(deg);
  free(fc);
  free(fptr);
  free(flist);
  free(owner);
  free(alias);
  free(mark);
  free(chosen);
  free(wu);
  free(wi);
  free(prob);
  free(V);
  free(u);
  free(kv);
  free(obuf);
  free(bi);
  return st;
}
