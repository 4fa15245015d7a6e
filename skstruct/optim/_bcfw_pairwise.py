"""Block-coordinate pairwise Frank–Wolfe with each block's active set kept: for oracles
that cost far more than a step (LP-MAP by ADMM), the passes between two oracle passes
reuse the outputs each block already holds."""

import numpy as np

from ._bcfw_pairwise_kernels import cached_passes, factored_dots, move_by, segment_dots

__all__ = ["MAX_CACHED_PASSES", "ORACLE_GROUP", "PairwiseBCFW", "keeps_warm_starts",
           "oracle_group_size", "per_example_warm_starts"]

#: Passes over the kept outputs after each pass of the oracle, at most.
MAX_CACHED_PASSES = 20

#: Outputs a block holds at most (past it, or past its bytes, it is collapsed).
MAX_HELD_OUTPUTS = 32

#: Outputs of largest weight a collapsed block keeps beside the merged rest.
COLLAPSE_KEEPS = 8

#: Two outputs are taken for one when their task losses and feature vectors differ by
#: at most this in every entry: an iterative oracle (LP-MAP by ADMM, to its tolerance
#: 1e-6 by default) returns the same vertex a little differently from call to call.
SAME_OUTPUT_TOL = 1e-6

#: The cached passes stop when one raises the dual by less than this fraction of what
#: the oracle's pass raised it.
CACHED_PASS_GAIN = 0.01

#: Examples whose oracle calls a pass of the oracle makes together, at most: one call
#: of the decoder (which solves its examples in parallel) per group, always the same
#: examples (a warm start per group), at the w before the group's steps.
ORACLE_GROUP = 32

#: The steps of a group see an oracle as old as the group's earlier steps: groups take
#: at most this fraction of the examples.
GROUP_FRACTION = 0.01


def oracle_group_size(n_examples):
    """Examples per group of the oracle pass: :data:`ORACLE_GROUP`, or fewer on fewer
    than ORACLE_GROUP / :data:`GROUP_FRACTION` examples (at least one)."""
    return int(min(ORACLE_GROUP, max(1, int(n_examples * GROUP_FRACTION))))


def keeps_warm_starts(risk):
    """Whether the loss's oracle keeps a warm start per example
    (``loss.warm_started_oracle(decoder)``: LP-MAP by ADMM, a call costing hundreds of
    steps)."""
    offer = getattr(risk.loss, "warm_started_oracle", None)
    return offer is not None and bool(offer(risk.decoder))


def per_example_warm_starts(risk):
    """One empty warm-start dict per example when :func:`keeps_warm_starts`, else None."""
    return [{} for _ in range(risk.n_examples)] if keeps_warm_starts(risk) else None


def _example_groups(n, size, seed=0):
    """A fixed random partition of range(n) into groups of ``size`` (the last smaller)."""
    order = np.random.default_rng(seed).permutation(n)
    return [np.sort(order[k:k + size]) for k in range(0, n, size)]


