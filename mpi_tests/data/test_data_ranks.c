/* Loaders at 1, 2, 3, 4 ranks: the rows gathered to rank 0 must be identical to an
 * independent serial parse (LIBSVM a9a, CSV) or to the 1-rank load (binary, ratings, IDX);
 * errors must come back with the same status and the right global line on every rank. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/data.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"

typedef struct {
  int64_t n, nnz;
  int32_t d;
  int sparse;
  double *y, *val, *X;
  int64_t *rp;
  int32_t *ci;
} full_t;

static void full_free(full_t *f) {
  free(f->y);
  free(f->val);
  free(f->X);
  free(f->rp);
  free(f->ci);
  memset(f, 0, sizeof *f);
}

/* Gather a distributed shard to rank 0 of c (result only there). Also checks row0/n_global. */
static void gather(MPI_Comm c, const dpo_shard_t *s, full_t *f) {
  int r, P;
  MPI_Comm_rank(c, &r);
  MPI_Comm_size(c, &P);
  memset(f, 0, sizeof *f);
  int64_t before = 0, tot = 0;
  MPI_Exscan(&s->n, &before, 1, MPI_INT64_T, MPI_SUM, c);
  MPI_Allreduce(&s->n, &tot, 1, MPI_INT64_T, MPI_SUM, c);
  if (r == 0) before = 0;
  T_CHECK(s->row0 == before, "rank %d row0 %lld, want %lld", r, (long long)s->row0, (long long)before);
  T_CHECK(s->n_global == tot, "n_global %lld, want %lld", (long long)s->n_global, (long long)tot);
  int n = (int)s->n, nnz = s->sparse ? (int)s->rowptr[s->n] : (int)(s->n * s->d);
  int *cn = malloc(P * sizeof(int)), *dn = malloc(P * sizeof(int)), *cz = malloc(P * sizeof(int)),
      *dz = malloc(P * sizeof(int));
  MPI_Gather(&n, 1, MPI_INT, cn, 1, MPI_INT, 0, c);
  MPI_Gather(&nnz, 1, MPI_INT, cz, 1, MPI_INT, 0, c);
  if (r == 0) {
    dn[0] = dz[0] = 0;
    for (int k = 1; k < P; k++) {
      dn[k] = dn[k - 1] + cn[k - 1];
      dz[k] = dz[k - 1] + cz[k - 1];
    }
    f->n = dn[P - 1] + cn[P - 1];
    f->nnz = dz[P - 1] + cz[P - 1];
    f->d = s->d;
    f->sparse = s->sparse;
    f->y = malloc((f->n + 1) * sizeof(double));
  }
  MPI_Gatherv(s->y, n, MPI_DOUBLE, f->y, cn, dn, MPI_DOUBLE, 0, c);
  if (s->sparse) {
    int *len = malloc((n + 1) * sizeof(int));
    for (int i = 0; i < n; i++) len[i] = (int)(s->rowptr[i + 1] - s->rowptr[i]);
    int *alen = r == 0 ? malloc((f->n + 1) * sizeof(int)) : NULL;
    if (r == 0) {
      f->ci = malloc((f->nnz + 1) * sizeof(int32_t));
      f->val = malloc((f->nnz + 1) * sizeof(double));
      f->rp = malloc((f->n + 1) * sizeof(int64_t));
    }
    MPI_Gatherv(len, n, MPI_INT, alen, cn, dn, MPI_INT, 0, c);
    MPI_Gatherv(s->colind, nnz, MPI_INT32_T, f->ci, cz, dz, MPI_INT32_T, 0, c);
    MPI_Gatherv(s->val, nnz, MPI_DOUBLE, f->val, cz, dz, MPI_DOUBLE, 0, c);
    if (r == 0) {
      f->rp[0] = 0;
      for (int64_t i = 0; i < f->n; i++) f->rp[i + 1] = f->rp[i] + alen[i];
    }
    free(len);
    free(alen);
  } else {
    if (r == 0) f->X = malloc((f->nnz + 1) * sizeof(double));
    MPI_Gatherv(s->X, nnz, MPI_DOUBLE, f->X, cz, dz, MPI_DOUBLE, 0, c);
  }
  free(cn);
  free(dn);
  free(cz);
  free(dz);
}

