"""Peak memory and time of count-loss loss-augmented MAP on one long chain.

``ChainDecoder().loss_augmented_map(scores, y_true, FBetaLoss(), rescaling)`` on one
sequence of M = 100, 300 and 1,000 tokens, with margin and slack rescaling, in a NER-like
setting: 8 entity types in a BIO tag set plus the outside label "O" (N = 17 states, every
state but "O" positive), gold labels drawn as entity spans (an entity starts at an outside
token with probability 0.1, of type uniform and geometric length of mean 2: about 18 % of
the tokens are positive, as in CoNLL-2003). Two kinds of scores:

- *untrained*: unary, transition, start and end scores standard normal (the first
  epochs: the loss-augmented labeling is far from the gold one);
- *partly trained*: the same plus 3 on the gold label of every token, and -5 on the
  transitions BIO forbids (O → I-x, B-x / I-x → I-y for y ≠ x); the random transitions
  still outweigh the unary scores in places, so the loss-augmented labeling is half
  right, and the backtracking pass is near its worst case for memory;
- *trained*: as partly trained with the transition scores scaled by 0.3 (later epochs:
  the loss-augmented labeling is close to the gold one).

Every measurement runs in a fresh process (``--child``) on one numba thread, under an
address-space limit (``--address-limit``, ``RLIMIT_AS``) so that a version that needs more
memory than the machine has fails with ``MemoryError`` instead of being killed. The child
first warms up (compilation or loading the numba cache, on a tiny instance), then resets
the kernel's high-water mark of its resident memory (``/proc/self/clear_refs``) and makes
the call: *peak memory* is the high-water mark during the call minus the resident memory
before it. *Time* is the CPU time (user + system, which is the call's own work on a
loaded machine) of one call, the median of ``--repeats`` calls (one when a call takes more
than 10 s); wall times are in the printed JSON lines. *Table size* is what the dynamic program allocates, computed from the sizes: for the
old code M·N·R·24 bytes (float table and two int64 back-pointer arrays, R = (N* + 1)(M + 1)
statistic values, N* the gold positives); for the new code the estimate that the
``max_table_memory`` limit is checked against (an upper bound, whatever the labeling the
call returns). The *objective* H(ŷ) of the returned labeling is recorded: both versions
must find the same value.

Run: ``python benchmarks/count_loss_memory.py --before /tmp/before`` with ``/tmp/before``
a checkout of the code to compare with (``git worktree add --detach /tmp/before
<commit>``); without ``--before`` only the new code is measured: this checkout, or the
one given with ``--after``. Writes
``results/count_loss_memory.md`` next to this file.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

from _report import cpu_name, format_time, git_commit

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
LENGTHS = (100, 300, 1000)
RESCALINGS = ("margin", "slack")
REGIMES = ("untrained", "partly trained", "trained")


# --- the instance -------------------------------------------------------------------


def bio_gold(rng, length, n_types):
    """Gold BIO labels: 0 is "O", 1 + 2k is B-k and 2 + 2k is I-k."""
    import numpy as np

    gold = np.zeros(length, dtype=np.int64)
    t = 0
    while t < length:
        if rng.random() < 0.1:
            kind = rng.integers(n_types)
            stop = min(length, t + rng.geometric(0.5))
            gold[t] = 1 + 2 * kind
            gold[t + 1 : stop] = 2 + 2 * kind
            t = stop
        else:
            t += 1
    return gold


def bio_forbidden(n_types):
    """(n_states, n_states) bool: transitions into I-x from anything but B-x or I-x."""
    import numpy as np

    n_states = 2 * n_types + 1
    forbidden = np.zeros((n_states, n_states), dtype=bool)
    for kind in range(n_types):
        allowed = (1 + 2 * kind, 2 + 2 * kind)
        forbidden[:, 2 + 2 * kind] = True
        forbidden[list(allowed), 2 + 2 * kind] = False
    return forbidden


def instance(length, regime, n_types, seed):
    """(ChainScores, y_true, bound FBetaLoss) of one sequence."""
    import numpy as np

    from skstruct.decoders import ChainScores
    from skstruct.losses import FBetaLoss

    rng = np.random.default_rng(seed)
    n_states = 2 * n_types + 1
    gold = bio_gold(rng, length, n_types)
    unary = rng.normal(size=(length, n_states))
    transition = rng.normal(size=(n_states, n_states))
    if regime != "untrained":
        unary[np.arange(length), gold] += 3.0
        transition[bio_forbidden(n_types)] -= 5.0
    if regime == "trained":
        transition *= 0.3
    scores = ChainScores(unary, np.array([0, length]), transition,
                         rng.normal(size=n_states), rng.normal(size=n_states))
    loss = FBetaLoss().with_positive_states(np.arange(n_states) > 0)
    return scores, gold, loss


def objective(decoder, scores, y_true, y_pred, loss, rescaling):
    theta = decoder.score_outputs(scores, y_pred)
    delta = loss(y_true, y_pred, scores.offsets)
    if rescaling == "margin":
        return theta + delta
    return delta * (1.0 + theta - decoder.score_outputs(scores, y_true))


# --- one measurement, in a fresh process ----------------------------------------------


def _status(field):
    """A field of /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _old_table_bytes(scores, y_true, loss):
    """What the old backtracking pass allocates: M·N·R·24 bytes plus two score rows."""
    n_gold = int(loss.gold_positives(y_true, scores.offsets, scores.n_states)[0])
    length = int(scores.lengths[0])
    values = (n_gold + 1) * (length + 1)
    return length * scores.n_states * values * 24 + 2 * scores.n_states * values * 8


