/* Fixed-work exact samplers: what mechanism.c's header comment promises (constant work per
 * draw, exact law).  Everything is built from three kinds of exact Bernoulli "atoms", each one
 * random word and a few integer multiplies and compares, without branches on the values:
 *  - rational F/D (64 or 256 bits): the word w decides U < F/D unless F/D lies in w's own cell
 *    [w, w+1) / 2^64 (probability 2^-64); then U's next word decides against the residue;
 *  - a certified constant (e^-n, (2/e)^i, e^-(i/256)): two words (128 bits) against a 255-bit
 *    interval that holds the constant, computed once with directed rounding; 3 or 4 words if
 *    undecided;
 *  - exp(-F/D) with F/D in [0, 1): e^-(i/256), i = floor(256 F/D), from the table times CKS
 *    2020 Alg. 1 on the rest y < 2^-8 with its loop run exactly KL = 7 times (K = the first k
 *    with Bernoulli(y/k) = 0, answer K odd; P(K > 7) = y^7/7! < 2^-68); its 7 atoms are 64-bit
 *    compares of the words with floor(c/k), c = floor(y 2^64) once a loop (dpo__kl_atoms: the
 *    same decisions as the rational atom, without 256-bit work).  10 words a loop (22 when the
 *    loop ran 21 times on F/D itself: P(K > 21) <= 1/21!).
 * A batch of rational atoms draws one extra word that settles its first undecided atom, if any,
 * so the work changes only if two atoms of a batch, or the extra word, are undecided
 * (probability < 2^-118 a batch).  Every fallback continues the same exact comparison, so no
 * event changes the law; the fallbacks are counted (dpo__ct_stats, for the tests). */
#include "mech_ct_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

typedef struct {
  uint64_t w[4]; /* little-endian limbs */
} u256;

dpo__ct_stats_t dpo__ct_st;
void dpo__ct_stats(dpo__ct_stats_t *s) { *s = dpo__ct_st; }
void dpo__ct_stats_reset(void) { memset(&dpo__ct_st, 0, sizeof dpo__ct_st); }

int dpo__ct_bit(dpo__ws_t *ws) { return (int)(dpo__w(ws) & 1u); }

/* ------------------------------------------------------------ 256-bit, branch-free */

static inline u256 u_from(u128 x) {
  u256 r = {{(uint64_t)x, (uint64_t)(x >> 64), 0, 0}};
  return r;
}
static inline uint64_t u_sub(u256 a, u256 b, u256 *r) { /* r = a - b; returns the borrow */
  uint64_t br = 0;
  for (int i = 0; i < 4; i++) {
    u128 d = (u128)a.w[i] - b.w[i] - br;
    r->w[i] = (uint64_t)d;
    br = (uint64_t)(d >> 127);
  }
  return br;
}
static inline int u_lt(u256 a, u256 b) { u256 r; return (int)u_sub(a, b, &r); }
static inline u256 u_add(u256 a, u256 b) {
  u128 c = 0;
  for (int i = 0; i < 4; i++) {
    c += (u128)a.w[i] + b.w[i];
    a.w[i] = (uint64_t)c;
    c >>= 64;
  }
  return a;
}
static inline u256 u_mul64(u256 a, uint64_t k) { /* a k mod 2^256 */
  u128 c = 0;
  for (int i = 0; i < 4; i++) {
    c += (u128)a.w[i] * k;
    a.w[i] = (uint64_t)c;
    c >>= 64;
  }
  return a;
}
static inline u256 u_shl64(u256 a, uint64_t low) {
  u256 r = {{low, a.w[0], a.w[1], a.w[2]}};
  return r;
}
static inline u256 u_sel(u256 a, u256 b, uint64_t m) { /* m all-ones: b, else a */
  for (int i = 0; i < 4; i++) a.w[i] = (a.w[i] & ~m) | (b.w[i] & m);
  return a;
}
static double u_dbl(u256 a) {
  return ((double)a.w[3] * 0x1p64 + (double)a.w[2]) * 0x1p128 + (double)a.w[1] * 0x1p64 +
         (double)a.w[0];
}

/* ------------------------------------------------------------ certified constants */

/* [lo, hi] (units 2^-255) holds the constant; L = floor(lo / 2^127), H = ceil(hi / 2^127) */
typedef struct {
  u128 L, H;
  u256 lo, hi;
  int one; /* the constant is 1 */
} dpo__tab_t;

