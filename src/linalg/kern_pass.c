/* The full-gradient passes of dpo_kern_loss_grad (dense and CSR), one build per ISA.
 *
 * Each pass is one function per ISA (AVX-512, AVX2+FMA, baseline) with every piece inlined:
 * the per-block pieces (dots, logistic lanes, axpys) used to be three run-time dispatched
 * calls per 8-row block, and the dots loaded x again for every row.  Measured with perf on
 * jobs/bench/gradient (1e6 x 100, 2-core AMD EPYC with AVX-512, issue 16): from L2 the old
 * pass ran at 32 GB/s, about the read loop's bandwidth from memory, and the dots (one row at
 * a time: one load of x per load of X) took 3.4x the time of the axpys.  So the pass was
 * compute bound; now the dots run over 32-column tiles of x held in registers for 8 rows at
 * once, so each load of X is one FMA, as in the axpys.
 *
 * Arithmetic of a row does not depend on where it sits: a short last block is copied into a
 * zero-padded 8-row scratch and goes through the same code, padding lanes are masked out of
 * the loss.  The builds differ only in rounding (FMA contraction, vector width): each agrees
 * with the naive loop to 1e-12 relative (mpi_tests/unit/test_model.c forces each in turn).
 * A build is chosen once per process (dpo_kern_isa); dpo_kern_set_isa or the environment
 * variable DPOPT_KERNELS (avx512, avx2, generic) forces one the CPU supports. */
#include "config.h"

#include "kern_pass.h"

#include "dpopt/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef double dpo__v4 __attribute__((vector_size(32)));
typedef double dpo__v8 __attribute__((vector_size(64)));
#define DPO__LD4(p) ({ dpo__v4 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define DPO__ST4(p, v) do { dpo__v4 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
#define DPO__LD8(p) ({ dpo__v8 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define DPO__ST8(p, v) do { dpo__v8 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
/* Halves of an 8-vector added: lanes (k, k + 4). */
#define DPO__FOLD8(a) \
  (__builtin_shufflevector((a), (a), 0, 1, 2, 3) + __builtin_shufflevector((a), (a), 4, 5, 6, 7))
#define DPO__AI static inline __attribute__((always_inline))

#if DPO__GRAD_BLK != 8
#error "the passes assume 8-row blocks"
#endif

/* dpo__live8[n][k] = 1 for k < n: lane masks of a block with n live rows. */
static const double dpo__live8[9][8] = {
#define DPO__L(n) {0 < n, 1 < n, 2 < n, 3 < n, 4 < n, 5 < n, 6 < n, 7 < n}
    DPO__L(0), DPO__L(1), DPO__L(2), DPO__L(3), DPO__L(4), DPO__L(5), DPO__L(6), DPO__L(7),
    DPO__L(8)
#undef DPO__L
};

typedef long long dpo__i8 __attribute__((vector_size(64)));
/* Lane select m ? a : b for a lane mask m (all ones or zeros) from a vector comparison. */
#define DPO__SEL(m, a, b) ((dpo__v8)(((m) & (dpo__i8)(a)) | (~(m) & (dpo__i8)(b))))
/* The vector helpers below are always inlined into one build: no vector crosses a call. */
#pragma GCC diagnostic ignored "-Wpsabi"

/* exp(x) for the 8 lanes, x <= 0 (here x = -|m|): 0 below -708 (where exp(x) < 3.3e-308, so
 * the logistic pieces it feeds are exact or that small, as with libm past its underflow); x = k ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 split so k ln2_hi is exact),
 * exp(r) by its Taylor polynomial to degree 13 (remainder < 4e-18 relative), times 2^k built
 * in the exponent bits.  A few ulp from libm's exp. */
