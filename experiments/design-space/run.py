#!/usr/bin/python3
"""Driver of the design-space study. With RERUN=1 it first re-runs, for every model of config.json,
`mpirun -np RANKS protwin sweep ... --system all --csv results/MODEL.csv` (the grid of GPU memory x
host link x host cores, every system searched at each point; RERUN_MODELS=a,b: only those), then the timing runs on the timing
model (one process on 1 and 2 threads, RANKS ranks on 1 thread each, with PROTWIN_MPI_STATS=1 for
rank 0's evaluate and gather times) into results/timing.json; by default it uses the committed
results. Then it finds the winning system at every grid point (results/winners.csv), projects the
wall time to more ranks from the measured per-point and gather costs (results/projection.json) and
draws design_space.{png,svg} (plots/design_space.py).

Criteria (exit 1 when missed): at least min_points points, and the RANKS-rank sweep of the timing
model gives the same CSV as one process (every column but the wall-time search_s)."""
import csv
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import _protwin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RES = os.path.join(HERE, "results")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def sweep_args(cfg, model, csv_path, threads):
    mem = ",".join(f"{g * 2**30}:{round(g * 2**30 * cfg['usable_fraction'])}" for g in cfg["gpu_memory_GiB"])
    link = cfg["host_link"]
    return ["sweep", "--model", model, "--machine", cfg["machine"], "--gpus", cfg["gpus"], "--batch", cfg["batch"],
            "--threads", threads, "--system", "all",
            "--set", "gpu.memory_bytes+gpu.usable_memory_bytes=" + mem,
            "--set", "+".join(link["keys"]) + "=" + ",".join(":".join(str(v) for v in t) for t in link["values"]),
            "--set", "host.cores=" + ",".join(str(c) for c in cfg["host_cores"]),
            "--csv", csv_path]


