/* Unit tests of the data room on MPI_COMM_SELF: exact values from small files written here,
 * every malformed case (status, file, global line, reason), generator bounds and counts.
 * Criterion forks per test; each test initializes MPI itself in its fixture (singleton). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dpopt/data.h"
#include "dpopt/status.h"

static char tdir[256];

static void setup(void) {
  MPI_Init(NULL, NULL);
  snprintf(tdir, sizeof tdir, "/tmp/dpo_test_data_XXXXXX");
  cr_assert_not_null(mkdtemp(tdir));
}
static void teardown(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tdir);
  MPI_Finalize();
}

static const char *tpath(const char *name) {
  static char p[8][512];
  static int k = 0;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", tdir, name);
  return p[k];
}

static const char *wfile(const char *name, const char *text) {
  const char *p = tpath(name);
  FILE *f = fopen(p, "wb");
  cr_assert_not_null(f);
  fwrite(text, 1, strlen(text), f);
  fclose(f);
  return p;
}

static dpo_shard_t *load_ok(const char *path, const dpo_load_opts_t *o) {
  dpo_shard_t *s = NULL;
  int st = dpo_shard_load(MPI_COMM_SELF, path, o, &s);
  cr_assert_eq(st, DPO_OK, "load %s: %s: %s", path, dpo_strerror(st), dpo_errmsg());
  cr_assert_not_null(s);
  cr_assert_eq(s->n, s->n_global);
  cr_assert_eq(s->row0, 0);
  return s;
}

/* The load must fail with `code` and a detail "path:line: ...reason...". */
static void expect_err(const char *path, const dpo_load_opts_t *o, int code, long line,
                       const char *reason) {
  dpo_shard_t *s = NULL;
  dpo_errclear();
  int st = dpo_shard_load(MPI_COMM_SELF, path, o, &s);
  cr_assert_eq(st, code, "%s: got %s (%s), want %s", path, dpo_strerror(st), dpo_errmsg(),
               dpo_strerror(code));
  cr_assert_null(s);
  char want[600];
  if (line > 0) snprintf(want, sizeof want, "%s:%ld: ", path, line);
  else snprintf(want, sizeof want, "%s", path);
  cr_assert_not_null(strstr(dpo_errmsg(), want), "message '%s' lacks '%s'", dpo_errmsg(), want);
  cr_assert_not_null(strstr(dpo_errmsg(), reason), "message '%s' lacks '%s'", dpo_errmsg(), reason);
}

static const char *SMALL = "# a comment\n"
                           "+1 1:0.5 3:-2\n"
                           "\n"
                           "0 2:1e-3 4:4\n"
                           "-1 \n"
                           "1 4:7 # trailing comment\n";

Test(data, libsvm_csr_exact, .init = setup, .fini = teardown) {
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  dpo_shard_t *s = load_ok(wfile("small.svm", SMALL), &o);
  cr_assert_eq(s->n, 4);
  cr_assert_eq(s->d, 4);
  cr_assert_eq(s->sparse, 1);
  const double y[] = {1, -1, -1, 1}, val[] = {0.5, -2, 1e-3, 4, 7};
  const int64_t rp[] = {0, 2, 4, 4, 5};
  const int32_t ci[] = {0, 2, 1, 3, 3};
  for (int i = 0; i < 4; i++) cr_assert_eq(s->y[i], y[i]);
  for (int i = 0; i < 5; i++) cr_assert_eq(s->rowptr[i], rp[i]);
  for (int k = 0; k < 5; k++) {
    cr_assert_eq(s->colind[k], ci[k]);
    cr_assert_eq(s->val[k], val[k]);
  }
  double l1[4], l2[4];
  dpo_shard_row_norms(s, l1, l2);
  cr_assert_float_eq(l1[0], 2.5, 1e-15);
  cr_assert_float_eq(l2[0], sqrt(4.25), 1e-15);
  cr_assert_float_eq(l1[1], 4.001, 1e-15);
  cr_assert_eq(l1[2], 0.0);
  cr_assert_eq(l2[3], 7.0);
  dpo_shard_stats_t st;
  cr_assert_eq(dpo_shard_stats(MPI_COMM_SELF, s, &st), DPO_OK);
  cr_assert_eq(st.n, 4);
  cr_assert_eq(st.nnz, 5);
  cr_assert_eq(st.n_pos, 2);
  cr_assert_eq(st.n_neg, 2);
  cr_assert_eq(st.l1_max, 7.0);
  cr_assert_float_eq(st.l1_mean, (2.5 + 4.001 + 0 + 7) / 4, 1e-14);
  cr_assert_float_eq(st.l2_mean, (sqrt(4.25) + sqrt(16 + 1e-6) + 0 + 7) / 4, 1e-14);
  cr_assert_eq(st.y_min, -1.0);
  cr_assert_eq(st.y_max, 1.0);
  dpo_shard_destroy(s);
}