DPO__AI dpo__v8 dpo__exp8(dpo__v8 x) {
  const dpo__v8 lo = {-708.0, -708.0, -708.0, -708.0, -708.0, -708.0, -708.0, -708.0};
  dpo__i8 under = x < lo;
  x = DPO__SEL(under, lo, x);
  const double shifter = 0x1.8p52;
  dpo__v8 kd = x * 0x1.71547652b82fep0 + shifter; /* round(x / ln2) in the low bits */
  dpo__i8 ki = (dpo__i8)kd - (dpo__i8)(dpo__v8){shifter, shifter, shifter, shifter, shifter,
                                                 shifter, shifter, shifter};
  kd -= shifter;
  dpo__v8 r = x - kd * 0x1.62e42fefa3800p-1;
  r = r - kd * 0x1.ef35793c76730p-45;
  static const double c[14] = {1.0, 1.0, 0x1p-1, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720,
                               1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800,
                               1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
  dpo__v8 p = r * c[13] + c[12];
  for (int k = 11; k >= 0; k--) p = p * r + c[k];
  dpo__i8 sc = (ki + 1023) << 52;
  return (dpo__v8)(~under & (dpo__i8)(p * (dpo__v8)sc));
}

/* log1p(e) for the 8 lanes, e in (0, 1]: log(1 + e) = 2 atanh(e / (2 + e)), or for e above
 * sqrt(2) - 1, ln 2 + 2 atanh((e - 1) / (e + 3)) (= ln 2 + log((1 + e) / 2)); so |s| <= 0.172
 * and the series 2 s sum_k s^2k / (2k + 1) to k = 10 leaves < 3e-17 relative.  Never forms
 * 1 + e, so tiny e keep their digits. */
DPO__AI dpo__v8 dpo__log1p8(dpo__v8 e) {
  const dpo__v8 one = {1, 1, 1, 1, 1, 1, 1, 1}, zero = {0};
  dpo__i8 big = e > 0x1.6a09e667f3bcdp-2;
  dpo__v8 num = DPO__SEL(big, e - one, e), den = DPO__SEL(big, e + 3.0, e + 2.0);
  dpo__v8 sv = num / den, s2 = sv * sv;
  dpo__v8 p = s2 * (1.0 / 21) + 1.0 / 19;
  for (int k = 8; k >= 0; k--) p = p * s2 + 1.0 / (2 * k + 1);
  dpo__v8 base = DPO__SEL(big, zero + 0x1.62e42fefa39efp-1, zero);
  return base + 2.0 * sv * p;
}

/* Loss pieces of the 8 lanes of a block: c_k = d phi / d t at t_k and phi_k masked by live.
 * Logistic, with m = y t and e = exp(-|m|) in (0, 1] (never overflows):
 *   phi = log1p(e) + max(-m, 0),  c = -y sigma(-m) = -y (m >= 0 ? e : 1) / (1 + e).
 * Inline vector code at this build's width (it was a libmvec call per block: with it the
 * block's compute was one long chain with no loads, during which memory idled; perf and
 * jobs/bench/gradient, issue 16).  Squared: c = t - y, phi = (t - y)^2 / 2.  Returns the
 * block's loss in a fixed order. */
DPO__AI double dpo__lanes(dpo_loss_t loss, const double *restrict t, const double *restrict y,
                          const double *restrict live, double *restrict c) {
  dpo__v8 ph;
  dpo__v8 tv = DPO__LD8(t), yv = DPO__LD8(y), lv = DPO__LD8(live), zero = {0};
  if (loss == DPO_LOSS_LOGISTIC) {
    dpo__v8 m = yv * tv;
    dpo__v8 am = DPO__SEL(m < zero, -m, m);
    dpo__v8 e = dpo__exp8(-am);
    dpo__v8 num = DPO__SEL(m >= zero, e, zero + 1.0);
    DPO__ST8(c, -yv * (num / (1.0 + e)));
    ph = lv * (dpo__log1p8(e) + DPO__SEL(m < zero, -m, zero));
  } else {
    dpo__v8 r = tv - yv;
    DPO__ST8(c, lv * r);
    ph = lv * (0.5 * r * r);
  }
  return ((ph[0] + ph[1]) + (ph[2] + ph[3])) + ((ph[4] + ph[5]) + (ph[6] + ph[7]));
}

/* Clip factors of the live lanes: c_k *= min(1, C / (|c_k| ||u_k||)). */
DPO__AI void dpo__clip_lanes(const dpo__pass_t *a, const int64_t *ib, int nb, double *c) {
  for (int k = 0; k < nb; k++) {
    int64_t i = ib[k];
    double nrm = a->rownorm ? a->rownorm[i] : dpo__kern_row_norm(a->s, i, a->norm);
    double gn = fabs(c[k]) * nrm;
    if (gn > a->C) c[k] *= a->C / gn;
  }
}

/* t_k = u_k'x for the 8 rows of a block, one row at a time (two 8-lane accumulators over
 * 16-column steps, then the fold, a 4-wide and a scalar tail).  Row after row keeps the
 * first touch one sequential stream: over 32-column tiles of x held in registers for the
 * 8 rows at once (one load of X per FMA) the pass ran 5-10% faster from L1 but at 0.26-0.67
 * of the read loop from memory instead of 0.75, the hardware prefetcher losing the 8
 * interleaved streams; so did two rows sharing the loads of x. */
DPO__AI void dpo__dots8(int32_t d, const double *Xb, const double *x, double *t) {
  const int32_t d8 = d & ~7;
  for (int64_t i = 0; i < 8; i++) {
    const double *u = Xb + i * (int64_t)d;
    dpo__v8 a0 = {0}, a1 = {0};
    int32_t j = 0;
    for (; j + 16 <= d8; j += 16) {
      a0 += DPO__LD8(u + j) * DPO__LD8(x + j);
      a1 += DPO__LD8(u + j + 8) * DPO__LD8(x + j + 8);
    }
    if (j < d8) a0 += DPO__LD8(u + j) * DPO__LD8(x + j);
    dpo__v8 a = a0 + a1;
    dpo__v4 b = DPO__FOLD8(a);
    j = d8;
    if (j + 4 <= d) {
      b += DPO__LD4(u + j) * DPO__LD4(x + j);
      j += 4;
    }
    double sum = (b[0] + b[1]) + (b[2] + b[3]);
    for (; j < d; j++) sum += u[j] * x[j];
    t[i] = sum;
  }
}

/* g += sum_k c_k u_k over the 8 rows, one 32-column tile of g in registers at a time.  With
 * pfd > 0 each load of X comes with a prefetch pfd doubles ahead: the loads of this second
 * touch hit L1, so without it the memory would idle while the block is computed on (the
 * hardware prefetcher runs ahead only of demand misses); spread over the loads rather than a
 * burst per block, which filled the miss buffers and ran slower. */
/* Software prefetch pfd doubles ahead of a load of X, if on (locality 1: prefetcht2). */
#define DPO__PFX(q) do { if (pfd) __builtin_prefetch((q) + pfd, 0, 1); } while (0)
DPO__AI void dpo__axpys8(int32_t d, const double *Xb, const double *c, double *g, int64_t pfd) {
  const int64_t ld = d;
  int32_t j = 0;
  for (; j + 32 <= d; j += 32) {
    dpo__v8 g0 = DPO__LD8(g + j), g1 = DPO__LD8(g + j + 8), g2 = DPO__LD8(g + j + 16),
            g3 = DPO__LD8(g + j + 24);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
      const double *u = Xb + k * ld + j;
      dpo__v8 w = {c[k], c[k], c[k], c[k], c[k], c[k], c[k], c[k]};
      DPO__PFX(u);
      DPO__PFX(u + 8);
      DPO__PFX(u + 16);
      DPO__PFX(u + 24);
      g0 += w * DPO__LD8(u);
      g1 += w * DPO__LD8(u + 8);
      g2 += w * DPO__LD8(u + 16);
      g3 += w * DPO__LD8(u + 24);
    }
    DPO__ST8(g + j, g0);
    DPO__ST8(g + j + 8, g1);
    DPO__ST8(g + j + 16, g2);
    DPO__ST8(g + j + 24, g3);
  }
  for (; j + 8 <= d; j += 8) {
    dpo__v8 g0 = DPO__LD8(g + j);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
      dpo__v8 w = {c[k], c[k], c[k], c[k], c[k], c[k], c[k], c[k]};
      DPO__PFX(Xb + k * ld + j);
      g0 += w * DPO__LD8(Xb + k * ld + j);
    }
    DPO__ST8(g + j, g0);
  }
  if (j + 4 <= d) {
    dpo__v4 g0 = DPO__LD4(g + j);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
      dpo__v4 w = {c[k], c[k], c[k], c[k]};
      g0 += w * DPO__LD4(Xb + k * ld + j);
    }
    DPO__ST4(g + j, g0);
    j += 4;
  }
  for (; j < d; j++) {
    double sum = g[j];
    for (int k = 0; k < 8; k++) sum += c[k] * Xb[k * ld + j];
    g[j] = sum;
  }
}

