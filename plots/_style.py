"""Shared look of the experiment figures: one colour and label per system, JSON loading with a
clear message, and saving a figure as PNG + SVG. Imported by the plot scripts in this folder."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401  (re-exported for the scripts)

# The four systems of ProTrain's comparison first, then the two extra baselines protwin models.
SYSTEM_ORDER = ["protrain", "deepspeed", "colossalai", "fsdp", "zero-offload", "ddp"]
SYSTEM_LABEL = {"protrain": "ProTrain", "deepspeed": "DeepSpeed ZeRO-3 offload",
                "colossalai": "Colossal-AI Gemini", "fsdp": "FSDP CPU offload",
                "zero-offload": "ZeRO-Offload", "ddp": "DDP (no offload)"}
SYSTEM_COLOUR = {"protrain": "#c44e52", "deepspeed": "#4c72b0", "colossalai": "#55a868",
                 "fsdp": "#8172b3", "zero-offload": "#937860", "ddp": "#7f7f7f"}
SYSTEM_MARKER = {"protrain": "o", "deepspeed": "s", "colossalai": "^", "fsdp": "D",
                 "zero-offload": "v", "ddp": "x"}
MACHINE_LABEL = {"rtx3090-server": "RTX 3090 server", "a100-server": "A100-80GB server"}


def load_json(path, keys, what):
    """Reads one results file; exits with a message naming the file if a key is missing."""
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: cannot read JSON ({e}); expected {what}")
    for k in keys:
        if k not in r:
            sys.exit(f"{path}: missing '{k}' (expected {what})")
    return r


def save(fig, prefix):
    for ext in ("png", "svg"):
        fig.savefig(f"{prefix}.{ext}", dpi=150)
    print(f"wrote {prefix}.png and {prefix}.svg")


def figure_args(doc):
    """The plot scripts' common command line: CONFIG.json RESULTS_DIR --out PREFIX.
    Returns (config dict, results folder, output prefix)."""
    import argparse
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("config", help="the experiment's config.json")
    p.add_argument("results", help="the experiment's results/ folder")
    p.add_argument("--out", required=True, help="output prefix (writes .png and .svg)")
    a = p.parse_args()
    return load_json(a.config, ("experiment",), "an experiment's config.json"), a.results, a.out
