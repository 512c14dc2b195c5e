#!/usr/bin/env python3
"""Markdown tables for docs/experiments.md, read from a benchrig SQLite database.

    python3 docs/tables.py DB RUN_NAME METRIC ROW_KEYS COL_KEY [--step STEP] [--hosts h1,h2]

Each cell of the table is mean ± CI95 (Student t, n-1) of METRIC over the
repetitions of the matching benchrig cell; n is given once per table.
"""
import json, math, sqlite3, sys, argparse

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}

def summary(values):
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None, n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T975.get(n - 1, 1.96) * sd / math.sqrt(n), n

def fmt(mean, half):
    digits = 0 if mean >= 100 else 1 if mean >= 10 else 2 if mean >= 1 else 3
    return f"{mean:.{digits}f}" + (f" ± {half:.{digits}f}" if half is not None else "")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db"); ap.add_argument("run"); ap.add_argument("metric")
    ap.add_argument("rows"); ap.add_argument("col")
    ap.add_argument("--step"); ap.add_argument("--hosts"); ap.add_argument("--play")
    ap.add_argument("--where", action="append", default=[], help="param=value (repeatable)")
    a = ap.parse_args()
    db = sqlite3.connect(a.db)
    run = db.execute("select id from runs where name = ? order by id desc limit 1", (a.run,)).fetchone()[0]
    q = """select c.host, c.play, c.params, c.status, c.reason, s.value, s.unit, s.step from cells c
           left join samples s on s.cell_id = c.id and s.metric = ? and (? is null or s.step = ?)
           where c.run_id = ? and (? is null or c.play like ?)"""
    data, units, status, ns = {}, set(), {}, set()
    rows_keys = a.rows.split(",")
    for host, play, params, st, reason, value, unit, step in db.execute(q, (a.metric, a.step, a.step, run, a.play, f"%{a.play}%" if a.play else None)):
        if a.hosts and host not in a.hosts.split(","):
            continue
        p = json.loads(params); p["host"] = host; p["step"] = step
        if any(str(p.get(k)) != v for k, v in (w.split("=", 1) for w in a.where)):
            continue
        row = tuple(str(p.get(k, "")) for k in rows_keys)
        col = " ".join(f"{k}={p.get(k, '')}" for k in a.col.split(",")) if "," in a.col else str(p.get(a.col, ""))
        if value is None:
            status[(row, col)] = st if st != "ok" else "-"
            continue
        units.add(unit)
        data.setdefault((row, col), []).append(value)
    rows = sorted({r for r, _ in list(data) + list(status)}, key=lambda r: r)
    cols = []
    for _, c in list(data) + list(status):
        if c not in cols:
            cols.append(c)
    print("| " + " | ".join(rows_keys) + " | " + " | ".join(cols) + " |")
    print("|" + "---|" * (len(rows_keys) + len(cols)))
    for r in rows:
        cells = []
        for c in cols:
            if (r, c) in data:
                m, h, n = summary(data[(r, c)]); ns.add(n); cells.append(fmt(m, h))
            else:
                cells.append(status.get((r, c), ""))
        print("| " + " | ".join(r) + " | " + " | ".join(cells) + " |")
    print(f"\n({a.metric} in {', '.join(sorted(units))}; mean ± CI95; n = {', '.join(map(str, sorted(ns)))})")

main()