/* Dense pass over rows [r0, r1) (r0 a multiple of 8).  Software prefetch, when on, fetches
 * the block pf_bytes ahead into L2 (locality 1) before the block's first touch. */
/* The block's rows: X itself, or a zero-padded copy of a short last block. */
DPO__AI const double *dpo__blk_src(const dpo__pass_t *a, int64_t b0, int nb) {
  const int64_t ld = a->s->d;
  const double *Xb = a->s->X + b0 * ld;
  if (nb == 8) return Xb;
  memcpy(a->xpad, Xb, (size_t)(nb * ld) * sizeof(double));
  memset(a->xpad + nb * ld, 0, (size_t)((8 - nb) * ld) * sizeof(double));
  return a->xpad;
}
DPO__AI void dpo__dense_body(const dpo__pass_t *a, int64_t r0, int64_t r1, double *lsum,
                             double *g) {
  const dpo_shard_t *s = a->s;
  const int32_t d = s->d;
  double t[8] __attribute__((aligned(64))), c[8] __attribute__((aligned(64))), yb[8];
  int64_t ib[8];
  double L = *lsum;
  for (int64_t b0 = r0; b0 < r1; b0 += 8) {
    int nb = r1 - b0 < 8 ? (int)(r1 - b0) : 8;
    const double *Xb = dpo__blk_src(a, b0, nb);
    dpo__dots8(d, Xb, a->x, t); /* first touch: the block comes into L1 */
    for (int k = 0; k < 8; k++) {
      yb[k] = k < nb ? s->y[b0 + k] : 0.0;
      ib[k] = b0 + k;
    }
    L += dpo__lanes(a->loss, t, yb, dpo__live8[nb], c);
    if (a->C > 0) dpo__clip_lanes(a, ib, nb, c);
    for (int k = nb; k < 8; k++) c[k] = 0.0;
    /* second touch, from L1, prefetching the rows pf_bytes ahead */
    dpo__axpys8(d, Xb, c, g, nb == 8 ? a->pf_bytes / (int64_t)sizeof(double) : 0);
  }
  *lsum = L;
}

