#!/usr/bin/python3
"""Tabulates the capacity experiment: reads config.json and results/ (`protwin capacity --json` per
server and GPU count, with `next_size` one layer past each system's limit, and `protwin machine
--json`) and writes
  results/capacity.csv   one row per (server, GPUs, system): largest model, its shape, the memory
                         that stops the next layer, the published number where there is one;
  results/summary.json   the verdict on each criterion of the README;
and prints the README's table (markdown).

usage: tabulate.py EXPERIMENT_DIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots"))
from _results import (  # noqa: E402
    experiment, load_machine, misfit_reason, write_summary, write_table)
from _style import load_json  # noqa: E402


def main():
    cfg, res = experiment(sys.argv[1])
    tol = cfg["criteria"]["published_tolerance"]
    published = {(p["machine"], p["gpus"], p["system"]): p["max_params_B"] for p in cfg["published"]}
    rows, summary = [], {"setups": [], "published": []}
    for setup in cfg["setups"]:
        m, g = setup["machine"], setup["gpus"]
        machine = load_machine(os.path.join(res, m + ".json"))
        cap = load_json(os.path.join(res, f"{m}_{g}gpu.json"), ("systems",), "`protwin capacity --json` output")
        for s in cap["systems"]:
            row = {"machine": m, "gpus": g, "system": s["name"], "max_params_B": s["max_params"] / 1e9,
                   "hidden": s.get("hidden"), "layers": s.get("layers"), "next_layer_stopped_by": "",
                   "closest_setting_overflows": "",
                   "published_B": published.get((m, g, s["name"])), "within_tolerance": ""}
            # `protwin capacity` names what stops one layer more (GPU memory, host memory, or only
            # the two together: some setting fits each pool alone, none fits both), and the needs of
            # the setting closest to fitting, whose larger overflow misfit_reason names.
            if s["max_params"]:
                nxt = dict(s["next_size"], tokens_per_s=None)
                row["next_layer_stopped_by"] = nxt["limited_by"]
                row["closest_setting_overflows"] = misfit_reason(nxt, machine, g)
            if row["published_B"]:
                row["within_tolerance"] = abs(row["max_params_B"] / row["published_B"] - 1) <= tol
                summary["published"].append({k: row[k] for k in ("machine", "gpus", "system", "max_params_B",
                                                                  "published_B", "within_tolerance")})
            rows.append(row)
        pt = next(r["max_params_B"] for r in rows if (r["machine"], r["gpus"], r["system"]) == (m, g, "protrain"))
        others = [r["max_params_B"] for r in rows if (r["machine"], r["gpus"]) == (m, g) and r["system"] != "protrain"]
        summary["setups"].append({"machine": m, "gpus": g, "protrain_B": pt,
                                  "protrain_at_least_every_baseline": all(pt >= o for o in others)})
    write_table(os.path.join(res, "capacity.csv"), rows)
    summary["reproduced"] = all(s["protrain_at_least_every_baseline"] for s in summary["setups"]) and \
        all(p["within_tolerance"] for p in summary["published"])
    write_summary(os.path.join(res, "summary.json"), summary)

    print("| server | GPUs | system | largest model | hidden × layers | next layer stopped by "
          "| closest setting overflows | paper |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        pub = f"{r['published_B']:g}B" if r["published_B"] else "—"
        shape = f"{r['hidden']} × {r['layers']}" if r["hidden"] else "—"
        print(f"| {r['machine']} | {r['gpus']} | {r['system']} | {r['max_params_B']:.1f}B | {shape} | "
              f"{r['next_layer_stopped_by']} | {r['closest_setting_overflows']} | {pub} |")
    print(f"\nreproduced: {summary['reproduced']}")
    return 0 if summary["reproduced"] else 1  # exit 1: the criterion is missed


if __name__ == "__main__":
    sys.exit(main())
