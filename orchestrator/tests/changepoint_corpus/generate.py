#!/usr/bin/env python3
"""Writes the change-point corpus of tests/changepoint_parity.rs: one JSON
file per case and README.md listing them, in this directory.

usage: orchestrator/tests/changepoint_corpus/generate.py

Run once and committed; the files are the corpus, this script is how they
came to be. Standard library only, and deterministic: every case draws from
random.Random seeded with the CRC-32 of its name, so running it again
rewrites the same bytes (and a new case leaves the others unchanged).

A case is {"series": [...], "window_len": W, "max_pvalue": P,
"min_magnitude": M}; null in a series is a missing value, which both sides
read as NaN (what Otava does with None when fill_missing is not applied).
Values are rounded to 4 decimals, as benchmark figures are printed.
"""
import json
import os
import random
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULTS = {"window_len": 50, "max_pvalue": 0.001, "min_magnitude": 0.0}

cases = []  # (name, description, series, options)


def case(name, about, series, **options):
    assert not any(c[0] == name for c in cases), name
    cases.append((name, about, series, {**DEFAULTS, **options}))


def rng(name):
    return random.Random(zlib.crc32(name.encode()))


def noisy(r, levels, cv):
    """One value per entry of `levels`, each its level times 1 + N(0, cv)."""
    return [round(level * (1.0 + r.gauss(0.0, cv)), 4) for level in levels]


def pct(x):
    return f"{x:g}%"


# Planted steps: every size at every noise level, in three shapes.
for step in (0.02, 0.05, 0.10, 0.20):
    for cv in (0.01, 0.02, 0.05):
        tag = f"{round(step * 100):02d}_cv{round(cv * 100)}"
        name = f"step{tag}_single"
        case(name, f"one step of +{pct(step * 100)} at 50 of 100, noise CV {pct(cv * 100)}",
             noisy(rng(name), [100.0] * 50 + [100.0 * (1 + step)] * 50, cv))
        name = f"step{tag}_two"
        case(name, f"two steps of +{pct(step * 100)} at 50 and 100 of 150, CV {pct(cv * 100)}",
             noisy(rng(name), [100.0] * 50 + [100.0 * (1 + step)] * 50 + [100.0 * (1 + step) ** 2] * 50, cv))
        name = f"step{tag}_updown"
        case(name, f"+{pct(step * 100)} at 40, back down at 80 of 120, CV {pct(cv * 100)}",
             noisy(rng(name), [100.0] * 40 + [100.0 * (1 + step)] * 40 + [100.0] * 40, cv))

# Pure noise: no change is planted, so none should be found.
for n in (10, 20, 35, 50, 100, 200, 500):
    name = f"noise_n{n}"
    case(name, f"pure noise, {n} points, CV 2% (expect no change point)", noisy(rng(name), [100.0] * n, 0.02))
for n in (100, 300):
    name = f"noise_n{n}_p0.01"
    case(name, f"pure noise, {n} points, CV 2%, max_pvalue 0.01 (chance change points may pass at this level)",
         noisy(rng(name), [100.0] * n, 0.02), max_pvalue=0.01)

# Slow linear drift: no step, a trend.
for n, slope, cv in ((100, 0.001, 0.01), (200, 0.0005, 0.02), (100, 0.005, 0.01)):
    name = f"drift_n{n}_{slope * 100:g}pct"
    case(name, f"linear drift of {pct(slope * 100)} a point over {n} points, CV {pct(cv * 100)}",
         noisy(rng(name), [100.0 * (1 + slope * i) for i in range(n)], cv))

# Outliers: single spikes in flat noise, and one beside a real step.
def spiked(name, n, spikes, cv=0.01, levels=None):
    values = noisy(rng(name), levels or [100.0] * n, cv)
    for at, factor in spikes:
        values[at] = round(values[at] * factor, 4)
    return values


case("outlier_mid", "one spike of +50% at 30 of 60, CV 1% (expect no change point)", spiked("outlier_mid", 60, [(30, 1.5)]))
case("outlier_two", "spikes of -40% at 20 and +80% at 70 of 100, CV 1%", spiked("outlier_two", 100, [(20, 0.6), (70, 1.8)]))
case("outlier_first", "a spike of +50% at index 1 of 60", spiked("outlier_first", 60, [(1, 1.5)]))
case("outlier_last", "a spike of +50% on the last of 60 points", spiked("outlier_last", 60, [(59, 1.5)]))
case("outlier_by_step", "a +10% step at 50 of 100 with a +60% spike at 49, CV 1%",
     spiked("outlier_by_step", 100, [(49, 1.6)], levels=[100.0] * 50 + [110.0] * 50))

