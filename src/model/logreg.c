/* Regularized logistic regression (001, Sec. 5):
 *   f(x; u, z) = log(1 + exp(-z u'x)) + lambda ||x||^2,  z in {-1, +1}.
 * Data-term gradient -z sigma(-z u'x) u; the coefficient is bounded by 1 in absolute value,
 * which gives the state-independent sensitivity (5.2). */
#include "model/model_impl.h"

/* Data-term Hessian (1/n) sum sigma(1 - sigma) u u' <= (1/4) (1/n) sum u u', whose largest
 * eigenvalue is <= max ||u||_2^2; plus 2 lambda from the regularizer. */
static double logreg_L_bound(double lambda, double B2) { return 0.25 * B2 * B2 + 2.0 * lambda; }

/* (001, eq. 5.2): ||grad f(x;u,z) - grad f(x;u',z')||_1 <= ||u||_1 + ||u'||_1 <= 2 B1. */
static double logreg_l1_sens(double B1) { return 2.0 * B1; }

/* |coefficient| <= 1: ||grad f_i||_2 <= ||u||_2 <= B2. */
static double logreg_grad_l2(double B2) { return B2; }

const dpo__model_ops_t dpo__model_logreg = {
    .name = "logreg",
    .loss = DPO_LOSS_LOGISTIC,
    .binary = 1,
    .L_bound = logreg_L_bound,
    .grad_l1_sens = logreg_l1_sens,
    .grad_l2_bound = logreg_grad_l2,
};
