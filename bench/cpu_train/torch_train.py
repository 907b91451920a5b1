"""PyTorch side of bench/cpu_train: the same model as the engine (GPT-2: tests/reference/
gpt_reference.py; model.family "llama": tests/reference/llama_reference.py, in float32 here), batch
shape, optimizer (the engine's AdamW groups) and thread count, timed over warmed-up training steps.

usage: torch_train.py DATASET_DIR CONFIG_JSON STEPS WARMUP_STEPS
prints one JSON line: {"tokens_per_s": ..., "step_ms": ..., "torch": version, "threads": n}
"""
import json
import os
import struct
import sys
import time

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "reference"))
import gpt_reference  # noqa: E402
import llama_reference  # noqa: E402


def load_tokens(dataset_dir):
    """Tokens of the first train shard (64-byte header, then little-endian uint16/uint32)."""
    with open(os.path.join(dataset_dir, "manifest.json")) as f:
        manifest = json.load(f)
    shard = manifest["splits"]["train"]["shards"][0]["file"]
    with open(os.path.join(dataset_dir, shard), "rb") as f:
        header = f.read(64)
        width = struct.unpack("<I", header[12:16])[0]
        data = f.read()
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint16 if width == 2 else np.uint32).astype(np.int64))


def gpt2_params(m):
    """GPT-2's float32 parameters by name (the engine's init: N(0, 0.02), LayerNorm 1, biases 0),
    its AdamW decay rule and its loss(p, x, y)."""
    C, L, V, T = m["d_model"], m["n_layer"], m["vocab_size"], m["seq_len"]
    F = m.get("d_ff", 0) or 4 * C
    shapes = {"wte.weight": (V, C), "wpe.weight": (T, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for l in range(L):
        h = f"h.{l}."
        shapes.update({h + "ln_1.weight": (C,), h + "ln_1.bias": (C,), h + "attn.c_attn.weight": (3 * C, C),
                       h + "attn.c_attn.bias": (3 * C,), h + "attn.c_proj.weight": (C, C), h + "attn.c_proj.bias": (C,),
                       h + "ln_2.weight": (C,), h + "ln_2.bias": (C,), h + "mlp.c_fc.weight": (F, C), h + "mlp.c_fc.bias": (F,),
                       h + "mlp.c_proj.weight": (C, F), h + "mlp.c_proj.bias": (C,)})
    p = {}
    for n, s in shapes.items():
        if n.endswith(".bias"):
            p[n] = torch.zeros(s)
        elif "ln_" in n:
            p[n] = torch.ones(s)
        else:
            p[n] = torch.randn(s) * 0.02
        p[n].requires_grad_(True)
    return p, gpt_reference.decays, lambda p, x, y: gpt_reference.gpt_loss(p, m, x, y)


def llama_params(m):
    """The Llama family's float32 parameters by transformers' names (norm weights 1, matrices
    N(0, 0.02)), the engine's decay rule (engine/model/shape.cpp: every matrix but the token
    embedding) and its loss(p, x, y)."""
    cfg = llama_reference.full_config(m)
    p = {}
    for n, s in llama_reference.param_shapes(cfg):
        p[n] = (torch.ones(s) if n.endswith("norm.weight") else torch.randn(s) * 0.02).requires_grad_(True)
    decays = lambda n: n.endswith("proj.weight") or n == "lm_head.weight"  # noqa: E731
    return p, decays, lambda p, x, y: llama_reference.loss(p, cfg, x, y)


def main():
    dataset, config_path, steps, warm = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(config_path) as f:
        cfg = json.load(f)
    m, t = cfg["model"], cfg["train"]
    threads = t.get("threads", 0) or os.cpu_count()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    T = m["seq_len"]
    if m.get("family", "gpt2") == "llama":
        p, decays, loss_fn = llama_params(m)
    else:
        p, decays, loss_fn = gpt2_params(m)
    decay = [x for n, x in p.items() if decays(n)]
    rest = [x for n, x in p.items() if not decays(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": t.get("weight_decay", 0.1)}, {"params": rest, "weight_decay": 0.0}],
                            lr=t.get("lr", 6e-4), betas=(0.9, 0.95), eps=1e-8)
    tokens = load_tokens(dataset)
    B = t["micro_batch"]
    g = torch.Generator().manual_seed(1)
    times = []
    for step in range(steps):
        idx = torch.randint(0, len(tokens) - T - 1, (B,), generator=g)
        x = torch.stack([tokens[i:i + T] for i in idx])
        y = torch.stack([tokens[i + 1:i + T + 1] for i in idx])
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(p, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        if step >= warm:
            times.append(dt)
    times.sort()
    med = times[len(times) // 2]
    print(json.dumps({"tokens_per_s": B * T / med, "step_ms": med * 1e3, "torch": torch.__version__, "threads": threads,
                      "final_loss": loss.item()}))


if __name__ == "__main__":
    main()