Test(data, libsvm_dense_declared_d, .init = setup, .fini = teardown) {
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  o.dense = 1;
  o.d = 6;
  dpo_shard_t *s = load_ok(wfile("small.svm", SMALL), &o);
  cr_assert_eq(s->sparse, 0);
  cr_assert_eq(s->d, 6);
  double X[4][6] = {{0.5, 0, -2, 0, 0, 0}, {0, 1e-3, 0, 4, 0, 0}, {0}, {0, 0, 0, 7, 0, 0}};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) cr_assert_eq(s->X[i * 6 + j], X[i][j], "X[%d][%d]", i, j);
  dpo_shard_destroy(s);
}

Test(data, libsvm_real_crlf_no_final_newline, .init = setup, .fini = teardown) {
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  o.labels = DPO_LABELS_REAL;
  dpo_shard_t *s = load_ok(wfile("r.txt", "2.5 1:1\r\n-0.25 2:3\r\n7 3:1"), &o);
  cr_assert_eq(s->n, 3);
  cr_assert_eq(s->d, 3);
  cr_assert_eq(s->y[0], 2.5);
  cr_assert_eq(s->y[1], -0.25);
  cr_assert_eq(s->y[2], 7.0);
  cr_assert_eq(s->val[1], 3.0);
  cr_assert_eq(s->colind[2], 2);
  dpo_shard_destroy(s);
}

Test(data, csv_header_and_plain, .init = setup, .fini = teardown) {
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  dpo_shard_t *s = load_ok(wfile("h.csv", "y, a, b\n1, 0.5, 2\n0,3,-1\n"), &o);
  cr_assert_eq(s->n, 2);
  cr_assert_eq(s->d, 2);
  cr_assert_eq(s->sparse, 0);
  const double X[] = {0.5, 2, 3, -1};
  for (int k = 0; k < 4; k++) cr_assert_eq(s->X[k], X[k]);
  cr_assert_eq(s->y[0], 1.0);
  cr_assert_eq(s->y[1], -1.0);
  dpo_shard_destroy(s);
  s = load_ok(wfile("p.csv", "-1,1,2,3\n1,4,5,6\n"), &o);
  cr_assert_eq(s->n, 2);
  cr_assert_eq(s->d, 3);
  cr_assert_eq(s->X[5], 6.0);
  cr_assert_eq(s->y[0], -1.0);
  dpo_shard_destroy(s);
}

Test(data, libsvm_errors, .init = setup, .fini = teardown) {
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  expect_err(wfile("a", "1 1:1\n-1 a:2\n"), &o, DPO_EFORMAT, 2, "bad token");
  expect_err(wfile("b", "1 1:1\n1 2:1\n-1 3 4:1\n"), &o, DPO_EFORMAT, 3, "missing ':'");
  expect_err(wfile("c", "1 1:nan\n"), &o, DPO_EFORMAT, 1, "non-finite");
  expect_err(wfile("c2", "1 1:1\n1 2:-inf\n"), &o, DPO_EFORMAT, 2, "non-finite");
  expect_err(wfile("e", "1 0:1\n"), &o, DPO_EFORMAT, 1, "< 1");
  expect_err(wfile("f", "1 1:1\n2 1:1\n"), &o, DPO_EFORMAT, 2, "unknown label");
  expect_err(wfile("g", "0.5 1:1\n"), &o, DPO_EFORMAT, 1, "unknown label");
  expect_err(wfile("g2", "1 1:1\nyes 1:1\n"), &o, DPO_EFORMAT, 2, "bad label");
  expect_err(wfile("h", "1 3:1 2:1\n"), &o, DPO_EFORMAT, 1, "not increasing");
  expect_err(wfile("i", "1 2:1 2:1\n"), &o, DPO_EFORMAT, 1, "duplicate");
  expect_err(wfile("j", "1 2:1x\n"), &o, DPO_EFORMAT, 1, "bad value");
  /* blank and comment lines count in the line number */
  expect_err(wfile("k", "# c\n\n1 1:1\n\n1 1:x\n"), &o, DPO_EFORMAT, 5, "bad value");
  expect_err(wfile("empty", ""), &o, DPO_EFORMAT, 0, "empty");
  expect_err(wfile("comments", "# only\n\n# comments\n"), &o, DPO_EFORMAT, 0, "empty");
  expect_err(tpath("no_such_file"), &o, DPO_EIO, 0, "cannot open");
  o.d = 3;
  expect_err(wfile("d", "1 1:1\n1 3:1\n1 2:1 4:1\n"), &o, DPO_EFORMAT, 3, "> declared dimension 3");
  o.d = 0;
  o.labels = DPO_LABELS_REAL;
  expect_err(wfile("l", "1 1:1\nnan 1:1\n"), &o, DPO_EFORMAT, 2, "non-finite label");
}