# Short series, n = 0..10: a +20% step halfway (from n = 2), CV 1%.
for n in range(11):
    name = f"short_n{n}"
    case(name, f"{n} points, +20% at {n // 2}, CV 1%",
         noisy(rng(name), [100.0] * (n // 2) + [120.0] * (n - n // 2), 0.01))
case("short_1_1_9", "[1, 1, 9]: constant sides that differ, p = 0", [1.0, 1.0, 9.0])
case("short_1_1_9_9", "[1, 1, 9, 9]", [1.0, 1.0, 9.0, 9.0])
case("short_step_w2", "[1]*5 + [2]*5 with window 2: every window is one point against one, p = 1",
     [1.0] * 5 + [2.0] * 5, window_len=2)
case("short_two_p1", "[1, 2] with max_pvalue 1: split accepts p = 1, merge refuses it", [1.0, 2.0], max_pvalue=1.0)

# Constant series: every Q is 0, t = 0/0, p NaN.
for name, value, n in (("const_7", 7.0, 100), ("const_0.1", 0.1, 60), ("const_third", 1 / 3, 50),
                       ("const_zero", 0.0, 30), ("const_1e9", 1e9, 80)):
    case(name, f"{n} times {value!r}", [value] * n)

# The nightly use: 30 to 100 points, CV 3%, some with a -8% regression.
for n, at in ((30, None), (30, 18), (40, 25), (50, None), (60, 41), (75, 30), (90, None), (100, 77)):
    name = f"nightly_n{n}" + (f"_drop_at{at}" if at else "_flat")
    levels = [100.0] * n if at is None else [100.0] * at + [92.0] * (n - at)
    what = "no change" if at is None else f"-8% at {at}"
    case(name, f"nightly: {n} points, CV 3%, {what}", noisy(rng(name), levels, 0.03))

# Other options: min_magnitude 0.05, max_pvalue 0.01, shorter windows.
for step in (0.02, 0.05, 0.10):
    name = f"mag0.05_step{round(step * 100):02d}"
    case(name, f"min_magnitude 0.05, a +{pct(step * 100)} step at 50 of 100, CV 1%",
         noisy(rng(name), [100.0] * 50 + [100.0 * (1 + step)] * 50, 0.01), min_magnitude=0.05)
name = "mag0.05_p0.01_two"
case(name, "min_magnitude 0.05 and max_pvalue 0.01, +3% at 40 then +8% at 80 of 120, CV 1%",
     noisy(rng(name), [100.0] * 40 + [103.0] * 40 + [111.24] * 40, 0.01), max_pvalue=0.01, min_magnitude=0.05)
for step, cv in ((0.02, 0.01), (0.05, 0.02)):
    name = f"p0.01_step{round(step * 100):02d}_cv{round(cv * 100)}"
    case(name, f"max_pvalue 0.01, a +{pct(step * 100)} step at 60 of 100, CV {pct(cv * 100)}",
         noisy(rng(name), [100.0] * 60 + [100.0 * (1 + step)] * 40, cv), max_pvalue=0.01)
for w in (10, 20, 30):
    name = f"window{w}_steps"
    case(name, f"window {w}, +5% at 30 and -5% at 70 of 100, CV 1%",
         noisy(rng(name), [100.0] * 30 + [105.0] * 40 + [100.0] * 30, 0.01), window_len=w)
name = "window30_p0.2"
case(name, "window 30, max_pvalue 0.2 (first pass 0.4): many weak points to merge, +3% at 50 of 100, CV 2%",
     noisy(rng(name), [100.0] * 50 + [103.0] * 50, 0.02), window_len=30, max_pvalue=0.2)

# Ties: small integers, where equal Q values and equal p-values are common.
name = "ties_small_ints"
r = rng(name)
case(name, "60 random integers 0..4, window 20, max_pvalue 0.05", [float(r.randint(0, 4)) for _ in range(60)],
     window_len=20, max_pvalue=0.05)
case("ties_int_two_steps", "(7i mod 5) + 3 from 40, - 5 from 90, 130 points, window 30, max_pvalue 0.01",
     [float((i * 7) % 5 + (3 if i >= 40 else 0) - (5 if i >= 90 else 0)) for i in range(130)],
     window_len=30, max_pvalue=0.01)
case("ties_sawtooth_step", "a sawtooth of period 11 with +2 at 30 of 60",
     [round((10.0 if i < 30 else 12.0) + ((i * 37) % 11) / 10, 4) for i in range(60)])

# Long: segments of more than 128 points (numpy's pairwise sum recurses),
# and of more than 8192 (numpy sums block by block).
name = "long_n1000_steps"
case(name, "1000 points, +10% at 300, -5% at 700, CV 2%",
     noisy(rng(name), [100.0] * 300 + [110.0] * 400 + [104.5] * 300, 0.02))

name = "long_n10000_step"
case(name, "10000 points, +5% at 9000, CV 1%, max_pvalue 1e-6: the 9000 points before it are past numpy's "
     "8192-value summing buffer", noisy(rng(name), [100.0] * 9000 + [105.0] * 1000, 0.01), max_pvalue=1e-6)

# Missing values (null -> NaN): windows holding one find nothing, and a
# segment holding one tests as NaN.
base = [10.0] * 30 + [12.0] * 40 + [15.0] * 50
for at, what in ((100, "after the second step: 70 tests as NaN and still passes"),
                 (10, "before the first step: both change points go"),
                 (50, "between the steps: no window finds either")):
    name = f"nan_at{at}"
    case(name, f"steps at 30 and 70 of 120, a missing value at {at} {what}",
         [None if i == at else v for i, v in enumerate(noisy(rng(name), base, 0.01))])

if __name__ == "__main__":
    for f in os.listdir(HERE):
        if f.endswith(".json"):
            os.remove(os.path.join(HERE, f))
    for name, _, series, options in cases:
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump({"series": series, **options}, f)
            f.write("\n")
    with open(os.path.join(HERE, "README.md"), "w") as f:
        f.write("""# Change-point corpus: benchrig against Apache Otava

`tests/changepoint_parity.rs` runs every case here through
`benchrig::changepoint::change_points` and through Apache Otava 0.8.0's
`otava.analysis.compute_change_points` (`ci/otava-oracle.py`) and requires
the same change points, with p-values, means, standard deviations and qhat
equal within a relative 1e-9.

A case is `NAME.json`: `{"series": [...], "window_len": W, "max_pvalue": P,
"min_magnitude": M}` (Otava's defaults are 50, 0.001, 0). `null` in a series
is a missing value, NaN on both sides. The files are written by
`generate.py` (deterministic; edit it, not the files, and run it again);
this README too.

| case | what it covers |
| --- | --- |
""")
        for name, about, series, options in cases:
            f.write(f"| `{name}` | {about} |\n")
    print(f"{len(cases)} cases written to {HERE}")
