/* Partitionings of the rating set into strata (thesis Sec. 3.3): HOGWILD, COLOR, COLOR-B,
 * STRATA, STRATA-B, with validity check and block-balance report. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/hamsi.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"

static const char *dpo__part_names[] = {"hogwild", "color", "color-b", "strata", "strata-b"};

int dpo_mf_part_parse(const char *name, dpo_mf_part_kind_t *kind) {
  for (int k = 0; k < 5; k++)
    if (name && !strcasecmp(name, dpo__part_names[k])) {
      *kind = (dpo_mf_part_kind_t)k;
      return DPO_OK;
    }
  return dpo_err(DPO_EINVAL, "unknown partitioning '%s' (hogwild, color, color-b, strata, strata-b)",
                 name ? name : "(null)");
}

const char *dpo_mf_part_name(dpo_mf_part_kind_t kind) {
  return (unsigned)kind < 5 ? dpo__part_names[kind] : "?";
}

int dpo_mf_cuts(const int64_t *deg, int32_t n, int32_t nb, int balanced, int32_t *cut) {
  if (nb < 1 || n < nb)
    return dpo_err(DPO_EINVAL, "cannot cut %d rows/columns into %d intervals", n, nb);
  cut[0] = 0;
  cut[nb] = n;
  if (!balanced) {
    for (int32_t b = 1; b < nb; b++) cut[b] = (int32_t)((int64_t)b * n / nb);
    return DPO_OK;
  }
  int64_t tot = 0;
  for (int32_t j = 0; j < n; j++) tot += deg[j];
  /* STRATA-B (Fig. 3.4): extend the interval while it holds no more than the b-th share of
   * the functions; each interval keeps at least one index so there are nb of them */
  int64_t cum = 0;
  int32_t j = 0;
  for (int32_t b = 1; b < nb; b++) {
    double target = (double)tot * b / nb;
    int32_t lo = cut[b - 1] + 1, hi = n - (nb - b); /* >= 1 index per interval */
    while (j < lo) cum += deg[j++];
    while (j < hi && (double)(cum + deg[j]) <= target) cum += deg[j++];
    /* take one more when that lands closer to the target */
    if (j < hi && (double)(cum + deg[j]) - target < target - (double)cum) cum += deg[j++];
    cut[b] = j;
  }
  return DPO_OK;
}

void dpo_mf_partition_destroy(dpo_mf_partition_t *p) {
  if (!p) return;
  free(p->stratum);
  free(p->phase);
  free(p->block);
  free(p->row_cut);
  free(p->col_cut);
  free(p);
}

/* growable bitsets of colors in use at each vertex */
typedef struct {
  uint64_t **w;
  int32_t *nw;
} dpo__bits_t;

static int dpo__bit(const dpo__bits_t *b, int32_t v, int32_t c) {
  int32_t k = c >> 6;
  return k < b->nw[v] && ((b->w[v][k] >> (c & 63)) & 1);
}
static int dpo__bit_set(dpo__bits_t *b, int32_t v, int32_t c) {
  int32_t k = c >> 6;
  if (k >= b->nw[v]) {
    int32_t nw = b->nw[v] ? b->nw[v] : 1;
    while (nw <= k) nw *= 2;
    uint64_t *w = realloc(b->w[v], sizeof(uint64_t) * (size_t)nw);
    if (!w) return DPO_ENOMEM;
    memset(w + b->nw[v], 0, sizeof(uint64_t) * (size_t)(nw - b->nw[v]));
    b->w[v] = w;
    b->nw[v] = nw;
  }
  b->w[v][k] |= 1ULL << (c & 63);
  return DPO_OK;
}

/* Edge coloring of the bipartite user-item graph: ratings sharing a user or an item get
 * different colors.  randomized = 0: first-fit; 1: a random color among those already in use
 * that are free at both ends, a new one only if none is (COLOR-B). */