Test(data, csv_errors, .init = setup, .fini = teardown) {
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  expect_err(wfile("a.csv", "1,2,3\n1,2\n"), &o, DPO_EFORMAT, 2, "2 fields, expected 3");
  expect_err(wfile("b.csv", "1,2\n1,inf\n"), &o, DPO_EFORMAT, 2, "non-finite");
  expect_err(wfile("c.csv", "1,2\n1,\n"), &o, DPO_EFORMAT, 2, "empty field 2");
  expect_err(wfile("d.csv", "x,y\n1,2\n3,1\n"), &o, DPO_EFORMAT, 3, "unknown label");
  expect_err(wfile("e.csv", "1,2\n1,abc\n"), &o, DPO_EFORMAT, 2, "bad number");
  /* a non-number first field is only a header on the first line */
  expect_err(wfile("f.csv", "1,2\nlabel,abc\n"), &o, DPO_EFORMAT, 2, "bad label");
  o.d = 3;
  expect_err(wfile("g.csv", "1,2,3\n"), &o, DPO_EFORMAT, 1, "declared dimension 3");
}

static void same_shard(const dpo_shard_t *a, const dpo_shard_t *b) {
  cr_assert_eq(a->n, b->n);
  cr_assert_eq(a->d, b->d);
  cr_assert_eq(a->sparse, b->sparse);
  cr_assert_eq(a->labels, b->labels);
  for (int64_t i = 0; i < a->n; i++) cr_assert_eq(a->y[i], b->y[i]);
  if (a->sparse) {
    for (int64_t i = 0; i <= a->n; i++) cr_assert_eq(a->rowptr[i], b->rowptr[i]);
    for (int64_t k = 0; k < a->rowptr[a->n]; k++) {
      cr_assert_eq(a->colind[k], b->colind[k]);
      cr_assert_eq(a->val[k], b->val[k]);
    }
  } else {
    for (int64_t k = 0; k < a->n * a->d; k++) cr_assert_eq(a->X[k], b->X[k]);
  }
}

Test(data, bin_roundtrip_and_truncation, .init = setup, .fini = teardown) {
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  for (int dense = 0; dense <= 1; dense++) {
    o.dense = dense;
    dpo_shard_t *a = load_ok(wfile("small.svm", SMALL), &o), *b;
    const char *bp = tpath(dense ? "d.bin" : "s.bin");
    cr_assert_eq(dpo_shard_write_bin(MPI_COMM_SELF, a, bp), DPO_OK, "%s", dpo_errmsg());
    /* size from the documented layout */
    FILE *f = fopen(bp, "rb");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fclose(f);
    long want = 40 + 8 * 4 + (dense ? 8 * 4 * 4 : 8 * 5 + 12 * 5);
    cr_assert_eq(sz, want);
    dpo_load_opts_t ob;
    dpo_load_opts_default(&ob); /* AUTO must find the magic */
    b = load_ok(bp, &ob);
    same_shard(a, b);
    dpo_shard_destroy(b);
    cr_assert_eq(truncate(bp, sz - 3), 0);
    expect_err(bp, &ob, DPO_EFORMAT, 0, "truncated");
    dpo_shard_destroy(a);
  }
}

/* The dense binary block is read in 1 MiB chunks checked in cache (bin.c): a file of several
 * chunks whose rows straddle the chunk borders loads bit-identical to the text it was written
 * from, and a non-finite value in a later chunk is refused naming its row. */
