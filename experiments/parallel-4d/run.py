#!/usr/bin/python3
"""Runs `protwin search-4d --json` for every (model, cluster, GPU count) in config.json, then a few
`protwin simulate-4d` probes that put TP x CP across nodes (which the search never enumerates:
Fujii et al.'s rule keeps TP x CP inside a node), and writes

  results/search_<model>_<machine>_<gpus>.json   every simulated layout of one search
  results/probes.json                            the across-node probes and their in-node twins
  results/summary.json, results/best.csv         best layout per size; the insight checks
  results/all.csv                                every simulated layout

The binary is $PROTWIN (default build/release/cli/protwin), see experiments/_protwin.py.
"""
import itertools
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import _protwin  # noqa: E402


def layout(c):
    return f"TP{c['tp']} CP{c['cp']} PP{c['pp']} DP{c['dp']} MBS{c['mbs']}"


def mp(c):
    return c["tp"] * c["cp"] * c["pp"]


def insight_mp(rows):
    """Smaller model-parallel degree wins when it fits: the best layout's TP*CP*PP against the
    smallest that fits, and how often a smaller degree beats a larger one at the same MBS."""
    best = max(rows, key=lambda r: r["tokens_per_s"])
    smallest = min(mp(r) for r in rows)
    pairs = wins = 0
    for a, b in itertools.combinations(rows, 2):
        if a["mbs"] != b["mbs"] or mp(a) == mp(b):
            continue
        small, large = (a, b) if mp(a) < mp(b) else (b, a)
        pairs += 1
        wins += small["tokens_per_s"] > large["tokens_per_s"]
    return {"best_mp": mp(best), "smallest_fitting_mp": smallest, "best_is_smallest_mp": mp(best) == smallest,
            "pairs_same_mbs": pairs, "smaller_mp_faster": wins}