#define DPO__NE 90  /* e^-n, n < 90 (e^-89 < 2^-128) */
#define DPO__N2E 65 /* (2/e)^i, i < 65 */
#define DPO__VN 47  /* the geometric V by one scan up to 47: P(V >= 47) = e^-47 < 2^-67 */
#define DPO__NF 256 /* e^-(i/256), i < 256: the CKS loop's fraction in steps of 1/256 */
static dpo__tab_t dpo__E[DPO__NE], dpo__T2E[DPO__N2E], dpo__EF[DPO__NF];
/* the 128-bit ends of dpo__EF, read at a secret index: 8 KB apart from the 24 KB entries */
static struct {
  u128 L, H;
} dpo__EFh[DPO__NF];
/* the 128-bit ends of e^-v, v = 1 .. 47, at index v for dpo__geom_e's search; 48 .. 63 zero
 * (below every U), index 0 never read */
static struct {
  u128 L, H;
} dpo__GV[64];
static pthread_once_t dpo__once = PTHREAD_ONCE_INIT;

static u256 dpo__mul_dn(u256 a, u256 b) { /* floor(a b / 2^255) for a, b <= 2^255 */
  uint64_t p[8] = {0};
  for (int i = 0; i < 4; i++) {
    u128 c = 0;
    for (int j = 0; j < 4; j++) {
      c += (u128)a.w[i] * b.w[j] + p[i + j];
      p[i + j] = (uint64_t)c;
      c >>= 64;
    }
    p[i + 4] = (uint64_t)c;
  }
  u256 r;
  for (int i = 0; i < 4; i++) r.w[i] = (p[i + 3] >> 63) | (p[i + 4] << 1);
  return r;
}

static void dpo__tab_set(dpo__tab_t *e, u256 lo, u256 hi) {
  e->lo = lo;
  e->hi = hi;
  e->one = hi.w[3] >> 63 && !(hi.w[3] << 1) && !hi.w[2] && !hi.w[1] && !hi.w[0] &&
           !u_lt(lo, hi); /* exactly 2^255 */
  e->L = ((u128)((lo.w[3] << 1) | (lo.w[2] >> 63)) << 64) | ((lo.w[2] << 1) | (lo.w[1] >> 63));
  u128 h = ((u128)((hi.w[3] << 1) | (hi.w[2] >> 63)) << 64) | ((hi.w[2] << 1) | (hi.w[1] >> 63));
  e->H = h + ((hi.w[1] << 1) || hi.w[0]); /* never overflows but for the constant 1 */
}

/* [lo1, hi1] = e^-(1/m) +- 256 units: sum_k (-1)^k / (m^k k!), T_k = floor(T_{k-1} / (m k))
 * within 2 units of 2^255 / (m^k k!), 70 terms (70! > 2^255) within 141 units */
static void dpo__exp_inv(uint64_t m, u256 *lo1, u256 *hi1) {
  u256 T = {{0, 0, 0, (uint64_t)1 << 63}}, pos = T, neg = {{0}};
  for (uint64_t k = 1; k <= 70; k++) {
    u128 rem = 0;
    for (int i = 3; i >= 0; i--) {
      u128 cur = (rem << 64) | T.w[i];
      T.w[i] = (uint64_t)(cur / (m * k));
      rem = cur % (m * k);
    }
    if (k & 1u) neg = u_add(neg, T);
    else pos = u_add(pos, T);
  }
  u256 s, w = u_from(256);
  u_sub(pos, neg, &s);
  u_sub(s, w, lo1);
  *hi1 = u_add(s, w);
}

/* tab[i] holds [lo, hi] ^ i, rounded outward (floor of lo's products, hi's plus one unit) */
static void dpo__pow_tab(dpo__tab_t *tab, int n, u256 lo1, u256 hi1) {
  u256 lo = {{0, 0, 0, (uint64_t)1 << 63}}, hi = lo;
  for (int i = 0; i < n; i++) {
    dpo__tab_set(&tab[i], lo, hi);
    lo = dpo__mul_dn(lo, lo1);
    hi = u_add(dpo__mul_dn(hi, hi1), u_from(1));
  }
}