/* Exact comparison (a gathered, b reference). */
static int same_full(const full_t *a, const full_t *b, const char *what) {
  int bad = 0;
  if (a->n != b->n || a->d != b->d || a->sparse != b->sparse || a->nnz != b->nnz) {
    T_CHECK(0, "%s: shape n=%lld d=%d sparse=%d nnz=%lld, want n=%lld d=%d sparse=%d nnz=%lld", what,
            (long long)a->n, a->d, a->sparse, (long long)a->nnz, (long long)b->n, b->d, b->sparse,
            (long long)b->nnz);
    return 0;
  }
  for (int64_t i = 0; i < a->n && !bad; i++)
    if (a->y[i] != b->y[i]) { bad = 1; T_CHECK(0, "%s: y[%lld] %g != %g", what, (long long)i, a->y[i], b->y[i]); }
  if (a->sparse) {
    for (int64_t i = 0; i <= a->n && !bad; i++)
      if (a->rp[i] != b->rp[i]) { bad = 1; T_CHECK(0, "%s: rowptr[%lld]", what, (long long)i); }
    for (int64_t k = 0; k < a->nnz && !bad; k++)
      if (a->ci[k] != b->ci[k] || a->val[k] != b->val[k]) { bad = 1; T_CHECK(0, "%s: entry %lld", what, (long long)k); }
  } else {
    for (int64_t k = 0; k < a->nnz && !bad; k++)
      if (a->X[k] != b->X[k]) { bad = 1; T_CHECK(0, "%s: X[%lld] %g != %g", what, (long long)k, a->X[k], b->X[k]); }
  }
  return !bad;
}

/* Independent serial LIBSVM parse (sscanf), binary labels. */
static void parse_ref(const char *path, full_t *f) {
  FILE *fp = fopen(path, "r");
  memset(f, 0, sizeof *f);
  if (!fp) {
    T_CHECK(0, "cannot open %s", path);
    return;
  }
  size_t capn = 1024, capz = 16384;
  f->y = malloc(capn * sizeof(double));
  f->rp = malloc((capn + 1) * sizeof(int64_t));
  f->ci = malloc(capz * sizeof(int32_t));
  f->val = malloc(capz * sizeof(double));
  f->rp[0] = 0;
  f->sparse = 1;
  char line[65536];
  while (fgets(line, sizeof line, fp)) {
    char *tok = strtok(line, " \t\r\n");
    if (!tok || tok[0] == '#') continue;
    if ((size_t)f->n + 1 >= capn) {
      capn *= 2;
      f->y = realloc(f->y, capn * sizeof(double));
      f->rp = realloc(f->rp, (capn + 1) * sizeof(int64_t));
    }
    double lab = atof(tok);
    f->y[f->n] = lab > 0 ? 1.0 : -1.0;
    while ((tok = strtok(NULL, " \t\r\n"))) {
      int idx;
      double v;
      if (sscanf(tok, "%d:%lf", &idx, &v) != 2) continue;
      if ((size_t)f->nnz + 1 >= capz) {
        capz *= 2;
        f->ci = realloc(f->ci, capz * sizeof(int32_t));
        f->val = realloc(f->val, capz * sizeof(double));
      }
      f->ci[f->nnz] = idx - 1;
      f->val[f->nnz++] = v;
      if (idx > f->d) f->d = idx;
    }
    f->n++;
    f->rp[f->n] = f->nnz;
  }
  fclose(fp);
}

static void to_dense(const full_t *a, full_t *b) {
  memset(b, 0, sizeof *b);
  b->n = a->n;
  b->d = a->d;
  b->nnz = a->n * a->d;
  b->y = malloc(a->n * sizeof(double));
  memcpy(b->y, a->y, a->n * sizeof(double));
  b->X = calloc(b->nnz + 1, sizeof(double));
  for (int64_t i = 0; i < a->n; i++)
    for (int64_t k = a->rp[i]; k < a->rp[i + 1]; k++) b->X[i * a->d + a->ci[k]] = a->val[k];
}

static char tdir[256];
/* A path in the temp dir (a new string, never freed: fixtures keep theirs for the run). */
static const char *tp(const char *name) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", tdir, name);
  return strdup(buf);
}

/* Load at sub-communicator c; expect failure `code` and a message containing `want` on every
 * rank; the message must be identical on all ranks apart from the "[reported by rank]" tail. */
