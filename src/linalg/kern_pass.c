/* The full-gradient passes of dpo_kern_loss_grad (dense and CSR), one build per ISA.
 *
 * Each pass is one function per ISA (AVX-512, AVX2+FMA, baseline; kern_pass_body.h at the
 * ISA's own vector width) with every piece inlined: the dots, the 8 loss lanes (exp and
 * log1p as inline vector code) and the axpys of a block used to be three run-time dispatched
 * calls per 8-row block plus two libmvec calls.  What limits the dense pass (issue 16,
 * jobs/bench/gradient, 1e6 x 100 on a 2-core AMD EPYC VM with AVX-512, perf and timings):
 * from L1/L2 it runs at 36-40 GB/s (20-22 ns a row), about the read loop's bandwidth from
 * memory (28-30 GB/s idle), and the block's arithmetic does not overlap the memory stream
 * well (the second touch and the loss lanes issue no misses; the hardware prefetcher runs
 * ahead of demand misses only), so from memory it takes about read time + 40% of its
 * compute time: 0.66-0.78 of the read loop.  Measured alternatives, none better from
 * memory: 8-row column tiles with x in registers (0.26-0.67), two rows sharing x, the next
 * block's dots ahead of this block's lanes, a burst of prefetches per block, prefetches
 * further than 8 KB ahead.  On an Intel Xeon (read loop 9.3-10.5 GB/s, the pass 34 ns a row
 * from L2) a prefetch on the first touch, 2-4 KB ahead, keeps memory busy through the block's
 * arithmetic: 0.76-0.81 -> 0.91-0.97 of the read loop (kernels.c picks it at run time).  The
 * builds' from-cache speeds (ns a row, logistic / squared):
 * AVX-512 20-22 / 14-17, AVX2 20-22 / 16-18 (the generic 8-wide vectors this file replaced
 * went through the stack in the AVX2 build: 50-160), baseline 40 / 30.
 *
 * Arithmetic of a row does not depend on where it sits: a short last block is copied into a
 * zero-padded 8-row scratch and goes through the same code, padding lanes are masked out of
 * the loss.  The builds differ only in rounding (FMA contraction, vector width): each agrees
 * with the naive loop to 1e-12 relative (mpi_tests/model/test_model.c forces each in turn).
 * A build is chosen once per process (dpo_kern_isa); dpo_kern_set_isa or the environment
 * variable DPOPT_KERNELS (avx512, avx2, generic) forces one the CPU supports. */
#include "config.h"

#include "kern_pass.h"

#include "dpopt/status.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DPO__AI static inline __attribute__((always_inline))

#if DPO__GRAD_BLK != 8
#error "the passes assume 8-row blocks"
#endif

/* dpo__live8[n][k] = 1 for k < n: lane masks of a block with n live rows. */
static const double dpo__live8[9][8] __attribute__((aligned(64))) = {
#define DPO__L(n) {0 < n, 1 < n, 2 < n, 3 < n, 4 < n, 5 < n, 6 < n, 7 < n}
    DPO__L(0), DPO__L(1), DPO__L(2), DPO__L(3), DPO__L(4), DPO__L(5), DPO__L(6), DPO__L(7),
    DPO__L(8)
#undef DPO__L
};

/* Norm of one row matching the clip norm (also kernels.c's row-list path). */
double dpo__kern_row_norm(const dpo_shard_t *s, int64_t i, dpo_clipnorm_t norm) {
  if (s->sparse) {
    int64_t a = s->rowptr[i], b = s->rowptr[i + 1];
    if (b == a) return 0.0;
    return norm == DPO_CLIP_L1 ? cblas_dasum((int)(b - a), s->val + a, 1)
                               : cblas_dnrm2((int)(b - a), s->val + a, 1);
  }
  const double *u = s->X + i * (int64_t)s->d;
  return norm == DPO_CLIP_L1 ? cblas_dasum(s->d, u, 1) : cblas_dnrm2(s->d, u, 1);
}

/* Clip factors of the live lanes: c_k *= min(1, C / (|c_k| ||u_k||)). */
static void dpo__clip_lanes(const dpo__pass_t *a, const int64_t *ib, int nb, double *c) {
  for (int k = 0; k < nb; k++) {
    int64_t i = ib[k];
    double nrm = a->rownorm ? a->rownorm[i] : dpo__kern_row_norm(a->s, i, a->norm);
    double gn = fabs(c[k]) * nrm;
    if (gn > a->C) c[k] *= a->C / gn;
  }
}