def _new_table_bytes(decoder, scores, y_true, loss):
    from skstruct.decoders._chain import counting as _constrained

    estimate = getattr(_constrained, "loss_table_memory", None)
    return None if estimate is None else int(estimate(scores, y_true, loss)[0])


def child(args):
    limit = int(args.address_limit * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if args.code:
        sys.path.insert(0, args.code)
    import numpy as np

    import skstruct
    from skstruct.decoders import ChainDecoder

    decoder = ChainDecoder()
    tiny, tiny_gold, tiny_loss = instance(12, args.regime, args.n_types, 0)
    decoder.loss_augmented_map(tiny, tiny_gold, tiny_loss, args.rescaling)

    scores, y_true, loss = instance(args.length, args.regime, args.n_types, args.seed)
    new_bytes = _new_table_bytes(decoder, scores, y_true, loss)
    result = {
        "skstruct": skstruct.__file__,
        "n_gold": int(loss.gold_positives(y_true, scores.offsets, scores.n_states)[0]),
        "old_table_bytes": _old_table_bytes(scores, y_true, loss),
        "table_bytes": new_bytes,
    }
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    tic, cpu = time.perf_counter(), time.process_time()
    try:
        y_hat = decoder.loss_augmented_map(scores, y_true, loss, args.rescaling)
    except Exception as error:  # noqa: BLE001 (numba turns MemoryError into SystemError
        # inside parallel loops)
        result.update(status=type(error).__name__, message=str(error),
                      seconds=time.perf_counter() - tic, cpu_seconds=time.process_time() - cpu)
        print(json.dumps(result))
        return
    times, cpu_times = [time.perf_counter() - tic], [time.process_time() - cpu]
    result["peak_bytes"] = _status("VmHWM") - before
    while len(times) < args.repeats and sum(times) < 10.0:
        tic, cpu = time.perf_counter(), time.process_time()
        decoder.loss_augmented_map(scores, y_true, loss, args.rescaling)
        times.append(time.perf_counter() - tic)
        cpu_times.append(time.process_time() - cpu)
    value = objective(decoder, scores, y_true, y_hat, loss, args.rescaling)[0]
    result.update(status="ok", seconds=float(np.median(times)),
                  cpu_seconds=float(np.median(cpu_times)), n_calls=len(times),
                  objective=float(value))
    print(json.dumps(result))


def run_child(args, code, length, rescaling, regime):
    command = [sys.executable, str(Path(__file__).resolve()), "--child",
               "--length", str(length), "--rescaling", rescaling, "--regime", regime,
               "--n-types", str(args.n_types), "--seed", str(args.seed),
               "--repeats", str(args.repeats), "--address-limit", str(args.address_limit)]
    if code:
        command += ["--code", code]
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    tic = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - tic
    if done.returncode != 0:
        return {"status": f"exit code {done.returncode}", "message": done.stderr[-2000:],
                "wall_seconds": wall}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_seconds"] = wall
    return result


# --- the report -----------------------------------------------------------------------


def _gb(n_bytes):
    if n_bytes is None:
        return "–"
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:.2f} GiB"
    return f"{n_bytes / 2**20:.1f} MiB"