Test(data, bin_dense_chunks_bit_identical, .init = setup, .fini = teardown) {
  const char *tp = tpath("big.svm");
  FILE *f = fopen(tp, "wb");
  cr_assert_not_null(f);
  const int n = 40000, d = 7; /* 280000 values: three chunks, rows across the borders */
  for (int i = 0; i < n; i++) {
    fprintf(f, "%d", i % 3 ? 1 : -1);
    for (int j = 0; j < d; j++) fprintf(f, " %d:%.17g", j + 1, sin(1.0 + i * 7.0 + j) / (1 + j));
    fputc('\n', f);
  }
  fclose(f);
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  o.dense = 1;
  dpo_shard_t *a = load_ok(tp, &o), *b;
  const char *bp = tpath("big.bin");
  cr_assert_eq(dpo_shard_write_bin(MPI_COMM_SELF, a, bp), DPO_OK, "%s", dpo_errmsg());
  dpo_load_opts_t ob;
  dpo_load_opts_default(&ob);
  /* read, then mapped in place (its rows start 552 bytes into a page: 40 + 8 n) */
  for (ob.map = 0; ob.map <= 1; ob.map++) {
    b = load_ok(bp, &ob);
    cr_assert_eq(b->n, n);
    cr_assert_eq(b->d, d);
    cr_assert_eq(b->map != NULL, ob.map, "map %d: mapped %d", ob.map, b->map != NULL);
    cr_assert_eq(memcmp(a->y, b->y, (size_t)n * 8), 0, "labels differ");
    cr_assert_eq(memcmp(a->X, b->X, (size_t)n * d * 8), 0, "map %d: values differ", ob.map);
    dpo_shard_destroy(b);
  }
  /* a NaN at row 37451 (1-based), value 3 of the row: in the third chunk; an infinity at
   * row 2 (the first chunk) once the NaN is found */
  const double bad[2] = {NAN, -INFINITY};
  const off_t at[2] = {(off_t)37450 * d + 2, (off_t)1 * d + 6};
  const char *want[2] = {"row 37451: non-finite value", "row 2: non-finite value"};
  int fd = open(bp, O_WRONLY);
  cr_assert(fd >= 0);
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(pwrite(fd, &bad[k], 8, 40 + 8 * (off_t)n + 8 * at[k]), 8);
    for (ob.map = 0; ob.map <= 1; ob.map++) {
      dpo_shard_t *c = NULL;
      cr_assert_eq(dpo_shard_load(MPI_COMM_SELF, bp, &ob, &c), DPO_EFORMAT);
      cr_assert_null(c);
      cr_assert_not_null(strstr(dpo_errmsg(), want[k]), "map %d: %s", ob.map, dpo_errmsg());
    }
  }
  close(fd);
  dpo_shard_destroy(a);
}

/* A mapped shard (dpo_load_opts_t.map) is the file's pages, private: writing its rows
 * changes neither the file nor a second load; the bias column appended afterwards copies the
 * rows out of the mapping (the same shard as the bias read with the rows); with the bias
 * asked for at load the layouts differ and the rows are read, not mapped.  Values at the
 * edges of the finite range load: the largest double, the smallest subnormal, -0. */
Test(data, bin_mapped_private, .init = setup, .fini = teardown) {
  const int n = 1000, d = 5;
  dpo_shard_t a = {.n = n, .n_global = n, .d = d, .labels = DPO_LABELS_REAL};
  a.X = malloc((size_t)n * d * 8);
  a.y = malloc((size_t)n * 8);
  for (int i = 0; i < n; i++) {
    a.y[i] = i * 0.5 - 7;
    for (int j = 0; j < d; j++) a.X[i * d + j] = cos(i * 3.0 + j);
  }
  a.X[3] = 1.7976931348623157e308, a.X[4] = -4.9406564584124654e-324, a.X[7] = -0.0;
  const char *bp = tpath("m.bin");
  cr_assert_eq(dpo_shard_write_bin(MPI_COMM_SELF, &a, bp), DPO_OK, "%s", dpo_errmsg());
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  o.map = 1;
  dpo_shard_t *m = load_ok(bp, &o), *m2;
  cr_assert_not_null(m->map);
  cr_assert_eq(memcmp(a.X, m->X, (size_t)n * d * 8), 0, "mapped values differ");
  for (int k = 0; k < n * d; k++) m->X[k] = 42.0; /* copy-on-write: the process's pages */
  m2 = load_ok(bp, &o);
  cr_assert_eq(memcmp(a.X, m2->X, (size_t)n * d * 8), 0, "a write reached the file");
  dpo_shard_destroy(m);
  /* the bias column appended to a mapped shard = read with the rows */
  cr_assert_eq(dpo_shard_add_intercept(m2), DPO_OK, "%s", dpo_errmsg());
  cr_assert_null(m2->map);
  o.intercept = 1;
  dpo_shard_t *r = load_ok(bp, &o);
  cr_assert_null(r->map, "the bias asked for at load: read, not mapped");
  cr_assert_eq(r->d, d + 1);
  cr_assert_eq(m2->d, d + 1);
  cr_assert_eq(memcmp(r->X, m2->X, (size_t)n * (d + 1) * 8), 0, "bias column differs");
  cr_assert_eq(r->X[(size_t)(n - 1) * (d + 1) + d], 1.0);
  dpo_shard_destroy(r);
  dpo_shard_destroy(m2);
  free(a.X);
  free(a.y);
}

