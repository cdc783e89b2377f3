/* The journal's keyed hash chain and its key (journal_chain.c), used by ledger.c,
 * ledger_replay.c and the budget store (which reads its records with dpo__read_all).
 *
 * Every journal line ends in ,"chain":"<64 hex>"} : its tag
 *   h_i = BLAKE2b-256 keyed with K over (h_{i-1} || canonical bytes of line i),
 * where the canonical bytes are the line up to (not including) ,"chain": followed by "}"
 * (i.e. the JSON object as written, without its own tag), and h_{-1} is the header's random
 * "nonce".  Without K nobody can write a line that verifies, so a deleted, edited, reordered,
 * duplicated or cut line breaks the chain at the first bad line.  K lives outside the run
 * directory (dpo__journal_key_load); with K anyone can rewrite the chain (see doc/design.md). */
#ifndef DPO_JOURNAL_CHAIN_H
#define DPO_JOURNAL_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#define DPO__CHAIN_BYTES 32
/* ,"chain":"<64 hex>"} */
#define DPO__CHAIN_SUFFIX_LEN (10 + 2 * DPO__CHAIN_BYTES + 2)

/* The journal key: 32 bytes from key_file, else $DPOPT_JOURNAL_KEY, else
 * $XDG_CONFIG_HOME/dpopt/journal.key, else $HOME/.config/dpopt/journal.key.  create = 1 makes
 * a missing file (mode 0600, O_EXCL | O_NOFOLLOW, 32 bytes from libsodium; the default's
 * directory 0700); create = 0 never writes anything.  The file must be a regular file (no
 * symlink), exactly 32 bytes, not readable by group or others.  path (cap bytes, may be NULL)
 * gets the file used.  The one place a key comes from: a budget store can replace it. */
int dpo__journal_key_load(const char *key_file, int create, unsigned char key[DPO__CHAIN_BYTES],
                          char *path, size_t cap);

/* Can a journal be keyed: the key's place is known (key_file, $DPOPT_JOURNAL_KEY, or a default
 * under $XDG_CONFIG_HOME or $HOME) and an existing key file is valid; a missing one is fine unless
 * resume (dpo__journal_key_load then makes it).  Writes nothing: asked before a run claims its
 * directory, so a run whose journal could not be keyed is refused with nothing written. */
int dpo__journal_key_check(const char *key_file, int resume);
/* A fresh random nonce (the chain's start, written in the header). */
void dpo__chain_nonce(unsigned char nonce[DPO__CHAIN_BYTES]);
/* tag = BLAKE2b-keyed(key, prev || body || "}"): body is the serialized object without its
 * closing brace. */
void dpo__chain_tag(const unsigned char key[DPO__CHAIN_BYTES],
                    const unsigned char prev[DPO__CHAIN_BYTES], const char *body, size_t n,
                    unsigned char tag[DPO__CHAIN_BYTES]);
void dpo__chain_hex(const unsigned char h[DPO__CHAIN_BYTES], char hex[2 * DPO__CHAIN_BYTES + 1]);
int dpo__chain_unhex(const char *hex, unsigned char h[DPO__CHAIN_BYTES]);
/* Split a line (n bytes, no newline) into its body (the canonical bytes minus "}") and its
 * stored tag.  Returns 0 if the line does not end in a well-formed chain field. */
int dpo__chain_split(const char *line, size_t n, size_t *body_len,
                     unsigned char tag[DPO__CHAIN_BYTES]);
/* Does the line (n bytes, no newline) carry the tag that follows prev?  On success *next is it. */
int dpo__chain_verify(const unsigned char key[DPO__CHAIN_BYTES],
                      const unsigned char prev[DPO__CHAIN_BYTES], const char *line, size_t n,
                      unsigned char next[DPO__CHAIN_BYTES]);

/* The whole of the open file fd (path: for messages) into *buf (malloc'd, NUL-terminated,
 * *len bytes without the NUL): a journal or a budget store's records, read at once. */
int dpo__read_all(int fd, const char *path, char **buf, size_t *len);

#endif