def _cell_time(r):
    if r["status"] == "ok":
        return format_time(r["cpu_seconds"])
    if "cpu_seconds" in r:
        return f"{r['status']} after {format_time(r['cpu_seconds'])}"
    return r["status"]


def _cell_memory(r):
    if r["status"] != "ok":
        return "–"
    # below a MiB the call reused pages the process already had
    return _gb(r["peak_bytes"]) if r["peak_bytes"] >= 2**20 else "< 1 MiB"


def _short_commit(path):
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, cwd=path).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(args, runs, total_seconds, loads=None):
    import numba
    import numpy as np

    versions = [v for v in ("before", "after") if any(r["version"] == v for r in runs)]
    commits = {"after": _short_commit(args.after) if args.after else git_commit()}
    if args.before:
        commits["before"] = _short_commit(args.before)
    lines = [
        "# Count-loss loss-augmented MAP on long chains: memory and time",
        "",
        f"`ChainDecoder().loss_augmented_map(scores, y_true, FBetaLoss(), rescaling)` on one "
        f"sequence, N = {2 * args.n_types + 1} states ({args.n_types} entity types in BIO "
        "plus \"O\"), gold entity spans covering about 18 % of the tokens, random scores "
        "(*untrained*), random scores plus 3 on the gold labels and -5 on the transitions "
        "BIO forbids (*partly trained*), the same with the transitions scaled by 0.3 "
        "(*trained*). Each cell is a fresh process on one numba thread, under an "
        f"address-space limit of {args.address_limit:g} GiB. *Peak*: high-water mark of the "
        "resident memory during the call minus the resident memory before it. *Time*: CPU "
        f"time (user + system) of one call, median of up to {args.repeats} calls (one when a "
        "call takes over 10 s), after a warm-up call on a tiny instance. *Table*: the dynamic program's allocation computed from the "
        "sizes (old code: M·N·R·24 bytes with R = (N* + 1)(M + 1); new code: the upper bound "
        "checked against `max_table_memory`).",
        "",
        f"{cpu_name()}, {os.cpu_count()} cores; numba {numba.__version__}, numpy "
        f"{np.__version__}, Python {platform.python_version()}. Code: "
        + ", ".join(f"*{v}* at {commits[v]}" for v in versions)
        + f". Total run time {total_seconds:.0f} s"
        + (f"; 1-minute load average {loads[0]:.2f} before the run, {loads[1]:.2f} after it "
           "(other processes share the machine: CPU times are the fairer comparison)."
           if loads else "."),
        "",
        f"Produced by `python benchmarks/count_loss_memory.py"
        f"{' --before ' + args.before if args.before else ''}"
        f"{' --after ' + args.after if args.after else ''}`.",
        "",
    ]
    for regime in REGIMES:
        lines += [f"## {regime.capitalize()} scores", "",
                  "| M | N* | rescaling | "
                  + " | ".join(f"{v} time | {v} peak | {v} table" for v in versions)
                  + " | objective |",
                  "|---" * (3 + 3 * len(versions) + 1) + "|"]
        for length in args.lengths:
            for rescaling in RESCALINGS:
                cells = {r["version"]: r for r in runs if r["length"] == length
                         and r["rescaling"] == rescaling and r["regime"] == regime}
                any_run = next(iter(cells.values()))
                row = [str(length), str(any_run.get("n_gold", "?")), rescaling]
                for v in versions:
                    r = cells[v]
                    table = r.get("old_table_bytes") if v == "before" else r.get("table_bytes")
                    row += [_cell_time(r), _cell_memory(r), _gb(table)]
                values = {v: r["objective"] for v, r in cells.items() if "objective" in r}
                if len(values) == 2:
                    same = np.isclose(values["before"], values["after"], rtol=1e-9, atol=1e-9)
                    row.append(f"{values['after']:.6g} ({'same' if same else 'DIFFERENT'})")
                else:
                    row.append(", ".join(f"{v}: {x:.6g}" for v, x in values.items()) or "–")
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    failures = [r for r in runs if r["status"] not in ("ok",)]
    if failures:
        lines += ["Failures:", ""]
        for r in failures:
            message = (r.get("message") or "").strip().splitlines()
            lines.append(f"- {r['version']}, {r['regime']}, M = {r['length']}, "
                         f"{r['rescaling']}: {r['status']}"
                         + (f" ({message[-1][:160]})" if message else ""))
        lines.append("")
    lines += NOTES
    return "\n".join(lines)


