"""Reading protwin's JSON results in the experiment scripts: the rows of `protwin compare --json`
and why a system does not fit, judged against the machine (`protwin machine H --json`) the same
way the search does (GPU: usable memory per GPU; host: host memory divided among the ranks)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _style import load_json  # noqa: E402

GIB = 1024 ** 3


def load_compare(path):
    return load_json(path, ("model", "machine", "gpus", "systems"), "`protwin compare --json` output")


def load_machine(path):
    m = load_json(path, ("name", "gpu", "host"), "`protwin machine H --json` output")
    return m


def rank_capacity(machine, gpus):
    """(GPU bytes, host bytes) one rank may use, as sim/offload/search/search.cpp rank_memory()."""
    gpu = machine["gpu"].get("usable_memory_bytes") or machine["gpu"]["memory_bytes"]
    ranks = max(1, min(gpus, max(1, machine["gpu"]["count"])))
    return gpu, machine["host"]["memory_bytes"] // ranks


def misfit_reason(entry, machine, gpus):
    """None when the system found a plan; else the memory that binds: of the setting closest to
    fitting (the search reports that one setting's GPU and host need), the pool with the larger
    ratio of need to capacity."""
    if entry.get("tokens_per_s") is not None:
        return None
    gpu_cap, host_cap = rank_capacity(machine, gpus)
    gpu = entry.get("smallest_peak_gpu_bytes", 0) / gpu_cap
    host = entry.get("smallest_host_bytes", 0) / host_cap
    if max(gpu, host) <= 1:
        return "no setting fits"
    return "GPU memory" if gpu >= host else "host memory"


def systems_by_name(result):
    return {s["name"]: s for s in result["systems"]}


def experiment(folder):
    """(config, results folder) of an experiment folder, for the tabulate scripts."""
    return load_json(os.path.join(folder, "config.json"), ("experiment",), "an experiment's config.json"), \
        os.path.join(folder, "results")


def load_table(results, name, producer):
    """Rows of results/NAME (CSV written by the experiment's tabulate.py), as dicts of strings."""
    import csv
    path = os.path.join(results, name)
    if not os.path.exists(path):
        sys.exit(f"{path}: missing (run {producer} first)")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(v):
    """A CSV cell as a float, or None when empty."""
    return float(v) if v not in ("", None) else None


def write_table(path, rows):
    """Writes rows (dicts with the same keys) as CSV with a header."""
    import csv
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def write_summary(path, summary):
    import json
    with open(path, "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
