#!/usr/bin/env python3
"""The table of a side-by-side run (benches/side-by-side): for each workload and
implementation, the median of each key field with its spread (min-max over the runs) and the
ratio of the median to clientgo-rs's, from the JSON lines ../shared/peers/run_side_by_side.py
wrote (one per run, tagged `_impl`, `_label`, `_id`).

Fields that the harnesses name differently are read under one name: I1's sync CPU is
`client_cpu_sync_s` here and `cpu_a_s` in the peers, its update phase with the writers in the
process `client_cpu_updates_with_writers_s` and `cpu_b_s`, the events per second the handler
sees with the writers in the process `events_per_s_with_writers` and `events_per_s` (the peers'
writers are always in the process; clientgo-rs's first round has them in its helper), its
peak RSS with the writers `peak_rss_with_writers_kb` and `peak_rss_kb`. D1's `first_sys_ms`
(the first decode's kernel time: its new pages) and `clone_mb_per_s` (the typed list cloned
onto fresh pages: the ceiling of any reader building those objects) are clientgo-rs's alone.

    side_by_side_table.py FILE.jsonl
"""
import json
import statistics
import sys

# (shown name, names in the records, in order of preference)
FIELDS = {
    "Q1": [("adds_per_s", ["adds_per_s"]), ("wall_s", ["wall_s"])],
    "Q1p4": [("adds_per_s", ["adds_per_s"]), ("wall_s", ["wall_s"])],
    "Q2": [("lateness_p50_ms", ["lateness_p50_ms"]), ("lateness_p99_ms", ["lateness_p99_ms"]),
           ("lateness_max_ms", ["lateness_max_ms"])],
    "Q3": [("wall_s", ["wall_s"]), ("gets", ["gets"])],
    "S1": [("insert_per_s", ["insert_per_s", "ops_per_s"]),
           ("bytes_per_object", ["bytes_per_object", "bytes_per_obj_rss"]),
           ("by_index_mean_us", ["by_index_mean_us"]), ("list_ms", ["list_ms"])],
    "D1": [("mb_per_s", ["mb_per_s"]), ("objects_per_s", ["objects_per_s"]),
           ("peak_rss_kb", ["peak_rss_kb"]), ("first_sys_ms", ["first_sys_ms"]),
           ("clone_mb_per_s", ["clone_mb_per_s"])],
    "I1": [("synced_s", ["synced_s", "init_done_s"]),
           ("sync_cpu_s", ["client_cpu_sync_s", "cpu_a_s"]),
           ("update_cpu_with_writers_s", ["client_cpu_updates_with_writers_s", "cpu_b_s"]),
           ("events_per_s_with_writers", ["events_per_s_with_writers", "events_per_s"]),
           ("peak_rss_with_writers_kb", ["peak_rss_with_writers_kb", "peak_rss_kb"])],
}
BASELINE = "clientgo-rs"


def family(wid):
    for f in ("Q1p4", "Q1", "Q2", "Q3", "S1", "D1", "I1"):
        if wid == f or (f in ("S1", "D1", "I1") and wid.startswith(f)):
            return f
    return wid


def value(rec, names):
    for n in names:
        v = rec.get(n)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def main(path):
    records = [json.loads(line) for line in open(path) if line.strip()]
    groups, order = {}, []
    for r in records:
        if "_error" in r:
            continue
        wid = r.get("_id") or r.get("workload", "?")
        key = (wid, r.get("_impl", "?"), r.get("variant") or r.get("_label") or "")
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(r)
    families = []
    for wid, _, _ in order:
        if family(wid) not in families:
            families.append(family(wid))
    for fam in families:
        keys = [k for k in order if family(k[0]) == fam]
        fields = FIELDS.get(fam)
        if fields is None:
            first = groups[keys[0]][0]
            fields = [(n, [n]) for n, v in first.items() if not n.startswith("_")
                      and isinstance(v, (int, float)) and not isinstance(v, bool)][:6]
        stats = {}
        for k in keys:
            for shown, names in fields:
                vals = [v for v in (value(r, names) for r in groups[k]) if v is not None]
                stats[(k, shown)] = (statistics.median(vals), min(vals), max(vals)) if vals else None
        base = {}
        for shown, _ in fields:
            for k in keys:
                if k[1] == BASELINE and stats[(k, shown)]:
                    base[shown] = stats[(k, shown)][0]
                    break
        head = ["workload", "impl", "variant", "runs"]
        for shown, _ in fields:
            head += [f"{shown} median (min-max)", "/ ours"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for k in keys:
            row = [k[0], k[1], k[2] or "-", str(len(groups[k]))]
            for shown, _ in fields:
                s = stats[(k, shown)]
                if s is None:
                    row += ["-", "-"]
                    continue
                row.append(f"{fmt(s[0])} ({fmt(s[1])}-{fmt(s[2])})")
                b = base.get(shown)
                row.append(f"{s[0] / b:.2f}x" if b else "-")
            print("| " + " | ".join(row) + " |")
        print()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