NOTES = [
    "## Reading the tables",
    "",
    "- *Before*, the backtracking pass allocated the whole table of the dynamic program "
    "with two int64 back-pointer arrays, 24 bytes per (token, state, statistic value): "
    "memory cubic in M, 66 GiB at M = 1,000. Under the address-space limit the allocation "
    "fails (numba reports the MemoryError of its parallel loop as a SystemError, after the "
    "first pass has run for a minute); without a limit the process is killed by the "
    "kernel's out-of-memory killer or swaps.",
    "- *After*, the backtracking pass keeps only the previous state (int8 up to 128 "
    "states) and only for the counter values that are reachable from the first token and "
    "can still reach the chosen value l*, so its memory depends on l*: at M = 1,000 from "
    "almost nothing (l* near a corner of the (TP, FP) range, as with untrained scores, "
    "where few values can reach it) to about 3/4 of the bound (l* in the middle of both "
    "ranges). On top comes the floor of both passes, two score rows of 2·N·R·8 bytes "
    "(47 MB at M = 1,000).",
    "- *After table* is the bound that `ChainDecoder(max_table_memory=...)` (default "
    "2 GiB) is checked against before anything is allocated: the largest memory over all "
    "l*, from the lengths and gold labels only, so a sequence accepted once is accepted "
    "at every call. It grows as about N·N*·M²/12 bytes for F1.",
    "- Time: both passes visit only reachable counter values and their inner loop, over "
    "the false-positive counter, is vectorized; the first pass (every value) dominates, "
    "O(N²·N*·M²/3). The old code spent O(N²·N*·M²) per pass without vectorization.",
    "- *Objective*: H(ŷ) of the labelings both versions return; *same* where they agree to "
    "1e-9 (ties may give different labelings of equal objective).",
    "",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=None,
                        help="path of a checkout of the code to compare with")
    parser.add_argument("--after", default=None,
                        help="path of a checkout of the new code (default: this one)")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--n-types", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--address-limit", type=float, default=12.0,
                        help="RLIMIT_AS of each measuring process, GiB")
    parser.add_argument("--output", default=str(RESULTS / "count_loss_memory.md"))
    parser.add_argument("--runs", default=None,
                        help="write the report from the JSON lines a previous run printed "
                             "(its standard output) instead of measuring")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--code", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rescaling", help=argparse.SUPPRESS)
    parser.add_argument("--regime", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.runs:
        runs = [json.loads(line) for line in Path(args.runs).read_text().splitlines()
                if line.startswith("{")]
        text = report(args, runs, sum(r["wall_seconds"] for r in runs))
        Path(args.output).write_text(text)
        print(text)
        return
    versions = ([("before", str(Path(args.before).resolve()))] if args.before else [])
    versions.append(("after", str(Path(args.after or HERE.parent).resolve())))
    runs = []
    tic = time.perf_counter()
    load_before = os.getloadavg()[0]
    for regime in REGIMES:
        for length in args.lengths:
            for rescaling in RESCALINGS:
                for version, code in versions:
                    result = run_child(args, code, length, rescaling, regime)
                    result.update(version=version, length=length, rescaling=rescaling,
                                  regime=regime)
                    print(json.dumps(result), flush=True)
                    runs.append(result)
    text = report(args, runs, time.perf_counter() - tic, (load_before, os.getloadavg()[0]))
    Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