class _Block:
    """The dual block of one example as a convex combination of outputs (its active
    set), each kept as its feature vector ψ_k = A_iᵀ μ_k (the parameters its parts
    score), with its task loss Δ_k, weight α_k > 0 and the Gram matrix
    G_kl = ⟨ψ_k, ψ_l⟩ of the set.

    A vector is kept factored, ψ_k = x ⊗ r_k + p_k: x (the example's own, shared by
    all its outputs: entries ``x_pos[f] + j`` of ψ are x_val[f] r_k[j]) and, per output,
    the sparse r_k and the sparse rest p_k (disjoint from the x ⊗ r entries). For a
    factor graph's features x is the example's feature row, r_k its variables' parts u
    and p_k = [u | v | e]: an output takes nnz(u) + nnz(p) entries, not
    nnz(x) nnz(u) + nnz(p). A feature map without the factored form gives p_k = ψ_k
    and no x. Then ⟨ψ_k, ψ_l⟩ = ‖x‖² ⟨r_k, r_l⟩ + ⟨p_k, p_l⟩, a score ⟨μ_k, η_i⟩ is
    ⟨ψ_k, w⟩ and the curvature of a step ‖A_iᵀ d‖² is G_ss + G_aa − 2 G_sa.

    The outputs' r and p are kept end to end (output k's r at ``r_ptr[k]:r_ptr[k + 1]``
    of ``r_idx``, ``r_val``; its p likewise), the layout of the cached passes."""

    __slots__ = ("x_pos", "x_val", "x_norm", "r_ptr", "r_idx", "r_val", "p_ptr",
                 "p_idx", "p_val", "losses", "weights", "gram")

    def __init__(self, x_pos=None, x_val=None):
        self.x_pos = np.zeros(0, dtype=np.int64) if x_pos is None else x_pos
        self.x_val = np.zeros(0) if x_val is None else x_val
        self.x_norm = float(self.x_val @ self.x_val)
        self.r_ptr = np.zeros(1, dtype=np.int64)
        self.r_idx = np.zeros(0, dtype=np.int64)
        self.r_val = np.zeros(0)
        self.p_ptr = np.zeros(1, dtype=np.int64)
        self.p_idx = np.zeros(0, dtype=np.int64)
        self.p_val = np.zeros(0)
        self.losses = np.zeros(0)
        self.weights = []
        self.gram = np.zeros((0, 0))

    @property
    def nbytes(self):
        """Bytes of the factored feature vectors and of the Gram matrix."""
        return sum(a.nbytes for a in (self.gram, self.x_pos, self.x_val, self.r_ptr,
                                      self.r_idx, self.r_val, self.p_ptr, self.p_idx,
                                      self.p_val))

    def factors(self, k):
        """Output k's (r_idx, r_val, p_idx, p_val), views."""
        a, b = self.r_ptr[k], self.r_ptr[k + 1]
        c, d = self.p_ptr[k], self.p_ptr[k + 1]
        return self.r_idx[a:b], self.r_val[a:b], self.p_idx[c:d], self.p_val[c:d]

    def vector(self, k):
        """The feature vector ψ_k of output k in full: (indices, values)."""
        r_idx, r_val, p_idx, p_val = self.factors(k)
        return (np.concatenate([(self.x_pos[:, None] + r_idx[None, :]).ravel(), p_idx]),
                np.concatenate([np.outer(self.x_val, r_val).ravel(), p_val]))

    def add(self, factors, loss, scratch, weight=0.0, merge=True):
        """The index of the output of factors (r_idx, r_val, p_idx, p_val) and task
        loss ``loss`` in the set (to :data:`SAME_OUTPUT_TOL`), added with ``weight`` if
        new (``merge=False``: added in any case). ``scratch``: (r scratch, p scratch),
        zeros, left so."""
        r_idx, r_val, p_idx, p_val = factors
        r_scratch, p_scratch = scratch
        r_scratch[r_idx] = r_val
        p_scratch[p_idx] = p_val
        found = None
        if merge:
            for k in np.flatnonzero(np.abs(self.losses - loss) <= SAME_OUTPUT_TOL):
                k_r_idx, k_r_val, k_p_idx, k_p_val = self.factors(k)
                if (_within(r_scratch, r_idx, r_val, k_r_idx, k_r_val, SAME_OUTPUT_TOL)
                        and _within(p_scratch, p_idx, p_val, k_p_idx, k_p_val,
                                    SAME_OUTPUT_TOL)):
                    found = int(k)
                    break
        if found is None:
            row = (self.x_norm * segment_dots(self.r_ptr, self.r_idx, self.r_val, r_scratch)
                   + segment_dots(self.p_ptr, self.p_idx, self.p_val, p_scratch))
            row = np.append(row, self.x_norm * float(r_val @ r_val) + float(p_val @ p_val))
        r_scratch[r_idx] = 0.0
        p_scratch[p_idx] = 0.0
        if found is not None:
            return found
        m = len(self.weights)
        gram = np.empty((m + 1, m + 1))
        gram[:m, :m] = self.gram
        gram[m, :], gram[:, m] = row, row
        self.gram = gram
        self.r_idx = np.concatenate([self.r_idx, r_idx])
        self.r_val = np.concatenate([self.r_val, r_val])
        self.r_ptr = np.append(self.r_ptr, self.r_ptr[-1] + r_idx.size)
        self.p_idx = np.concatenate([self.p_idx, p_idx])
        self.p_val = np.concatenate([self.p_val, p_val])
        self.p_ptr = np.append(self.p_ptr, self.p_ptr[-1] + p_idx.size)
        self.losses = np.append(self.losses, float(loss))
        self.weights.append(float(weight))
        return m

    def scores(self, w):
        """⟨ψ_k, w⟩ + Δ_k of every held output: their loss-augmented scores."""
        return factored_dots(self.x_pos, self.x_val, self.r_ptr, self.r_idx, self.r_val,
                             self.p_ptr, self.p_idx, self.p_val, w) + self.losses

    def move(self, w, k, scale):
        """w += scale ψ_k."""
        move_by(w, scale, self.x_pos, self.x_val, *self.factors(k))

    def keep(self, kept):
        """Hold only the outputs ``kept`` (sorted indices)."""
        if len(kept) == len(self.weights):
            return
        chosen = np.isin(np.arange(len(self.weights)), kept)
        for name in ("r", "p"):
            ptr = getattr(self, name + "_ptr")
            sizes = np.diff(ptr)
            entries = np.repeat(chosen, sizes)
            setattr(self, name + "_idx", getattr(self, name + "_idx")[entries])
            setattr(self, name + "_val", getattr(self, name + "_val")[entries])
            setattr(self, name + "_ptr",
                    np.concatenate([[0], np.cumsum(sizes[kept])]).astype(np.int64))
        self.losses = self.losses[kept]
        self.weights = [self.weights[k] for k in kept]
        self.gram = self.gram[np.ix_(kept, kept)]

    def drop_empty(self):
        if min(self.weights, default=1.0) <= 0.0:
            self.keep([k for k, a in enumerate(self.weights) if a > 0.0])

    def collapse(self, scratch, keep=0):
        """Merge the held outputs but the ``keep`` of largest weight into their one
        point Σ_k α_k ψ_k / Σ_k α_k (its loss likewise), held with weight Σ_k α_k: the
        same dual, in the memory of ``keep`` + 1 outputs (the merged point is factored
        like its outputs: x is common to them)."""
        order = np.argsort(self.weights)[::-1]
        kept, merged = sorted(order[:keep].tolist()), order[keep:].tolist()
        if len(merged) < 2 and keep:
            return
        total = float(sum(self.weights[k] for k in merged))
        merged_factors = []
        for part, dense in zip((0, 2), scratch):
            # the union of the merged outputs' indices, sorted, without sorting them
            mark = np.zeros(dense.size, dtype=np.bool_)
            for k in merged:
                idx, val = self.factors(k)[part:part + 2]
                dense[idx] += (self.weights[k] / total) * val
                mark[idx] = True
            indices = np.flatnonzero(mark)
            merged_factors += [indices, dense[indices].copy()]
            dense[indices] = 0.0
        loss = float(self.losses[merged] @ np.asarray(self.weights)[merged]) / total
        self.keep(kept)
        self.add(tuple(merged_factors), loss, scratch, weight=total, merge=False)


