/* dpopt: distributed and differentially private optimization on MPI — umbrella header. */
#ifndef DPOPT_H
#define DPOPT_H

#include "dpopt/status.h"
#include "dpopt/rng.h"
#include "dpopt/config.h"
#include "dpopt/runout.h"
#include "dpopt/data.h"
#include "dpopt/kernels.h"
#include "dpopt/model.h"
#include "dpopt/privacy.h"
#include "dpopt/budget.h"
#include "dpopt/comm.h"
#include "dpopt/optim.h"
#include "dpopt/hamsi.h"
#include "dpopt/mf.h"
#include "dpopt/admm.h"
#include "dpopt/parties.h"
#include "dpopt/spec.h"
#include "dpopt/audit.h"
#include "dpopt/run.h"
#include "dpopt/tune.h"

#endif