static void write_idx(const char *path, int gz, const unsigned char *hdr, size_t hl,
                      const unsigned char *body, size_t bl) {
  gzFile g = gzopen(path, gz ? "wb" : "wbT");
  cr_assert_not_null(g);
  gzwrite(g, hdr, (unsigned)hl);
  gzwrite(g, body, (unsigned)bl);
  gzclose(g);
}

Test(data, idx_plain_and_gz, .init = setup, .fini = teardown) {
  /* 5 images of 2 x 3 pixels, labels 0..4 */
  unsigned char hi[16] = {0, 0, 8, 3, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 3};
  unsigned char hl[8] = {0, 0, 8, 1, 0, 0, 0, 5};
  unsigned char px[30], lab[5] = {0, 1, 2, 1, 4};
  for (int k = 0; k < 30; k++) px[k] = (unsigned char)(k * 8);
  for (int gz = 0; gz <= 1; gz++) {
    const char *ip = tpath(gz ? "x-images-idx3-ubyte.gz" : "x-images-idx3-ubyte");
    const char *lp = tpath(gz ? "x-labels-idx1-ubyte.gz" : "x-labels-idx1-ubyte");
    write_idx(ip, gz, hi, 16, px, 30);
    write_idx(lp, gz, hl, 8, lab, 5);
    dpo_load_opts_t o;
    dpo_load_opts_default(&o);
    o.idx_class = 1;
    dpo_shard_t *s = load_ok(ip, &o);
    cr_assert_eq(s->n, 5);
    cr_assert_eq(s->d, 6);
    for (int k = 0; k < 30; k++) cr_assert_float_eq(s->X[k], k * 8 / 255.0, 1e-15);
    const double y[] = {-1, 1, -1, 1, -1};
    for (int i = 0; i < 5; i++) cr_assert_eq(s->y[i], y[i]);
    dpo_shard_destroy(s);
    /* truncated image file */
    write_idx(ip, gz, hi, 16, px, 25);
    expect_err(ip, &o, DPO_EFORMAT, 0, "truncated");
  }
}

Test(data, ratings_formats_and_errors, .init = setup, .fini = teardown) {
  const char *files[] = {"1::2::5::978300760\n3::1::3.5::0\n", "1,2,5\n3,1,3.5,0\n",
                         "1\t2\t5\t9\n3\t1\t3.5\n", "# c\n1 2 5\n\n3  1  3.5 17\n"};
  for (int t = 0; t < 4; t++) {
    dpo_ratings_t *r = NULL;
    int st = dpo_ratings_load(MPI_COMM_SELF, wfile("r.dat", files[t]), 1, &r);
    cr_assert_eq(st, DPO_OK, "%d: %s", t, dpo_errmsg());
    cr_assert_eq(r->n, 2);
    cr_assert_eq(r->n_users, 3);
    cr_assert_eq(r->n_items, 2);
    cr_assert_eq(r->user[0], 0);
    cr_assert_eq(r->item[0], 1);
    cr_assert_eq(r->r[0], 5.0);
    cr_assert_eq(r->user[1], 2);
    cr_assert_eq(r->item[1], 0);
    cr_assert_eq(r->r[1], 3.5);
    dpo_ratings_destroy(r);
  }
  dpo_ratings_t *r = NULL;
  cr_assert_eq(dpo_ratings_load(MPI_COMM_SELF, wfile("z.dat", "0 0 1\n2 5 4\n"), 0, &r), DPO_OK);
  cr_assert_eq(r->n_users, 3);
  cr_assert_eq(r->n_items, 6);
  dpo_ratings_destroy(r);
  struct { const char *text; int one; long line; const char *why; } bad[] = {
      {"1::2::5\n1::3::nan\n", 1, 2, "non-finite rating"},
      {"1::2::5\n\n1::2\n", 1, 3, "missing field"},
      {"1::2::5\n0::2::3\n", 1, 2, "user id 0 out of range"},
      {"1,x,5\n", 1, 1, "bad item id"},
      {"1,2,,5\n", 1, 1, "bad rating"},
      {"1 2 5 7 8\n", 1, 1, "more than 4 fields"},
      {"1 2 5 t\n", 1, 1, "bad timestamp"},
  };
  for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
    const char *p = wfile("bad.dat", bad[t].text);
    r = NULL;
    int st = dpo_ratings_load(MPI_COMM_SELF, p, bad[t].one, &r);
    cr_assert_eq(st, DPO_EFORMAT, "case %zu: %s", t, dpo_errmsg());
    cr_assert_null(r);
    char want[600];
    snprintf(want, sizeof want, "%s:%ld: ", p, bad[t].line);
    cr_assert_not_null(strstr(dpo_errmsg(), want), "case %zu: '%s' lacks '%s'", t, dpo_errmsg(), want);
    cr_assert_not_null(strstr(dpo_errmsg(), bad[t].why), "case %zu: '%s' lacks '%s'", t, dpo_errmsg(), bad[t].why);
  }
  cr_assert_eq(dpo_ratings_load(MPI_COMM_SELF, wfile("e.dat", "\n# x\n"), 1, &r), DPO_EFORMAT);
  cr_assert_not_null(strstr(dpo_errmsg(), "empty"));
}