def _pack(blocks):
    """The blocks in the flat arrays of
    :func:`~skstruct.optim._bcfw_pairwise_kernels.cached_passes`: block_ptr, x_ptr,
    x_pos, x_val, r_ptr, r_idx, r_val, p_ptr, p_idx, p_val, losses, weights, gram_ptr,
    gram (None blocks hold nothing)."""
    sizes = [0 if b is None else len(b.weights) for b in blocks]
    block_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    x_sizes = [0 if b is None else b.x_pos.size for b in blocks]
    x_ptr = np.concatenate([[0], np.cumsum(x_sizes)]).astype(np.int64)
    held = [b for b in blocks if b is not None]
    gram_ptr = np.concatenate([[0], np.cumsum([k * k for k in sizes])]).astype(np.int64)

    def joined(name, dtype):
        arrays = [getattr(b, name) for b in held]
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(
            0, dtype=dtype)

    def pointers(name):
        sizes = [np.diff(getattr(b, name)) for b in held]
        total = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
        return np.concatenate([[0], np.cumsum(total)]).astype(np.int64)

    weights = np.array([x for b in held for x in b.weights], dtype=np.float64)
    return (block_ptr, x_ptr, joined("x_pos", np.int64), joined("x_val", np.float64),
            pointers("r_ptr"), joined("r_idx", np.int64), joined("r_val", np.float64),
            pointers("p_ptr"), joined("p_idx", np.int64), joined("p_val", np.float64),
            joined("losses", np.float64), weights, gram_ptr,
            np.concatenate([b.gram.ravel() for b in held]) if held else np.zeros(0))


