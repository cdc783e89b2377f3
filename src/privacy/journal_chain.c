/* The journal's keyed hash chain and the key it is keyed with (see journal_chain.h). */
#include "journal_chain.h"

#include "dpopt/status.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char dpo__chain_key_field[] = ",\"chain\":\"";

/* where the key is: the caller's file, the environment's, or the per-user default */
static int dpo__key_path(const char *key_file, char *p, size_t cap, int *is_default) {
  const char *e = getenv("DPOPT_JOURNAL_KEY"), *x = getenv("XDG_CONFIG_HOME"),
             *h = getenv("HOME");
  int n;
  *is_default = 0;
  if (key_file && *key_file) n = snprintf(p, cap, "%s", key_file);
  else if (e && *e) n = snprintf(p, cap, "%s", e);
  else {
    *is_default = 1;
    if (x && x[0] == '/') n = snprintf(p, cap, "%s/dpopt/journal.key", x);
    else if (h && *h) n = snprintf(p, cap, "%s/.config/dpopt/journal.key", h);
    else
      return dpo_err(DPO_EIO, "no journal key: set privacy.journal_key or DPOPT_JOURNAL_KEY "
                     "(neither XDG_CONFIG_HOME nor HOME is set)");
  }
  if (n < 0 || (size_t)n >= cap) return dpo_err(DPO_EINVAL, "journal key path too long");
  return DPO_OK;
}

int dpo__journal_key_check(const char *key_file, int resume) {
  char p[1024];
  int is_default, st = dpo__key_path(key_file, p, sizeof p, &is_default);
  if (st) return st;
  struct stat sb;
  if (!resume && lstat(p, &sb) != 0 && errno == ENOENT) return DPO_OK; /* made when opened */
  unsigned char k[DPO__CHAIN_BYTES];
  st = dpo__journal_key_load(key_file, 0, k, NULL, 0);
  sodium_memzero(k, sizeof k);
  return st;
}

/* mkdir -p of the default key's directories, 0700 (the key's directory is private) */
static void dpo__key_mkdirs(const char *path) {
  char d[1024];
  snprintf(d, sizeof d, "%s", path);
  for (char *s = d + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      (void)mkdir(d, 0700);
      *s = '/';
    }
}

/* a new key: written to a private temporary, then link()ed into place, so a concurrent
 * creator either wins or finds a complete key (never a short file) */
static int dpo__key_create(const char *path) {
  char tmp[1100];
  unsigned char k[DPO__CHAIN_BYTES];
  snprintf(tmp, sizeof tmp, "%s.new.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return dpo_err(DPO_EIO, "%s: cannot create the journal key: %s", path, strerror(errno));
  randombytes_buf(k, sizeof k);
  int ok = write(fd, k, sizeof k) == (ssize_t)sizeof k && fsync(fd) == 0;
  sodium_memzero(k, sizeof k);
  close(fd);
  if (!ok || (link(tmp, path) != 0 && errno != EEXIST)) {
    int e = errno;
    unlink(tmp);
    return dpo_err(DPO_EIO, "%s: cannot create the journal key: %s", path, strerror(e));
  }
  unlink(tmp);
  return DPO_OK;
}

int dpo__journal_key_load(const char *key_file, int create, unsigned char key[DPO__CHAIN_BYTES],
                          char *path, size_t cap) {
  char p[1024];
  int dflt, rc;
  struct stat sb;
  if (sodium_init() < 0) return dpo_err(DPO_EUNSUP, "libsodium failed to initialize");
  if ((rc = dpo__key_path(key_file, p, sizeof p, &dflt))) return rc;
  if (path && cap) snprintf(path, cap, "%s", p);
  int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (dflt) dpo__key_mkdirs(p);
    if ((rc = dpo__key_create(p))) return rc;
    fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0)
    return dpo_err(DPO_EIO, "journal key %s: %s%s", p, strerror(errno),
                   errno == ENOENT ? " (a journal can only be verified with the key it was "
                                     "written with: set privacy.journal_key or DPOPT_JOURNAL_KEY)"
                   : errno == ELOOP ? " (a symbolic link: refused)" : "");
  rc = DPO_OK;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size != DPO__CHAIN_BYTES)
    rc = dpo_err(DPO_EIO, "journal key %s: not a regular file of %d bytes", p, DPO__CHAIN_BYTES);
  else if (sb.st_mode & 077) /* a key others can read lets them rewrite journals */
    rc = dpo_err(DPO_EIO, "journal key %s: readable or writable by others (mode %03o): chmod 600",
                 p, (unsigned)(sb.st_mode & 0777));
  else if (pread(fd, key, DPO__CHAIN_BYTES, 0) != DPO__CHAIN_BYTES)
    rc = dpo_err(DPO_EIO, "journal key %s: short read", p);
  close(fd);
  return rc;
}

