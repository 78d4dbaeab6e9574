#!/usr/bin/python3
"""PyTorch eager training speed of a GPT-2, the oracle for the runtime's tokens/s (docs/RUNTIME.md).

The same model as protwin's runtime GPT-2 (LayerNorm, learned positions, GeLU(tanh) MLP, tied LM
head, causal attention written out as matmul + softmax, fp32), trained with autograd and
torch.optim.Adam on byte-level batches, with a given number of threads. Prints JSON
{"tokens_per_s", "iteration_s", "losses", "threads", "torch_version", "params"}; tokens/s is over
the steps after the first (warm-up), as `protwin train` reports it.

Usage: eager_train_speed.py [--hidden 512] [--layers 8] [--heads 8] [--vocab 256] [--seq 256]
                            [--batch 8] [--steps 6] [--threads 2] [--data FILE]
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    for name, default in [("hidden", 512), ("layers", 8), ("heads", 8), ("vocab", 256), ("seq", 256),
                          ("batch", 8), ("steps", 6), ("threads", 2)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--data", default="/usr/share/common-licenses/GPL-3")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    C, L, NH, V, T, B = a.hidden, a.layers, a.heads, a.vocab, a.seq, a.batch
    D = C // NH

    def p(*shape, std=0.02):
        return (torch.randn(*shape) * std).requires_grad_(True)

    def ones(n):
        return torch.ones(n, requires_grad=True)

    def zeros(n):
        return torch.zeros(n, requires_grad=True)

    wte, wpe = p(V, C), p(T, C)
    layers = [dict(ln1_w=ones(C), ln1_b=zeros(C), qkv_w=p(3 * C, C), qkv_b=zeros(3 * C),
                   proj_w=p(C, C), proj_b=zeros(C), ln2_w=ones(C), ln2_b=zeros(C),
                   fc_w=p(4 * C, C), fc_b=zeros(4 * C), fcp_w=p(C, 4 * C), fcp_b=zeros(C))
              for _ in range(L)]
    lnf_w, lnf_b = ones(C), zeros(C)
    params = [wte, wpe, lnf_w, lnf_b] + [t for l in layers for t in l.values()]
    opt = torch.optim.Adam(params, lr=1e-3)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)

    def forward(tokens, targets):
        x = wte[tokens] + wpe[:T]
        for l in layers:
            h = F.layer_norm(x, (C,), l["ln1_w"], l["ln1_b"], 1e-5)
            q, k, v = F.linear(h, l["qkv_w"], l["qkv_b"]).split(C, dim=-1)
            q, k, v = [t.view(B, T, NH, D).transpose(1, 2) for t in (q, k, v)]
            att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
            att = torch.softmax(att.masked_fill(mask, float("-inf")), -1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + F.linear(y, l["proj_w"], l["proj_b"])
            h = F.layer_norm(x, (C,), l["ln2_w"], l["ln2_b"], 1e-5)
            x = x + F.linear(F.gelu(F.linear(h, l["fc_w"], l["fc_b"]), approximate="tanh"),
                             l["fcp_w"], l["fcp_b"])
        logits = F.linear(F.layer_norm(x, (C,), lnf_w, lnf_b, 1e-5), wte)
        return F.cross_entropy(logits.view(-1, V), targets.reshape(-1))

    data = torch.tensor(list(open(a.data, "rb").read()), dtype=torch.long)
    losses, times = [], []
    pos = 0
    for _ in range(a.steps):
        idx = torch.stack([data[pos + b * (T + 1): pos + b * (T + 1) + T + 1] for b in range(B)])
        pos = (pos + B * (T + 1)) % (len(data) - B * (T + 1) - 1)
        t0 = time.perf_counter()
        loss = forward(idx[:, :-1], idx[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    timed = times[1:] if len(times) > 1 else times
    print(json.dumps({"tokens_per_s": B * T * len(timed) / sum(timed), "iteration_s": times, "losses": losses,
                      "threads": a.threads, "torch_version": torch.__version__,
                      "params": sum(t.numel() for t in params)}, indent=2))


if __name__ == "__main__":
    main()
