#!/usr/bin/python3
"""Runs `protwin simulate-4d --json` for every published run in config.json (Megatron-LM,
Narayanan et al. 2021 Table 1; MosaicML llm-foundry MPT benchmarks), converts the simulated
iteration time into each source's own metric, and writes results/<set>_<name>.json,
results/comparison.json and results/comparison.csv.

Nothing is fitted: the machines are the embedded ones (hardware.md data); the only per-run input
is the run's published configuration (model, layout, batch, precision, recompute).

The binary is $PROTWIN (default build/release/cli/protwin), see experiments/_protwin.py.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import _protwin  # noqa: E402


def megatron_flops_per_iteration(r, seq, vocab):
    """Narayanan et al. eq. (3): 96 B s l h^2 (1 + s/6h + V/16lh), full recompute included."""
    B, s, l, h, V = r["gbs"], seq, r["layers"], r["hidden"], vocab
    return 96.0 * B * s * l * h * h * (1 + s / (6.0 * h) + V / (16.0 * l * h))


def mosaic_flops_per_token(r, seq):
    """MosaicML's MFU numerator per token: 6 N + 12 n_layers d_model seq (README 'MFU')."""
    return 6.0 * r["num_params"] + 12.0 * r["n_layers"] * r["d_model"] * seq


def common_args(model, machine, seq, gbs, dtype, recompute, flash, dist_opt):
    a = ["simulate-4d", "--model", model, "--machine", machine, "--seq", seq, "--gbs", gbs,
         "--dtype", dtype, "--recompute", recompute]
    if not flash:
        a.append("--no-flash")
    if not dist_opt:
        a.append("--no-distributed-optimizer")
    return a


def megatron_args(m, r):
    """simulate-4d arguments (without --json) of one Megatron-LM row `r` of config `m`."""
    spec = "gpt:hidden={},layers={},heads={},vocab={},max_positions={}".format(
        r["hidden"], r["layers"], r["heads"], m["vocab"], m["seq"])
    args = common_args(spec, m["machine"], m["seq"], r["gbs"], m["dtype"], m["recompute"],
                       m["flash_attention"], m["distributed_optimizer"])
    args += ["--tp", r["tp"], "--pp", r["pp"], "--cp", 1, "--dp", r["dp"], "--mbs", r["mbs"]]
    if r["vpp"] > 1:
        args += ["--vpp", r["vpp"]]
    if not r["overlap_grad_reduce"]:
        args.append("--no-overlap-grad-reduce")
    if m.get("framework"):
        args += ["--framework", m["framework"]]
    return args


def mosaic_args(mo, r):
    """simulate-4d arguments (without --json) of one MosaicML row `r` of config `mo`."""
    spec = "gpt:hidden={},layers={},heads={},vocab={},max_positions={},bias=false".format(
        r["d_model"], r["n_layers"], r["n_heads"], mo["vocab"], mo["seq"])
    recompute = "full" if r["activation_checkpointing"] else "none"
    args = common_args(spec, r["machine"], mo["seq"], r["gbs"], mo["dtype"], recompute,
                       mo["flash_attention"], True)
    args += ["--tp", 1, "--pp", 1, "--cp", 1, "--dp", r["dp"], "--mbs", r["mbs"]]
    for s in r.get("machine_overrides", []):
        args += ["--set", s]
    if mo.get("framework"):
        args += ["--framework", mo["framework"]]
        # composer's FSDP mixed precision: DEFAULT reduces in fp32, PURE in the compute dtype.
        args += ["--grad-reduce-dtype", "fp32" if r["fsdp_mixed_precision"] == "DEFAULT" else mo["dtype"]]
    return args


def safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def record(out_dir, rows, res, validation, row):
    """Keeps protwin's answer with the derived metric in results/<set>_<name>.json and appends the
    comparison row (published vs simulated, relative error, protwin's own figures)."""
    res["validation"] = validation
    _protwin.write_json(os.path.join(out_dir, row["set"] + "_" + safe(row["name"]) + ".json"), res)
    row.update(rel_err=row["simulated"] / row["published"] - 1, iteration_s=res["iteration_s"],
               bubble_fraction=res.get("bubble_fraction"), protwin_mfu=res.get("mfu"),
               protwin_hw_tflops_per_gpu=res.get("hw_tflops_per_gpu"))
    rows.append(row)