static void expect_fail(MPI_Comm c, const char *path, const dpo_load_opts_t *o, int code,
                        const char *want, int k) {
  dpo_shard_t *s = NULL;
  int st = dpo_shard_load(c, path, o, &s);
  int r;
  MPI_Comm_rank(c, &r);
  T_CHECK(st == code, "np=%d: %s: status %d (%s), want %d", k, path, st, dpo_errmsg(), code);
  T_CHECK(s == NULL, "np=%d: shard returned on failure", k);
  T_CHECK(strstr(dpo_errmsg(), want) != NULL, "np=%d rank %d: message '%s' lacks '%s'", k, r,
          dpo_errmsg(), want);
  char mine[1024] = {0}, root[1024] = {0};
  snprintf(mine, sizeof mine, "%s", dpo_errmsg());
  char *cut = strstr(mine, " [reported by rank");
  if (cut) *cut = '\0';
  memcpy(root, mine, sizeof root);
  MPI_Bcast(root, sizeof root, MPI_CHAR, 0, c);
  T_CHECK(strcmp(root, mine) == 0, "np=%d rank %d: message '%s' differs from rank 0's '%s'", k, r, mine, root);
  int all = st, mn, mx;
  MPI_Allreduce(&all, &mn, 1, MPI_INT, MPI_MIN, c);
  MPI_Allreduce(&all, &mx, 1, MPI_INT, MPI_MAX, c);
  T_CHECK(mn == mx, "np=%d: statuses differ across ranks", k);
  dpo_shard_destroy(s);
}

/* A dense binary file of n rows of d values of varied magnitudes (row 500: 1e308s, whose L1
 * sum overflows), labels +-1; with nan_row > 0 that row holds a nan. */
static void write_dense(const char *path, int64_t n, int32_t d, int64_t nan_row) {
  FILE *f = fopen(path, "wb");
  T_CHECK(f != NULL, "cannot write %s", path);
  if (!f) return;
  int32_t hd[6] = {d, 0, 0, 0, 0, 0}; /* d, sparse, nnz (2 words), labels, reserved */
  fwrite("DPOBIN01", 1, 8, f);
  fwrite(&n, 8, 1, f);
  fwrite(hd, 4, 6, f);
  for (int64_t i = 0; i < n; i++) fwrite(&(double){i % 3 ? 1.0 : -1.0}, 8, 1, f);
  for (int64_t i = 0; i < n; i++)
    for (int32_t j = 0; j < d; j++) {
      double v = i == 500 ? 1e308 : sin(0.37 * (double)(i * d + j)) * exp((double)(j % 9) - 4);
      if (i + 1 == nan_row && j == 5) v = NAN;
      fwrite(&v, 8, 1, f);
    }
  fclose(f);
}

/* The loader's row norms (dpo_load_opts_t.row_norms), read with and without the bias column
 * and mapped: the same doubles as a plain sum over each row's features in index order, the
 * same rows as a load without them, kept current by dpo_shard_scale_row. */