static int dpo__color(int64_t n, const int32_t *user, const int32_t *item, int32_t nu,
                      int32_t ni, int randomized, dpo_rng_t *rng, int32_t *color,
                      int32_t *ncolors) {
  int st = DPO_OK;
  dpo__bits_t B = {calloc((size_t)nu + ni, sizeof(uint64_t *)), calloc((size_t)nu + ni, sizeof(int32_t))};
  int32_t *freec = NULL, nc = 0, cap = 0;
  if (!B.w || !B.nw) {
    st = dpo_err(DPO_ENOMEM, "coloring");
    goto out;
  }
  for (int64_t k = 0; k < n; k++) {
    int32_t u = user[k], i = nu + item[k], c = -1;
    if (!randomized) {
      for (c = 0; c < nc; c++)
        if (!dpo__bit(&B, u, c) && !dpo__bit(&B, i, c)) break;
    } else if (nc > 0) {
      for (int t = 0; t < 16 && c < 0; t++) {
        int32_t cand = (int32_t)dpo_rng_below(rng, (uint64_t)nc);
        if (!dpo__bit(&B, u, cand) && !dpo__bit(&B, i, cand)) c = cand;
      }
      if (c < 0) { /* few free colors: list them and pick one uniformly */
        if (cap < nc) {
          int32_t *f = realloc(freec, sizeof(int32_t) * (size_t)nc * 2);
          if (!f) {
            st = dpo_err(DPO_ENOMEM, "coloring");
            goto out;
          }
          freec = f;
          cap = nc * 2;
        }
        int32_t nf = 0;
        for (int32_t cc = 0; cc < nc; cc++)
          if (!dpo__bit(&B, u, cc) && !dpo__bit(&B, i, cc)) freec[nf++] = cc;
        c = nf ? freec[dpo_rng_below(rng, (uint64_t)nf)] : nc;
      }
    } else {
      c = 0;
    }
    if (c == nc) nc++;
    if (dpo__bit_set(&B, u, c) || dpo__bit_set(&B, i, c)) {
      st = dpo_err(DPO_ENOMEM, "coloring");
      goto out;
    }
    color[k] = c;
  }
  *ncolors = nc;
out:
  if (B.w)
    for (int64_t v = 0; v < (int64_t)nu + ni; v++) free(B.w[v]);
  free(B.w);
  free(B.nw);
  free(freec);
  return st;
}