static void dpo__tab_init(void) {
  u256 lo1, hi1;
  dpo__exp_inv(1, &lo1, &hi1);
  dpo__pow_tab(dpo__E, DPO__NE, lo1, hi1);
  dpo__pow_tab(dpo__T2E, DPO__N2E, u_add(lo1, lo1), u_add(hi1, hi1)); /* 2/e */
  dpo__exp_inv(DPO__NF, &lo1, &hi1);
  dpo__pow_tab(dpo__EF, DPO__NF, lo1, hi1);
  for (int i = 0; i < DPO__NF; i++) {
    dpo__EFh[i].L = dpo__EF[i].L;
    dpo__EFh[i].H = dpo__EF[i].H;
  }
  for (int v = 1; v <= DPO__VN; v++) {
    dpo__GV[v].L = dpo__E[v].L;
    dpo__GV[v].H = dpo__E[v].H;
  }
}

void dpo__ct_tabs(void) { pthread_once(&dpo__once, dpo__tab_init); }

/* U (words uw[0..3], uw[2..3] drawn here) against e, when 128 bits did not decide */
static int dpo__tab_slow(dpo__ws_t *ws, const dpo__tab_t *e, const uint64_t uw[2], int *rc) {
  dpo__ct_st.fallbacks++;
  u256 U = {{dpo__w(ws), uw[1], uw[0], 0}}, lo = e->lo, hi = e->hi, Lc, Hc;
  /* 192 bits: 1 if U < floor(lo / 2^63), 0 if U >= ceil(hi / 2^63) */
  Lc = (u256){{(lo.w[1] >> 63) | (lo.w[2] << 1), (lo.w[2] >> 63) | (lo.w[3] << 1), lo.w[3] >> 63, 0}};
  Hc = (u256){{(hi.w[1] >> 63) | (hi.w[2] << 1), (hi.w[2] >> 63) | (hi.w[3] << 1), hi.w[3] >> 63, 0}};
  if (hi.w[0] || (hi.w[1] << 1)) Hc = u_add(Hc, u_from(1));
  if (u_lt(U, Lc)) return 1;
  if (!u_lt(U, Hc)) return 0;
  U = u_shl64(U, dpo__w(ws)); /* 256 bits against 2 lo, 2 hi */
  if (u_lt(U, u_add(lo, lo))) return 1;
  if (!u_lt(U, u_add(hi, hi))) return 0;
  *rc = dpo_err(DPO_EUNSUP, "exact sampler: a Bernoulli undecided after 256 bits (probability "
                "below 2^-180)");
  return 0;
}

/* Bernoulli(constant e): two words */
static inline int dpo__tab_atom(dpo__ws_t *ws, const dpo__tab_t *e, int *rc) {
  uint64_t uw[2] = {dpo__w(ws), dpo__w(ws)};
  u128 U = ((u128)uw[0] << 64) | uw[1];
  int r1 = U < e->L, r0 = U >= e->H;
  if (!(r1 | r0 | e->one)) return dpo__tab_slow(ws, e, uw, rc);
  return r1 | e->one;
}

/* Bernoulli(e^-(i/256)), i < 256 a secret index: two words, as dpo__tab_atom */
static inline int dpo__ef_atom(dpo__ws_t *ws, uint64_t i, int *rc) {
  uint64_t uw[2] = {dpo__w(ws), dpo__w(ws)};
  const u128 U = ((u128)uw[0] << 64) | uw[1];
  const int one = i == 0, r1 = U < dpo__EFh[i].L, r0 = U >= dpo__EFh[i].H;
  if (!(r1 | r0 | one)) return dpo__tab_slow(ws, &dpo__EF[i], uw, rc);
  return r1 | one;
}

/* ------------------------------------------------------------ rational atoms */

/* the same for F <= D < 2^190 (w D < 2^254) */
static inline int dpo__at256(uint64_t w, u256 F, u256 D, u256 *R) {
  u256 wd = u_mul64(D, w), f = u_shl64(F, 0);
  int one = !u_lt(f, u_add(wd, D)), zero = !u_lt(wd, f);
  u_sub(f, wd, R);
  return one + 2 * (1 - one - zero);
}

static int dpo__lazy256(dpo__ws_t *ws, u256 R, u256 D) {
  u256 R2;
  for (;;) {
    int s = dpo__at256(dpo__w(ws), R, D, &R2);
    if (s < 2) return s;
    R = R2;
  }
}