def _unpack_weights(blocks, block_ptr, weights):
    """Give each block its weights after the cached passes and drop the emptied outputs."""
    for b, block in enumerate(blocks):
        if block is not None:
            block.weights = weights[block_ptr[b]:block_ptr[b + 1]].tolist()
            block.drop_empty()


def _within(scratch, indices, values, idx, val, tol):
    """Whether the sparse vectors (indices, values), scattered in ``scratch``, and
    (idx, val) differ by at most ``tol`` in every entry (``scratch`` is left as it was)."""
    if val.size and np.max(np.abs(scratch[idx] - val)) > tol:
        return False
    scratch[idx] = 0.0
    far = values.size and np.max(np.abs(scratch[indices])) > tol
    scratch[indices] = values
    if far:
        return False
    # entries of (indices, values) outside idx: compared with zero above
    return True


def _sparse(indices, values):
    """(indices, values) without the zero entries."""
    keep = values != 0.0
    return (np.asarray(indices)[keep].astype(np.int64),
            np.ascontiguousarray(values[keep], dtype=np.float64))


class PairwiseBCFW:
    """Block-coordinate pairwise Frank–Wolfe on the structured SVM's dual, with one
    pass of the oracle followed by passes over each block's active set.

    Block i's dual variable is a convex combination Σ_k α_k μ_k of the parts of outputs
    (the gold output's at the start), its dual value ℓ_i = ω_i Σ_k α_k Δ_k. A step moves
    weight from the away output a (the smallest loss-augmented score
    v_k = ⟨μ_k, η_i⟩ + Δ_k among the active ones) to the toward output s (the oracle's
    answer in an oracle pass, the largest v_k in a cached pass): with d = μ_s − μ_a,

        γ = clip(ω_i (v_s − v_a) / ((ω_i² / λ) ‖A_iᵀ d‖²), 0, α_a),
        w ← w − γ (ω_i / λ) A_iᵀ d,   α_s += γ,   α_a −= γ,   ℓ_i += γ ω_i (Δ_s − Δ_a),

    the exact maximizer of the dual along d (Lacoste-Julien & Jaggi, 2015, pairwise
    steps; Osokin et al., 2016, for the block-coordinate version). Unlike Frank–Wolfe
    steps, which only shrink the weights of the outputs already held, a pairwise step
    can empty a wrong output's weight, and the dual converges linearly on the outputs
    held. After each oracle pass, up to :data:`MAX_CACHED_PASSES` passes over the held
    outputs follow (no oracle call: a score per held output), until one raises the dual
    by less than :data:`CACHED_PASS_GAIN` of the oracle pass's raise (Shah, Kolmogorov &
    Lampert, 2015, multi-plane BCFW).

    The oracle pass calls the oracle once per group of examples (``oracle_group``:
    always the same examples, so that one warm start serves a group), at the w before
    the group's steps; each step is still the exact line search above at the current
    w, so the dual only rises (the mini-batches of Wang et al., 2016, with the steps of a
    batch taken in turn).

    A block holds at most :data:`MAX_HELD_OUTPUTS` outputs in at most
    ``max_block_bytes`` (their sparse feature vectors and Gram matrix), and all blocks
    together at most ``max_total_bytes`` (:func:`minimize_bcfw`: half the dense parts
    of all examples, so that with the packed copy of the cached passes they take what
    the memory estimates count for BCFW's blocks); past any of them, all but the
    :data:`COLLAPSE_KEEPS` heaviest are merged into their one convex combination,
    which keeps the dual (a block whose few outputs are past the bytes goes on merging
    until it holds one point, the memory of one dense output).

    The iterate is the last one (no averaging: the steps converge without it), and the
    duality gap the solver reports is exact, as for Frank–Wolfe steps.

    Parameters
    ----------
    risk : RegularizedRisk
    lam : float
    weights : ndarray of shape (n_examples,)
    max_block_bytes : int or None
        The bytes a block may hold; None: no limit.
    max_total_bytes : int or None
        The bytes all blocks together may hold (the cached passes pack a copy of them
        beside); None: no limit.
    oracle_group : int or None
        Examples per call of the oracle; None: :func:`oracle_group_size`.

    References
    ----------
    Lacoste-Julien & Jaggi (2015). On the global linear convergence of Frank–Wolfe
    optimization variants. NeurIPS.
    Osokin, Alayrac, Lukasewitz, Dokania & Lacoste-Julien (2016). Minding the gaps for
    block Frank–Wolfe optimization of structured SVMs. ICML.
    Shah, Kolmogorov & Lampert (2015). A multi-plane block-coordinate Frank–Wolfe
    algorithm for training structural SVMs with a costly max-oracle. CVPR.
    Wang, Sadhanala, Dai, Neiswanger, Sra & Xing (2016). Parallel and distributed
    block-coordinate Frank–Wolfe algorithms. ICML.
    """

    averaging = False

    def __init__(self, risk, lam, weights, max_block_bytes=None, max_total_bytes=None,
                 oracle_group=None):
        self.risk, self.lam, self.weights = risk, lam, weights
        self.max_block_bytes = max_block_bytes
        self.max_total_bytes = max_total_bytes
        self.total_bytes = 0
        n = risk.n_examples
        self.w = np.zeros(risk.features.n_params)
        self.lazy = None
        self.blocks = [None] * n
        self.groups = _example_groups(n, oracle_group_size(n) if oracle_group is None
                                      else oracle_group)
        self.group = np.empty(n, dtype=np.int64)
        for g, members in enumerate(self.groups):
            self.group[members] = g
        # one warm start per group: a group is always solved as one batch
        self.warm = [{} for _ in self.groups] if keeps_warm_starts(risk) else None
        self.ell = np.zeros(n)
        self.gap_estimate = 0.0
        self.step = 0
        self.cached_passes = []
        self.scratch = (np.zeros(risk.features.n_params),
                        np.zeros(risk.features.n_params))
        self.examples = [risk.example(i) for i in range(n)]
        self.group_examples = [risk.examples(members) for members in self.groups]

    # the solver's interface (minimize_bcfw) ----------------------------------------

    def current(self):
        return self.w.copy(), float(self.ell.sum())

    def run_pass(self, order):
        """One pass of the oracle over ``order``, then the cached passes."""
        self.gap_estimate = 0.0
        gained = 0.0
        position = np.empty(self.risk.n_examples, dtype=np.int64)
        position[order] = np.arange(len(order))
        visits = []
        for g in dict.fromkeys(self.group[order].tolist()):
            members = self.groups[g]
            visits.append((g, members[np.argsort(position[members], kind="stable")]))
        for g, members in visits:
            gained += self._group_steps(g, members, *self._oracle(g))
        rng = np.random.default_rng(self.step)
        orders = np.array([rng.permutation(order) for _ in range(MAX_CACHED_PASSES)],
                          dtype=np.int64).reshape(MAX_CACHED_PASSES, len(order))
        packed = _pack(self.blocks)
        done = cached_passes(orders, CACHED_PASS_GAIN * gained, *packed,
                             np.ascontiguousarray(self.weights, dtype=np.float64),
                             float(self.lam), self.w, self.ell,
                             np.empty(max(1, int(np.diff(packed[0]).max(initial=0)))))
        _unpack_weights(self.blocks, packed[0], packed[11])
        self.total_bytes = sum(b.nbytes for b in self.blocks if b is not None)
        self.cached_passes.append(int(done))

    # steps -------------------------------------------------------------------------

    def _feature_vector(self, batch_i, parts):
        """ψ = A_iᵀ parts factored (:class:`_Block`): (x_pos, x_val) and (r_idx, r_val,
        p_idx, p_val), the feature map's factored form when it offers it
        (``factored_example_transpose``), else x and r empty and p the nonzeros of
        ``example_transpose``."""
        features = self.risk.features
        offer = getattr(features, "factored_example_transpose", None)
        if offer is not None:
            x_pos, x_val, *factors = offer(batch_i, parts)
            return (x_pos, x_val), tuple(factors)
        empty = np.zeros(0, dtype=np.int64), np.zeros(0)
        return empty, (*empty, *_sparse(*features.example_transpose(batch_i, parts)))

    def _oracle(self, g):
        """The oracle on the examples of group ``g`` in one call at the current w: the
        parts of its outputs, their task losses, and the gold outputs' parts when a
        block of the group has not yet been started (else None)."""
        risk = self.risk
        batch, y = self.group_examples[g]
        scores = risk.features.scores(batch, self.w)
        options = {} if self.warm is None else {"warm_start": self.warm[g]}
        y_hat, delta = risk.loss.loss_augmented(risk.decoder, scores, y, **options)
        gold = (risk.decoder.parts(scores, y)
                if any(self.blocks[i] is None for i in self.groups[g]) else None)
        found = risk.decoder.parts(scores, y_hat)
        return found, np.asarray(delta, dtype=np.float64), gold

    def _group_steps(self, g, members, found, delta, gold):
        """The steps of group ``g``'s examples toward the oracle's outputs ``found``, in
        the order of ``members``; returns the dual's raise."""
        row = {i: k for k, i in enumerate(self.groups[g].tolist())}
        gained = 0.0
        for i in members.tolist():
            k = row[i]
            gained += self._oracle_step(i, found.example(k), float(delta[k]),
                                        None if gold is None else gold.example(k))
        return gained

    def _oracle_step(self, i, parts, delta, gold=None):
        """The pairwise step of block i toward the oracle's output (its ``parts`` and
        task loss ``delta``; ``gold``: the gold output's parts, for a block's first
        step)."""
        batch_i = self.examples[i][0]
        block = self.blocks[i]
        held_bytes = 0 if block is None else block.nbytes
        if block is None:
            x, factors = self._feature_vector(batch_i, gold)
            block = self.blocks[i] = _Block(*x)
            block.add(factors, 0.0, self.scratch, weight=1.0)
        s = block.add(self._feature_vector(batch_i, parts)[1], delta, self.scratch)
        values = block.scores(self.w)
        omega = self.weights[i]
        self.gap_estimate += omega * (values[s] - float(np.dot(block.weights, values)))
        gain = self._pairwise(i, block, values, s)
        self.step += 1
        if len(block.weights) > MAX_HELD_OUTPUTS:
            block.collapse(self.scratch, keep=COLLAPSE_KEEPS)
        keep = COLLAPSE_KEEPS
        while len(block.weights) > 1 and (self._past(self.max_block_bytes, block.nbytes)
                                          or self._past(self.max_total_bytes,
                                                        self.total_bytes - held_bytes
                                                        + block.nbytes)):
            block.collapse(self.scratch, keep=keep)
            keep //= 2
        self.total_bytes += block.nbytes - held_bytes
        return gain

    @staticmethod
    def _past(limit, size):
        return limit is not None and size > limit

    def _pairwise(self, i, block, values, s):
        """The pairwise step of block i toward output s; returns the dual's raise."""
        held = [k for k, a in enumerate(block.weights) if a > 0.0 and k != s]
        if not held:
            block.drop_empty()
            return 0.0
        a = min(held, key=lambda k: values[k])
        omega, lam = self.weights[i], self.lam
        numerator = omega * (values[s] - values[a])
        if numerator <= 0.0:
            block.drop_empty()
            return 0.0
        gram = block.gram
        curvature = omega ** 2 / lam * max(gram[s, s] + gram[a, a] - 2.0 * gram[s, a], 0.0)
        gamma = block.weights[a] if curvature <= 0.0 else min(numerator / curvature,
                                                               block.weights[a])
        scale = gamma * omega / lam
        block.move(self.w, s, -scale)
        block.move(self.w, a, scale)
        self.ell[i] += gamma * omega * (block.losses[s] - block.losses[a])
        block.weights[s] += gamma
        block.weights[a] = 0.0 if gamma >= block.weights[a] else block.weights[a] - gamma
        block.drop_empty()
        return gamma * numerator - 0.5 * gamma ** 2 * curvature