static int same_file(const char *a, const char *b) {
  FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
  int same = f && g;
  while (same) {
    int x = fgetc(f), y = fgetc(g);
    if (x != y) same = 0;
    if (x == EOF || y == EOF) break;
  }
  if (f) fclose(f);
  if (g) fclose(g);
  return same;
}

Test(data, gen_logistic_bounds, .init = setup, .fini = teardown) {
  const char *p = tpath("log.svm"), *q = tpath("log2.svm"), *p3 = tpath("log3.svm"), *pb = tpath("log.bin");
  cr_assert_eq(dpo_gen_logistic(p, 3000, 20, 20.0, 7), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_gen_logistic(q, 3000, 20, 20.0, 7), DPO_OK);
  cr_assert_eq(dpo_gen_logistic(p3, 3000, 20, 20.0, 8), DPO_OK);
  cr_assert_eq(dpo_gen_logistic(pb, 3000, 20, 20.0, 7), DPO_OK);
  cr_assert(same_file(p, q), "same seed must give the same file");
  cr_assert(!same_file(p, p3), "another seed must give another file");
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  dpo_shard_t *s = load_ok(p, &o), *b = load_ok(pb, &o);
  cr_assert_eq(s->n, 3000);
  cr_assert_eq(s->d, 20);
  cr_assert_eq(s->rowptr[3000], 3000 * 20, "dense rows written with all d features");
  cr_assert_eq(b->sparse, 0);
  cr_assert_eq(b->n, 3000);
  double l1[3000], l2[3000], big = 0;
  dpo_shard_row_norms(s, l1, l2);
  int npos = 0;
  for (int i = 0; i < 3000; i++) {
    cr_assert(l1[i] <= 20.0, "row %d: L1 %.17g > 20", i, l1[i]);
    if (l1[i] > 10) big++;
    npos += s->y[i] > 0;
    cr_assert_eq(s->y[i], b->y[i]);
  }
  /* radius uniform in (0, 20): about half the rows have L1 > 10 */
  cr_assert(big > 1300 && big < 1700, "%g rows with L1 > 10", big);
  cr_assert(npos > 0 && npos < 3000);
  /* text (9 digits) and binary come from the same draws */
  for (int k = 0; k < 3000 * 20; k++) cr_assert(fabs(s->val[k] - b->X[k]) <= 1e-8 * fabs(b->X[k]) + 1e-300);
  dpo_shard_destroy(s);
  dpo_shard_destroy(b);
}

/* gen logistic --sign01 (001 Sec. 5 as the authors ran it): entries in [0,1] (so the declared
 * public bound ||u||_2 <= sqrt(d) holds), labels = sign(u'w) for the returned w, and not all
 * rows the same label; text and binary agree. */