/* CKS Alg. 1 for Bernoulli(exp(-x)), x = F/D in [0, 1), in two factors: exp(-i/256) from
 * the table dpo__EF with i = floor(256 x) (one atom of two words), and the loop on the rest
 * y = x - i/256 = F'/D', F' = 256 F - i D, D' = 256 D, y < 2^-8, run exactly KL = 7 times:
 * K = the first k with Bernoulli(y/k) = 0, answer K odd, P(K > 7) = y^7/7! < 2^-68.  The two
 * Bernoullis are independent, so the product is Bernoulli(exp(-i/256) exp(-y)) = exp(-x)
 * exactly; a loop costs 2 + 7 + 1 words instead of 21 + 1 for the loop on x itself.
 * i = c >> 56 for c = floor(F 2^64 / D) (floor(floor(a) / 2^56) = floor(a / 2^56)), and y's
 * c' = floor(F' 2^64 / D') = c - i 2^56, its remainder r' = 256 r. */
#define DPO__KL 7

/* The loop's atom k is U < F'/(D' k) with U's word w: dpo__at64/256(w, F', D' k).  With
 * c' computed once and a_k = floor(c' / k) (k a constant: a multiply), it is 1 if w < a_k
 * ((w + 1) k <= c'), 0 if w > a_k; w = a_k (probability 2^-64) is settled exactly by
 * dpo__at64/256 on the first such atom and the extra word: the same decisions and words as
 * the atom by atom comparison, with two 64-bit compares an atom. */
typedef struct {
  uint64_t c;      /* c' = floor(F' 2^64 / D') */
  uint32_t A, M;   /* atoms that are 1, atoms with w = a_k */
  uint64_t ws, ks; /* the first such atom's word and k */
  uint64_t W[DPO__KL + 1]; /* + the extra word */
} dpo__kl_t;

static inline void dpo__kl_atoms(dpo__ws_t *ws, dpo__kl_t *kl) {
  uint32_t A = 0, M = 0;
  uint64_t wsel = 0;
  dpo_rng_bytes(ws->rng, kl->W, sizeof kl->W); /* one copy of 8 fresh words */
#pragma GCC unroll 7
  for (int i = 0; i < DPO__KL; i++) {
    const uint64_t w = kl->W[i], a = kl->c / (uint64_t)(i + 1); /* unrolled: no division */
    A |= (uint32_t)(w < a) << i;
    M |= (uint32_t)(w == a) << i;
  }
  const uint64_t j = (uint64_t)__builtin_ctz(M | (1u << DPO__KL)); /* the first, or 7 */
#pragma GCC unroll 7
  for (uint64_t i = 0; i < DPO__KL; i++) wsel |= kl->W[i] & -(uint64_t)(i == j); /* no index */
  kl->A = A;
  kl->M = M;
  kl->ws = wsel;
  kl->ks = j + 1;
}

/* the answer from the atoms: K = the first failure, odd; fallback counted by the caller */
static inline int dpo__kl_ans(uint32_t A, int *done) {
  const uint32_t Z = ~A & ((1u << DPO__KL) - 1);
  *done = Z != 0;
  return (__builtin_ctz(Z | (1u << 31)) + 1) & 1;
}

/* c = floor(F 2^64 / D), F < D < 2^64: q from v = floor((2^128 - 1) / D) is c or c - 1 */
static inline u128 dpo__qr64(dpo__ws_t *ws, uint64_t F, uint64_t D, uint64_t *r) {
  if (ws->rD != D) { /* public: one division per scale and call */
    ws->rv = ~(u128)0 / D;
    ws->rD = D;
  }
  const u128 v = ws->rv;
  u128 q = (u128)F * (uint64_t)(v >> 64) + (((u128)F * (uint64_t)v) >> 64);
  u128 rr = ((u128)F << 64) - q * D;
  const u128 ge = -(u128)(rr >= D);
  q += ge & 1;
  rr -= (u128)D & ge;
  *r = (uint64_t)rr;
  return q;
}

/* Bernoulli(exp(-F/D)), F < D < 2^53: the table atom, 7 loop atoms + 1 word.  The loop's
 * settling residue needs no F', D': F' 2^64 - w D' k = 256 ((c' - w k) D + r), so the atom's
 * rest is ((c' - w k) D + r) / (D k), as for the loop on F/D with c' for c. */