def main():
    cfg = _protwin.load_config(HERE)
    tol = cfg["criterion"]["relative_tolerance"]
    out_dir = os.path.join(HERE, "results")
    os.makedirs(out_dir, exist_ok=True)
    rows = []

    m = cfg["megatron"]
    for r in m["rows"]:
        res, wall, _ = _protwin.run(megatron_args(m, r) + ["--json"])
        flops = megatron_flops_per_iteration(r, m["seq"], m["vocab"])
        sim = flops / (res["iteration_s"] * r["gpus"]) / 1e12
        record(out_dir, rows, res, {"published": r, "narayanan_flops_per_iteration": flops,
                                    "simulated_tflops_per_gpu_narayanan": sim, "wall_s": wall},
               {"set": "megatron", "name": r["name"], "machine": m["machine"],
                "layout": f"TP{r['tp']} PP{r['pp']} DP{r['dp']} MBS{r['mbs']} vpp{r['vpp']}",
                "gpus": r["gpus"], "metric": "tflops_per_gpu", "published": r["published_tflops_per_gpu"],
                "simulated": sim})

    mo = cfg["mosaicml"]
    for r in mo["rows"]:
        recompute = "full" if r["activation_checkpointing"] else "none"
        res, wall, _ = _protwin.run(mosaic_args(mo, r) + ["--json"])
        tokens_per_s_per_gpu = r["gbs"] * mo["seq"] / res["iteration_s"] / r["gpus"]
        mfu = mosaic_flops_per_token(r, mo["seq"]) * tokens_per_s_per_gpu / (r["peak_tflops"] * 1e12)
        record(out_dir, rows, res, {"published": r, "simulated_tokens_per_s_per_gpu": tokens_per_s_per_gpu,
                                    "simulated_mfu_mosaicml": mfu, "wall_s": wall},
               {"set": "mosaicml", "name": r["name"], "machine": r["machine"],
                "layout": f"DP{r['dp']} MBS{r['mbs']} x{r['grad_accum']} recompute {recompute}",
                "gpus": r["gpus"], "metric": "mfu", "published": r["published_mfu_pct"] / 100, "simulated": mfu,
                "published_tokens_per_s_per_gpu": r["published_tokens_per_s_per_gpu"],
                "simulated_tokens_per_s_per_gpu": tokens_per_s_per_gpu})

    for row in rows:
        row["within"] = abs(row["rel_err"]) <= tol
    _protwin.write_json(os.path.join(out_dir, "comparison.json"), {"tolerance": tol, "rows": rows})
    fields = ["set", "name", "machine", "gpus", "layout", "metric", "published", "simulated", "rel_err",
              "within", "iteration_s", "bubble_fraction", "protwin_mfu", "protwin_hw_tflops_per_gpu"]
    _protwin.write_csv(os.path.join(out_dir, "comparison.csv"), rows, fields)
    n_in = sum(r["within"] for r in rows)
    mean_err = sum(r["rel_err"] for r in rows) / len(rows)
    print(f"{n_in} of {len(rows)} within +-{100 * tol:.0f} %, mean signed error {100 * mean_err:+.1f} %")
    for r in rows:
        print(f"  {r['set']:9s} {r['name']:24s} published {r['published']:8.3f} simulated "
              f"{r['simulated']:8.3f} ({100 * r['rel_err']:+6.1f} %){'' if r['within'] else '  MISS'}")
    crit = cfg["criterion"]
    ok = n_in >= crit["min_rows_within"] and abs(mean_err) <= crit["max_abs_mean_signed_error"]
    if not ok:
        print(f"criterion MISSED: needs >= {crit['min_rows_within']} of {len(rows)} rows within "
              f"+-{100 * tol:.0f} % and |mean signed error| <= {100 * crit['max_abs_mean_signed_error']:.0f} %")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
