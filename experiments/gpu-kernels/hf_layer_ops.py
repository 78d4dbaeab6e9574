#!/usr/bin/python3
"""What MLI's layer benchmark runs, op by op: one HF GPT-2-medium block and one BERT-large layer
as HuggingFace transformers had them in August 2022 (the `pip install .` of its master in
mli/transformers-benchmarks' micro_bench.ipynb, PyTorch 1.13), timed there as
`layer(X)[0].sum().backward()` in train mode (dropout 0.1).

The blocks are re-written here op for op from transformers v4.21 (src/transformers/models/gpt2/
modeling_gpt2.py: GPT2Block, GPT2Attention._attn, GPT2MLP; pytorch_utils.py: Conv1D;
activations.py: NewGELUActivation; models/bert/modeling_bert.py: BertLayer). The two scalar
tensors of GPT2Attention._attn were created with torch.tensor(...) on the host and copied to the
GPU, each a blocking copy (cudaStreamSynchronize) until huggingface/transformers#20061 (Nov 2022)
replaced them with torch.full.

Runs on the CPU (this machine has no GPU) with PyTorch's own autograd, and counts the ATen ops
that reach the dispatcher in the second of two iterations (the first has no grads to accumulate),
split into kernels (ops that launch a CUDA kernel), views (no kernel) and host tensors
(torch.tensor from Python data: a blocking host-to-device copy on a GPU, i.e. a stream
synchronisation). Usage: /usr/bin/python3 hf_layer_ops.py [--json] (Debian's python3-torch).
"""
import json
import math
import sys
from collections import Counter

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

# Ops that only re-describe memory (no kernel on a GPU).
VIEWS = {"view", "_unsafe_view", "permute", "transpose", "t", "expand", "split", "slice", "select",
         "unsqueeze", "squeeze", "alias", "detach", "as_strided", "_reshape_alias", "reshape",
         "split_with_sizes", "unbind", "lift_fresh", "empty", "empty_like", "empty_strided"}
GEMMS = {"mm", "addmm", "bmm", "baddbmm"}


