#!/usr/bin/python3
# Cost of one Python module hook call (empty forward pre-hook + forward hook) on this CPU: the
# source of host_dispatch.module_hook_us in the machine files (2026-11-25: 4.9 us, torch 1.13).
# usage: /usr/bin/python3 experiments/host-dispatch/module_hook_bench.py
import time, torch
torch.set_num_threads(1)
m = torch.nn.Identity()
x = torch.zeros(1)
def run(n):
    t = time.perf_counter()
    for _ in range(n): m(x)
    return (time.perf_counter() - t) / n
def best(n=200000, r=5): return min(run(n) for _ in range(r))
base = best()
h1 = m.register_forward_pre_hook(lambda mod, inp: None)
h2 = m.register_forward_hook(lambda mod, inp, out: None)
hooked = best()
print(torch.__version__, "base_us", base*1e6, "two_hooks_us", hooked*1e6, "per_hook_us", (hooked-base)/2*1e6)