def timed(cmd, env=None):
    """Runs cmd (stdout dropped); returns (wall seconds, CPU seconds of it and its children, stderr).
    On a shared machine the wall time also counts other people's work; the CPU time does not."""
    print("  " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run([str(c) for c in cmd], cwd=_protwin.REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, env=env)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        sys.exit(f"exit code {p.returncode}")
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.stderr


def without_search_s(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    col = rows[0].index("search_s")
    return [r[:col] + r[col + 1:] for r in rows]


def rerun(cfg):
    os.makedirs(RES, exist_ok=True)
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none", PROTWIN_MPI_STATS="1")
    ranks = cfg["ranks"]
    # RERUN_MODELS=a,b re-sweeps only those models (the timing runs are always redone).
    only = [m for m in os.environ.get("RERUN_MODELS", "").split(",") if m]
    walls = {}
    for model in cfg["models"]:
        if only and model not in only:
            continue
        out = os.path.join(RES, model + ".csv")
        walls[model], _, _ = timed(MPIRUN + ["-np", ranks, _protwin.binary()] + sweep_args(cfg, model, out, 1), env)
    # Timing: the same sweep as one process (1 and 2 threads) and on `ranks` ranks of 1 thread.
    m = cfg["timing_model"]
    one = os.path.join(RES, "timing-1process.csv")
    t1, c1, _ = timed([_protwin.binary()] + sweep_args(cfg, m, one, 1))
    t1_2threads, c1_2threads, _ = timed([_protwin.binary()] + sweep_args(cfg, m, os.path.join(RES, "timing-2threads.csv"), 2))
    many = os.path.join(RES, f"timing-{ranks}ranks.csv")
    tn, cn, err = timed(MPIRUN + ["-np", ranks, _protwin.binary()] + sweep_args(cfg, m, many, 1), env)
    stats = re.search(r"mpi: (\d+) ranks, (\d+) points; rank 0 evaluated (\d+) in ([0-9.]+) s, then waited for and "
                      r"gathered (\d+) bytes in ([0-9.]+) s and decoded them in ([0-9.]+) s", err)
    if not stats:
        sys.exit("no 'mpi:' statistics line from rank 0 (PROTWIN_MPI_STATS=1)\n" + err)
    n, p, mine, eval_s, nbytes, gather_s, decode_s = stats.groups()
    timing = {"model": m, "points": int(p), "ranks": int(n), "one_process_1thread_s": t1,
              "one_process_2threads_s": t1_2threads, "ranks_1thread_s": tn, "one_process_1thread_cpu_s": c1,
              "one_process_2threads_cpu_s": c1_2threads, "ranks_1thread_cpu_s": cn,
              "load_average_1min": os.getloadavg()[0], "rank0_points": int(mine),
              "rank0_evaluate_s": float(eval_s), "gathered_bytes": int(nbytes), "wait_and_gather_s": float(gather_s),
              "decode_s": float(decode_s), "same_csv_as_one_process": without_search_s(one) == without_search_s(many),
              "sweep_wall_s_on_ranks": walls, "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count()}
    for f in (one, many, os.path.join(RES, "timing-2threads.csv")):
        os.remove(f)
    _protwin.write_json(os.path.join(RES, "timing.json"), timing)


def projection(t):
    """Wall time on N ranks: start-up + the points split evenly + rank 0 decoding what the others
    send (serial on rank 0) + their transfer, at the measured rates."""
    # The CPU time of one process on one thread: the machine is shared, its wall time counts others' work.
    per_point = t.get("one_process_1thread_cpu_s", t["one_process_1thread_s"]) / t["points"]
    remote = t["points"] - t["rank0_points"]
    bytes_per_point = t["gathered_bytes"] / remote
    decode_per_point = t["decode_s"] / remote
    startup = max(t["ranks_1thread_s"] - t["rank0_evaluate_s"] - t["wait_and_gather_s"] - t["decode_s"], 0)
    rows = []
    for n in (1, 2, 8, 32, 128, 512, 2048):
        for points in (t["points"], 10500, 100000):
            other = points * (n - 1) / n
            wall = (startup if n > 1 else 0) + per_point * points / n + decode_per_point * other
            rows.append({"ranks": n, "points": points, "projected_wall_s": wall,
                         "speedup": per_point * points / wall})
    return {"per_point_s": per_point, "bytes_per_point": bytes_per_point, "decode_per_point_s": decode_per_point,
            "mpi_startup_s": startup, "rows": rows,
            "model": "wall(N) = startup (N>1) + per_point * P / N + decode_per_point * P (N-1)/N"}


def main():
    cfg = _protwin.load_config(HERE)
    if os.environ.get("RERUN") == "1":
        rerun(cfg)
    winners, points = [], 0
    for model in cfg["models"]:
        path = os.path.join(RES, model + ".csv")
        if not os.path.exists(path):
            sys.exit(f"{os.path.relpath(path, _protwin.REPO)} missing: run RERUN=1 {os.path.relpath(HERE, _protwin.REPO)}/run.sh")
        with open(path) as f:
            rows = list(csv.DictReader(f))
        points += len(rows)
        cells = {}
        for r in rows:
            key = (r["gpu.memory_bytes"], r["host_link.h2d.pinned_GBps"], r["host.cores"])
            cells.setdefault(key, []).append(r)
        for (mem, link, cores), rs in cells.items():
            fit = sorted((r for r in rs if r["tokens_per_s"]), key=lambda r: -float(r["tokens_per_s"]))
            w = {"model": model, "gpu_memory_GiB": int(mem) / 2**30, "h2d_pinned_GBps": float(link),
                 "host_cores": int(cores), "winner": fit[0]["system"] if fit else "",
                 "tokens_per_s": float(fit[0]["tokens_per_s"]) if fit else None,
                 "runner_up": fit[1]["system"] if len(fit) > 1 else "",
                 "margin": float(fit[0]["tokens_per_s"]) / float(fit[1]["tokens_per_s"]) if len(fit) > 1 else None}
            winners.append(w)
    _protwin.write_csv(os.path.join(RES, "winners.csv"), winners,
                       ["model", "gpu_memory_GiB", "h2d_pinned_GBps", "host_cores", "winner", "tokens_per_s",
                        "runner_up", "margin"])
    with open(os.path.join(RES, "timing.json")) as f:
        timing = json.load(f)
    proj = projection(timing)
    _protwin.write_json(os.path.join(RES, "projection.json"), proj)
    counts = {}
    for w in winners:
        counts[w["winner"] or "none fits"] = counts.get(w["winner"] or "none fits", 0) + 1
    print(f"{points} points ({len(winners)} grid cells x systems); winners: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    print(f"timing ({timing['model']}, {timing['points']} points, {timing['cores']} cores): one process "
          f"{timing['one_process_1thread_s']:.1f} s wall on 1 thread ({proj['per_point_s'] * 1e3:.1f} ms CPU a point), "
          f"{timing['one_process_2threads_s']:.1f} s on 2 threads; {timing['ranks']} ranks x 1 thread "
          f"{timing['ranks_1thread_s']:.1f} s (load average {timing.get('load_average_1min', 0):.1f}); gather {proj['bytes_per_point']:.0f} bytes and "
          f"{proj['decode_per_point_s'] * 1e6:.1f} us decode a point")
    for r in proj["rows"]:
        if r["points"] == 100000:
            print(f"  projected: {r['points']} points on {r['ranks']:5d} ranks: {r['projected_wall_s']:9.1f} s "
                  f"(speed-up {r['speedup']:.1f})")
    _protwin.plot("design_space.py", RES, os.path.join(HERE, "design_space"), "--config", os.path.join(HERE, "config.json"))
    ok = True
    if points < cfg["min_points"]:
        print(f"criterion missed: {points} points < {cfg['min_points']}")
        ok = False
    if not timing["same_csv_as_one_process"]:
        print(f"criterion missed: the {timing['ranks']}-rank sweep differs from one process")
        ok = False
    print("criteria: " + ("met" if ok else "MISSED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