static int dpo__kloop64(dpo__ws_t *ws, uint64_t F, uint64_t D, int *rc) {
  dpo__kl_t kl;
  uint64_t r, R1, R2;
  const uint64_t c = (uint64_t)dpo__qr64(ws, F, D, &r), i = c >> 56;
  const int e = dpo__ef_atom(ws, i, rc);
  kl.c = c & (((uint64_t)1 << 56) - 1);
  dpo__kl_atoms(ws, &kl);
  const uint64_t m = -(uint64_t)(kl.M != 0), Ds = (D * kl.ks & m) | (1 & ~m);
  /* w = a_k: residue (c' - w k) D + r in [0, D k): 0 if none, else undecided */
  R1 = (kl.c - kl.ws * kl.ks) * D + r;
  const int s1 = 2 * (int)((R1 & m) != 0);
  const int s = dpo__at64(kl.W[DPO__KL], R1 & -(uint64_t)(s1 == 2), Ds, &R2); /* settles it */
  uint32_t A = kl.A;
  const uint64_t Fy = (F << 8) - i * D, Dy = D << 8; /* y = Fy/Dy < 2^-8, Dy < 2^61 */
  if (!(kl.M & (kl.M - 1)) && s < 2) {
    A |= (uint32_t)(s & (s1 == 2)) << (kl.ks - 1);
  } else { /* two atoms with w = a_k, or the extra word undecided: < 2^-118 */
    dpo__ct_st.fallbacks++;
    if (s1 == 2) A |= (uint32_t)(s < 2 ? s : dpo__lazy64(ws, R2, Ds)) << (kl.ks - 1);
    for (uint64_t k = kl.ks + 1; k <= DPO__KL; k++)
      if (kl.M >> (k - 1) & 1u) {
        uint64_t R;
        const int sk = dpo__at64(kl.W[k - 1], Fy, Dy * k, &R);
        A |= (uint32_t)(sk < 2 ? sk : dpo__lazy64(ws, R, Dy * k)) << (k - 1);
      }
  }
  int done, ans = dpo__kl_ans(A, &done);
  if (done) return e & ans;
  dpo__ct_st.fallbacks++; /* K > 7: P < 2^-68; Bernoulli(y/k) = Bernoulli(y/8) Bernoulli(8/k) */
  uint64_t k = DPO__KL + 1;
  while (dpo__lazy64(ws, Fy, Dy * 8) && dpo__lazy64(ws, 8, k)) k++;
  return e & (int)(k & 1u);
}

/* c = floor(F 2^64 / D), r = the remainder, F < D < 2^190.  Public, cached in ws: D's top 64
 * bits Dh (D = Dh 2^sh + low), v = floor((2^128 - 1) / (Dh + [sh > 0])).  q = floor(Fh v / 2^64) with
 * Fh = F >> sh <= Dh: q <= F 2^64 / D and, as F/D - Fh/(Dh + 1) < 2/Dh <= 2^-62 and v
 * loses < 1, q > c - 6; so at most 5 of the 6 branch-free corrections apply. */
static u128 dpo__qr256(dpo__ws_t *ws, u256 F, u256 D, u256 *r) {
  if (memcmp(ws->qD, D.w, sizeof D)) { /* public: once per scale (and per call of the scalar
                                        * samplers; the vector ones keep ws across draws) */
    int top = 3; /* L = D's bit length, Dh = D's bits sh .. sh + 63, by whole-word shifts (a
                  * bit-by-bit scan cost a quarter of every discrete Gaussian draw) */
    while (top > 0 && !D.w[top]) top--;
    const int L = D.w[top] ? 64 * top + 64 - __builtin_clzll(D.w[top]) : 0;
    const int sh = L > 64 ? L - 64 : 0, li = sh / 64, lb = sh % 64;
    u128 Dh = lb ? (D.w[li] >> lb) | (li < 3 ? D.w[li + 1] << (64 - lb) : 0) : D.w[li];
    ws->qv = ~(u128)0 / (Dh + (sh > 0));
    ws->qsh = sh;
    memcpy(ws->qD, D.w, sizeof D);
  }
  const int sh = ws->qsh, i = sh / 64, b = sh % 64;
  const u128 v = ws->qv;
  /* Fh = F >> sh (F < 2^190: the limbs i, i + 1 suffice, sh <= 126) */
  const uint64_t Fh = b ? (F.w[i] >> b) | (F.w[i + 1] << (64 - b)) : F.w[i];
  u128 q = (u128)Fh * (uint64_t)(v >> 64) + (((u128)Fh * (uint64_t)v) >> 64);
  u256 R;
  u_sub(u_shl64(F, 0), u_mul64(D, (uint64_t)q), &R);
  for (int j = 0; j < 6; j++) {
    u256 T;
    const uint64_t br = u_sub(R, D, &T);
    R = u_sel(T, R, -br);
    q += 1 - br;
  }
  while (!u_lt(R, D)) { /* never (the bound above); kept so that c is exact regardless */
    dpo__ct_st.fallbacks++;
    u_sub(R, D, &R);
    q++;
  }
  *r = R;
  return q;
}