/* CSR pass over rows [r0, r1) of the row list (or of the shard): blocks of 8 rows, the dots
 * (two accumulators a row, rows independent so the core overlaps them), the 8 loss lanes
 * inline, then the scatters g[col] += c v.  perf: the time is in the gathers of x and the
 * scatters into g (latency of L1 for a9a-like rows, of L2/L3 for 1e5 columns).  A software
 * prefetch of x[col] and g[col] one to four blocks ahead ran 1.3-1.5x slower on both
 * (jobs/bench/csr, issue 16). */
DPO__AI void dpo__csr_body(const dpo__pass_t *a, int64_t r0, int64_t r1, double *lsum,
                           double *g) {
  const dpo_shard_t *s = a->s;
  const int64_t *rp = s->rowptr;
  const int32_t *ci = s->colind;
  const double *val = s->val, *x = a->x;
  double t[8] __attribute__((aligned(64))), c[8] __attribute__((aligned(64))), yb[8];
  int64_t ib[8];
  double L = *lsum;
  for (int64_t b0 = r0; b0 < r1; b0 += 8) {
    int nb = r1 - b0 < 8 ? (int)(r1 - b0) : 8;
    for (int k = 0; k < 8; k++) {
      if (k >= nb) { /* padding lanes: masked out of the sum, c = 0 */
        t[k] = yb[k] = 0.0;
        ib[k] = -1;
        continue;
      }
      int64_t i = a->rows ? a->rows[b0 + k] : b0 + k;
      int64_t p = rp[i], e = rp[i + 1];
      double s0 = 0.0, s1 = 0.0;
      for (; p + 2 <= e; p += 2) {
        s0 += val[p] * x[ci[p]];
        s1 += val[p + 1] * x[ci[p + 1]];
      }
      if (p < e) s0 += val[p] * x[ci[p]];
      ib[k] = i;
      t[k] = s0 + s1;
      yb[k] = s->y[i];
    }
    L += dpo__lanes(a->loss, t, yb, dpo__live8[nb], c);
    if (a->C > 0) dpo__clip_lanes(a, ib, nb, c);
    for (int k = 0; k < nb; k++) {
      double ck = c[k];
      if (ck == 0.0) continue;
      int64_t i = ib[k];
      for (int64_t p = rp[i]; p < rp[i + 1]; p++) g[ci[p]] += ck * val[p];
    }
  }
  *lsum = L;
}