void dpo__chain_nonce(unsigned char nonce[DPO__CHAIN_BYTES]) {
  if (sodium_init() >= 0) randombytes_buf(nonce, DPO__CHAIN_BYTES);
}

void dpo__chain_tag(const unsigned char key[DPO__CHAIN_BYTES],
                    const unsigned char prev[DPO__CHAIN_BYTES], const char *body, size_t n,
                    unsigned char tag[DPO__CHAIN_BYTES]) {
  crypto_generichash_state st;
  crypto_generichash_init(&st, key, DPO__CHAIN_BYTES, DPO__CHAIN_BYTES);
  crypto_generichash_update(&st, prev, DPO__CHAIN_BYTES);
  crypto_generichash_update(&st, (const unsigned char *)body, n);
  crypto_generichash_update(&st, (const unsigned char *)"}", 1);
  crypto_generichash_final(&st, tag, DPO__CHAIN_BYTES);
}

void dpo__chain_hex(const unsigned char h[DPO__CHAIN_BYTES], char hex[2 * DPO__CHAIN_BYTES + 1]) {
  sodium_bin2hex(hex, 2 * DPO__CHAIN_BYTES + 1, h, DPO__CHAIN_BYTES);
}

int dpo__chain_unhex(const char *hex, unsigned char h[DPO__CHAIN_BYTES]) {
  size_t got = 0;
  if (!hex || strlen(hex) != 2 * DPO__CHAIN_BYTES) return 0;
  for (const char *c = hex; *c; c++) /* lower case only: the writer's form, one spelling */
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) return 0;
  return sodium_hex2bin(h, DPO__CHAIN_BYTES, hex, 2 * DPO__CHAIN_BYTES, NULL, &got, NULL) == 0 &&
         got == DPO__CHAIN_BYTES;
}

int dpo__chain_split(const char *line, size_t n, size_t *body_len,
                     unsigned char tag[DPO__CHAIN_BYTES]) {
  char hex[2 * DPO__CHAIN_BYTES + 1];
  if (n < DPO__CHAIN_SUFFIX_LEN + 1 || line[n - 1] != '}' || line[n - 2] != '"') return 0;
  size_t b = n - DPO__CHAIN_SUFFIX_LEN;
  if (memcmp(line + b, dpo__chain_key_field, sizeof dpo__chain_key_field - 1) != 0) return 0;
  memcpy(hex, line + b + sizeof dpo__chain_key_field - 1, 2 * DPO__CHAIN_BYTES);
  hex[2 * DPO__CHAIN_BYTES] = '\0';
  if (!dpo__chain_unhex(hex, tag)) return 0;
  *body_len = b;
  return 1;
}

int dpo__chain_verify(const unsigned char key[DPO__CHAIN_BYTES],
                      const unsigned char prev[DPO__CHAIN_BYTES], const char *line, size_t n,
                      unsigned char next[DPO__CHAIN_BYTES]) {
  unsigned char stored[DPO__CHAIN_BYTES], want[DPO__CHAIN_BYTES];
  size_t b;
  if (!dpo__chain_split(line, n, &b, stored)) return 0;
  dpo__chain_tag(key, prev, line, b, want);
  if (sodium_memcmp(stored, want, DPO__CHAIN_BYTES) != 0) return 0;
  memcpy(next, want, DPO__CHAIN_BYTES);
  return 1;
}

int dpo__read_all(int fd, const char *path, char **buf, size_t *len) {
  struct stat sb;
  if (fstat(fd, &sb) != 0) return dpo_err(DPO_EIO, "%s: stat failed: %s", path, strerror(errno));
  size_t n = (size_t)sb.st_size, off = 0;
  char *b = malloc(n + 1);
  if (!b) return dpo_err(DPO_ENOMEM, "out of memory reading %s", path);
  while (off < n) {
    ssize_t r = pread(fd, b + off, n - off, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      free(b);
      return dpo_err(DPO_EIO, "%s: read failed: %s", path, r < 0 ? strerror(errno) : "short");
    }
    off += (size_t)r;
  }
  b[n] = '\0';
  *buf = b;
  *len = n;
  return DPO_OK;
}
