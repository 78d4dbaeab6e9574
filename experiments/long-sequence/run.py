#!/usr/bin/python3
"""Driver of the long-sequence experiment. For each run of config.json (machine, attention,
sequences): `protwin capacity --machine H --gpus 1 --seq S [--flash] --json`, one row per system
with its largest model, its shape and what stops one layer more. Then ProTrain's decisions for one
fixed model: `protwin search --model M,max_positions=S --seq S --batch 1 [--flash] --json` per
sequence (its SWAP / CKPT / NONE layers, persistent chunks, buffers, tokens/s, peak GPU memory).
Checks the README's criteria, draws the figure (plots/long_sequence.py) and exits 1 when a criterion
is missed.

Writes results/capacity_<machine>_<attention>_<S>.json and results/search_<attention>_<S>.json
(protwin's answers), results/long_sequence.json (rows, decisions, verdicts, timings),
results/long_sequence.csv and results/decisions.csv."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import _protwin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["machine", "attention", "seq", "system", "max_params_B", "hidden", "layers", "next_layer_limited_by",
          "next_layer_least_gpu_GiB", "next_layer_least_host_GiB"]
DECISION_FIELDS = ["attention", "seq", "n_swap", "n_checkpoint", "n_none", "n_persist", "n_buffer", "tokens_per_s",
                   "iteration_s", "peak_gpu_GiB", "peak_pinned_GiB"]


def rows_of(answer, machine, attention):
    rows = []
    for s in answer["systems"]:
        r = {"machine": machine, "attention": attention, "seq": answer["seq"], "system": s["name"],
             "max_params_B": s["max_params"] / 1e9, "hidden": s.get("hidden"), "layers": s.get("layers")}
        if s.get("next_size"):
            n = s["next_size"]
            r.update({"next_layer_limited_by": n["limited_by"], "next_layer_least_gpu_GiB": n["least_gpu_bytes"] / 2 ** 30,
                      "next_layer_least_host_GiB": n["least_host_bytes"] / 2 ** 30})
        rows.append(r)
    return rows


def decision_of(answer, attention, seq):
    modes = answer["layer_modes"]
    k = answer["knobs"]
    return {"attention": attention, "seq": seq, "n_swap": modes.count("swap"), "n_checkpoint": modes.count("ckpt"),
            "n_none": modes.count("none"), "n_persist": k["n_persist"], "n_buffer": k["n_buffer"],
            "tokens_per_s": answer["tokens_per_s"], "iteration_s": answer["iteration_s"],
            "peak_gpu_GiB": answer["peak_gpu_bytes"] / 2 ** 30, "peak_pinned_GiB": answer["peak_pinned_bytes"] / 2 ** 30}


def positions(seq):
    """Rows of the ladder's learned position table at a sequence length (protwin capacity)."""
    return max(1024, seq)


def verdicts(rows, cfg):
    """The README's criteria. Monotonicity in the sequence: the largest model found at S, with its
    position table cut from P(S) to P(S') rows, is a model of the ladder at S' < S and fits there
    (its activations only shrink), so capacity(S') >= capacity(S) - (P(S) - P(S')) x hidden(S)."""
    out = {"protrain_at_least_every_baseline": [], "shorter_sequences_fit_what_longer_ones_fit": [], "ok": True}
    for run in cfg["runs"]:
        m, att = run["machine"], run["attention"]
        sel = [r for r in rows if (r["machine"], r["attention"]) == (m, att)]
        for seq in run["seqs"]:
            by = {r["system"]: r["max_params_B"] for r in sel if r["seq"] == seq}
            met = all(by["protrain"] >= v for s, v in by.items() if s != "protrain")
            out["protrain_at_least_every_baseline"].append({"machine": m, "attention": att, "seq": seq, "met": met})
            out["ok"] &= met
        for s in cfg["systems"]:
            at = {r["seq"]: r for r in sel if r["system"] == s}
            for short, long in zip(run["seqs"], run["seqs"][1:]):
                lo, hi = at[short], at[long]
                bound = hi["max_params_B"] - (positions(long) - positions(short)) * (hi["hidden"] or 0) / 1e9
                met = lo["max_params_B"] >= bound - 1e-9
                out["shorter_sequences_fit_what_longer_ones_fit"].append(
                    {"machine": m, "attention": att, "system": s, "seqs": [short, long], "capacity_B": lo["max_params_B"],
                     "bound_B": bound, "met": met})
                out["ok"] &= met
    return out


def main():
    cfg = _protwin.load_config(HERE)
    res = os.path.join(HERE, "results")
    os.makedirs(res, exist_ok=True)
    rows, timings, decisions = [], [], []
    for run in cfg["runs"]:
        m, att = run["machine"], run["attention"]
        for seq in run["seqs"]:
            args = ["capacity", "--machine", m, "--gpus", run["gpus"], "--seq", seq,
                    "--systems", ",".join(cfg["systems"]), "--json"] + (["--flash"] if att == "flash" else [])
            ans, wall, _ = _protwin.run(args)
            _protwin.write_json(os.path.join(res, f"capacity_{m}_{att}_{seq}.json"), ans)
            rows += rows_of(ans, m, att)
            timings.append({"machine": m, "attention": att, "seq": seq, "capacity_s": wall})
    d = cfg["decisions"]
    for att in d["attention"]:
        for seq in d["seqs"]:
            ans, wall, _ = _protwin.run(["search", "--model", f"{d['model']},max_positions={max(1024, seq)}",
                                         "--machine", d["machine"], "--gpus", d["gpus"], "--batch", d["batch"],
                                         "--seq", seq, "--json"] + (["--flash"] if att == "flash" else []))
            _protwin.write_json(os.path.join(res, f"search_{att}_{seq}.json"), ans)
            decisions.append(decision_of(ans, att, seq))
    v = verdicts(rows, cfg)
    _protwin.write_json(os.path.join(res, "long_sequence.json"),
                        {"experiment": "long-sequence", "rows": rows, "decisions": decisions, "verdicts": v,
                         "timings": timings})
    _protwin.write_csv(os.path.join(res, "long_sequence.csv"), rows, FIELDS)
    _protwin.write_csv(os.path.join(res, "decisions.csv"), decisions, DECISION_FIELDS)
    for r in rows:
        print(f"  {r['machine']:14s} {r['attention']:5s} seq {r['seq']:5d} {r['system']:11s} {r['max_params_B']:6.1f}B "
              f"({r.get('hidden')} x {r.get('layers')}; one layer more: {r.get('next_layer_limited_by')})")
    for x in decisions:
        print(f"  ProTrain {x['attention']:5s} seq {x['seq']:5d}: swap {x['n_swap']} ckpt {x['n_checkpoint']} "
              f"none {x['n_none']}, {x['tokens_per_s']:.0f} tokens/s, peak GPU {x['peak_gpu_GiB']:.1f} GiB")
    _protwin.plot("long_sequence.py", os.path.join(HERE, "config.json"), res, "--out", os.path.join(HERE, "long_sequence"))
    print("criteria: " + ("met" if v["ok"] else "MISSED: " + str([x for k in ("protrain_at_least_every_baseline",
          "shorter_sequences_fit_what_longer_ones_fit") for x in v[k] if not x["met"]])))
    sys.exit(0 if v["ok"] else 1)


if __name__ == "__main__":
    main()