def insight_mbs(rows):
    """Larger micro-batches help: same (TP, CP, PP, DP), MBS doubled."""
    by = {(r["tp"], r["cp"], r["pp"], r["dp"], r["mbs"]): r for r in rows}
    pairs = wins = 0
    gains = []
    for (t, c, p, d, b), r in by.items():
        nxt = by.get((t, c, p, d, 2 * b))
        if nxt is None:
            continue
        pairs += 1
        wins += nxt["tokens_per_s"] > r["tokens_per_s"]
        gains.append(nxt["tokens_per_s"] / r["tokens_per_s"] - 1)
    return {"pairs": pairs, "larger_mbs_faster": wins,
            "median_gain": sorted(gains)[len(gains) // 2] if gains else None,
            "min_gain": min(gains) if gains else None, "max_gain": max(gains) if gains else None}


def probe_pairs(best, gpn):
    """Twins of the best layout with the same TP*CP*PP*DP and MBS: a factor k (the smallest power
    of two that pushes TP*CP past a node) taken from DP goes into TP, across nodes; or into PP,
    keeping TP*CP inside a node. Returns [(across, in_node)], empty when DP is too small."""
    t, c, p, d, b = best["tp"], best["cp"], best["pp"], best["dp"], best["mbs"]
    k = 2
    while t * c * k <= gpn:
        k *= 2
    if d % k == 0:
        return [(dict(tp=t * k, cp=c, pp=p, dp=d // k, mbs=b), dict(tp=t, cp=c, pp=p * k, dp=d // k, mbs=b))]
    return []


def main():
    cfg = _protwin.load_config(HERE)
    out_dir = os.path.join(HERE, "results")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.monotonic()
    all_rows, best_rows, searches = [], [], []
    for model in cfg["models"]:
        for cl in cfg["clusters"]:
            for gpus in cfg["gpus"]:
                gpn = cl["gpus_per_node"]
                nodes = gpus // gpn
                args = ["search-4d", "--model", model, "--machine", cl["machine"], "--nodes", nodes,
                        "--seq", cfg["seq"], "--gbs", cfg["gbs"], "--recompute", cfg["recompute"],
                        "--dtype", cfg["dtype"], "--json"]
                res, wall, _ = _protwin.run(args)
                res["wall_s"] = wall
                name = f"search_{model}_{cl['machine']}_{gpus}.json"
                _protwin.write_json(os.path.join(out_dir, name), res)
                rows = []
                for c in res["configurations"]:
                    r = {k: c[k] for k in ("tp", "cp", "pp", "dp", "mbs", "iteration_s", "tokens_per_s",
                                           "tflops_per_gpu", "mfu", "bubble_fraction", "memory_GiB", "rank")}
                    r.update(model=model, machine=cl["machine"], gpus=gpus, nodes=nodes, mp=mp(r),
                             layout=layout(r))
                    rows.append(r)
                all_rows += rows
                s = {"model": model, "machine": cl["machine"], "gpus": gpus, "nodes": nodes,
                     "counts": res["counts"], "search_seconds": res["seconds"], "wall_s": wall, "file": name}
                if rows:
                    best = max(rows, key=lambda r: r["tokens_per_s"])
                    s.update(best=best, insight_mp=insight_mp(rows), insight_mbs=insight_mbs(rows))
                    best_rows.append(best)
                searches.append(s)

    # TP x CP across nodes against PP across nodes, same degrees: twins of a best layout.
    probes = []

    def simulate(model, machine, v):
        args = ["simulate-4d", "--model", model, "--machine", machine, "--seq", cfg["seq"], "--gbs", cfg["gbs"],
                "--recompute", cfg["recompute"], "--dtype", cfg["dtype"], "--tp", v["tp"], "--cp", v["cp"],
                "--pp", v["pp"], "--dp", v["dp"], "--mbs", v["mbs"], "--json"]
        res, _, msg = _protwin.run(args, accept=("--",))
        out = dict(v, layout=layout(v), refused=msg)
        if res:
            out.update({k: res[k] for k in ("tokens_per_s", "tflops_per_gpu", "bubble_fraction", "fits_80pct",
                                            "memory_GiB")}, placement=res["placement"])
        return out

    for model, cl in itertools.product(cfg["models"], cfg["clusters"]):
        # The first size from 64 GPUs up whose best layout has the DP to trade.
        pairs = []
        for s in searches:
            if s["model"] == model and s["machine"] == cl["machine"] and s["gpus"] >= 64 and "best" in s:
                pairs = probe_pairs(s["best"], cl["gpus_per_node"])
                if pairs:
                    break
        for across, in_node in pairs:
            a, i = simulate(s["model"], s["machine"], across), simulate(s["model"], s["machine"], in_node)
            probes.append({"model": s["model"], "machine": s["machine"], "gpus": s["gpus"], "best": s["best"],
                           "tp_cp_across_nodes": a, "pp_across_nodes": i,
                           "in_node_faster": "tokens_per_s" in a and "tokens_per_s" in i
                           and i["tokens_per_s"] > a["tokens_per_s"]})
    _protwin.write_json(os.path.join(out_dir, "probes.json"), {"probes": probes})

    total = time.monotonic() - t0
    _protwin.write_json(os.path.join(out_dir, "summary.json"),
                        {"config": cfg, "searches": searches, "total_wall_s": total})
    fields = ["model", "machine", "gpus", "nodes", "layout", "tp", "cp", "pp", "dp", "mbs", "mp", "iteration_s",
              "tokens_per_s", "tflops_per_gpu", "mfu", "bubble_fraction", "memory_GiB", "rank"]
    _protwin.write_csv(os.path.join(out_dir, "all.csv"), all_rows, fields)
    _protwin.write_csv(os.path.join(out_dir, "best.csv"), best_rows, fields)
    print(f"total {total:.1f} s (budget {cfg['time_budget_s']} s)")
    print(f"{'model':14s} {'machine':13s} {'GPUs':>4s} {'fit':>4s}  best layout                     "
          f"TFLOPS/GPU  MFU   MP best/min  MBS x2 faster")
    for s in searches:
        fit = s["counts"]["simulated"]
        if "best" not in s:
            print(f"{s['model']:14s} {s['machine']:13s} {s['gpus']:4d} {fit:4d}  (no layout fits under 80 %)")
            continue
        b, im, ib = s["best"], s["insight_mp"], s["insight_mbs"]
        print(f"{s['model']:14s} {s['machine']:13s} {s['gpus']:4d} {fit:4d}  {b['layout']:30s} "
              f"{b['tflops_per_gpu']:9.1f} {100 * b['mfu']:5.1f}  {im['best_mp']:3d}/{im['smallest_fitting_mp']:<3d}"
              f"     {ib['larger_mbs_faster']}/{ib['pairs']}")
    for p in probes:
        a, i = p["tp_cp_across_nodes"], p["pp_across_nodes"]
        print(f"probe {p['model']} {p['machine']} {p['gpus']} GPUs: TP*CP across nodes {a['layout']} "
              f"{a.get('tflops_per_gpu', float('nan')):.1f} TFLOPS/GPU; TP*CP in a node, PP across "
              f"{i['layout']} {i.get('tflops_per_gpu', float('nan')):.1f}")

if __name__ == "__main__":
    main()
