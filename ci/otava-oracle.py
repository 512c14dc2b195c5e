#!/usr/bin/env python3
"""The oracle of orchestrator/tests/changepoint_parity.rs: Apache Otava's
change points for each case of a change-point corpus.

usage: ci/otava-oracle.py CASE.json|DIR...

Run with the Python that has apache-otava 0.8.0 (.ci/run installs it into
/var/tmp/benchrig-venv). A DIR stands for its *.json files, sorted. A case
is {"series": [...], "window_len": W, "max_pvalue": P, "min_magnitude": M};
null in a series is a missing value and becomes NaN, as numpy makes None.

Prints one JSON object a line per case, in order:
  {"case": NAME, "change_points": [{"index", "qhat", "pvalue",
   "mean_before", "mean_after", "std_before", "std_after"}, ...]}
with floats as Python's repr writes them (exact), and "nan", "inf", "-inf"
as strings, which JSON cannot hold. Exits 2, saying why, when Otava is
missing or another version.
"""
import importlib.metadata
import json
import math
import os
import sys
import warnings

PINNED = "0.8.0"


def fail(why):
    print(f"otava-oracle: {why}; install it: /var/tmp/benchrig-venv/bin/pip install apache-otava=={PINNED}",
          file=sys.stderr)
    sys.exit(2)


def number(x):
    x = float(x)
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def case_files(args):
    for a in args:
        if os.path.isdir(a):
            yield from (os.path.join(a, f) for f in sorted(os.listdir(a)) if f.endswith(".json"))
        else:
            yield a


def main(args):
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        version = importlib.metadata.version("apache-otava")
    except importlib.metadata.PackageNotFoundError:
        fail(f"apache-otava is not installed for {sys.executable}")
    if version != PINNED:
        fail(f"apache-otava is {version}, the parity test is against {PINNED}")
    from otava.analysis import compute_change_points

    # numpy warns about NaN and infinity; the figures say it already.
    warnings.simplefilter("ignore")
    for path in case_files(args):
        with open(path) as f:
            case = json.load(f)
        series = [math.nan if v is None else float(v) for v in case["series"]]
        cps, _ = compute_change_points(series, window_len=int(case["window_len"]),
                                       max_pvalue=float(case["max_pvalue"]),
                                       min_magnitude=float(case["min_magnitude"]))
        out = [{"index": int(c.index), "qhat": number(c.qhat), "pvalue": number(c.stats.pvalue),
                "mean_before": number(c.stats.mean_1), "mean_after": number(c.stats.mean_2),
                "std_before": number(c.stats.std_1), "std_after": number(c.stats.std_2)} for c in cps]
        name = os.path.basename(path)[:-len(".json")] if path.endswith(".json") else path
        print(json.dumps({"case": name, "change_points": out}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
