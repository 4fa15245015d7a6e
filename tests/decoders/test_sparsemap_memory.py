"""Memory of the generic SparseMAP active set with 1,000 labels, measured in a subprocess.

The active set keeps every example's slots and Cholesky factor in its own block, sized by
that example's support; sizing them by the largest support of the batch (n_examples ×
max support², as before) takes 2.6 GB for the first case below and 4.1 GB for the second.
"""

import json
import subprocess
import sys
import textwrap

#: Peak resident memory allowed to the whole child process (Python, numpy, numba, data).
LIMIT = 2 * 2**30

_CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np

    def peak_resident_bytes():
        # this process's own high-water mark: ru_maxrss would also count the parent's
        # (it survives fork and exec on Linux, so a large test process would show)
        try:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    # a regression fails with MemoryError rather than taking the machine's memory
    resource.setrlimit(resource.RLIMIT_AS, (12 * 2**30, resource.RLIM_INFINITY))
    from skstruct.decoders import MultilabelDecoder, MultilabelScores
    from skstruct.decoders._sparsemap import sparsemap as _sparsemap
    solve = getattr(_sparsemap, "active_set_sparsemap", _sparsemap.sparsemap)
    case, n, n_labels = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)
    if case == "one_hard_example":
        # labels decided (clip(η) ∈ {0, 1}: support 1) except in example 0, whose labels
        # are all fractional: its support grows by about one structure per MAP call
        scores = np.where(rng.random((n, n_labels)) < 0.5, -1.0, 2.0)
        scores[0] = rng.normal(0.02, 0.05, size=n_labels)
    else:
        # scores of a model early in training: most labels fractional in every example
        scores = rng.normal(0.02, 0.05, size=(n, n_labels))
    result = solve(MultilabelDecoder(), MultilabelScores(scores))
    out = {"support": result.support_size.tolist()[:3],
           "support_mean": float(result.support_size.mean()),
           "clip_error_decided": float(np.abs(result.unary[1:]
                                               - np.clip(scores[1:], 0, 1)).max())}
    if case == "early_training":
        # what SparseMAPLoss reads: the marginals, recombined from the supports
        out["marginals_error"] = float(np.abs(result.marginals.unary - result.unary).max())
    out["peak"] = peak_resident_bytes()
    print(json.dumps(out))
""")


def _run(directory, case, n, n_labels):
    # run outside the source tree, so that the package is the one on the path
    done = subprocess.run([sys.executable, "-c", _CHILD, case, str(n), str(n_labels)],
                          capture_output=True, text=True, timeout=1800, cwd=directory)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_one_large_support_does_not_size_the_whole_batch(tmp_path):
    # 20,000 examples x 1,000 labels; one example reaches a support of ~75 structures.
    # Sized by the largest support, the factors alone would take 20,000 x 128² x 8 bytes
    # (before: 4.6 GB peak; now about 1.3 GB, most of it n x 1,000 score-sized arrays).
    out = _run(tmp_path, "one_hard_example", 20_000, 1_000)
    assert out["support"][0] > 50 and out["support"][1:] == [1, 1]
    assert out["clip_error_decided"] < 1e-12
    assert out["peak"] <= LIMIT, f"peak memory {out['peak'] / 2**30:.2f} GiB"


def test_thousand_label_batch_stays_within_two_gigabytes(tmp_path):
    # 2,000 examples x 1,000 labels, every example with ~70 structures after the default
    # 100 MAP calls: memory follows the sum of the supports (the pool keeps only the
    # structures in use, 0/1 rows as bits). Before: 4.1 GB peak; now about 1.0 GB.
    out = _run(tmp_path, "early_training", 2_000, 1_000)
    assert out["support_mean"] > 50
    assert out["marginals_error"] < 1e-12
    assert out["peak"] <= LIMIT, f"peak memory {out['peak'] / 2**30:.2f} GiB"
