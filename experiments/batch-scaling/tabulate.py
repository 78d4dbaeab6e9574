#!/usr/bin/python3
"""Tabulates the batch-scaling experiment: reads config.json and results/ (`protwin compare --batch B
--json` per model, server and batch; the same with the batch searched, `_bauto`; `protwin machine
--json`) and writes
  results/batch_scaling.csv  one row per (setup, batch, system): tokens/s, iteration split, peak
                             GPU memory, ProTrain's knobs and speed-up, or the memory that stops it;
  results/summary.json       per system the best batch of the sweep against `compare`'s own
                             choice, and the verdict on each README criterion;
and prints the README's tables (markdown).

usage: tabulate.py EXPERIMENT_DIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots"))
from _results import (  # noqa: E402
    GIB, experiment, load_compare, load_machine, misfit_reason, systems_by_name, write_summary, write_table)


def main():
    cfg, res = experiment(sys.argv[1])
    crit = cfg["criteria"]
    rows, summary = [], {"setups": []}
    for st in cfg["setups"]:
        machine = load_machine(os.path.join(res, st["machine"] + ".json"))
        stem = os.path.join(res, f"{st['model']}_{st['machine']}_{st['gpus']}gpu_b")
        for b in st["batches"]:
            by = systems_by_name(load_compare(f"{stem}{b}.json"))
            for s in cfg["systems"]:
                e = by[s]
                k = e.get("knobs") or {}
                rows.append({"model": st["model"], "machine": st["machine"], "gpus": st["gpus"], "batch": b,
                             "system": s, "tokens_per_s": e["tokens_per_s"], "iteration_s": e["iteration_s"],
                             "forward_s": e["forward_s"], "backward_s": e["backward_s"],
                             "exposed_optimizer_s": e["exposed_optimizer_s"],
                             "peak_gpu_GiB": e["peak_gpu_bytes"] / GIB if e["peak_gpu_bytes"] else None,
                             "n_persist": k.get("n_persist"), "n_buffer": k.get("n_buffer"),
                             "n_swap": k.get("n_swap"), "n_checkpoint": k.get("n_checkpoint"),
                             "protrain_speedup": e.get("protrain_speedup"),
                             "misfit": misfit_reason(e, machine, st["gpus"]) or ""})
        auto = systems_by_name(load_compare(f"{stem}auto.json"))
        entry = {k: st[k] for k in ("model", "machine", "gpus")}
        entry["systems"] = {}
        for s in cfg["systems"]:
            mine = [r for r in rows if (r["model"], r["machine"], r["system"]) == (st["model"], st["machine"], s)]
            fit = [r for r in mine if r["tokens_per_s"]]
            best = max(fit, key=lambda r: r["tokens_per_s"]) if fit else None
            tps = [r["tokens_per_s"] for r in fit]
            monotone = all(b >= a * (1 - crit["monotone_tolerance"]) for a, b in zip(tps, tps[1:]))
            a = auto[s]
            entry["systems"][s] = {
                "largest_batch_that_fits": fit[-1]["batch"] if fit else None,
                "best_batch": best["batch"] if best else None,
                "best_tokens_per_s": best["tokens_per_s"] if best else None,
                "compare_auto_batch": a["batch"], "compare_auto_tokens_per_s": a["tokens_per_s"],
                "best_matches_compare": bool(best) and a["tokens_per_s"] is not None and
                abs(best["tokens_per_s"] / a["tokens_per_s"] - 1) < 1e-9,
                "monotone_until_largest_fit": monotone}
        pt = {r["batch"]: r["tokens_per_s"] for r in rows
              if (r["model"], r["machine"], r["system"]) == (st["model"], st["machine"], "protrain")}
        entry["protrain_at_least_every_baseline"] = all(
            r["tokens_per_s"] is None or (pt[r["batch"]] or 0) >= r["tokens_per_s"]
            for r in rows if (r["model"], r["machine"]) == (st["model"], st["machine"]) and r["system"] != "protrain")
        summary["setups"].append(entry)
    write_table(os.path.join(res, "batch_scaling.csv"), rows)
    summary["reproduced"] = all(e["protrain_at_least_every_baseline"] and
                                all(v["monotone_until_largest_fit"] and v["best_matches_compare"]
                                    for v in e["systems"].values()) for e in summary["setups"])
    write_summary(os.path.join(res, "summary.json"), summary)

    for st, e in zip(cfg["setups"], summary["setups"]):
        print(f"\n{st['model']} on {st['gpus']} × {st['machine']} (tokens/s; ProTrain speed-up in brackets)\n")
        print("| batch/GPU | " + " | ".join(cfg["systems"]) + " | ProTrain persist/buffer/swap/ckpt |")
        print("|---" * (len(cfg["systems"]) + 2) + "|")
        for b in st["batches"]:
            cells, knobs = [], ""
            for s in cfg["systems"]:
                r = next(r for r in rows if (r["model"], r["machine"], r["batch"], r["system"]) ==
                         (st["model"], st["machine"], b, s))
                if r["tokens_per_s"] is None:
                    cells.append(f"— ({r['misfit']})")
                else:
                    sp = f" ({r['protrain_speedup']:.2f}×)" if r["protrain_speedup"] else ""
                    cells.append(f"{r['tokens_per_s']:.0f}{sp}")
                    if s == "protrain":
                        knobs = f"{r['n_persist']}/{r['n_buffer']}/{r['n_swap']}/{r['n_checkpoint']}"
            print(f"| {b} | " + " | ".join(cells) + f" | {knobs} |")
        print("\n| system | largest batch that fits | best batch (sweep) | compare's batch | same tokens/s | "
              "monotone |")
        print("|---|---|---|---|---|---|")
        for s, v in e["systems"].items():
            print(f"| {s} | {v['largest_batch_that_fits']} | {v['best_batch']} | {v['compare_auto_batch']} | "
                  f"{v['best_matches_compare']} | {v['monotone_until_largest_fit']} |")
    print(f"\nreproduced: {summary['reproduced']}")
    return 0 if summary["reproduced"] else 1  # exit 1: the criterion is missed


if __name__ == "__main__":
    sys.exit(main())