int dpo_mf_partition(dpo_mf_part_kind_t kind, int32_t K, int64_t n, const int32_t *user,
                     const int32_t *item, int32_t n_users, int32_t n_items, uint64_t seed,
                     dpo_mf_partition_t **out) {
  int st = DPO_OK;
  dpo_rng_t *rng = NULL;
  int64_t *perm = NULL, *deg = NULL, *cnt = NULL;
  int32_t *bin = NULL;
  *out = NULL;
  if (K < 1 || n < 1 || (unsigned)kind > DPO_MF_STRATA_B)
    return dpo_err(DPO_EINVAL, "partition: need K >= 1 strata and ratings (K = %d, n = %lld)", K,
                   (long long)n);
  for (int64_t k = 0; k < n; k++)
    if (user[k] < 0 || user[k] >= n_users || item[k] < 0 || item[k] >= n_items)
      return dpo_err(DPO_EINVAL, "partition: rating %lld: (user %d, item %d) out of range",
                     (long long)k, user[k], item[k]);
  dpo_mf_partition_t *p = calloc(1, sizeof *p);
  if (!p) return dpo_err(DPO_ENOMEM, "partition");
  p->kind = kind;
  p->K = K;
  p->n = n;
  p->valid_expected = kind != DPO_MF_HOGWILD;
  p->stratum = malloc(sizeof(int32_t) * (size_t)n);
  p->phase = calloc((size_t)n, sizeof(int32_t));
  p->block = malloc(sizeof(int64_t) * (size_t)n);
  if (!p->stratum || !p->phase || !p->block) {
    st = dpo_err(DPO_ENOMEM, "partition of %lld ratings", (long long)n);
    goto out;
  }
  if ((st = dpo_rng_create(1, seed, 0x9a47, &rng))) goto out;
  if (kind == DPO_MF_HOGWILD) {
    /* random equal subsets: a Fisher-Yates permutation cut into K pieces */
    if (!(perm = malloc(sizeof(int64_t) * (size_t)n))) {
      st = dpo_err(DPO_ENOMEM, "partition");
      goto out;
    }
    for (int64_t k = 0; k < n; k++) perm[k] = k;
    for (int64_t k = n - 1; k > 0; k--) {
      int64_t j = (int64_t)dpo_rng_below(rng, (uint64_t)k + 1), t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
    for (int64_t k = 0; k < n; k++) {
      p->stratum[perm[k]] = (int32_t)(k * K / n);
      p->block[perm[k]] = perm[k];
    }
  } else if (kind == DPO_MF_COLOR || kind == DPO_MF_COLOR_B) {
    if ((st = dpo__color(n, user, item, n_users, n_items, kind == DPO_MF_COLOR_B, rng, p->phase,
                         &p->ncolors)))
      goto out;
    cnt = calloc((size_t)p->ncolors, sizeof(int64_t));
    int64_t *fill = calloc((size_t)K, sizeof(int64_t));
    bin = malloc(sizeof(int32_t) * (size_t)p->ncolors);
    if (!cnt || !fill || !bin) {
      free(fill);
      st = dpo_err(DPO_ENOMEM, "partition");
      goto out;
    }
    for (int64_t k = 0; k < n; k++) cnt[p->phase[k]]++;
    /* pack colors first-fit into K bins of about n/K functions (Sec. 3.3) */
    double cap = (double)n / K;
    for (int32_t c = 0; c < p->ncolors; c++) {
      int32_t b = 0, best = 0;
      for (; b < K; b++)
        if ((double)fill[b] < cap && (double)(fill[b] + cnt[c]) <= cap + 0.5) break;
      if (b == K) { /* nothing fits: the least filled bin */
        for (int32_t bb = 1; bb < K; bb++)
          if (fill[bb] < fill[best]) best = bb;
        b = best;
      }
      bin[c] = b;
      fill[b] += cnt[c];
    }
    free(fill);
    for (int64_t k = 0; k < n; k++) {
      p->stratum[k] = bin[p->phase[k]];
      p->block[k] = k;
    }
  } else {
    int balanced = kind == DPO_MF_STRATA_B;
    p->nb = K;
    p->row_cut = malloc(sizeof(int32_t) * ((size_t)K + 1));
    p->col_cut = malloc(sizeof(int32_t) * ((size_t)K + 1));
    int32_t mx = n_users > n_items ? n_users : n_items;
    deg = calloc((size_t)mx, sizeof(int64_t));
    int32_t *rb = malloc(sizeof(int32_t) * (size_t)n_users), *cb = malloc(sizeof(int32_t) * (size_t)n_items);
    if (!p->row_cut || !p->col_cut || !deg || !rb || !cb) {
      free(rb);
      free(cb);
      st = dpo_err(DPO_ENOMEM, "partition");
      goto out;
    }
    for (int64_t k = 0; k < n; k++) deg[user[k]]++;
    if ((st = dpo_mf_cuts(deg, n_users, K, balanced, p->row_cut))) goto grid_out;
    memset(deg, 0, sizeof(int64_t) * (size_t)mx);
    for (int64_t k = 0; k < n; k++) deg[item[k]]++;
    if ((st = dpo_mf_cuts(deg, n_items, K, balanced, p->col_cut))) goto grid_out;
    for (int32_t b = 0; b < K; b++) {
      for (int32_t u = p->row_cut[b]; u < p->row_cut[b + 1]; u++) rb[u] = b;
      for (int32_t i = p->col_cut[b]; i < p->col_cut[b + 1]; i++) cb[i] = b;
    }
    /* stratum k = blocks (i, (i + k) mod K): every user and item interval once */
    for (int64_t k = 0; k < n; k++) {
      int32_t a = rb[user[k]], c = cb[item[k]];
      p->stratum[k] = ((c - a) % K + K) % K;
      p->block[k] = a;
    }
  grid_out:
    free(rb);
    free(cb);
    if (st) goto out;
  }
out:
  dpo_rng_destroy(rng);
  free(perm);
  free(deg);
  free(cnt);
  free(bin);
  if (st)
    dpo_mf_partition_destroy(p);
  else
    *out = p;
  return st;
}

int dpo_mf_partition_valid(const dpo_mf_partition_t *p, const int32_t *user,
                           const int32_t *item, int32_t n_users, int32_t n_items,
                           int64_t *conflicts) {
  int64_t n = p->n, bad = 0;
  int32_t nph = 1;
  for (int64_t k = 0; k < n; k++) {
    if (p->stratum[k] < 0 || p->stratum[k] >= p->K) bad++;
    if (p->phase[k] + 1 > nph) nph = p->phase[k] + 1;
  }
  /* group the ratings by (stratum, phase); within a group a variable may belong to one block */
  int64_t ng = (int64_t)p->K * nph;
  int64_t *start = calloc((size_t)ng + 1, sizeof(int64_t)), *ord = malloc(sizeof(int64_t) * (size_t)n);
  int64_t *ublk = malloc(sizeof(int64_t) * (size_t)n_users), *iblk = malloc(sizeof(int64_t) * (size_t)n_items);
  int64_t *ugrp = malloc(sizeof(int64_t) * (size_t)n_users), *igrp = malloc(sizeof(int64_t) * (size_t)n_items);
  if (!start || !ord || !ublk || !iblk || !ugrp || !igrp) {
    bad = -1;
    goto out;
  }
  if (bad) goto out;
  for (int64_t k = 0; k < n; k++) start[(int64_t)p->stratum[k] * nph + p->phase[k] + 1]++;
  for (int64_t g = 0; g < ng; g++) start[g + 1] += start[g];
  for (int64_t k = 0; k < n; k++) ord[start[(int64_t)p->stratum[k] * nph + p->phase[k]]++] = k;
  for (int32_t u = 0; u < n_users; u++) ugrp[u] = -1;
  for (int32_t i = 0; i < n_items; i++) igrp[i] = -1;
  for (int64_t t = 0; t < n; t++) {
    int64_t k = ord[t], g = (int64_t)p->stratum[k] * nph + p->phase[k], b = p->block[k];
    int32_t u = user[k], i = item[k];
    int c = 0;
    if (ugrp[u] == g && ublk[u] != b) c = 1;
    if (igrp[i] == g && iblk[i] != b) c = 1;
    ugrp[u] = igrp[i] = g;
    ublk[u] = iblk[i] = b;
    bad += c;
  }
out:
  free(start);
  free(ord);
  free(ublk);
  free(iblk);
  free(ugrp);
  free(igrp);
  if (conflicts) *conflicts = bad;
  return bad == 0;
}

void dpo_mf_partition_balance(const dpo_mf_partition_t *p, dpo_mf_balance_t *b) {
  memset(b, 0, sizeof *b);
  b->K = p->K;
  int64_t *cs = calloc((size_t)p->K, sizeof(int64_t));
  int grid = p->kind == DPO_MF_STRATA || p->kind == DPO_MF_STRATA_B;
  int64_t nbk = grid ? (int64_t)p->K * p->K : 0;
  int64_t *cb = grid ? calloc((size_t)nbk, sizeof(int64_t)) : NULL;
  if (!cs || (grid && !cb)) goto out;
  for (int64_t k = 0; k < p->n; k++) {
    cs[p->stratum[k]]++;
    if (grid) cb[(int64_t)p->stratum[k] * p->K + p->block[k]]++;
  }
  b->stratum_min = b->stratum_max = cs[0];
  for (int32_t s = 0; s < p->K; s++) {
    if (cs[s] < b->stratum_min) b->stratum_min = cs[s];
    if (cs[s] > b->stratum_max) b->stratum_max = cs[s];
  }
  b->stratum_mean = (double)p->n / p->K;
  if (grid) {
    b->block_min = -1;
    for (int64_t k = 0; k < nbk; k++) {
      if (!cb[k]) continue;
      b->nblocks++;
      if (b->block_min < 0 || cb[k] < b->block_min) b->block_min = cb[k];
      if (cb[k] > b->block_max) b->block_max = cb[k];
    }
    /* the ring waits for the fullest block of a stratum: compare with n / K^2 */
    b->block_mean = (double)p->n / (double)nbk;
    b->imbalance = b->block_max / b->block_mean;
  } else {
    b->nblocks = p->n;
    b->block_min = b->block_max = 1;
    b->block_mean = 1;
    b->imbalance = b->stratum_max / b->stratum_mean;
  }
out:
  free(cs);
  free(cb);
}

void dpo_mf_partition_report(FILE *f, const dpo_mf_partition_t *p, const int32_t *user,
                             const int32_t *item, int32_t n_users, int32_t n_items) {
  dpo_mf_balance_t b;
  int64_t conf = 0;
  dpo_mf_partition_balance(p, &b);
  int ok = dpo_mf_partition_valid(p, user, item, n_users, n_items, &conf);
  fprintf(f, "partition %s: %lld functions in %d strata (min %lld, mean %.1f, max %lld)\n",
          dpo_mf_part_name(p->kind), (long long)p->n, p->K, (long long)b.stratum_min,
          b.stratum_mean, (long long)b.stratum_max);
  if (p->kind == DPO_MF_STRATA || p->kind == DPO_MF_STRATA_B)
    fprintf(f, "  blocks: %lld non-empty of %lld, functions per block min %lld max %lld "
               "(max / (n/K^2) = %.3f)\n",
            (long long)b.nblocks, (long long)p->K * p->K, (long long)b.block_min,
            (long long)b.block_max, b.imbalance);
  else
    fprintf(f, "  one function per block; stratum imbalance max/mean = %.3f\n", b.imbalance);
  if (p->kind == DPO_MF_COLOR || p->kind == DPO_MF_COLOR_B)
    fprintf(f, "  %d colors packed into %d bins; a bin is processed color by color\n", p->ncolors,
            p->K);
  if (p->kind == DPO_MF_HOGWILD)
    fprintf(f, "  validity: HOGWILD blocks may share variables (%lld ratings overlap an earlier "
               "block of their stratum); by design, not an error\n",
            (long long)conf);
  else
    fprintf(f, "  validity: %s (%lld conflicts)\n", ok ? "every stratum's blocks touch disjoint variables" : "INVALID",
            (long long)conf);
}