static void check_norms(MPI_Comm c, int k, const char *path) {
  for (int v = 0; v < 3; v++) { /* 0: read, bias; 1: read, no bias; 2: mapped */
    dpo_load_opts_t o;
    dpo_load_opts_default(&o);
    o.intercept = v == 0;
    o.map = v == 2;
    dpo_shard_t *p = NULL, *s = NULL;
    int st = dpo_shard_load(c, path, &o, &p);
    o.row_norms = 1;
    if (!st) st = dpo_shard_load(c, path, &o, &s);
    T_CHECK(st == DPO_OK, "np=%d v=%d: %s", k, v, dpo_errmsg());
    if (!st) {
      T_CHECK(s->norms && !p->norms && (s->map != NULL) == (v == 2) && s->n == p->n &&
                  s->d == p->d && s->intercept == (v == 0), "np=%d v=%d: shard shape", k, v);
      const int32_t nf = s->d - s->intercept;
      int64_t bad = 0, big = 0;
      for (int64_t i = 0; i < s->n && s->d == p->d; i++) {
        const double *x = s->X + i * s->d;
        double a = 0, b = 0;
        for (int32_t j = 0; j < nf; j++) a += fabs(x[j]), b += x[j] * x[j];
        bad += memcmp(x, p->X + i * p->d, (size_t)s->d * 8) != 0;
        bad += s->norms[i] != a || s->norms[s->n + i] != sqrt(b);
        big += isinf(a);
      }
      dpo_shard_scale_row(s, s->n - 1, 0.375);
      double a = 0, b = 0;
      for (int32_t j = 0; j < nf; j++) {
        const double x = s->X[(s->n - 1) * s->d + j];
        a += fabs(x), b += x * x;
        bad += x != p->X[(s->n - 1) * p->d + j] * 0.375;
      }
      bad += s->norms[s->n - 1] != a || s->norms[2 * s->n - 1] != sqrt(b);
      bad += s->intercept && s->X[s->n * s->d - 1] != 1.0; /* the bias column not scaled */
      T_CHECK(bad == 0, "np=%d v=%d: %lld rows or norms differ", k, v, (long long)bad);
      MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_INT64_T, MPI_SUM, c);
      T_CHECK(big == 1, "np=%d v=%d: %lld rows of overflowing norm, want 1", k, v, (long long)big);
      /* dropped (dpo_shard_drop_norms): computed from the rows again, the same doubles */
      const size_t nb = (size_t)(s->n ? 2 * s->n : 1) * sizeof(double);
      double *kept = malloc(nb), *l = malloc(nb);
      if (kept && l && s->n) memcpy(kept, s->norms, nb);
      dpo_shard_drop_norms(s);
      if (kept && l && s->n) dpo_shard_row_norms(s, l, l + s->n);
      T_CHECK(!s->norms && kept && l && (!s->n || !memcmp(kept, l, nb)),
              "np=%d v=%d: the norms after dpo_shard_drop_norms", k, v);
      free(kept);
      free(l);
    }
    dpo_shard_destroy(p);
    dpo_shard_destroy(s);
  }
  /* a partition drops rows: the loader's norms go with them */
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  o.row_norms = 1;
  o.part_lo = 0, o.part_hi = 0.5;
  dpo_shard_t *s = NULL;
  int st = dpo_shard_load(c, path, &o, &s);
  T_CHECK(st == DPO_OK && !s->norms, "np=%d: a partition's shard keeps the loader's norms (%s)",
          k, st ? dpo_errmsg() : "");
  dpo_shard_destroy(s);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, wp;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &wp);
  const char *top = getenv("top_srcdir");
  char a9a[1024];
  snprintf(a9a, sizeof a9a, "%s/data/a9a", top ? top : "..");
  if (wr == 0) {
    snprintf(tdir, sizeof tdir, "/tmp/dpo_test_ranks_XXXXXX");
    if (!mkdtemp(tdir)) tdir[0] = '\0';
  }
  MPI_Bcast(tdir, sizeof tdir, MPI_CHAR, 0, MPI_COMM_WORLD);
  T_CHECK(tdir[0] != '\0', "mkdtemp failed");

  full_t ref = {0}, refd = {0};
  if (wr == 0) {
    parse_ref(a9a, &ref);
    T_CHECK(ref.n == 32561 && ref.d == 123 && ref.nnz == 451592, "reference parse of %s: n=%lld d=%d nnz=%lld",
            a9a, (long long)ref.n, ref.d, (long long)ref.nnz);
    to_dense(&ref, &refd);
  }
  int64_t ref_pos = 0;
  double ref_l1max = 0;
  if (wr == 0)
    for (int64_t i = 0; i < ref.n; i++) {
      ref_pos += ref.y[i] > 0;
      double a = 0;
      for (int64_t k = ref.rp[i]; k < ref.rp[i + 1]; k++) a += fabs(ref.val[k]);
      if (a > ref_l1max) ref_l1max = a;
    }
  MPI_Bcast(&ref_pos, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(&ref_l1max, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

  /* fixtures written by rank 0: malformed files, tiny files, generated ratings */
  const char *bad1 = tp("bad1.svm"), *bad2 = tp("bad2.svm"), *tiny = tp("tiny.svm"),
             *empty = tp("empty.svm"), *csv = tp("good.csv"), *badcsv = tp("bad.csv"),
             *rat = tp("r.dat");
  if (wr == 0) {
    FILE *f1 = fopen(bad1, "w"), *f2 = fopen(bad2, "w"), *f3 = fopen(csv, "w"), *f4 = fopen(badcsv, "w");
    fprintf(f3, "label,a,b,c\n");
    fprintf(f4, "label,a,b\n");
    for (int i = 1; i <= 1000; i++) {
      fprintf(f1, i == 950 ? "-1 2:1 7 9:1\n" : "+1 1:1 5:0.5\n");
      fprintf(f2, i == 300 ? "2 1:1\n" : i == 950 ? "-1 2:1 7 9:1\n" : i % 7 == 0 ? "# note\n" : "-1 3:2\n");
      fprintf(f3, "%d,%d,%.17g,%d\n", i % 2, i, i * 0.25, -i);
      /* line 981 of the CSV (header is line 1) has a NaN */
      fprintf(f4, i == 980 ? "1,nan,2\n" : "0,1,2\n");
    }
    fclose(f1);
    fclose(f2);
    fclose(f3);
    fclose(f4);
    FILE *f5 = fopen(tiny, "w");
    fprintf(f5, "1 1:1\n-1 2:2\n1 3:3\n");
    fclose(f5);
    fclose(fopen(empty, "w"));
    T_CHECK(dpo_gen_ratings(rat, 300, 200, 6000, 4, 5) == DPO_OK, "gen ratings: %s", dpo_errmsg());
  }
  MPI_Barrier(MPI_COMM_WORLD);

  full_t bin1 = {0};
  struct { int32_t *u, *i; double *r; int64_t n; } rat1 = {0};
  for (int k = 1; k <= wp && k <= 4; k++) {
    MPI_Comm c = dpo_t_subcomm(k);
    if (c == MPI_COMM_NULL) continue;
    int r;
    MPI_Comm_rank(c, &r);
    dpo_load_opts_t o;
    dpo_load_opts_default(&o);
    char what[64];

    /* a9a: sparse, then dense */
    dpo_shard_t *s = NULL;
    int st = dpo_shard_load(c, a9a, &o, &s);
    T_CHECK(st == DPO_OK, "np=%d: load a9a: %s", k, dpo_errmsg());
    if (st == DPO_OK) {
      full_t g;
      gather(c, s, &g);
      snprintf(what, sizeof what, "a9a np=%d", k);
      if (r == 0) same_full(&g, &ref, what);
      full_free(&g);
      dpo_shard_stats_t ss;
      T_CHECK(dpo_shard_stats(c, s, &ss) == DPO_OK, "stats");
      T_CHECK(ss.n == 32561 && ss.nnz == 451592 && ss.d == 123 && ss.n_pos == ref_pos &&
                  ss.n_neg == 32561 - ref_pos && ss.l1_max == ref_l1max,
              "np=%d stats n=%lld nnz=%lld d=%d pos=%lld l1max=%g", k, (long long)ss.n,
              (long long)ss.nnz, ss.d, (long long)ss.n_pos, ss.l1_max);
      /* binary written by k ranks; re-read at k and compared below at every rank count */
      char bp[600];
      snprintf(bp, sizeof bp, "%s/a9a_%d.bin", tdir, k);
      st = dpo_shard_write_bin(c, s, bp);
      T_CHECK(st == DPO_OK, "np=%d: write bin: %s", k, dpo_errmsg());
      dpo_shard_destroy(s);
    }
    o.dense = 1;
    st = dpo_shard_load(c, a9a, &o, &s);
    T_CHECK(st == DPO_OK, "np=%d: load a9a dense: %s", k, dpo_errmsg());
    if (st == DPO_OK) {
      full_t g;
      gather(c, s, &g);
      snprintf(what, sizeof what, "a9a dense np=%d", k);
      if (r == 0) same_full(&g, &refd, what);
      full_free(&g);
      char bp[600];
      snprintf(bp, sizeof bp, "%s/a9a_dense_%d.bin", tdir, k);
      T_CHECK(dpo_shard_write_bin(c, s, bp) == DPO_OK, "np=%d: write dense bin: %s", k, dpo_errmsg());
      dpo_shard_destroy(s);
      dpo_load_opts_t ob;
      dpo_load_opts_default(&ob);
      st = dpo_shard_load(c, bp, &ob, &s);
      T_CHECK(st == DPO_OK, "np=%d: read dense bin: %s", k, dpo_errmsg());
      if (st == DPO_OK) {
        gather(c, s, &g);
        snprintf(what, sizeof what, "a9a dense bin np=%d", k);
        if (r == 0) same_full(&g, &refd, what);
        full_free(&g);
        dpo_shard_destroy(s);
      }
    }
    o.dense = 0;

    /* CSV with a header: closed-form values */
    st = dpo_shard_load(c, csv, &o, &s);
    T_CHECK(st == DPO_OK, "np=%d: load csv: %s", k, dpo_errmsg());
    if (st == DPO_OK) {
      full_t g;
      gather(c, s, &g);
      if (r == 0) {
        T_CHECK(g.n == 1000 && g.d == 3 && !g.sparse, "csv shape n=%lld d=%d", (long long)g.n, g.d);
        int bad = 0;
        for (int64_t i = 0; i < g.n && g.n == 1000; i++) {
          double j = (double)(i + 1);
          bad += g.y[i] != ((i + 1) % 2 ? 1.0 : -1.0) || g.X[3 * i] != j || g.X[3 * i + 1] != j * 0.25 ||
                 g.X[3 * i + 2] != -j;
        }
        T_CHECK(bad == 0, "np=%d: %d CSV rows differ from the closed form", k, bad);
      }
      full_free(&g);
      dpo_shard_destroy(s);
    }

    /* errors: the bad line is in the last rank's byte range; the first bad line wins */
    expect_fail(c, bad1, &o, DPO_EFORMAT, ":950: missing ':'", k);
    char want[700];
    snprintf(want, sizeof want, "%s:300: unknown label", bad2);
    expect_fail(c, bad2, &o, DPO_EFORMAT, want, k);
    expect_fail(c, badcsv, &o, DPO_EFORMAT, ":981: non-finite", k);
    expect_fail(c, empty, &o, DPO_EFORMAT, "empty", k);
    expect_fail(c, tp("missing.svm"), &o, DPO_EIO, "missing.svm: cannot open", k);
    if (k == 4) {
      expect_fail(c, tiny, &o, DPO_ERANKS, "more ranks than rows", k);
    } else {
      st = dpo_shard_load(c, tiny, &o, &s);
      T_CHECK(st == DPO_OK && s->n_global == 3, "np=%d: tiny file: %s", k, dpo_errmsg());
      if (!st) {
        char bp[600];
        snprintf(bp, sizeof bp, "%s/tiny_%d.bin", tdir, k);
        T_CHECK(dpo_shard_write_bin(c, s, bp) == DPO_OK, "tiny bin");
        dpo_shard_destroy(s);
      }
    }

    /* ratings: identical triplets at every rank count */
    dpo_ratings_t *R = NULL;
    st = dpo_ratings_load(c, rat, 1, &R);
    T_CHECK(st == DPO_OK, "np=%d: ratings: %s", k, dpo_errmsg());
    if (!st) {
      T_CHECK(R->n_global == 6000 && R->n_users == 300 && R->n_items == 200, "np=%d: ratings shape %lld %d %d",
              k, (long long)R->n_global, R->n_users, R->n_items);
      int n = (int)R->n, *cn = malloc(k * sizeof(int)), *dn = malloc(k * sizeof(int));
      MPI_Gather(&n, 1, MPI_INT, cn, 1, MPI_INT, 0, c);
      int32_t *gu = NULL, *gi = NULL;
      double *gr = NULL;
      if (r == 0) {
        dn[0] = 0;
        for (int q = 1; q < k; q++) dn[q] = dn[q - 1] + cn[q - 1];
        gu = malloc(6000 * sizeof *gu);
        gi = malloc(6000 * sizeof *gi);
        gr = malloc(6000 * sizeof *gr);
      }
      MPI_Gatherv(R->user, n, MPI_INT32_T, gu, cn, dn, MPI_INT32_T, 0, c);
      MPI_Gatherv(R->item, n, MPI_INT32_T, gi, cn, dn, MPI_INT32_T, 0, c);
      MPI_Gatherv(R->r, n, MPI_DOUBLE, gr, cn, dn, MPI_DOUBLE, 0, c);
      if (r == 0) {
        if (k == 1) {
          rat1.u = gu;
          rat1.i = gi;
          rat1.r = gr;
          gu = gi = NULL;
          gr = NULL;
        } else {
          int bad = 0;
          for (int q = 0; q < 6000; q++) bad += gu[q] != rat1.u[q] || gi[q] != rat1.i[q] || gr[q] != rat1.r[q];
          T_CHECK(bad == 0, "np=%d: %d ratings differ from the 1-rank load", k, bad);
        }
      }
      free(gu);
      free(gi);
      free(gr);
      free(cn);
      free(dn);
      dpo_ratings_destroy(R);
    }
    MPI_Comm_free(&c);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* binary files written at every rank count, read back at every rank count */
  if (wr == 0) { /* truncated copy of the 2-rank file */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "head -c -5 '%s/a9a_2.bin' > '%s/trunc.bin'", tdir, tdir);
    T_CHECK(system(cmd) == 0, "cannot make truncated copy");
    write_dense(tp("norms.bin"), 1001, 37, 0); /* rows of 296 bytes: inside pages */
    write_dense(tp("nan.bin"), 1001, 37, 777);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 1; k <= wp && k <= 4; k++) {
    MPI_Comm c = dpo_t_subcomm(k);
    if (c == MPI_COMM_NULL) continue;
    int r;
    MPI_Comm_rank(c, &r);
    dpo_load_opts_t o;
    dpo_load_opts_default(&o);
    for (int w = 1; w <= wp && w <= 4; w++) {
      char bp[600], what[64];
      snprintf(bp, sizeof bp, "%s/a9a_%d.bin", tdir, w);
      dpo_shard_t *s = NULL;
      int st = dpo_shard_load(c, bp, &o, &s);
      T_CHECK(st == DPO_OK, "read bin written at %d ranks with %d ranks: %s", w, k, dpo_errmsg());
      if (st) continue;
      int64_t q = 32561 / k, rem = 32561 % k;
      T_CHECK(s->n == q + (r < rem), "bin rows not balanced: %lld at rank %d of %d", (long long)s->n, r, k);
      full_t g;
      gather(c, s, &g);
      snprintf(what, sizeof what, "bin w=%d np=%d", w, k);
      if (r == 0) same_full(&g, &ref, what);
      full_free(&g);
      dpo_shard_destroy(s);
    }
    expect_fail(c, tp("trunc.bin"), &o, DPO_EFORMAT, "truncated", k);
    check_norms(c, k, tp("norms.bin"));
    o.intercept = o.row_norms = 1; /* the nan found by the fused pass, its row named */
    expect_fail(c, tp("nan.bin"), &o, DPO_EFORMAT, "nan.bin: row 777: non-finite value", k);
    o.intercept = o.row_norms = 0;
    if (k == 4) expect_fail(c, tp("tiny_1.bin"), &o, DPO_ERANKS, "more ranks than rows", k);
    MPI_Comm_free(&c);
  }

  /* Fashion-MNIST test images (10000, 1000 per class), if installed: 1 vs 4 ranks */
  const char *fm = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  int have_fm = access(fm, R_OK) == 0;
  if (!have_fm && wr == 0) printf("test_data_ranks: %s not installed, IDX check skipped\n", fm);
  full_t fm1 = {0};
  for (int k = 1; have_fm && k <= wp && k <= 4; k += 3) {
    MPI_Comm c = dpo_t_subcomm(k);
    if (c == MPI_COMM_NULL) continue;
    int r;
    MPI_Comm_rank(c, &r);
    dpo_load_opts_t o;
    dpo_load_opts_default(&o);
    o.idx_class = 3;
    dpo_shard_t *s = NULL;
    int st = dpo_shard_load(c, fm, &o, &s);
    T_CHECK(st == DPO_OK, "np=%d: fashion-mnist: %s", k, dpo_errmsg());
    if (!st) {
      dpo_shard_stats_t ss;
      T_CHECK(dpo_shard_stats(c, s, &ss) == DPO_OK, "stats");
      T_CHECK(ss.n == 10000 && ss.d == 784 && ss.n_pos == 1000, "np=%d: n=%lld d=%d pos=%lld", k,
              (long long)ss.n, ss.d, (long long)ss.n_pos);
      T_CHECK(ss.l1_max <= 784.0, "pixels above 1");
      full_t g;
      gather(c, s, &g);
      if (r == 0) {
        if (k == 1) fm1 = g;
        else {
          same_full(&g, &fm1, "fashion-mnist np=4");
          full_free(&g);
        }
      }
      dpo_shard_destroy(s);
    }
    MPI_Comm_free(&c);
  }
  full_free(&fm1);

  full_free(&ref);
  full_free(&refd);
  full_free(&bin1);
  free(rat1.u);
  free(rat1.i);
  free(rat1.r);
  MPI_Barrier(MPI_COMM_WORLD);
  if (wr == 0 && tdir[0]) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tdir);
  }
  return dpo_t_finish("test_data_ranks");
}
