#!/usr/bin/python3
"""Simulates one HuggingFace GPT-2-large fp32 training step per NeuSight label (DDP on one GPU:
`protwin search --system ddp --gpus 1 --dtype fp32 --hf-eager --batch B --json`) and compares the
forward, the backward and their sum with NeuSight's measured fw_latency, bwall_latency and
e2e_latency. Writes results/comparison.{json,csv}; exits 1 when a criterion is missed.

The labels are the score only: nothing here feeds them back into protwin. The machines are the
embedded a100-80g-pcie-server and h100-server files (hardware data with provenance).
The binary is $PROTWIN (default build/release/cli/protwin), see experiments/_protwin.py.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import _protwin  # noqa: E402


def main():
    cfg = _protwin.load_config(HERE)
    crit = cfg["criterion"]
    out_dir = os.path.join(HERE, "results")
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    ok = True
    for r in cfg["rows"]:
        label_path = os.path.join(cfg["labels_dir"], r["gpu"], "gpt2_large-train-{}-{}.json".format(cfg["seq"], r["batch"]))
        with open(label_path) as f:
            label = json.load(f)
        res, _, _ = _protwin.run(["search", "--model", cfg["model"]["spec"], "--machine", r["machine"],
                                  "--system", "ddp", "--gpus", 1, "--dtype", cfg["dtype"], "--hf-eager",
                                  "--seq", cfg["seq"], "--batch", r["batch"], "--json"])
        best = res  # search --json: the best setting's fields at the top level
        fwd, bwd = best["forward_s"], best["backward_s"]
        meas_f, meas_b = label["fw_latency"] * 1e-3, label["bwall_latency"] * 1e-3
        meas_step = label["e2e_latency"] * 1e-3
        row = {"gpu": r["gpu"], "machine": r["machine"], "batch": r["batch"],
               "measured_forward_s": meas_f, "measured_backward_s": meas_b, "measured_step_s": meas_step,
               "forward_s": fwd, "backward_s": bwd, "step_s": fwd + bwd,
               "optimizer_s": best["exposed_optimizer_s"], "iteration_s": best["iteration_s"]}
        row["forward_err"] = fwd / meas_f - 1
        row["backward_err"] = bwd / meas_b - 1
        row["step_err"] = (fwd + bwd) / meas_step - 1
        row["within"] = (abs(row["step_err"]) <= crit["step_relative_tolerance"]
                         and abs(row["forward_err"]) <= crit["forward_relative_tolerance"]
                         and abs(row["backward_err"]) <= crit["backward_relative_tolerance"])
        ok = ok and row["within"]
        rows.append(row)
    _protwin.write_json(os.path.join(out_dir, "comparison.json"), {"criterion": crit, "rows": rows})
    fields = ["gpu", "machine", "batch", "measured_forward_s", "forward_s", "forward_err", "measured_backward_s",
              "backward_s", "backward_err", "measured_step_s", "step_s", "step_err", "optimizer_s", "within"]
    _protwin.write_csv(os.path.join(out_dir, "comparison.csv"), rows, fields)
    for r in rows:
        print(f"  {r['gpu']:24s} batch {r['batch']}: forward {r['forward_s']:.3f} s vs {r['measured_forward_s']:.3f} "
              f"({100 * r['forward_err']:+.1f} %), backward {r['backward_s']:.3f} vs {r['measured_backward_s']:.3f} "
              f"({100 * r['backward_err']:+.1f} %), step {r['step_s']:.3f} vs {r['measured_step_s']:.3f} "
              f"({100 * r['step_err']:+.1f} %){'' if r['within'] else '  MISS'}")
    if not ok:
        print("criterion MISSED: every row needs its step within 10 % and forward and backward within 15 %")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