/* the same for F < D < 2^178 (the discrete Gaussian's 2 s^2 t^2); on the rare paths
 * Dy = 256 D < 2^186 and Dy k < 2^190 (dpo__at256) for k <= 8 */
static int dpo__kloop256(dpo__ws_t *ws, u256 F, u256 D, int *rc) {
  dpo__kl_t kl;
  u256 r, R1, R2;
  const uint64_t c = (uint64_t)dpo__qr256(ws, F, D, &r), i = c >> 56;
  const int e = dpo__ef_atom(ws, i, rc);
  kl.c = c & (((uint64_t)1 << 56) - 1);
  dpo__kl_atoms(ws, &kl);
  const uint64_t m = -(uint64_t)(kl.M != 0);
  const u256 zero = {{0}}, Ds = u_sel(u_from(1), u_mul64(D, kl.ks), m);
  R1 = u_add(u_mul64(D, kl.c - kl.ws * kl.ks), r); /* as in dpo__kloop64 */
  const int s1 = 2 * (int)(((R1.w[0] | R1.w[1] | R1.w[2] | R1.w[3]) & m) != 0);
  const int s = dpo__at256(kl.W[DPO__KL], u_sel(zero, R1, -(uint64_t)(s1 == 2)), Ds, &R2);
  uint32_t A = kl.A;
  int done, ans;
  if (!(kl.M & (kl.M - 1)) && s < 2) {
    A |= (uint32_t)(s & (s1 == 2)) << (kl.ks - 1);
    ans = dpo__kl_ans(A, &done);
    if (done) return e & ans;
  }
  dpo__ct_st.fallbacks++;
  u256 Fy, Dy = u_mul64(D, 256);
  u_sub(u_mul64(F, 256), u_mul64(D, i), &Fy); /* y = Fy/Dy < 2^-8 */
  if (kl.M & (kl.M - 1) || s == 2) {
    if (s1 == 2) A |= (uint32_t)(s < 2 ? s : dpo__lazy256(ws, R2, Ds)) << (kl.ks - 1);
    for (uint64_t k = kl.ks + 1; k <= DPO__KL; k++)
      if (kl.M >> (k - 1) & 1u) {
        u256 R, Dk = u_mul64(Dy, k);
        const int sk = dpo__at256(kl.W[k - 1], Fy, Dk, &R);
        A |= (uint32_t)(sk < 2 ? sk : dpo__lazy256(ws, R, Dk)) << (k - 1);
      }
    ans = dpo__kl_ans(A, &done);
    if (done) return e & ans;
    dpo__ct_st.fallbacks++;
  }
  uint64_t k = DPO__KL + 1; /* K > 7, as in dpo__kloop64 */
  while (dpo__lazy256(ws, Fy, u_mul64(Dy, 8)) && dpo__lazy64(ws, 8, k)) k++;
  return e & (int)(k & 1u);
}

/* Bernoulli(exp(-g/t)), g < 4t: e^-floor and the fraction, 2 + 22 words */
int dpo__ct_bexp_small(dpo__ws_t *ws, uint64_t g, uint64_t t, int *out) {
  dpo__ct_tabs();
  int rc = DPO_OK;
  const uint64_t n = (uint64_t)(g >= t) + (g >= 2 * t) + (g >= 3 * t);
  int r1 = dpo__tab_atom(ws, &dpo__E[n], &rc);
  int r2 = dpo__kloop64(ws, g - n * t, t, &rc);
  *out = r1 & r2;
  return rc;
}

