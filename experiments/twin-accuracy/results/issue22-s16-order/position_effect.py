"""Session 16's numbers from this folder's runs (two_plans.sh, twelve_plans.sh): is llama-tiny's
3-buffer plan slower than the 2-buffer one, or is the plan run first slower?
usage (in this folder): python3 position_effect.py"""
import json
import math
import statistics as st


def medians(path):  # each plan's median of steps 2.., by file name
    return {p["plan"]: st.median(p["iteration_s"][1:]) for p in json.load(open(path))["plans"]}


print("alone (two_plans.sh): 3-buffer / 2-buffer, geometric means of the two copies; compute busy of the last step")
for k in (1, 2, 3):
    m = medians(f"il-{k}.json")
    busy = {n: next(s["busy_ns"] for s in json.load(open(f"m-{n}-{k}.json"))["streams"] if s["name"] == "compute") / 1e6
            for n in ("b3", "b3x", "b2", "b2x")}
    print(f"  process {k}: step {math.sqrt(m['b3.json'] * m['b3x.json'] / (m['b2.json'] * m['b2x.json'])):.3f}, "
          f"compute {(busy['b3'] + busy['b3x']) / (busy['b2'] + busy['b2x']):.3f}")

print("twelve plans (twelve_plans.sh): c00 (3 buffers) / c05 (2 buffers), medians of steps 2-6")
first_c00, first_c05 = [], []
for f in ("A-1", "A-2", "A-3", "B-1", "B-2", "B-3", "C-3"):
    d = json.load(open(f + ".json"))
    names = [p["plan"] for p in d["plans"]]
    m = medians(f + ".json")
    r = m["c00.json"] / m["c05.json"]
    print(f"  {f}: c00 at place {names.index('c00.json') + 1}, c05 at place {names.index('c05.json') + 1}: {r:.3f}")
    if f[0] == "A":
        first_c00.append(r)
    elif f[0] == "B":
        first_c05.append(r)
a, b = st.mean(math.log(x) for x in first_c00), st.mean(math.log(x) for x in first_c05)
print(f"  first place against sixth: {math.exp((a - b) / 2) - 1:+.1%}; 3 buffers against 2 at the same place: "
      f"{math.exp((a + b) / 2) - 1:+.1%} (A and B processes, geometric means)")
