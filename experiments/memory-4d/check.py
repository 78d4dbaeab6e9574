#!/usr/bin/python3
"""Pass criterion 2 of memory-4d: re-evaluates every row of results/*.json with the closed forms of
REFERENCE.md §3 (Fujii et al., written out independently of the C++), and checks the value
(1e-9 relative) and the 80 % classification. Exit 1 on any mismatch.

usage: check.py results/*.json
"""
import json
import sys

GIB = 1024 ** 3
# Architecture numbers from REFERENCE.md §4 (h, h_ffn, L, a, k, V).
MODELS = {"llama3.1-8b": (4096, 14336, 32, 32, 8, 128256),
          "llama3.1-70b": (8192, 28672, 80, 64, 8, 128256)}


def model_states(h, f, L, a, k, V, t, c, p, d):
    p_tr = 2 * L * h * h * ((1 + k / a) + (f / h) * 1.5 + 1 / h) + h
    n = ((p_tr - h) / p + h * V) / t
    if p == 1:
        n += h * V / t + h
    return n * ((2 + 4) + 12 / (d * c))  # g = 4, distributed optimizer


def activations(h, f, L, a, k, V, t, c, p, b, s):
    s1 = s / c
    act = (s1 * b * h * (12 + 4 * k / a) + 8 * s1 * b * f) / t * L + 8 * s1 * b * h * p / t
    if p == 1:
        act += 4 * s1 * b * h * (1 + V / h) / t
    return act


def main():
    n = bad = 0
    worst = 0.0
    for path in sys.argv[1:]:
        r = json.load(open(path))
        if r["method"] != "fujii" or r["model"] not in MODELS:
            sys.exit(f"{path}: check.py covers method fujii on {sorted(MODELS)} only")
        h, f, L, a, k, V = MODELS[r["model"]]
        for row in r["configurations"]:
            w = model_states(h, f, L, a, k, V, row["tp"], row["cp"], row["pp"], row["dp"]) / GIB
            x = activations(h, f, L, a, k, V, row["tp"], row["cp"], row["pp"], row["mbs"],
                            r["seq"]) / GIB
            for mine, ref in ((row["weights_grads_optimizer_GiB"], w), (row["activations_GiB"], x)):
                rel = abs(mine - ref) / ref
                worst = max(worst, rel)
                n += 1
                bad += rel > 1e-9
            if ((w + x) <= 0.8 * r["gpu_memory_GB"]) != row["fits_80pct"]:
                print(f"{path}: classification differs for {row}")
                bad += 1
    print(f"check.py: {n} values compared, max relative difference {worst:.3e}, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