Test(data, gen_logistic_sign01, .init = setup, .fini = teardown) {
  const char *p = tpath("s01.svm"), *pb = tpath("s01.bin");
  double w[20], wb[20];
  cr_assert_eq(dpo_gen_logistic_ex(p, 2000, 20, 20.0, 3, 1, w), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_gen_logistic_ex(pb, 2000, 20, 20.0, 3, 1, wb), DPO_OK);
  cr_assert_eq(memcmp(w, wb, sizeof w), 0);
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  dpo_shard_t *s = load_ok(p, &o), *b = load_ok(pb, &o);
  cr_assert_eq(b->n, 2000);
  cr_assert_eq(b->d, 20);
  double l1[2000], l2[2000], mean = 0;
  dpo_shard_row_norms(s, l1, l2);
  int npos = 0;
  for (int i = 0; i < 2000; i++) {
    double t = 0;
    for (int j = 0; j < 20; j++) {
      double v = b->X[i * 20 + j];
      cr_assert(v >= 0 && v <= 1, "row %d col %d: %g outside [0,1]", i, j, v);
      cr_assert(s->val[i * 20 + j] >= 0 && s->val[i * 20 + j] <= 1);
      t += v * w[j];
      mean += v;
    }
    cr_assert(l2[i] <= sqrt(20.0), "row %d: ||u||_2 = %.17g > sqrt(d)", i, l2[i]);
    cr_assert_eq(b->y[i], t > 0 ? 1.0 : -1.0, "row %d: label %g, u'w = %g", i, b->y[i], t);
    cr_assert_eq(s->y[i], b->y[i]);
    npos += b->y[i] > 0;
  }
  /* uniform entries: mean 1/2 */
  mean /= 2000 * 20;
  cr_assert(mean > 0.49 && mean < 0.51, "mean entry %g", mean);
  cr_assert(npos > 0 && npos < 2000);
  dpo_shard_destroy(s);
  dpo_shard_destroy(b);
}

