#!/usr/bin/env python3
"""Writes prefetch_pipeline.plan.json: a small ProTrain-style offload plan for the demo.

4 transformer blocks (d=2048, batch 8, seq 1024), one 128 MiB fp16 chunk per block, no
persistent chunk, 2 GPU chunk buffers. Forward uploads chunks on h2d ahead of compute; backward
reuses the 2 chunks still resident, uploads the others again, offloads each gradient on d2h and
runs CPU Adam per chunk while backward continues. Sizes: activations per block 34*s*b*h +
5*a*s^2*b bytes (Korthikanti et al. 2022, no recomputation); forward flops 2*P*tokens + 4*b*s^2*h.
"""
import json
import os
C = 128 * 1024 * 1024            # chunk bytes (fp16)
d, b, s, heads = 2048, 8, 1024, 16
P = 12 * d * d                   # params per block
A = 34 * s * b * d + 5 * heads * s * s * b   # saved activation bytes per block (Korthikanti et al.)
F = 2 * P * b * s + 4 * b * s * s * d        # forward flops per block
tensors = []
def tensor(name, nbytes, dtype, kind, home):
    tensors.append({"id": len(tensors), "name": name, "bytes": nbytes, "dtype": dtype, "kind": kind, "home": home})
    return len(tensors) - 1
param = [tensor(f"chunk{i}.fp16", C, "fp16", "param_chunk", "pinned") for i in range(4)]
state = [tensor(f"chunk{i}.master_adam", 6 * C, "fp32", "optim_state", "pinned") for i in range(4)]
grad = [tensor(f"chunk{i}.grad", C, "fp16", "grad_chunk", "") for i in range(4)]
act = [tensor(f"block{i}.activations", A, "fp16", "activation", "") for i in range(4)]
ops = []
def op(kind, stream, deps=(), block=-1, chunk=-1, reads=(), writes=(), flops=0, nbytes=0, params=0, mem=()):
    o = {"id": len(ops), "kind": kind, "stream": stream}
    if block >= 0: o["block"] = block
    if chunk >= 0: o["chunk"] = chunk
    if reads: o["reads"] = list(reads)
    if writes: o["writes"] = list(writes)
    if deps: o["deps"] = list(deps)
    o["work"] = {"flops": flops, "bytes": nbytes, "params": params}
    if mem: o["mem"] = [dict(zip(("pool", "delta_bytes", "at", "tensor"), m)) for m in mem]
    ops.append(o)
    return o["id"]
def upload(i, deps=(), evict=None):
    mem = []
    if evict is not None: mem.append(("gpu", -C, "start", param[evict]))
    mem.append(("gpu", C, "start", param[i]))
    return op("h2d", "h2d", deps, chunk=i, reads=[param[i]], writes=[param[i]], nbytes=C, params=P, mem=mem)
def forward(i, deps):
    return op("forward", "compute", deps, block=i, chunk=i, reads=[param[i]], writes=[act[i]], flops=F, params=P,
              mem=[("gpu", A, "start", act[i])])
def backward(i, deps=(), free_param=False):
    mem = [("gpu", C, "start", grad[i]), ("gpu", -A, "end", act[i])]
    if free_param: mem.append(("gpu", -C, "end", param[i]))
    return op("backward", "compute", deps, block=i, chunk=i, reads=[param[i], act[i]], writes=[grad[i]], flops=2 * F, params=P, mem=mem)
def offload(i, deps):
    return op("d2h", "d2h", deps, chunk=i, reads=[grad[i]], writes=[grad[i]], nbytes=C, params=P,
              mem=[("pinned", C, "start", grad[i]), ("gpu", -C, "end", grad[i])])
def adam(i, deps):
    return op("adam_cpu", "cpu_optim", deps, chunk=i, reads=[grad[i], state[i]], writes=[state[i], param[i]], nbytes=28 * P, params=P,
              mem=[("pinned", -C, "end", grad[i])])
# Forward: chunks 0 and 1 fill the two buffers; chunk i+2 reuses chunk i's buffer once block i is done.
u0 = upload(0); u1 = upload(1)
f0 = forward(0, [u0]); u2 = upload(2, [f0], evict=0)
f1 = forward(1, [u1]); u3 = upload(3, [f1], evict=1)
f2 = forward(2, [u2]); f3 = forward(3, [u3])
# Backward: chunks 3 and 2 are still in the buffers; 1 and 0 are uploaded again behind them.
b3 = backward(3); o3 = offload(3, [b3]); u1b = upload(1, [b3], evict=3); a3 = adam(3, [o3])
b2 = backward(2); o2 = offload(2, [b2]); u0b = upload(0, [b2], evict=2); a2 = adam(2, [o2])
b1 = backward(1, [u1b], free_param=True); o1 = offload(1, [b1]); a1 = adam(1, [o1])
b0 = backward(0, [u0b], free_param=True); o0 = offload(0, [b0]); a0 = adam(0, [o0])
names = [("qkv.weight", [3 * d, d]), ("attn_proj.weight", [d, d]), ("fc.weight", [4 * d, d]), ("mlp_proj.weight", [d, 4 * d])]
chunks = []
for i in range(4):
    off, ps = 0, []
    for n, shape in names:
        ps.append({"name": f"blocks.{i}.{n}", "offset": off, "shape": shape}); off += shape[0] * shape[1]
    assert off == P
    chunks.append({"id": i, "bytes": C, "dtype": "fp16", "params": ps})
plan = {
  "format": "protwin.plan", "version": 4,
  "meta": {
    "description": "Example: a ProTrain-style prefetch pipeline of one iteration. 4 transformer blocks (d=2048, batch 8, seq 1024), one 128 MiB fp16 chunk per block, no persistent chunks, 2 GPU chunk buffers: uploads on h2d overlap forward compute; backward reuses the 2 chunks still resident, re-uploads the others, offloads gradients on d2h and runs CPU Adam per chunk while backward continues.",
    "model": "toy-gpt2-4block-d2048", "machine": "rtx3090-like (examples/rates.json)", "gpus": 1, "batch": 8, "seq": 1024,
    "policy": {"family": "protrain", "chunk_bytes": C, "n_persist": 0, "n_buffer": 2, "n_swap": 0, "n_checkpoint": 0},
    "generator": "hand-written example",
    "pools": [{"name": "gpu", "capacity_bytes": 25769803776, "initial_bytes": 0},
              {"name": "pinned", "capacity_bytes": 17179869184, "initial_bytes": 28 * C}]},
  "streams": [{"name": "compute", "reads_from": ["gpu"]}, {"name": "h2d", "reads_from": ["pinned"]},
              {"name": "d2h", "reads_from": ["gpu"]}, {"name": "cpu_optim", "reads_from": ["pinned"]}],
  "tensors": tensors, "chunks": chunks, "ops": ops}
def dump(v, indent=0):
    pad = " " * indent
    if isinstance(v, dict) and ("kind" in v and "stream" in v or any(isinstance(x, (dict, list)) and len(json.dumps(x)) > 80 for x in v.values())):
        items = [f'{pad}  {json.dumps(k)}: {dump(x, indent + 2).lstrip()}' for k, x in v.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and len(json.dumps(v)) > 100:
        return pad + "[\n" + ",\n".join(dump(x, indent + 2) if isinstance(x, (dict, list)) else pad + "  " + json.dumps(x) for x in v) + "\n" + pad + "]"
    return pad + json.dumps(v)
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "prefetch_pipeline.plan.json"), "w").write(dump(plan) + "\n")

