"""PyTorch reference of the engine's Llama ops (engine/ops/ops.h): RMSNorm, RoPE, SwiGLU and
grouped-query attention, written from the layout of transformers' modeling_llama (LlamaRMSNorm,
rotate_half / apply_rotary_pos_emb, LlamaMLP, repeat_kv + causal softmax attention), in float64.
Forward outputs, and the gradients of sum(out * dout) by autograd, for tests/engine/test_ops.cpp.

usage: llama_ops_reference.py IN.json OUT.json
  IN.json  {"rmsnorm": {"x", "w", "N", "C", "eps", "dout"},
            "rope": {"qkv", "B", "T", "NH", "NKV", "hs", "theta", "dout"},
            "swiglu": {"x", "N", "F", "dout"},
            "attention": {"qkv", "B", "T", "NH", "NKV", "hs", "dout"}}  (tensors as flat lists)
  OUT.json the same keys, each {"out": [...], "grad": {input name: [...]}}
"""
import json
import math
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def tensor(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def flat(t):
    return t.detach().reshape(-1).tolist()


def rmsnorm(c):
    # LlamaRMSNorm: weight * (x * rsqrt(mean(x^2) + eps)).
    x0, w = tensor(c["x"]), tensor(c["w"])
    x = x0.view(c["N"], c["C"])
    out = w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["eps"]))
    return out, {"x": x0, "w": w}


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def cos_sin(T, hs, theta):
    # LlamaRotaryEmbedding: inv_freq = 1 / theta^(arange(0, hs, 2) / hs), emb = cat(freqs, freqs).
    inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()  # (T, hs)


def split_qkv(qkv, B, T, NH, NKV, hs):
    q, k, v = qkv.view(B, T, -1).split([NH * hs, NKV * hs, NKV * hs], dim=2)
    return (q.view(B, T, NH, hs).transpose(1, 2), k.view(B, T, NKV, hs).transpose(1, 2),
            v.view(B, T, NKV, hs).transpose(1, 2))


def rope(c):
    B, T, NH, NKV, hs = c["B"], c["T"], c["NH"], c["NKV"], c["hs"]
    qkv = tensor(c["qkv"])
    q, k, v = split_qkv(qkv, B, T, NH, NKV, hs)
    cos, sin = cos_sin(T, hs, c["theta"])
    q = q * cos + rotate_half(q) * sin  # apply_rotary_pos_emb
    k = k * cos + rotate_half(k) * sin
    join = lambda x: x.transpose(1, 2).reshape(B, T, -1)
    return torch.cat((join(q), join(k), join(v)), dim=2), {"qkv": qkv}


def swiglu(c):
    # LlamaMLP's act_fn(gate_proj(x)) * up_proj(x) on the fused [gate | up] rows.
    x = tensor(c["x"])
    gate, up = x.view(c["N"], 2 * c["F"]).split(c["F"], dim=1)
    return F.silu(gate) * up, {"x": x}


def attention(c):
    B, T, NH, NKV, hs = c["B"], c["T"], c["NH"], c["NKV"], c["hs"]
    qkv = tensor(c["qkv"])
    q, k, v = split_qkv(qkv, B, T, NH, NKV, hs)
    rep = NH // NKV  # repeat_kv: (B, NKV, T, hs) -> (B, NH, T, hs)
    k = k[:, :, None].expand(B, NKV, rep, T, hs).reshape(B, NH, T, hs)
    v = v[:, :, None].expand(B, NKV, rep, T, hs).reshape(B, NH, T, hs)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hs)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    att = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return (att @ v).transpose(1, 2).reshape(B, T, NH * hs), {"qkv": qkv}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    ops = {"rmsnorm": rmsnorm, "rope": rope, "swiglu": swiglu, "attention": attention}
    result = {}
    for name, c in cases.items():
        out, inputs = ops[name](c)
        (out * torch.tensor(c["dout"]).view(out.shape)).sum().backward()
        result[name] = {"out": flat(out), "grad": {k: flat(t.grad) for k, t in inputs.items()}}
    with open(sys.argv[2], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