/* The block's rows: X itself, or a zero-padded copy of a short last block (the same
 * arithmetic per row wherever it sits). */
static inline const double *dpo__blk_src(const dpo__pass_t *a, int64_t b0, int nb) {
  const int64_t ld = a->s->d;
  const double *Xb = a->s->X + b0 * ld;
  if (nb == 8) return Xb;
  memcpy(a->xpad, Xb, (size_t)(nb * ld) * sizeof(double));
  memset(a->xpad + nb * ld, 0, (size_t)((8 - nb) * ld) * sizeof(double));
  return a->xpad;
}

/* The vector helpers are always inlined into one build: no vector crosses a call. */
#pragma GCC diagnostic ignored "-Wpsabi"

/* The pass bodies, once per vector width: DPO__VW doubles a vector (8: zmm, 4: ymm, 2: xmm;
 * GCC's generic 8-wide vectors in the AVX2 build went through the stack, 4x slower). */
#if defined(__x86_64__) && defined(__GNUC__)
#define DPO__X86_BUILDS 1
#define DPO__VW 8
#define DPO__SFX avx512
#define DPO__TGT __attribute__((target("avx512f,avx512dq,avx2,fma")))
#include "kern_pass_body.h"
#define DPO__VW 4
#define DPO__SFX avx2
#define DPO__TGT __attribute__((target("avx2,fma")))
#include "kern_pass_body.h"
#endif
#define DPO__VW 2
#define DPO__SFX generic
#define DPO__TGT
#include "kern_pass_body.h"

/* ---- the builds ---- */

static const dpo__pass_isa_t dpo__isas[] = {
#ifdef DPO__X86_BUILDS
    {"AVX-512", dpo__dense_avx512, dpo__dense_pf_avx512, dpo__csr_avx512, dpo__csr_pf_avx512,
     dpo__softmax_avx512},
    {"AVX2", dpo__dense_avx2, dpo__dense_pf_avx2, dpo__csr_avx2, dpo__csr_pf_avx2,
     dpo__softmax_avx2},
#endif
    {"generic", dpo__dense_generic, dpo__dense_pf_generic, dpo__csr_generic,
     dpo__csr_pf_generic, NULL},
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

int dpo__kern_softmax_dense(int32_t K, const dpo_shard_t *s, const double *W, const int64_t *rows,
                            int64_t nrows, double C, dpo_clipnorm_t norm, const double *rownorm,
                            double *loss_sum, double *g) {
  const int32_t d = s->d, dp = (d + 7) / 8 * 8;
  const int64_t n = rows ? nrows : s->n;
  if (n <= 0 || d <= 0) return DPO_OK;
  /* one allocation, each piece a multiple of 64 bytes: Wp, Gp (K x dp), Xp, T */
  size_t nw = (size_t)K * (size_t)dp, nx = (size_t)DPO__SM_BLK * (size_t)dp,
         nt = (size_t)K * DPO__SM_BLK;
  double *buf = aligned_alloc(64, (2 * nw + nx + nt) * sizeof(double));
  if (!buf) return dpo_err(DPO_ENOMEM, "model softmax: out of memory");
  double *Wp = buf, *Gp = buf + nw;
  memset(buf, 0, 2 * nw * sizeof(double));
  for (int32_t k = 0; k < K; k++)
    memcpy(Wp + (size_t)k * dp, W + (size_t)k * d, (size_t)d * sizeof(double));
  dpo__softmax_t a = {.K = K, .d = d, .dp = dp, .n = n, .rows = rows, .X = s->X, .y = s->y,
                      .Wp = Wp, .C = C, .norm = norm, .rownorm = rownorm, .Gp = Gp,
                      .Xp = buf + 2 * nw, .T = buf + 2 * nw + nx};
  *loss_sum += dpo__pass_isa()->softmax(&a);
  for (int32_t k = 0; k < K; k++)
    for (int32_t j = 0; j < d; j++) g[(size_t)k * d + j] += Gp[(size_t)k * dp + j];
  free(buf);
  return DPO_OK;
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