int dpo__ct_t2e(dpo__ws_t *ws, uint64_t p, int *rc) {
  int r = 1;
  while (p > 0 && !*rc) { /* DPO__N2E - 1 powers at a time (rare) */
    const uint64_t q = p < DPO__N2E ? p : DPO__N2E - 1;
    r &= dpo__tab_atom(ws, &dpo__T2E[q], rc);
    p -= q;
  }
  return r;
}

/* ------------------------------------------------------------ discrete Laplace */

/* V ~ Geometric(e^-1) by one 128-bit uniform against e^-1 .. e^-47 (V >= v iff U < e^-v) */
static int dpo__geom_e(dpo__ws_t *ws, uint64_t *V) {
  uint64_t uw[2] = {dpo__w(ws), dpo__w(ws)};
  const u128 U = ((u128)uw[0] << 64) | uw[1];
  /* cnt = #{v <= 47: U < L_v}, cntH the same for H_v ([L_v, H_v) disjoint, decreasing: U in
   * one iff the counts differ).  Both sequences decrease in v (and are 0 past 47), so each
   * count is found by 6 halving steps at indices that follow U (a 2 KB table, in L1, as the
   * other tables read at a secret index) instead of 47 comparisons each: the same counts */
  uint64_t cnt = 0, cntH = 0;
  for (uint64_t st = 32; st; st >>= 1) {
    cnt += st & -(uint64_t)(U < dpo__GV[cnt + st].L);
    cntH += st & -(uint64_t)(U < dpo__GV[cntH + st].H);
  }
  const uint64_t amb = cnt != cntH;
  int rc = DPO_OK;
  if (amb) { /* probability < 2^-121: the scan again with more of U's bits */
    cnt = 0;
    for (int v = 1; v <= DPO__VN && !rc; v++) {
      uint64_t wv[2] = {uw[0], uw[1]};
      int r = U < dpo__E[v].L ? 1 : U >= dpo__E[v].H ? 0 : dpo__tab_slow(ws, &dpo__E[v], wv, &rc);
      cnt += (uint64_t)r;
    }
  }
  if (cnt == DPO__VN) { /* V >= 47 (e^-47): memoryless, count on */
    dpo__ct_st.fallbacks++;
    while (!rc && dpo__tab_atom(ws, &dpo__E[1], &rc))
      if (++cnt >= 4096) return dpo_err(DPO_EUNSUP, "discrete Laplace: geometric overflow "
                                        "(probability e^-4096)");
  }
  *V = cnt;
  return rc;
}

/* X ~ Geometric(e^{-1/t}): X = U + t V (CKS Alg. 2), U uniform on [0, t) kept with
 * probability exp(-U/t) (rejected rounds are independent of the value kept) */
int dpo__ct_geom(dpo__ws_t *ws, uint64_t t, uint64_t *x) {
  dpo__ct_tabs();
  for (int rc = DPO_OK;;) {
    const uint64_t U = dpo__below(ws, t);
    const int keep = dpo__kloop64(ws, U, t, &rc);
    if (rc) return rc;
    if (!keep) continue;
    uint64_t V = 0;
    rc = dpo__geom_e(ws, &V);
    if (!rc) *x = U + t * V;
    return rc;
  }
}

int dpo__ct_dlap(dpo__ws_t *ws, uint64_t t, int64_t *out) {
  for (;;) {
    uint64_t X;
    int rc = dpo__ct_geom(ws, t, &X);
    if (rc) return rc;
    const uint64_t B = dpo__w(ws) & 1u;
    if (B & (X == 0)) continue; /* -0 and +0 would double-count 0: a new independent round */
    *out = (int64_t)((X ^ -B) + B);
    return DPO_OK;
  }
}

/* ------------------------------------------------------------ discrete Gaussian */

/* Bernoulli(exp(-N/D)) when N/D >= 89 or not near a small integer estimate: rare */
static int dpo__bexp_big(dpo__ws_t *ws, u256 N, u256 D, int *rc) {
  dpo__ct_st.fallbacks++;
  const u256 D89 = u_mul64(D, 89);
  while (!u_lt(N, D89)) {
    if (!dpo__tab_atom(ws, &dpo__E[89], rc) || *rc) return 0;
    u_sub(N, D89, &N);
  }
  uint64_t n = 0;
  while (!u_lt(N, u_mul64(D, n + 1))) n++;
  u256 F;
  u_sub(N, u_mul64(D, n), &F);
  int r1 = dpo__tab_atom(ws, &dpo__E[n], rc);
  return r1 & dpo__kloop256(ws, F, D, rc);
}

