#!/usr/bin/python3
"""PyTorch oracle for protwin's runtime transformer (tests/runtime/test_pytorch_reference.cpp).

Defines the GPT-2 and LLaMA flavours in plain PyTorch (autograd, torch.optim.AdamW), reads the
weights and a batch written by the C++ test, and writes back the loss and gradients of the first
step and the losses of `steps` AdamW steps.

Input (DIR/input.json + DIR/params.bin, float32 little-endian, parameters in execution order):
  {"family": "gpt2"|"llama", "hidden", "layers", "heads", "kv_heads", "ffn_hidden", "vocab",
   "max_seq", "norm_eps", "rope_theta", "batch", "seq", "tokens": [...], "targets": [...],
   "params": [{"name", "shape"}...], "adamw": {"lr", "beta1", "beta2", "eps", "weight_decay"},
   "steps"}
Output: DIR/output.json {"losses": [...], "torch_version"} and DIR/grads.bin (first-step
gradients, same layout as params.bin).

Usage: reference_model.py DIR
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def loss_fn(cfg, p, tokens, targets):
    gpt2 = cfg["family"] == "gpt2"
    B, T = tokens.shape
    C, nh, kh = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
    d = C // nh
    eps = cfg["norm_eps"]
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, d, 2).float() / d))
    ang = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    x = p["embed.tokens.weight"][tokens]
    if gpt2:
        x = x + p["embed.positions.weight"][:T]
    for l in range(cfg["layers"]):
        P = lambda n: p[f"layers.{l}.{n}"]
        if gpt2:
            h = F.layer_norm(x, (C,), P("norm_1.weight"), P("norm_1.bias"), eps)
            q, k, v = F.linear(h, P("attn.qkv.weight"), P("attn.qkv.bias")).split(C, dim=-1)
            q = q.view(B, T, nh, d).transpose(1, 2)
            k = k.view(B, T, nh, d).transpose(1, 2)
            v = v.view(B, T, nh, d).transpose(1, 2)
        else:
            h = rms_norm(x, P("norm_1.weight"), eps)
            q = F.linear(h, P("attn.q.weight")).view(B, T, nh, d).transpose(1, 2)
            k = F.linear(h, P("attn.k.weight")).view(B, T, kh, d).transpose(1, 2)
            v = F.linear(h, P("attn.v.weight")).view(B, T, kh, d).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(nh // kh, dim=1)
            v = v.repeat_interleave(nh // kh, dim=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        if gpt2:
            x = x + F.linear(y, P("attn.out.weight"), P("attn.out.bias"))
            h = F.layer_norm(x, (C,), P("norm_2.weight"), P("norm_2.bias"), eps)
            h = F.gelu(F.linear(h, P("mlp.fc1.weight"), P("mlp.fc1.bias")), approximate="tanh")
            x = x + F.linear(h, P("mlp.fc2.weight"), P("mlp.fc2.bias"))
        else:
            x = x + F.linear(y, P("attn.out.weight"))
            h = rms_norm(x, P("norm_2.weight"), eps)
            h = F.silu(F.linear(h, P("mlp.gate.weight"))) * F.linear(h, P("mlp.up.weight"))
            x = x + F.linear(h, P("mlp.down.weight"))
    if gpt2:
        logits = F.linear(F.layer_norm(x, (C,), p["final_norm.weight"], p["final_norm.bias"], eps),
                          p["embed.tokens.weight"])  # tied LM head
    else:
        logits = F.linear(rms_norm(x, p["final_norm.weight"], eps), p["lm_head.weight"])
    return F.cross_entropy(logits.view(-1, cfg["vocab"]), targets.view(-1))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: reference_model.py DIR")
    d = sys.argv[1]
    with open(os.path.join(d, "input.json")) as f:
        cfg = json.load(f)
    flat = torch.frombuffer(bytearray(open(os.path.join(d, "params.bin"), "rb").read()),
                            dtype=torch.float32)
    params, names, off = {}, [], 0
    for spec in cfg["params"]:
        n = math.prod(spec["shape"])
        params[spec["name"]] = flat[off:off + n].clone().view(spec["shape"]).requires_grad_(True)
        names.append(spec["name"])
        off += n
    assert off == flat.numel(), "params.bin size does not match the parameter list"
    shape = (cfg["batch"], cfg["seq"])
    tokens = torch.tensor(cfg["tokens"], dtype=torch.long).view(shape)
    targets = torch.tensor(cfg["targets"], dtype=torch.long).view(shape)
    a = cfg["adamw"]
    opt = torch.optim.AdamW([params[n] for n in names], lr=a["lr"], betas=(a["beta1"], a["beta2"]),
                            eps=a["eps"], weight_decay=a["weight_decay"])
    losses = []
    for step in range(cfg["steps"]):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(cfg, params, tokens, targets)
        loss.backward()
        losses.append(loss.item())
        if step == 0:
            grads = torch.cat([params[n].grad.reshape(-1) for n in names])
            grads.numpy().astype("<f4").tofile(os.path.join(d, "grads.bin"))
        opt.step()
    with open(os.path.join(d, "output.json"), "w") as f:
        json.dump({"losses": losses, "torch_version": torch.__version__}, f)


if __name__ == "__main__":
    main()
