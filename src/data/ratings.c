/* Rating triplets "user item rating [timestamp]" (MovieLens .dat "::", .csv ",", tab or
 * spaces); byte-range split like the LIBSVM loader. */
#include "data/data_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dpo_ratings_destroy(dpo_ratings_t *r) {
  if (!r) return;
  free(r->user);
  free(r->item);
  free(r->r);
  free(r);
}

/* Cut the next field: it ends at whitespace, ',' or "::".  After it, one separator is
 * consumed ("::", ',' or whitespace, with whitespace allowed around ',' and "::").  Returns
 * the field ("" if empty), advancing *pp; *more tells whether anything follows. */
static char *dpo__next_field(char **pp, int *more) {
  char *p = *pp;
  while (*p == ' ' || *p == '\t') p++;
  char *f = p;
  while (*p && *p != ' ' && *p != '\t' && *p != ',' && !(p[0] == ':' && p[1] == ':')) p++;
  char *e = p;
  while (*p == ' ' || *p == '\t') p++;
  if (*p == ',') p++;
  else if (p[0] == ':' && p[1] == ':') p += 2;
  *e = '\0';
  while (*p == ' ' || *p == '\t') p++;
  *more = *p != '\0';
  *pp = p;
  return f;
}

static int dpo__parse_id(const char *f, int one_based, int32_t *id) {
  char *end;
  errno = 0;
  long long v = strtoll(f, &end, 10);
  if (end == f || *end != '\0' || errno) return -1;
  if (one_based) v -= 1;
  if (v < 0 || v >= INT32_MAX) return -2;
  *id = (int32_t)v;
  return 0;
}

int dpo_ratings_load(MPI_Comm comm, const char *path, int one_based, dpo_ratings_t **out) {
  int rank, size, st = DPO_OK, lr_open = 0;
  dpo__lr_t lr;
  dpo__perr_t e = {0};
  dpo__ivec_t us = {0}, it = {0};
  dpo__dvec_t rv = {0};
  dpo_ratings_t *R = NULL;
  int32_t maxid[2] = {-1, -1}, gmax[2];
  *out = NULL;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (!(R = calloc(1, sizeof *R))) st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  if (!st) {
    snprintf(R->source, sizeof R->source, "%s", path);
    st = dpo__lr_open(&lr, path, rank, size);
    if (!st) lr_open = 1;
  }
  e.code = st;
  static const char *const names[3] = {"user id", "item id", "rating"};
  while (e.code == DPO_OK) {
    char *line;
    int r = dpo__lr_next(&lr, &line);
    if (r < 0) {
      e.code = r;
      break;
    }
    if (r == 0) break;
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\0' || *p == '#') continue;
    char *f[4];
    int nf = 0, more = 1;
    while (more && nf < 4) f[nf++] = dpo__next_field(&p, &more);
    if (more) {
      dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "more than 4 fields (user item rating [timestamp])");
      break;
    }
    if (nf < 3) {
      dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "missing field: %d of user, item, rating", nf);
      break;
    }
    int32_t ids[2];
    for (int k = 0; k < 2 && e.code == DPO_OK; k++) {
      int rc = dpo__parse_id(f[k], one_based, &ids[k]);
      if (rc == -1) dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "bad %s '%.40s'", names[k], f[k]);
      else if (rc == -2)
        dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "%s %s out of range%s", names[k], f[k],
                      one_based ? " (ids are 1-based)" : "");
    }
    if (e.code) break;
    char *end;
    double v = strtod(f[2], &end);
    if (end == f[2] || *end != '\0') {
      dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "bad rating '%.40s'", f[2]);
      break;
    }
    if (!isfinite(v)) {
      dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "non-finite rating (NaN/Inf) '%.40s'", f[2]);
      break;
    }
    if (nf == 4) {
      (void)strtod(f[3], &end);
      if (end == f[3] || *end != '\0') {
        dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "bad timestamp '%.40s'", f[3]);
        break;
      }
    }
    if (dpo__ivec_push(&us, ids[0]) || dpo__ivec_push(&it, ids[1]) || dpo__dvec_push(&rv, v)) {
      e.code = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
      break;
    }
    if (ids[0] > maxid[0]) maxid[0] = ids[0];
    if (ids[1] > maxid[1]) maxid[1] = ids[1];
  }
  st = dpo__agree_line(comm, path, &e, lr_open ? lr.nlines : 0);
  if (lr_open) dpo__lr_close(&lr);
  if (st) goto fail;
  int64_t n = (int64_t)rv.n, tot = 0, before = 0;
  if (MPI_Allreduce(&n, &tot, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Allreduce(maxid, gmax, 2, MPI_INT32_T, MPI_MAX, comm) != MPI_SUCCESS ||
      MPI_Exscan(&n, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
    st = dpo_err(DPO_EMPI, "%s: reductions failed", path);
  else if (tot == 0) st = dpo_err(DPO_EFORMAT, "%s: empty file: no ratings", path);
  else if (tot < size)
    st = dpo_err(DPO_ERANKS, "%s: %lld ratings for %d ranks: more ranks than ratings", path, (long long)tot, size);
  st = dpo_agree(comm, st);
  if (st) goto fail;
  R->n = n;
  R->n_global = tot;
  R->n_users = gmax[0] + 1;
  R->n_items = gmax[1] + 1;
  R->user = us.v ? us.v : malloc(sizeof(int32_t));
  R->item = it.v ? it.v : malloc(sizeof(int32_t));
  R->r = rv.v ? rv.v : malloc(sizeof(double));
  us.v = it.v = NULL;
  rv.v = NULL;
  st = dpo_agree(comm, (!R->user || !R->item || !R->r) ? dpo_err(DPO_ENOMEM, "%s: out of memory", path) : DPO_OK);
  if (st) goto fail;
  *out = R;
  return DPO_OK;
fail:
  free(us.v);
  free(it.v);
  free(rv.v);
  dpo_ratings_destroy(R);
  return st;
}