Test(data, gen_ridge_bounds, .init = setup, .fini = teardown) {
  const char *p = tpath("ridge.bin");
  cr_assert_eq(dpo_gen_ridge(p, 2000, 7, 3.0, 0.0, 11), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(dpo_gen_ridge(tpath("ridge.svm"), 2000, 7, 3.0, 0.0, 11), DPO_OK);
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  dpo_shard_t *s = load_ok(p, &o);
  cr_assert_eq(s->labels, DPO_LABELS_REAL);
  cr_assert_eq(s->n, 2000);
  cr_assert_eq(s->d, 7);
  double l1[2000], l2[2000];
  dpo_shard_row_norms(s, l1, l2);
  for (int i = 0; i < 2000; i++) cr_assert(l2[i] <= 3.0, "row %d: L2 %.17g", i, l2[i]);
  /* noise 0: y is exactly linear in u -> least squares on 7 rows recovers it; check the
   * residual of x fitted by normal equations (Cholesky, d = 7) is at rounding level */
  double A[49] = {0}, r[7] = {0};
  for (int i = 0; i < 2000; i++)
    for (int j = 0; j < 7; j++) {
      r[j] += s->X[i * 7 + j] * s->y[i];
      for (int k = 0; k < 7; k++) A[j * 7 + k] += s->X[i * 7 + j] * s->X[i * 7 + k];
    }
  for (int j = 0; j < 7; j++) { /* Gaussian elimination (SPD, no pivoting needed) */
    for (int i = j + 1; i < 7; i++) {
      double m = A[i * 7 + j] / A[j * 7 + j];
      for (int k = j; k < 7; k++) A[i * 7 + k] -= m * A[j * 7 + k];
      r[i] -= m * r[j];
    }
  }
  double x[7];
  for (int j = 6; j >= 0; j--) {
    double t = r[j];
    for (int k = j + 1; k < 7; k++) t -= A[j * 7 + k] * x[k];
    x[j] = t / A[j * 7 + j];
  }
  double res = 0;
  for (int i = 0; i < 2000; i++) {
    double t = s->y[i];
    for (int j = 0; j < 7; j++) t -= s->X[i * 7 + j] * x[j];
    res = fmax(res, fabs(t));
  }
  cr_assert(res < 1e-9, "noise-free ridge data not linear: residual %g", res);
  dpo_shard_destroy(s);
  o.labels = DPO_LABELS_REAL;
  s = load_ok(tpath("ridge.svm"), &o);
  dpo_shard_row_norms(s, l1, l2);
  for (int i = 0; i < 2000; i++) cr_assert(l2[i] <= 3.0);
  dpo_shard_destroy(s);
}

/* Parse the generated file independently and check counts, coverage and uniqueness. */
static void check_ratings_file(const char *p, int K, int N, long R) {
  FILE *f = fopen(p, "r");
  cr_assert_not_null(f);
  unsigned char *seen = calloc((size_t)K * N, 1);
  int *du = calloc(K, sizeof(int)), *di = calloc(N, sizeof(int));
  long cnt = 0;
  int u, i, r;
  while (fscanf(f, "%d::%d::%d\n", &u, &i, &r) == 3) {
    cr_assert(u >= 1 && u <= K && i >= 1 && i <= N, "ids %d %d", u, i);
    cr_assert(r >= 1 && r <= 5, "rating %d", r);
    cr_assert_eq(seen[(size_t)(u - 1) * N + (i - 1)], 0, "duplicate pair %d %d", u, i);
    seen[(size_t)(u - 1) * N + (i - 1)] = 1;
    du[u - 1]++;
    di[i - 1]++;
    cnt++;
  }
  cr_assert(feof(f), "unparsed text after %ld lines", cnt);
  fclose(f);
  cr_assert_eq(cnt, R);
  int maxdu = 0;
  for (int k = 0; k < K; k++) {
    cr_assert(du[k] >= 1, "user %d has no rating", k + 1);
    if (du[k] > maxdu) maxdu = du[k];
  }
  for (int k = 0; k < N; k++) cr_assert(di[k] >= 1, "item %d has no rating", k + 1);
  if (R > 4L * K && R < (long)K * N / 2) cr_assert(maxdu > 3 * R / K, "degrees not heavy-tailed: max %d", maxdu);
  free(seen);
  free(du);
  free(di);
}

Test(data, gen_ratings_counts, .init = setup, .fini = teardown) {
  const char *p = tpath("r.dat");
  cr_assert_eq(dpo_gen_ratings(p, 600, 400, 30000, 5, 3), DPO_OK, "%s", dpo_errmsg());
  check_ratings_file(p, 600, 400, 30000);
  cr_assert_eq(dpo_gen_ratings(tpath("r2.dat"), 600, 400, 30000, 5, 3), DPO_OK);
  cr_assert(same_file(p, tpath("r2.dat")));
  dpo_ratings_t *r = NULL;
  cr_assert_eq(dpo_ratings_load(MPI_COMM_SELF, p, 1, &r), DPO_OK, "%s", dpo_errmsg());
  cr_assert_eq(r->n, 30000);
  cr_assert_eq(r->n_users, 600);
  cr_assert_eq(r->n_items, 400);
  double mean = 0;
  for (int64_t k = 0; k < r->n; k++) mean += r->r[k] / r->n;
  cr_assert(mean > 2.8 && mean < 4.2, "mean rating %g", mean);
  dpo_ratings_destroy(r);
  /* extremes: every pair once; the minimum count; more items than users */
  cr_assert_eq(dpo_gen_ratings(p, 20, 10, 200, 2, 1), DPO_OK);
  check_ratings_file(p, 20, 10, 200);
  cr_assert_eq(dpo_gen_ratings(p, 50, 30, 50, 2, 1), DPO_OK);
  check_ratings_file(p, 50, 30, 50);
  cr_assert_eq(dpo_gen_ratings(p, 30, 500, 2000, 3, 1), DPO_OK);
  check_ratings_file(p, 30, 500, 2000);
  cr_assert_eq(dpo_gen_ratings(p, 30, 500, 400, 3, 1), DPO_EINVAL);
}

Test(data, lines_longer_than_the_read_block, .init = setup, .fini = teardown) {
  /* 3 rows, the middle one ~3 MB (the reader's block is 1 MiB): buffer growth */
  const char *p = tpath("long.svm");
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f);
  fprintf(f, "1 1:1\n-1");
  for (int j = 1; j <= 300000; j++) fprintf(f, " %d:%d", j, j % 7 + 1);
  fprintf(f, "\n1 300001:2.5\n");
  fclose(f);
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  dpo_shard_t *s = load_ok(p, &o);
  cr_assert_eq(s->n, 3);
  cr_assert_eq(s->d, 300001);
  cr_assert_eq(s->rowptr[1], 1);
  cr_assert_eq(s->rowptr[2], 300001);
  cr_assert_eq(s->rowptr[3], 300002);
  for (int j = 1; j <= 300000; j++) {
    cr_assert_eq(s->colind[j], j - 1);
    cr_assert_eq(s->val[j], (double)(j % 7 + 1));
  }
  cr_assert_eq(s->val[300001], 2.5);
  cr_assert_eq(s->y[1], -1.0);
  dpo_shard_destroy(s);
}
