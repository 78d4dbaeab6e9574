#!/usr/bin/python3
"""Driver of the what-if-pcie experiment: one `protwin sweep` per machine over (PCIe generation x
CPU cores), from config.json, plus a link-only control on the host-staged machine and the README's
result table (results/table.md).

Cross-check: the search is heuristic (it simulates only the analytic model's favourites), so every
distinct policy it picked anywhere on a machine's grid is simulated at every point of that grid
(`protwin simulate --policy`, two at a time). results/<machine>-best-known.json is the sweep with
each point's best of those ("policy_from" says where a better pick came from, "resimulated" holds
every pick's tokens/s there); run.py stops unless each point's own pick re-simulates to its
iteration time exactly, and counts neighbour pairs where a fixed pick got slower with a faster
link or more cores (the simulator should never do that).

Each generation sets every host_link rate at once (a linked --set axis, one value per field); on a
machine whose collectives are host-staged (no P2P: they cross PCIe) the collectives' busbw moves
with the generation too. Writes results/<machine>.{json,csv}, results/<machine>-link-only.{json,csv}.
"""
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from _protwin import REPO, binary, load_config  # noqa: E402


def sweep(args, out):
    cmd = [binary()] + args + ["-o", out + ".json", "--csv", out + ".csv"]
    print("  protwin " + " ".join(f"'{a}'" if ("+" in a or ":" in a) else a for a in args), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        sys.exit(f"protwin sweep failed with exit code {p.returncode}")
    print(f"    {time.monotonic() - t0:.1f} s -> {os.path.relpath(out, REPO)}.json/.csv", flush=True)
    with open(out + ".json") as f:
        return json.load(f)


def simulate(machine, point, knobs, batch, slot):
    """Iteration time of `knobs` at `batch` on the machine with `point`'s overrides (None if refused)."""
    tmp = os.path.join(HERE, "results", f".policy{slot}.json")
    with open(tmp, "w") as f:
        json.dump(dict(knobs, system="protrain"), f)
    args = ["simulate", "--model", CONFIG["model"], "--machine", machine, "--gpus", str(CONFIG["gpus"]),
            "--batch", str(batch), "--policy", tmp, "--json"]
    for k, v in point["set"].items():
        args += ["--set", f"{k}={v}"]
    p = subprocess.run([binary()] + args, cwd=REPO, capture_output=True, text=True)
    os.remove(tmp)
    if p.returncode == 2:
        return None
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        sys.exit(f"protwin simulate failed with exit code {p.returncode}")
    return json.loads(p.stdout)["iteration_s"]


def cross_check(machine, r, gens):
    """The sweep with every point's best of all the policies the search picked anywhere on the grid."""
    best = json.loads(json.dumps(r))
    tokens = CONFIG["gpus"] * r["seq"]
    cores = r["axes"][1]["values"]
    picks = {}  # distinct (knobs, batch) -> where it was first picked
    for p in r["points"]:
        if p["tokens_per_s"] is not None:
            key = (json.dumps(p["knobs"], sort_keys=True), p["batch"])
            picks.setdefault(key, f"{gens[p['index'][0]]}, {cores[p['index'][1]]} cores")
    own = {tuple(p["index"]): (json.dumps(p["knobs"], sort_keys=True), p["batch"]) for p in r["points"]}
    jobs = [(q, key) for q in best["points"] if q["tokens_per_s"] is not None for key in picks]
    with ThreadPoolExecutor(max_workers=2) as pool:  # this machine has two cores
        times = list(pool.map(lambda a: simulate(machine, a[1][0], json.loads(a[1][1][0]), a[1][1][1], a[0]),
                              enumerate(jobs)))
    beaten = 0
    for (q, key), t in zip(jobs, times):
        if "resimulated" not in q:
            q.update({"search_tokens_per_s": q["tokens_per_s"], "policy_from": "its own pick", "resimulated": {}})
        q["resimulated"][picks[key]] = None if t is None else key[1] * tokens / t
        if key == own[tuple(q["index"])]:
            # The oracle of this cross-check: the search's own pick re-simulated gives its own time.
            want = q["search_tokens_per_s"]
            if t is None or abs(key[1] * tokens / t - want) > 1e-9 * want:
                sys.exit(f"{machine} {q['set']}: re-simulating the sweep's pick gave {t} s, the sweep "
                         f"{key[1] * tokens / want} s")
        elif t is not None and key[1] * tokens / t > q["tokens_per_s"]:
            q.update({"tokens_per_s": key[1] * tokens / t, "iteration_s": t, "batch": key[1],
                      "knobs": json.loads(key[0]), "policy_from": "the pick at " + picks[key]})
            for k in ("forward_s", "backward_s", "exposed_optimizer_s", "stream_busy_s", "peak_gpu_bytes"):
                q[k] = None
    beaten = sum(1 for q in best["points"] if q.get("policy_from", "its own pick") != "its own pick")
    # A fixed policy never gets slower with a faster link or more cores (the simulator's monotonicity).
    by = {tuple(q["index"]): q for q in best["points"] if "resimulated" in q}
    pairs = bad = 0
    for (g, c), q in by.items():
        for nxt in ((g + 1, c), (g, c + 1)):
            if nxt in by:
                for lab, v in q["resimulated"].items():
                    w = by[nxt]["resimulated"].get(lab)
                    if v is not None and w is not None:
                        pairs += 1
                        bad += w < v * (1 - 1e-12)
    print(f"    cross-check on {machine}: {len(picks)} distinct picks, each simulated at all {len(by)} points; "
          f"{beaten} points beaten by a pick from elsewhere; a fixed pick slower on a faster link or with more "
          f"cores: {bad} of {pairs} neighbour pairs", flush=True)
    best["cross_check"] = {"distinct_picks": len(picks), "beaten_points": beaten, "monotone_pairs": pairs,
                           "monotone_violations": bad}
    return best


def write(path, content):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(content if isinstance(content, str) else json.dumps(content, indent=2) + "\n")
    os.replace(tmp, path)


def host_staged(machine):
    p = subprocess.run([binary(), "machine", machine, "--json"], cwd=REPO, capture_output=True, text=True, check=True)
    return bool(json.loads(p.stdout)["collectives"]["intra_node"]["host_staged"])


def link_axis(c, with_collectives):
    keys = list(c["link_fields"])
    vals = [list(g["values"]) for g in c["generations"]]
    if with_collectives:
        keys += c["host_staged_collective_fields"]
        vals = [v + [g["host_staged_busbw_GBps"]] * len(c["host_staged_collective_fields"])
                for v, g in zip(vals, c["generations"])]
    fmt = lambda x: ("%g" % x)  # noqa: E731
    return "+".join(keys) + "=" + ",".join(":".join(fmt(x) for x in v) for v in vals)


def table(c, results, known=None):
    gens = [g["name"] for g in c["generations"]]
    lines = []
    for machine, r in results:
        kb = {tuple(p["index"]): p for p in known[machine]["points"]} if known and machine in known else {}
        lines.append(f"\n**{machine}** (tokens/s of the best ProTrain policy; knobs n_persist/n_buffer/n_swap/n_checkpoint, swap_spacing when swapping, batch)\n")
        lines.append("| cores | " + " | ".join(gens) + " | " + " | ".join(f"policy at {g}" for g in gens) + " |")
        lines.append("|---:|" + "---:|" * len(gens) + "---|" * len(gens))
        for j, cores in enumerate(r["axes"][1]["values"]):
            pts = sorted((p for p in r["points"] if p["index"][1] == j), key=lambda p: p["index"][0])
            tps = [("%.0f" % p["tokens_per_s"]) if p["tokens_per_s"] else "does not fit" for p in pts]
            for k, p in enumerate(pts):
                q = kb.get(tuple(p["index"]))
                if q and q["tokens_per_s"] and q["tokens_per_s"] > p["tokens_per_s"]:
                    tps[k] += " (%.0f with %s)" % (q["tokens_per_s"], q["policy_from"])
            pol = ["%d/%d/%d/%d%s, b%d" % (p["knobs"]["n_persist"], p["knobs"]["n_buffer"], p["knobs"]["n_swap"],
                                           p["knobs"]["n_checkpoint"],
                                           " sp%d" % p["knobs"]["swap_spacing"] if p["knobs"]["n_swap"] else "",
                                           p["batch"]) if p["knobs"] else "-" for p in pts]
            lines.append(f"| {cores} | " + " | ".join(tps) + " | " + " | ".join(pol) + " |")
    return "\n".join(lines) + "\n"


def breakdown(c, results):
    """Per point: iteration, compute-stream busy time, what is left over (exposed), per-stream busy."""
    gens = [g["name"] for g in c["generations"]]
    lines = ["\n| machine | cores | link | iter (s) | fwd / bwd / exposed optim (s) | compute busy (s) | "
             "iter - compute (s) | h2d / d2h / collective / cpu_optim busy (s) |",
             "|---|---:|---|---:|---|---:|---:|---|"]
    for machine, r in results:
        for p in sorted(r["points"], key=lambda p: (p["index"][1], p["index"][0])):
            if p["tokens_per_s"] is None:
                continue
            b = p["stream_busy_s"]
            lines.append("| %s | %d | %s | %.2f | %.2f / %.2f / %.2f | %.2f | %.2f | %.2f / %.2f / %.2f / %.2f |" % (
                machine, r["axes"][1]["values"][p["index"][1]], gens[p["index"][0]], p["iteration_s"],
                p["forward_s"], p["backward_s"], p["exposed_optimizer_s"], b.get("compute", 0),
                p["iteration_s"] - b.get("compute", 0), b.get("h2d", 0), b.get("d2h", 0), b.get("collective", 0),
                b.get("cpu_optim", 0)))
    return "\n".join(lines) + "\n"


def main():
    c = CONFIG
    res = os.path.join(HERE, "results")
    os.makedirs(res, exist_ok=True)
    t0 = time.monotonic()
    base = ["sweep", "--model", c["model"], "--gpus", str(c["gpus"]), "--system", c["system"]]
    cores = "host.cores=" + ",".join(str(x) for x in c["cores"])
    results, controls, known = [], [], {}
    for m in c["machines"]:
        staged = host_staged(m)
        r = sweep(base + ["--machine", m, "--set", link_axis(c, staged), "--set", cores], os.path.join(res, m))
        results.append((m, r))
        known[m] = cross_check(m, r, [g["name"] for g in c["generations"]])
        write(os.path.join(res, m + "-best-known.json"), known[m])
        if staged:  # the same sweep with the collectives left at the machine's Gen3 rate: the link alone
            ctl = sweep(base + ["--machine", m, "--set", link_axis(c, False), "--set",
                                "host.cores=%d" % c["link_only_cores"]], os.path.join(res, m + "-link-only"))
            name = m + " (link only, collectives at the machine's own busbw)"
            controls.append((name, ctl))
            known[name] = cross_check(m, ctl, [g["name"] for g in c["generations"]])
    md = "# what-if-pcie results (generated by run.py)\n" + table(c, results, known) + table(c, controls, known)
    md += "\n## Simulated breakdown of every point\n" + breakdown(c, results + controls)
    write(os.path.join(res, "table.md"), md)
    print(f"wrote {os.path.relpath(os.path.join(res, 'table.md'), REPO)}; sweeps took {time.monotonic() - t0:.1f} s")


CONFIG = load_config(HERE)

if __name__ == "__main__":
    main()
