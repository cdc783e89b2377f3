/* Checkpoint files (src/optim/checkpoint.c), on rank 0 of the world (file I/O only; the
 * driver-level resume tests are in test_ckpt.sh):
 *  - typed entries round-trip bit-identically (doubles incl. -0, NaN payload, denormals);
 *  - a flipped byte, a truncated file and a wrong magic are refused (DPO_EFORMAT);
 *  - a missing key, a wrong type or a wrong length are refused naming the key;
 *  - a key written twice is refused; the prefix namespaces keys;
 *  - the write is atomic: no temporary file is left next to the checkpoint;
 *  - the file is the owner's only (0600): it holds iterates not yet released, whatever the
 *    umask, and even when a stale temporary of the same name was world-readable. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpopt/optim.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  if (!d) return -1;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* A stream's place: a seeded stream resumes where it stopped (the next draws are the
 * uninterrupted stream's); an OS key is never written. */
static void check_rng(void) {
  dpo_rng_t *a = NULL, *b = NULL, *os = NULL;
  dpo_ckpt_t *c = NULL;
  int64_t seeded = 9;
  T_CHECK(dpo_rng_create(1, 42, 7, &a) == DPO_OK && dpo_rng_create(1, 5, 1, &b) == DPO_OK &&
          dpo_rng_create(0, 0, 0, &os) == DPO_OK && dpo_ckpt_create(&c) == DPO_OK, "create");
  if (!a || !b || !os || !c) return;
  for (int i = 0; i < 37; i++) dpo_rng_u64(a); /* mid-block */
  T_CHECK(dpo_ckpt_put_rng(c, "s.", a) == DPO_OK && dpo_ckpt_put_rng(c, "o.", os) == DPO_OK &&
          dpo_ckpt_put_rng(c, "n.", NULL) == DPO_OK, "put_rng: %s", dpo_errmsg());
  T_CHECK(dpo_ckpt_len(c, "o.rng_key") == -1 && dpo_ckpt_len(c, "s.rng_key") == 32,
          "an OS key is never written, a seeded one is");
  T_CHECK(dpo_ckpt_get_rng(c, "s.", &seeded, b) == DPO_OK && seeded == 1, "get_rng seeded");
  int same = 1;
  for (int i = 0; i < 100; i++) same &= dpo_rng_u64(a) == dpo_rng_u64(b);
  T_CHECK(same, "the restored stream draws what the saved one draws next");
  T_CHECK(dpo_ckpt_get_rng(c, "o.", &seeded, b) == DPO_OK && seeded == 0, "OS flag 0");
  T_CHECK(dpo_ckpt_get_rng(c, "n.", &seeded, NULL) == DPO_OK && seeded == -1, "no stream -1");
  T_CHECK(dpo_ckpt_get_rng(c, "x.", &seeded, b) == DPO_EFORMAT, "missing stream refused");
  dpo_ckpt_destroy(c);
  dpo_rng_destroy(a);
  dpo_rng_destroy(b);
  dpo_rng_destroy(os);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    char dir[] = "/tmp/dpo_ckpt_XXXXXX", path[256];
    T_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    double v[5] = {1.0 / 3.0, -0.0, 4.9e-324, 1e308, 0};
    uint64_t nanbits = 0x7ff8000000000123ULL;
    memcpy(&v[4], &nanbits, 8);
    int64_t iv[3] = {-1, INT64_MAX, 42};
    dpo_ckpt_t *w = NULL, *r = NULL;
    T_CHECK(dpo_ckpt_create(&w) == DPO_OK, "create");
    dpo_ckpt_set_prefix(w, "a.");
    T_CHECK(dpo_ckpt_put_f64(w, "v", v, 5) == DPO_OK, "put v");
    T_CHECK(dpo_ckpt_put_i64(w, "iv", iv, 3) == DPO_OK, "put iv");
    T_CHECK(dpo_ckpt_put_bytes(w, "name", "dp-nag", 6) == DPO_OK, "put name");
    T_CHECK(dpo_ckpt_put_f64(w, "empty", NULL, 0) == DPO_OK, "put empty");
    T_CHECK(dpo_ckpt_put_int(w, "v", 3) == DPO_EINVAL, "a key written twice must be refused");
    dpo_ckpt_set_prefix(w, "b.");
    T_CHECK(dpo_ckpt_put_int(w, "v", 7) == DPO_OK, "same key under another prefix");
    char stale[300];
    snprintf(stale, sizeof stale, "%s.tmp.%ld", path, (long)getpid());
    FILE *sf = fopen(stale, "w");
    T_CHECK(sf && chmod(stale, 0644) == 0, "a stale world-readable temporary");
    if (sf) fclose(sf);
    mode_t um = umask(0);
    T_CHECK(dpo_ckpt_write(w, path) == DPO_OK, "write: %s", dpo_errmsg());
    umask(um);
    T_CHECK(count_entries(dir) == 1, "only the checkpoint in %s (no temp file left)", dir);
    struct stat sb;
    T_CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600,
            "checkpoint mode %o, want 0600 (owner only)", (unsigned)(sb.st_mode & 0777));

    T_CHECK(dpo_ckpt_read(path, &r) == DPO_OK, "read: %s", dpo_errmsg());
    if (r) {
      double g[5];
      int64_t gi[3], b7 = 0;
      char nm[6];
      dpo_ckpt_set_prefix(r, "a.");
      T_CHECK(dpo_ckpt_get_f64(r, "v", g, 5) == DPO_OK && memcmp(g, v, sizeof v) == 0,
              "doubles round-trip bit-identically");
      T_CHECK(dpo_ckpt_get_i64(r, "iv", gi, 3) == DPO_OK && memcmp(gi, iv, sizeof iv) == 0,
              "int64 round-trip");
      T_CHECK(dpo_ckpt_get_bytes(r, "name", nm, 6) == DPO_OK && !memcmp(nm, "dp-nag", 6), "bytes");
      T_CHECK(dpo_ckpt_len(r, "empty") == 0 && dpo_ckpt_len(r, "nope") == -1, "lengths");
      T_CHECK(dpo_ckpt_get_f64(r, "v", g, 4) == DPO_EFORMAT, "wrong length refused");
      T_CHECK(strstr(dpo_errmsg(), "a.v") != NULL, "the error names the key: %s", dpo_errmsg());
      T_CHECK(dpo_ckpt_get_i64(r, "v", gi, 5) == DPO_EFORMAT, "wrong type refused");
      T_CHECK(dpo_ckpt_get_int(r, "missing", &b7) == DPO_EFORMAT, "missing key refused");
      dpo_ckpt_set_prefix(r, "b.");
      T_CHECK(dpo_ckpt_get_int(r, "v", &b7) == DPO_OK && b7 == 7, "prefix b.v = %lld",
              (long long)b7);
      dpo_ckpt_destroy(r);
      r = NULL;
    }
    /* corruption: every single flipped byte is detected (magic, structure or checksum) */
    FILE *f = fopen(path, "rb");
    unsigned char buf[4096];
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    T_CHECK(len > 24 && len < sizeof buf, "checkpoint size %zu", len);
    int undetected = 0;
    for (size_t i = 0; i < len; i++) {
      buf[i] ^= 0x10;
      f = fopen(path, "wb");
      fwrite(buf, 1, len, f);
      fclose(f);
      if (dpo_ckpt_read(path, &r) != DPO_EFORMAT) undetected++;
      dpo_ckpt_destroy(r);
      r = NULL;
      buf[i] ^= 0x10;
    }
    T_CHECK(undetected == 0, "%d of %zu flipped bytes went undetected", undetected, len);
    /* truncation (a torn copy) */
    f = fopen(path, "wb");
    fwrite(buf, 1, len - 5, f);
    fclose(f);
    T_CHECK(dpo_ckpt_read(path, &r) == DPO_EFORMAT, "truncated file refused");
    dpo_ckpt_destroy(r);
    r = NULL;
    T_CHECK(dpo_ckpt_read("/nonexistent/checkpoint", &r) == DPO_EIO, "missing file: DPO_EIO");
    /* and the intact bytes read back */
    f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    T_CHECK(dpo_ckpt_read(path, &r) == DPO_OK, "restored file reads");
    dpo_ckpt_destroy(r);
    dpo_ckpt_destroy(w);
    unlink(path);
    rmdir(dir);
    check_rng();
  }
  return dpo_t_finish("test_ckpt");
}
