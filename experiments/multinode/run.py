#!/usr/bin/python3
"""Driver of the multinode experiment: `protwin compare --nodes N --batch B --json` per (model,
nodes) on the A100 server, one row per system with tokens/s, global and per-GPU batch, ProTrain's
speed-up and, where a system does not fit, the memory that stops it; then the README's criteria
and the figure (plots/multinode.py). Exits 1 when a criterion is missed.

Writes results/compare_<model>_<N>node.json (protwin's answers), results/machine.json,
results/multinode.json (rows + verdicts) and results/multinode.csv."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots"))
import _protwin  # noqa: E402
from _results import misfit_reason  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["model", "nodes", "gpus", "system", "batch_per_gpu", "global_batch", "tokens_per_s",
          "tokens_per_s_per_gpu", "protrain_speedup", "iteration_s", "forward_s", "backward_s",
          "exposed_optimizer_s", "peak_gpu_GiB", "host_per_rank_GiB", "misfit"]


def rows_of(answer, cfg, machine):
    rows = []
    per_node = answer["gpus"] // answer["nodes"]
    for s in answer["systems"]:
        if s["name"] not in cfg["systems"]:
            continue
        r = {"model": answer["model"], "nodes": answer["nodes"], "gpus": answer["gpus"], "system": s["name"]}
        if s["tokens_per_s"] is None:
            r["misfit"] = misfit_reason(s, machine, per_node)
        else:
            r.update({k: s[k] for k in ("tokens_per_s", "iteration_s", "forward_s", "backward_s",
                                        "exposed_optimizer_s")})
            r["batch_per_gpu"], r["global_batch"] = s["batch"], s["global_batch"]
            r["tokens_per_s_per_gpu"] = s["tokens_per_s"] / answer["gpus"]
            r["protrain_speedup"] = s.get("protrain_speedup")
            r["peak_gpu_GiB"] = s["peak_gpu_bytes"] / 2 ** 30
            r["host_per_rank_GiB"] = (s["peak_pinned_bytes"] + s["peak_pageable_bytes"]) / 2 ** 30
        rows.append(r)
    return rows


def verdicts(rows, cfg):
    crit = cfg["criteria"]
    out = {"protrain_at_least_every_baseline": [], "ok": True}
    for model, nodes in sorted({(r["model"], r["nodes"]) for r in rows}):
        by = {r["system"]: r for r in rows if (r["model"], r["nodes"]) == (model, nodes)}
        pt = by["protrain"].get("tokens_per_s")
        others = {s: r["tokens_per_s"] for s, r in by.items() if s != "protrain" and r.get("tokens_per_s")}
        if pt is None and not others:
            continue  # nothing fits: nothing to rank
        met = pt is not None and all(pt >= v for v in others.values())
        out["protrain_at_least_every_baseline"].append({"model": model, "nodes": nodes, "met": met})
        out["ok"] &= met
    h = crit["headline"]
    head = [r for r in rows if (r["model"], r["nodes"]) == (h["model"], h["nodes"])]
    out["headline"] = {r["system"]: r.get("tokens_per_s") for r in head}
    out["headline_fits"] = any(r["system"] == "protrain" and r.get("tokens_per_s") for r in head)
    out["ok"] &= out["headline_fits"]
    if crit.get("gpt3_175b_needs_more_than_one_node"):
        one = [r for r in rows if r["model"] == "gpt3-175b" and r["nodes"] == 1]
        out["gpt3_175b_fits_on_one_node"] = [r["system"] for r in one if r.get("tokens_per_s")]
        out["ok"] &= not out["gpt3_175b_fits_on_one_node"]
    return out


def main():
    cfg = _protwin.load_config(HERE)
    res = os.path.join(HERE, "results")
    os.makedirs(res, exist_ok=True)
    machine, _, _ = _protwin.run(["machine", cfg["machine"], "--json"])
    _protwin.write_json(os.path.join(res, "machine.json"), machine)
    rows, timings = [], []
    for study in cfg["studies"]:
        for nodes in study["nodes"]:
            ans, wall, _ = _protwin.run(["compare", "--model", study["model"], "--machine", cfg["machine"],
                                         "--nodes", nodes, "--batch", cfg["batch_per_gpu"], "--seq", cfg["seq"],
                                         "--json"])
            _protwin.write_json(os.path.join(res, f"compare_{study['model']}_{nodes}node.json"), ans)
            rows += rows_of(ans, cfg, machine)
            timings.append({"model": study["model"], "nodes": nodes, "compare_s": wall})
    v = verdicts(rows, cfg)
    _protwin.write_json(os.path.join(res, "multinode.json"),
                        {"experiment": "multinode", "machine": cfg["machine"], "seq": cfg["seq"],
                         "batch_per_gpu": cfg["batch_per_gpu"], "rows": rows, "verdicts": v, "timings": timings})
    _protwin.write_csv(os.path.join(res, "multinode.csv"), rows, FIELDS)
    for r in rows:
        tps = "%.1f tokens/s (%.2fx)" % (r["tokens_per_s"], r.get("protrain_speedup") or 1) \
            if r.get("tokens_per_s") else "does not fit (%s)" % r["misfit"]
        print(f"  {r['model']:10s} {r['nodes']} node(s) {r['system']:11s} {tps}")
    _protwin.plot("multinode.py", os.path.join(HERE, "config.json"), res, "--out", os.path.join(HERE, "multinode"))
    print("criteria: " + ("met" if v["ok"] else "MISSED") + f" ({v})")
    sys.exit(0 if v["ok"] else 1)


if __name__ == "__main__":
    main()
