# One whole DP-SGD run of Opacus on a dpopt binary dense file, for jobs/bench/e2e: load the
# file, calibrate the noise, one epoch of Poisson batches, write the model. Opacus's own API as
# its tutorials use it (a TensorDataset in a DataLoader, PrivacyEngine.make_private_with_epsilon,
# its default PRV accountant, torch.optim.SGD); logistic regression is nn.Linear(d, 1) with its
# bias and BCEWithLogitsLoss.
#   python3 e2e_opacus.py DATA OUTDIR EPS DELTA BATCH EPOCHS CLIP THREADS SEED
# Prints one line: "TIMES start=.. load=.. calibrate=.. solve=.. write=.. sigma=.. steps=.."
# (seconds; start: the imports). The model is written as dpopt writes a logistic one (the d
# weights, then the bias; numpy.loadtxt reads both).
import os
import sys
import time

t0 = time.perf_counter()
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:
    import opt_einsum  # noqa: F401  (Opacus imports it; jobs/bench/e2e supplies a stand-in)
except ImportError:
    sys.exit("e2e_opacus.py: opt_einsum is not importable (jobs/bench/e2e adds a stand-in)")
from opacus import PrivacyEngine

from e2e_data import load


def main():
    data, out = sys.argv[1], sys.argv[2]
    eps, delta = float(sys.argv[3]), float(sys.argv[4])
    batch, epochs, clip = int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
    torch.set_num_threads(int(sys.argv[8]))
    torch.manual_seed(int(sys.argv[9]))
    t1 = time.perf_counter()
    X, y = load(data)  # torch's default float32; labels in {0, 1} for BCEWithLogitsLoss
    X, y = torch.from_numpy(X.astype(np.float32)), torch.from_numpy((y > 0).astype(np.float32))
    n, d = X.shape
    t2 = time.perf_counter()
    model = nn.Linear(d, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    loader = DataLoader(TensorDataset(X, y), batch_size=batch)
    engine = PrivacyEngine()
    model, opt, loader = engine.make_private_with_epsilon(
        module=model, optimizer=opt, data_loader=loader, epochs=epochs,
        target_epsilon=eps, target_delta=delta, max_grad_norm=clip)
    t3 = time.perf_counter()
    crit = nn.BCEWithLogitsLoss()
    steps = 0
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = crit(model(xb).squeeze(1), yb)
            loss.backward()
            opt.step()
            steps += 1
    t4 = time.perf_counter()
    w = model._module.weight.detach().double().numpy().ravel()
    b = float(model._module.bias.detach()[0])
    os.makedirs(out, exist_ok=True)
    np.savetxt(os.path.join(out, "model.txt"), np.append(w, b))
    t5 = time.perf_counter()
    print("TIMES start=%.3f load=%.3f calibrate=%.3f solve=%.3f write=%.3f sigma=%.6f steps=%d"
          % (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, opt.noise_multiplier, steps))


main()
