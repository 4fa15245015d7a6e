"""CRF and SparseMAP parsers on UD English EWT: this tree against a checkout of an earlier
commit, side by side.

Each fit runs in a fresh process (so the two versions of skstruct never share one),
alternating before / after ``--repeats`` times after one warm-up fit of each on a few
sentences (compilation excluded); prints the wall and CPU seconds of every fit, their
medians and the ratios, the objective curves' last values (the same fits must reach the
same objective) and the load average. Before: a list of per-sentence float64 CSR matrices
(what versions before ``ArcFeatureBatch`` take), or ``ArcVectorizer.transform_batch``
with ``--before-form batch``; after: ``ArcVectorizer.transform_batch``.

Run (the earlier commit checked out with ``git worktree add --detach /tmp/before <commit>``)::

    python benchmarks/bench_parsing_before_after.py --before-tree /tmp/before \\
        --max-train 2000 --max-iter 10 --parsers crf sparsemap
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ALPHA_OF = "1.0 / n"  # as bench_parsing_ewt.py: 1 / n_train_sentences

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
from skstruct import CRF, SparseMAPClassifier
from skstruct.datasets import load_ud_english_ewt
from skstruct.decoders import TreeDecoder
from skstruct.preprocessing import ArcVectorizer
key, n_train, max_iter, form = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
train = load_ud_english_ewt("train")[:n_train]
vectorizer = ArcVectorizer().fit(train)
X = vectorizer.transform_batch(train) if form == "batch" else vectorizer.transform(train)
y = [s["head"] for s in train]
def make(iterations):
    if key == "crf":
        return CRF(decoder=TreeDecoder(), alpha=1.0 / len(train), max_iter=iterations)
    return SparseMAPClassifier(decoder=TreeDecoder(), alpha=1.0 / len(train),
                               max_iter=iterations, sparsemap_max_iter=20,
                               cost="hamming" if key == "m-sparsemap" else None)
make(2).fit(X[:20], y[:20])
start, cpu = time.perf_counter(), time.process_time()
model = make(max_iter).fit(X, y)
print(json.dumps(dict(wall=time.perf_counter() - start, cpu=time.process_time() - cpu,
                      n_iter=int(model.n_iter_),
                      objective=float(model.objective_curve_[-1]))))
"""


def run(tree, key, args, form):
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    out = subprocess.run([sys.executable, "-c", CHILD, key, str(args.max_train),
                          str(args.max_iter), form], env=env, capture_output=True,
                         text=True, check=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-tree", required=True, type=Path)
    parser.add_argument("--after-tree", type=Path, default=Path(__file__).parents[1])
    parser.add_argument("--before-form", choices=["list", "batch"], default="list",
                        help="the training features given to the earlier version")
    parser.add_argument("--parsers", nargs="+", default=["crf", "sparsemap"],
                        choices=["crf", "sparsemap", "m-sparsemap"])
    parser.add_argument("--max-train", type=int, default=2000)
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    for key in args.parsers:
        results = {"before": [], "after": []}
        for _ in range(args.repeats):
            results["before"].append(run(args.before_tree, key, args, args.before_form))
            results["after"].append(run(args.after_tree, key, args, "batch"))
            print(key, {k: v[-1] for k, v in results.items()}, flush=True)
        wall = {k: np.median([r["wall"] for r in v]) for k, v in results.items()}
        cpu = {k: np.median([r["cpu"] for r in v]) for k, v in results.items()}
        print(f"{key}: before {wall['before']:.1f} s wall, {cpu['before']:.1f} s CPU; after "
              f"{wall['after']:.1f} s wall, {cpu['after']:.1f} s CPU; before / after "
              f"{wall['before'] / wall['after']:.2f} (wall), "
              f"{cpu['before'] / cpu['after']:.2f} (CPU); load average {os.getloadavg()}",
              flush=True)
        print(f"{key}: last objective before {results['before'][-1]['objective']!r}, "
              f"after {results['after'][-1]['objective']!r}", flush=True)


if __name__ == "__main__":
    main()