/* ---- the builds ---- */
#define DPO__BUILD(sfx, attr)                                                                  \
  attr static void dpo__dense_##sfx(const dpo__pass_t *a, int64_t r0, int64_t r1,             \
                                    double *lsum, double *g) {                                 \
    dpo__dense_body(a, r0, r1, lsum, g);                                                       \
  }                                                                                            \
  attr static void dpo__csr_##sfx(const dpo__pass_t *a, int64_t r0, int64_t r1, double *lsum, \
                                  double *g) {                                                 \
    dpo__csr_body(a, r0, r1, lsum, g);                                                         \
  }

#if defined(__x86_64__) && defined(__GNUC__)
#define DPO__X86_BUILDS 1
DPO__BUILD(avx512, __attribute__((target("avx512f,avx512dq,avx2,fma"))))
DPO__BUILD(avx2, __attribute__((target("avx2,fma"))))
#endif
DPO__BUILD(generic, )

static const dpo__pass_isa_t dpo__isas[] = {
#ifdef DPO__X86_BUILDS
    {"AVX-512", dpo__dense_avx512, dpo__csr_avx512},
    {"AVX2", dpo__dense_avx2, dpo__csr_avx2},
#endif
    {"generic", dpo__dense_generic, dpo__csr_generic},
};
#define DPO__NISA ((int)(sizeof dpo__isas / sizeof dpo__isas[0]))

static int dpo__isa_ok(int k) {
#ifdef DPO__X86_BUILDS
  __builtin_cpu_init();
  if (k == 0) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  if (k == 1) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return k == DPO__NISA - 1;
}

static int dpo__isa_cur = -1;

static int dpo__isa_index(const char *name) {
  static const char *alias[][2] = {{"avx512", "AVX-512"}, {"avx2", "AVX2"}, {"generic", "generic"}};
  for (size_t k = 0; k < sizeof alias / sizeof alias[0]; k++)
    if (!strcasecmp(name, alias[k][0])) name = alias[k][1];
  for (int k = 0; k < DPO__NISA; k++)
    if (!strcasecmp(name, dpo__isas[k].name)) return k;
  return -1;
}

const dpo__pass_isa_t *dpo__pass_isa(void) {
  if (dpo__isa_cur < 0) {
    const char *env = getenv("DPOPT_KERNELS");
    int k = env && *env ? dpo__isa_index(env) : -1;
    if (k < 0 || !dpo__isa_ok(k)) /* unknown or unsupported: the best the CPU runs */
      for (k = 0; !dpo__isa_ok(k); k++) {
      }
    dpo__isa_cur = k;
  }
  return &dpo__isas[dpo__isa_cur];
}

const char *dpo_kern_isa(void) { return dpo__pass_isa()->name; }

int dpo_kern_set_isa(const char *name) {
  if (!name) { /* back to the default: DPOPT_KERNELS or the CPU's best */
    dpo__isa_cur = -1;
    (void)dpo__pass_isa();
    return DPO_OK;
  }
  int k = dpo__isa_index(name);
  if (k < 0) return dpo_err(DPO_EINVAL, "dpo_kern_set_isa: unknown kernel build '%s'", name);
  if (!dpo__isa_ok(k))
    return dpo_err(DPO_EINVAL, "dpo_kern_set_isa: this CPU cannot run the %s build", name);
  dpo__isa_cur = k;
  return DPO_OK;
}