/* CKS Alg. 3 with t = s and its two rejections in one coin (doc/design.md, rule 5): U uniform
 * on [0, s), V ~ Geometric(e^-1), a sign B, X = U + s V, kept with probability exp(-N/D),
 * N = 2 s U + (X - s)^2, D = 2 s^2; as e^{-V} e^{-U/s} e^{-(X - s)^2/(2 s^2)} = e^{-1/2}
 * e^{-X^2/(2 s^2)}, P(X = x) ~ e^{-x^2/(2 s^2)} exactly (-0 rejected).  About 2.1 rounds of
 * ~16 words a draw (0.48 kept); the loop on the fraction in 64 bits when D < 2^53, else 256. */
int dpo__ct_dgauss(dpo__ws_t *ws, uint64_t s, int64_t *out) {
  dpo__ct_tabs();
  const u128 D = 2 * (u128)s * s; /* < 2^89 for s <= 2^44 */
  const int narrow = !(D >> 53);  /* public: a function of s */
  const double Dd = u_dbl(u_from(D));
  for (;;) {
    int rc = DPO_OK, acc;
    const uint64_t U = dpo__below(ws, s);
    uint64_t V = 0;
    if ((rc = dpo__geom_e(ws, &V))) return rc;
    const uint64_t B = dpo__w(ws) & 1u;
    const uint64_t X = U + s * V, ge = -(uint64_t)(X >= s); /* V < 4097: X < 2^57 */
    const u128 diff = ((X - s) & ge) | ((s - X) & ~ge);
    const u128 N = 2 * (u128)s * U + diff * diff; /* < 2^115 */
    const double g = u_dbl(u_from(N)) / Dd;
    if (g < 88.0) { /* the double is within 1 of N/D: floor(N/D) among c0 .. c0 + 2 */
      const uint64_t nc = (uint64_t)g, c0 = nc - (nc > 0);
      const uint64_t n = c0 + (uint64_t)(N >= D * (c0 + 1)) + (uint64_t)(N >= D * (c0 + 2));
      const u128 F = N - D * n; /* < D */
      const int r1 = dpo__tab_atom(ws, &dpo__E[n], &rc);
      acc = r1 & (narrow ? dpo__kloop64(ws, (uint64_t)F, (uint64_t)D, &rc)
                         : dpo__kloop256(ws, u_from(F), u_from(D), &rc));
    } else { /* accepted with probability < e^-87: a rejected round (time independent) */
      acc = dpo__bexp_big(ws, u_from(N), u_from(D), &rc);
    }
    if (rc) return rc;
    if (acc & !(B & (X == 0))) {
      *out = (int64_t)((X ^ -B) + B);
      return DPO_OK;
    }
  }
}

/* TEST ONLY: every table interval is narrow (< 2^-137) and its lower end is the long double value to 1e-15 */
int dpo__ct_tables_ok(void) {
  dpo__ct_tabs();
  for (int i = 0; i < DPO__NE + DPO__N2E + DPO__NF; i++) {
    const int f = i >= DPO__NE + DPO__N2E, p = i < DPO__NE ? i : i - DPO__NE - f * DPO__N2E;
    const dpo__tab_t *e = i < DPO__NE ? &dpo__E[i] : f ? &dpo__EF[p] : &dpo__T2E[p];
    const long double v = i < DPO__NE ? expl(-(long double)p)
                          : f        ? expl(-(long double)p / DPO__NF)
                                     : powl(2.0L / expl(1.0L), p);
    if (f && (dpo__EFh[p].L != e->L || dpo__EFh[p].H != e->H)) return 0;
    u256 w;
    if (u_sub(e->hi, e->lo, &w) || w.w[3] || w.w[2] || w.w[1] >> 54) return 0;
    const long double lo = (long double)u_dbl(e->lo) * 0x1p-255L;
    if (fabsl(lo - v) > 1e-15L * v) return 0; /* u_dbl: 53 bits */
  }
  return 1;
}
