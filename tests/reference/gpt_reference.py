"""PyTorch reference of TrainDeck's GPT-2 model: the oracle for the engine's CPU backend.

Uses only torch.nn.functional and autograd (no nn.Module), in float64, on the engine's own
weights (model.safetensors, the layout of docs/formats.md) and batch. Writes the loss, every
gradient and the parameters after one AdamW step (torch.optim.AdamW with the engine's
decay groups and learning rate), so the test compares them with the engine's.

usage: gpt_reference.py CASE_DIR
  CASE_DIR/case.json          {"model": {...}, "B", "T", "lr", "beta1", "beta2", "eps", "weight_decay"}
  CASE_DIR/model.safetensors  the weights
  CASE_DIR/batch.json         {"inputs": [[...]], "targets": [[...]]}
writes CASE_DIR/reference.safetensors: "loss" (1,), "grad.<name>" and "adamw.<name>" per tensor.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def gpt_loss(p, cfg, inputs, targets):
    """Mean cross-entropy (nats/token) of GPT-2 on inputs (B,T) -> targets (B,T)."""
    B, T = inputs.shape
    C, NH, L = cfg["d_model"], cfg["n_head"], cfg["n_layer"]
    hs = C // NH
    x = p["wte.weight"][inputs] + p["wpe.weight"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(L):
        h = f"h.{l}."
        a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps=1e-5)
        qkv = F.linear(a, p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"])
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"])
        m = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps=1e-5)
        m = F.gelu(F.linear(m, p[h + "mlp.c_fc.weight"], p[h + "mlp.c_fc.bias"]), approximate="tanh")
        x = x + F.linear(m, p[h + "mlp.c_proj.weight"], p[h + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps=1e-5)
    head = p["wte.weight"] if cfg.get("tie_embeddings", True) else p["lm_head.weight"]
    logits = F.linear(x, head)
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def decays(name):
    """The engine's AdamW groups: decay on matrices except the embeddings."""
    return name.endswith(".weight") and "ln_" not in name and name not in ("wte.weight", "wpe.weight")


def main(case_dir):
    torch.set_num_threads(1)
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    with open(os.path.join(case_dir, "batch.json")) as f:
        batch = json.load(f)
    weights, _ = safetensors_io.read(os.path.join(case_dir, "model.safetensors"))
    p = {n: t.to(torch.float64).requires_grad_(True) for n, t in weights.items()}
    inputs = torch.tensor(batch["inputs"], dtype=torch.long)
    targets = torch.tensor(batch["targets"], dtype=torch.long)
    loss = gpt_loss(p, case["model"], inputs, targets)
    loss.backward()
    out = {"loss": loss.detach().reshape(1)}
    for n, t in p.items():
        out["grad." + n] = t.grad.detach().clone()
    decay = [t for n, t in p.items() if decays(n)]
    no_decay = [t for n, t in p.items() if not decays(n)]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": case["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=case["lr"], betas=(case["beta1"], case["beta2"]), eps=case["eps"])
    opt.step()
    for n, t in p.items():
        out["adamw." + n] = t.detach().clone()
    safetensors_io.write(os.path.join(case_dir, "reference.safetensors"), out)
    print(f"reference loss {loss.item():.8f}")


if __name__ == "__main__":
    main(sys.argv[1])
