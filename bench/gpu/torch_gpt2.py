"""PyTorch side of bench/gpu.sh: GPT-2 124M (or, with --family llama, a Llama such as SmolLM2-135M's
shape) trained on synthetic tokens on one GPU, timed the way the engine's step events are (wall time
of whole optimizer steps), for the side-by-side table.

--family llama: transformers' LlamaForCausalLM layout (docs/formats.md "The Llama family"): RMSNorm
(eps 1e-5), q/k/v/o without biases, RoPE in the rotate_half convention, grouped-query attention
through F.scaled_dot_product_attention on k/v repeated per group (repeat_interleave, as transformers'
repeat_kv), SwiGLU MLP, tied embeddings; init N(0, 0.02), norms 1; weight decay on every matrix but
the token embedding (engine/model/shape.cpp).

The model is nanoGPT's (github.com/karpathy/nanoGPT model.py), the engine's architecture
(docs/formats.md): learned position embeddings, pre-LayerNorm blocks with biases, GELU (tanh
approximation), tied token embedding / LM head, no dropout; attention through
F.scaled_dot_product_attention(is_causal=True). Training step: bf16 autocast, cross-entropy in
fp32, clip of the global gradient norm at 1.0 (the engine's train.grad_clip default), AdamW(lr 6e-4,
betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on matrices only, fused=True); TF32 allowed for any
fp32 matmul left. torch.compile(model) when it works here ("--compile auto": a failure at the first
step falls back to eager, and the JSON says which ran).

MFU = flops_per_token * tokens_per_s / peak_flops, flops_per_token = 6 N + 12 L C T with N the
parameters without the position embedding (engine/plan/plan.h: PaLM appendix B, nanoGPT's
estimate_mfu); peak_flops from --peak-flops (bench/gpu.sh passes the dense bf16 datasheet figure).

usage: torch_gpt2.py --micro-batch B [--seq-len 1024] [--steps 30] [--warmup 5] [--compile auto|on|off]
                     [--peak-flops F] [--out FILE]
                     [--family llama --n-kv-head KV --d-ff F --rope-theta R --vocab V --n-layer L ...]
prints one JSON line (also written to --out): tokens_per_s and step_ms (medians over the steps after
--warmup), mfu, max_memory_allocated_bytes, compiled, ...; exit 3 on CUDA out-of-memory (JSON error
"out_of_memory"), 1 on other errors.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.nh = NH
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, L, NH, C):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for n, p in self.named_parameters():  # GPT-2 init (nanoGPT)
            if n.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * L) if n.endswith(("c_proj.weight", "mlp_proj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, in fp32 (Zhang and Sennrich 2019; nn.RMSNorm is torch >= 2.4)."""

    def __init__(self, C, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class LlamaBlock(nn.Module):
    def __init__(self, C, NH, KV, F_, theta):
        super().__init__()
        self.nh, self.kv, self.hs, self.theta = NH, KV, C // NH, theta
        self.input_layernorm = RMSNorm(C, 1e-5)
        self.q_proj = nn.Linear(C, C, bias=False)
        self.k_proj = nn.Linear(C, KV * self.hs, bias=False)
        self.v_proj = nn.Linear(C, KV * self.hs, bias=False)
        self.o_proj = nn.Linear(C, C, bias=False)
        self.post_attention_layernorm = RMSNorm(C, 1e-5)
        self.gate_proj = nn.Linear(C, F_, bias=False)
        self.up_proj = nn.Linear(C, F_, bias=False)
        self.down_proj = nn.Linear(F_, C, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.nh, self.hs).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.kv, self.hs).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.kv, self.hs).transpose(1, 2)
        rot = lambda t: torch.cat([-t[..., self.hs // 2:], t[..., :self.hs // 2]], dim=-1)  # noqa: E731
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        rep = self.nh // self.kv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, V, T, L, NH, KV, C, F_, theta):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, C)
        self.layers = nn.ModuleList(LlamaBlock(C, NH, KV, F_, theta) for _ in range(L))
        self.norm = RMSNorm(C, 1e-5)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied (SmolLM2)
        hs = C // NH
        inv = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
        ang = torch.outer(torch.arange(T, dtype=torch.float64), inv)
        ang = torch.cat([ang, ang], dim=-1)
        self.register_buffer("cos", ang.cos().float(), persistent=False)
        self.register_buffer("sin", ang.sin().float(), persistent=False)
        for n, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.embed_tokens(idx)
        cos, sin = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
        for b in self.layers:
            x = b(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--micro-batch", type=int, required=True)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--family", choices=["gpt2", "llama"], default="gpt2")
    ap.add_argument("--n-kv-head", type=int, default=0, help="llama: key/value heads (0: n_head)")
    ap.add_argument("--d-ff", type=int, default=0, help="llama: SwiGLU width (required for llama)")
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--compile", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--peak-flops", type=float, default=0.0)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    res = {"torch": torch.__version__, "family": a.family, "micro_batch": a.micro_batch, "seq_len": a.seq_len, "steps": a.steps,
           "warmup": a.warmup, "compile_requested": a.compile}

    def emit(code):
        line = json.dumps(res)
        print(line, flush=True)
        if a.out:
            with open(a.out, "w") as f:
                f.write(line + "\n")
        sys.exit(code)

    if not torch.cuda.is_available():
        res["error"] = "no_cuda"
        res["message"] = "torch.cuda.is_available() is False"
        emit(1)
    dev = torch.device("cuda")
    res["device_name"] = torch.cuda.get_device_name(dev)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    B, T = a.micro_batch, a.seq_len
    try:
        if a.family == "llama":
            if a.d_ff <= 0:
                raise ValueError("--family llama needs --d-ff")
            model = Llama(a.vocab, T, a.n_layer, a.n_head, a.n_kv_head or a.n_head, a.d_model, a.d_ff, a.rope_theta).to(dev)
            n = n_params = sum(p.numel() for p in model.parameters())  # no position embedding
            decay = [p for nm, p in model.named_parameters() if p.dim() >= 2 and nm != "embed_tokens.weight"]
            rest = [p for nm, p in model.named_parameters() if not (p.dim() >= 2 and nm != "embed_tokens.weight")]
        else:
            model = GPT(a.vocab, T, a.n_layer, a.n_head, a.d_model).to(dev)
            n_params = sum(p.numel() for p in model.parameters())  # tied weight counted once
            n = n_params - model.wpe.weight.numel()
            decay = [p for p in model.parameters() if p.dim() >= 2]
            rest = [p for p in model.parameters() if p.dim() < 2]
        # 6 N + 12 L C T (engine/plan/plan.h; with GQA the score and value FLOPs are still 12 L C T).
        fpt = 6.0 * n + 12.0 * a.n_layer * a.d_model * T
        res.update({"n_params": n_params, "flops_per_token": fpt})
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                                lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
        g = torch.Generator(device=dev)
        g.manual_seed(0)
        data = torch.randint(0, a.vocab, (8, B, T + 1), device=dev, generator=g)  # 8 batches, cycled

        def step(fn, i):
            batch = data[i % data.size(0)]
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = fn(batch[:, :-1], batch[:, 1:])
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss, norm

        fn, compiled = model, False
        t0 = time.perf_counter()
        if a.compile != "off":
            try:
                cfn = torch.compile(model)
                step(cfn, 0)  # compiles forward and backward
                torch.cuda.synchronize()
                fn, compiled = cfn, True
            except torch.cuda.OutOfMemoryError:
                raise
            except Exception as e:  # noqa: BLE001: any compile failure falls back to eager
                if a.compile == "on":
                    raise
                res["compile_error"] = "%s: %s" % (type(e).__name__, str(e)[:500])
                opt.zero_grad(set_to_none=True)
        res["compiled"] = compiled
        res["compile_s"] = time.perf_counter() - t0 if compiled else 0.0
        times, losses = [], []
        for i in range(a.steps):
            torch.cuda.synchronize()
            s = time.perf_counter()
            loss, _ = step(fn, i + 1)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - s)
            losses.append(loss.item())
        timed = times[a.warmup:] if len(times) > a.warmup else times
        step_s = statistics.median(timed)
        tps = B * T / step_s
        res.update({"step_ms": 1e3 * step_s, "step_ms_mean": 1e3 * statistics.fmean(timed), "tokens_per_s": tps,
                    "mfu": fpt * tps / a.peak_flops if a.peak_flops > 0 else None, "peak_flops": a.peak_flops or None,
                    "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(dev),
                    "max_memory_reserved_bytes": torch.cuda.max_memory_reserved(dev),
                    "loss_first": losses[0], "loss_last": losses[-1], "step_ms_all": [round(1e3 * t, 3) for t in times]})
        emit(0)
    except torch.cuda.OutOfMemoryError as e:
        res["error"] = "out_of_memory"
        res["message"] = str(e)[:500]
        emit(3)
    except Exception as e:  # noqa: BLE001
        res["error"] = type(e).__name__
        res["message"] = str(e)[:1000]
        traceback.print_exc()
        emit(1)


if __name__ == "__main__":
    main()