class OpCensus(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops.append(func.overloadpacket.__name__)
        return func(*args, **kwargs)


class Dropout(nn.Module):
    """nn.Dropout as it runs on a GPU: F.dropout takes the fused native_dropout there (one kernel
    forward, one backward); on the CPU it would be bernoulli_, div_ and mul instead."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return torch.native_dropout(x, self.p, self.training)[0]


def conv1d(x, w, b):  # HF Conv1D: weight [in, out]; addmm(bias, x.view(-1, in), weight)
    return torch.addmm(b, x.view(-1, x.size(-1)), w).view(x.size()[:-1] + (w.size(1),))


class GPT2Block(nn.Module):
    def __init__(self, h=1024, heads=16, max_pos=1024, p=0.1):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn_w, self.c_attn_b = nn.Parameter(torch.randn(h, 3 * h) * 0.02), nn.Parameter(torch.zeros(3 * h))
        self.c_proj_w, self.c_proj_b = nn.Parameter(torch.randn(h, h) * 0.02), nn.Parameter(torch.zeros(h))
        self.c_fc_w, self.c_fc_b = nn.Parameter(torch.randn(h, 4 * h) * 0.02), nn.Parameter(torch.zeros(4 * h))
        self.mlp_proj_w, self.mlp_proj_b = nn.Parameter(torch.randn(4 * h, h) * 0.02), nn.Parameter(torch.zeros(h))
        self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.uint8)).view(1, 1, max_pos, max_pos))
        self.attn_dropout, self.resid_dropout, self.mlp_dropout = Dropout(p), Dropout(p), Dropout(p)

    def split_heads(self, t):
        return t.view(t.size()[:-1] + (self.heads, self.d)).permute(0, 2, 1, 3)

    def attn(self, x):
        q, k, v = conv1d(x, self.c_attn_w, self.c_attn_b).split(x.size(-1), dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.tensor(v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)  # host tensor -> sync
        ql, kl = q.size(-2), k.size(-2)
        causal = self.bias[:, :, kl - ql:kl, :kl].bool()
        mask_value = torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype).to(w.device)  # host tensor -> sync
        w = torch.where(causal, w, mask_value)
        w = nn.functional.softmax(w, dim=-1).type(v.dtype)
        a = torch.matmul(self.attn_dropout(w), v)
        a = a.permute(0, 2, 1, 3).contiguous()
        a = a.view(a.size()[:-2] + (self.heads * self.d,))
        return self.resid_dropout(conv1d(a, self.c_proj_w, self.c_proj_b))

    def forward(self, x):
        x = self.attn(self.ln_1(x)) + x
        y = conv1d(self.ln_2(x), self.c_fc_w, self.c_fc_b)
        y = 0.5 * y * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * torch.pow(y, 3.0))))  # gelu_new
        return (self.mlp_dropout(conv1d(y, self.mlp_proj_w, self.mlp_proj_b)) + x,)


class BertLayer(nn.Module):
    def __init__(self, h=1024, heads=16, p=0.1):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out, self.inter, self.out = nn.Linear(h, h), nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.ln_attn, self.ln_out = nn.LayerNorm(h, eps=1e-12), nn.LayerNorm(h, eps=1e-12)
        self.probs_dropout, self.attn_dropout, self.out_dropout = Dropout(p), Dropout(p), Dropout(p)

    def heads_of(self, t):
        return t.view(t.size()[:-1] + (self.heads, self.d)).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.heads_of(self.query(x)), self.heads_of(self.key(x)), self.heads_of(self.value(x))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        c = torch.matmul(self.probs_dropout(nn.functional.softmax(s, dim=-1)), v)
        c = c.permute(0, 2, 1, 3).contiguous()
        c = c.view(c.size()[:-2] + (self.heads * self.d,))
        a = self.ln_attn(self.attn_dropout(self.attn_out(c)) + x)
        return (self.ln_out(self.out_dropout(self.out(nn.functional.gelu(self.inter(a)))) + a),)


def census(layer, b=2, s=64, h=1024):
    torch.manual_seed(0)
    x = torch.randn(b, s, h)
    layer.train()
    layer(x)[0].sum().backward()  # iteration 1: grads created, not accumulated
    fwd = OpCensus()
    with fwd:
        layer(x)  # MLI's forward-only statement
    mode = OpCensus()
    with mode:
        layer(x)[0].sum().backward()  # MLI's fwd+bwd statement
    kernels = [o for o in mode.ops if o not in VIEWS]
    return {
        "forward_kernels": sum(o not in VIEWS for o in fwd.ops),
        "dispatched_ops": len(mode.ops),
        "kernels": len(kernels),
        "gemm_kernels": sum(o in GEMMS for o in kernels),
        "host_tensors_synchronising": mode.ops.count("lift_fresh"),
        "items": mode.ops.count("_local_scalar_dense"),
        "kernel_names": dict(Counter(kernels)),
    }


def main():
    torch.set_num_threads(1)
    result = {"torch": torch.__version__, "gpt2_block": census(GPT2Block()), "bert_layer": census(BertLayer())}
    if "--json" in sys.argv[1:]:
        print(json.dumps(result, indent=1))
        return
    print(f"PyTorch {result['torch']}: one fwd+bwd, batch 2 x seq 64 (counts do not depend on the sizes)")
    for name in ("gpt2_block", "bert_layer"):
        r = result[name]
        print(f"{name}: forward {r['forward_kernels']} kernels; fwd+bwd {r['dispatched_ops']} ops, "
              f"{r['kernels']} kernels ({r['gemm_kernels']} GEMMs), "
              f"{r['host_tensors_synchronising']} host tensors (stream syncs on a GPU), {r['items']} .item()")
        print("   ", ", ".join(f"{k} {v}" for k, v in sorted(r["kernel_names"].items())))


if __name__ == "__main__":
    main()
