"""CPU per example and ADMM iteration of the compiled LP-SparseMAP / LP-MAP solve on
bibtex's fully connected graph (159 labels, 12,561 PAIR factors), cold and warm-started.

Scores: unary scores 3 X W of a ridge regression of 2Y - 1 on bibtex's features (a
stand-in for a trained model: about 1-3 labels on per example, 98 % of the variables at
exactly 0 at the solution), couplings 0.02 x the labels' pointwise mutual information,
clipped to [-0.5, 0.5]; 100 training examples; ADMM tol 1e-6, 1000 iterations; the warm
start solves the scores x 1.02 from the first solution. The skipped PAIR factors at the
corner leave the iterations and the solution unchanged (``u_sum`` and the iteration
counts are those of the code before them). Compare two source trees by running the
script with each on ``PYTHONPATH``, alternately; one JSON line per run is appended to
``results/admm_pair_corner.jsonl``.

    PYTHONPATH=<tree> python benchmarks/bench_admm_pair_corner.py
"""
import os
from pathlib import Path
import sys, time, json
import numpy as np, scipy.sparse as sp
from skstruct.datasets import load_multilabel
from skstruct.decoders._factor_graph.admm import FlatFactorGraph
from skstruct.decoders._factor_graph.admm_compiled import admm_batch_compiled
import skstruct
tr = load_multilabel("bibtex", "train", path=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"))
X = sp.csr_matrix(tr.data); Y = np.asarray(tr.target, float)
n, L = Y.shape
# ridge unaries: W = (X'X + I)^-1 X'(2Y-1) (a stand-in for a trained model's scores)
A = (X.T @ X).toarray() + 1.0 * np.eye(X.shape[1])
W = np.linalg.solve(A, X.T @ (2 * Y - 1))
m = 100
eta_u = 3.0 * np.asarray(X[:m] @ W)
first, second = np.triu_indices(L, k=1)
g = FlatFactorGraph(L, pair_var=np.stack([first, second], axis=1))
co = (Y.T @ Y + 1) / n; p = Y.mean(0)
pmi = np.log(co / np.outer(p + 1 / n, p + 1 / n))
eta_pair = np.tile(np.clip(0.02 * pmi[first, second], -0.5, 0.5), (m, 1))
out = {"skstruct": skstruct.__file__}
for mm in (False, True):
    o = dict(tol=1e-6, max_iter=1000, map_mode=mm, keep_state=False)
    admm_batch_compiled(g, eta_u[:2], eta_pair[:2], **o)
    t = time.process_time(); r = admm_batch_compiled(g, eta_u, eta_pair, **o); cold = time.process_time() - t
    t = time.process_time(); r2 = admm_batch_compiled(g, eta_u * 1.02, eta_pair, warm_start=r, **o); warm = time.process_time() - t
    out[("lp_map" if mm else "lp_sparsemap")] = dict(cold_cpu=cold, warm_cpu=warm, cold_iter=float(r.n_iter.mean()), warm_iter=float(r2.n_iter.mean()),
        us_per_example_iter_cold=1e6 * cold / r.n_iter.sum(), us_per_example_iter_warm=1e6 * warm / r2.n_iter.sum(),
        frac_u_zero=float((r.u == 0).mean()), mean_on=float((r.u > 0.5).sum(1).mean()), u_sum=float(r2.u.sum()))
out["load"] = os.getloadavg()
print(json.dumps(out))
results = Path(__file__).parent / "results"
with open(results / "admm_pair_corner.jsonl", "a") as handle:
    handle.write(json.dumps(out) + "\n")
