#!/usr/bin/env python3
"""The README's table of a five_runs.sh series (issue 22): one row per run and model from
DIR/run-N-<model>-calibration.json, then how many runs met all four criteria per model.
usage: five_runs_table.py DIR"""
import json
import os
import statistics
import sys


def pct(x):
    return f"{100 * x:.1f} %"


def interval(v, iv, fmt=pct):
    return f"{fmt(v)} [{fmt(iv[0]).replace(' %', '')}, {fmt(iv[1]).replace(' %', '')}]"


def corrected(rule):
    c = rule["corrected"]
    return "none" if c.startswith("none") else c.replace("between steps", "steps").replace(" and ", "+")


def row(n, j):
    iv, raw, v = j["intervals"], j["raw"], j["verdicts"]
    g, cp, ad = j["step_probe_gflops"], j["step_copy_probe_GBps"], j["step_adam_probe_mparams_per_s"]
    spear = lambda x: f"{x:.2f}"
    cells = [
        str(n), j["model"], f"{j['rounds_done']}, {j['wall_s']:.0f} s",
        interval(j["iteration_time_mape"], iv["iteration_time_mape"]),
        interval(j["iteration_time_max_error"], iv["iteration_time_max_error"]),
        interval(j["spearman"], iv["spearman"], spear),
        interval(j["best_predicted_measured_gap"], iv["best_predicted_measured_gap"]),
        " / ".join(v[k] for k in ("iteration_time_mape", "iteration_time_max_error", "spearman",
                                  "best_predicted_measured_gap")),
        f"{100 * j['iteration_time_mean_error']:+.1f} %",
        f"{pct(raw['iteration_time_mape'])} / {pct(raw['iteration_time_max_error'])} / {raw['spearman']:.2f}",
        f"{g['median']:.0f} GFLOPS, {100 * g['p10_p90_relative']:.0f} % (p10 {g['p10']:.0f}, p90 {g['p90']:.0f}; "
        f"ref {j['reference_gflops']:.0f})",
        f"{100 * cp['p10_p90_relative']:.0f} %", f"{100 * ad['p10_p90_relative']:.0f} %",
        " / ".join(corrected(j["drift_rule"][k]) for k in ("gemm", "copy", "adam")),
    ]
    pb, bp = j.get("profile_blocks"), j.get("block_probes")
    cells.append(f"{pct(pb['iteration_time_mape'])}, {100 * pb['iteration_time_mean_error']:+.1f} %" if pb else "-")
    cells.append(f"{100 * bp['level_us']['p10_p90_relative']:.0f} % ({bp['samples']})" if bp else "-")
    # Case 0 (the searched best) ran first in every round until session 16: its error against the
    # other cases' median error shows whether the first place still slows it.
    err = [c["iteration_error"] for c in j["cases"] if "iteration_error" in c]
    cells.append(f"{100 * (err[0] - statistics.median(err[1:])):+.1f} pts" if len(err) > 1 else "-")
    return "| " + " | ".join(cells) + " |"


def main():
    d = sys.argv[1]
    print("| run | model | rounds, wall | MAPE [95 % interval] | max error | Spearman | best plan slower by | "
          "verdicts (MAPE / max / Spearman / best) | mean signed error | raw MAPE / max / Spearman | "
          "GEMM probe: median, p10-p90 band (reference) | copy probe band | CPU Adam probe band | "
          "drift rule: corrected (GEMM / copy / Adam) | profiles' blocks instead: MAPE, mean signed error | "
          "blocks' level band beside the steps (samples) | case 0's error - the others' median |")
    print("|" + "---|" * 17)
    met = {}
    for n in range(1, 6):
        for m in ("gpt2-tiny", "llama-tiny"):
            p = os.path.join(d, f"run-{n}-{m}-calibration.json")
            if not os.path.exists(p):
                continue
            j = json.load(open(p))
            print(row(n, j))
            met.setdefault(m, []).append(n) if j["criteria_met"] else met.setdefault(m, [])
    print()
    for m, runs in met.items():
        print(f"{m}: all four met (whole intervals) in {len(runs)} run(s): {runs}")


if __name__ == "__main__":
    main()
