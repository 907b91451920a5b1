"""An independent PyTorch Llama in float64: the oracle for TrainDeck's llama family.

Written from the layout of transformers' modeling_llama (LlamaForCausalLM) and the papers, not
from its code (transformers is not installed here) nor from the engine's:
  * RMSNorm (Zhang and Sennrich 2019): y = x / sqrt(mean(x^2) + eps) * weight.
  * Rotary position embeddings (Su et al. 2021, "RoFormer", section 3.4) in transformers'
    rotate_half convention: dimension i of a head is paired with i + hs/2 (not 2i with 2i+1 as
    Meta's reference code does with complex numbers), angle pos * theta^(-2i/hs).
  * Grouped-query attention (Ainslie et al. 2023): n_kv_head key/value heads, each shared by
    n_head / n_kv_head consecutive query heads (transformers' repeat_kv: query head h reads
    key/value head h // (n_head / n_kv_head)); causal softmax(q k^T / sqrt(hs)) v.
  * SwiGLU MLP (Shazeer 2020): down(silu(gate(x)) * up(x)); no biases anywhere, except in the
    qwen2 family (model.family "qwen2"; Yang et al. 2024, "Qwen2 Technical Report", section
    2.2.1 "QKV bias"): q_proj, k_proj and v_proj add a bias, as transformers' Qwen2Attention.
  * Pre-norm blocks x += attn(input_layernorm(x)); x += mlp(post_attention_layernorm(x)); a
    final norm; lm_head tied to embed_tokens or its own matrix.

Tensor names are transformers' (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight,
..., model.norm.weight, lm_head.weight); the engine's names without the "model." prefix are
accepted too (engine/model/shape.h). Linear weights are (out, in) as torch.nn.Linear.

usage:
  llama_reference.py CASE_DIR            the oracle for an engine test
      CASE_DIR/case.json          {"model": {family llama or qwen2 fields of the run config}}
      CASE_DIR/model.safetensors  the weights
      CASE_DIR/batch.json         {"inputs": [[...]], "targets": [[...]]}
    writes CASE_DIR/reference.safetensors: "loss" (1,), "logits" (B, T, V), "grad.<name>".
  llama_reference.py --self-test [--engine PATH]
    checks the reference against facts that do not depend on it (see self_test); with --engine,
    also that its parameter count equals `traindeck-engine plan`'s for several shapes.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the ctest counts exit code 77 as skipped
    print("SKIP: PyTorch is not installed for this python3 (Debian: apt install python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def full_config(model):
    """The model section with the engine's defaults filled in (docs/config.md)."""
    c = {"vocab_size": 257, "seq_len": 256, "n_layer": 6, "n_head": 6, "d_model": 384, "d_ff": 0,
         "n_kv_head": 0, "ffn_multiple_of": 256, "rope_theta": 10000.0, "rms_norm_eps": 1e-5,
         "tie_embeddings": True}
    c.update({k: v for k, v in model.items() if k != "family"})
    c["qkv_bias"] = model.get("family", "llama") == "qwen2" or bool(model.get("qkv_bias", False))
    if c["n_kv_head"] == 0:
        c["n_kv_head"] = c["n_head"]
    if c["d_ff"] == 0:  # the Llama rule, as Meta's reference code computes it
        m = c["ffn_multiple_of"]
        c["d_ff"] = m * ((int(2 * (4 * c["d_model"]) / 3) + m - 1) // m)
    assert c["d_model"] % c["n_head"] == 0 and c["n_head"] % c["n_kv_head"] == 0
    assert (c["d_model"] // c["n_head"]) % 2 == 0, "RoPE needs an even head size"
    return c


def param_shapes(cfg):
    """[(name, shape)] of LlamaForCausalLM's (Qwen2ForCausalLM's with qkv_bias) state dict."""
    C, F_, V = cfg["d_model"], cfg["d_ff"], cfg["vocab_size"]
    kv = cfg["n_kv_head"] * (C // cfg["n_head"])
    out = [("model.embed_tokens.weight", (V, C))]
    for l in range(cfg["n_layer"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (C,)),
                (p + "self_attn.q_proj.weight", (C, C)),
                (p + "self_attn.k_proj.weight", (kv, C)),
                (p + "self_attn.v_proj.weight", (kv, C)),
                (p + "self_attn.o_proj.weight", (C, C)),
                (p + "post_attention_layernorm.weight", (C,)),
                (p + "mlp.gate_proj.weight", (F_, C)),
                (p + "mlp.up_proj.weight", (F_, C)),
                (p + "mlp.down_proj.weight", (C, F_))]
        if cfg.get("qkv_bias"):
            out += [(p + "self_attn.q_proj.bias", (C,)),
                    (p + "self_attn.k_proj.bias", (kv,)),
                    (p + "self_attn.v_proj.bias", (kv,))]
    out.append(("model.norm.weight", (C,)))
    if not cfg["tie_embeddings"]:
        out.append(("lm_head.weight", (V, C)))
    return out


def num_params(cfg):
    return sum(math.prod(s) for _, s in param_shapes(cfg))


def random_params(cfg, seed, std=0.3):
    """Random float64 weights (norm weights around 1) by name."""
    g = torch.Generator().manual_seed(seed)
    p = {}
    for name, shape in param_shapes(cfg):
        t = torch.randn(shape, generator=g, dtype=torch.float64) * std
        if name.endswith("layernorm.weight") or name == "model.norm.weight":
            t = 1.0 + t
        p[name] = t
    return p


def canonical(p):
    """Accepts the engine's names (no "model." prefix) as well as transformers'."""
    return {(n if n.startswith("model.") or n == "lm_head.weight" else "model." + n): t for n, t in p.items()}


def rms_norm(x, w, eps):
    """x (..., C), w (C,): x / sqrt(mean(x^2) + eps) * w."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_cos_sin(T, hs, theta, offset=0):
    """cos, sin (T, hs) for positions offset..offset+T-1: angle pos * theta^(-2i/hs) for pair i,
    repeated over the two halves of the head (the rotate_half layout)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))  # (hs/2,)
    pos = torch.arange(offset, offset + T, dtype=torch.float64)
    ang = torch.outer(pos, inv_freq)  # (T, hs/2)
    ang = torch.cat([ang, ang], dim=-1)  # (T, hs)
    return ang.cos(), ang.sin()


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) over the two halves of the last dimension."""
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, cos, sin):
    """x (B, H, T, hs), cos/sin (T, hs): x cos + rotate_half(x) sin."""
    return x * cos + rotate_half(x) * sin


def repeat_kv(x, n_rep):
    """(B, KV, T, hs) -> (B, KV * n_rep, T, hs): key/value head j serves query heads j*n_rep..j*n_rep+n_rep-1."""
    B, KV, T, hs = x.shape
    return x[:, :, None, :, :].expand(B, KV, n_rep, T, hs).reshape(B, KV * n_rep, T, hs)


def attention(x, p, pre, cfg):
    """Causal grouped-query self-attention of x (B, T, C) with the layer's weights; (B, T, C)."""
    B, T, C = x.shape
    NH, KV = cfg["n_head"], cfg["n_kv_head"]
    hs = C // NH
    b = (lambda n: p[pre + n]) if cfg.get("qkv_bias") else (lambda n: None)
    q = F.linear(x, p[pre + "self_attn.q_proj.weight"], b("self_attn.q_proj.bias")).view(B, T, NH, hs).transpose(1, 2)
    k = F.linear(x, p[pre + "self_attn.k_proj.weight"], b("self_attn.k_proj.bias")).view(B, T, KV, hs).transpose(1, 2)
    v = F.linear(x, p[pre + "self_attn.v_proj.weight"], b("self_attn.v_proj.bias")).view(B, T, KV, hs).transpose(1, 2)
    cos, sin = rope_cos_sin(T, hs, cfg["rope_theta"])  # float64 angles, cast to x's dtype (float32 in bench/cpu_train)
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k, v = repeat_kv(k, NH // KV), repeat_kv(v, NH // KV)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)
    return F.linear(y, p[pre + "self_attn.o_proj.weight"])


def mlp(x, p, pre):
    """SwiGLU: down(silu(gate(x)) * up(x))."""
    g = F.linear(x, p[pre + "mlp.gate_proj.weight"])
    u = F.linear(x, p[pre + "mlp.up_proj.weight"])
    return F.linear(F.silu(g) * u, p[pre + "mlp.down_proj.weight"])


def logits(p, cfg, inputs):
    """Logits (B, T, V) of token ids inputs (B, T)."""
    p = canonical(p)
    eps = cfg["rms_norm_eps"]
    x = p["model.embed_tokens.weight"][inputs]
    for l in range(cfg["n_layer"]):
        pre = f"model.layers.{l}."
        x = x + attention(rms_norm(x, p[pre + "input_layernorm.weight"], eps), p, pre, cfg)
        x = x + mlp(rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps), p, pre)
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg["tie_embeddings"] else p["lm_head.weight"]
    return F.linear(x, head)


def loss(p, cfg, inputs, targets):
    """Mean cross-entropy (nats per token)."""
    lg = logits(p, cfg, inputs)
    return F.cross_entropy(lg.reshape(-1, lg.shape[-1]), targets.reshape(-1))


def main(case_dir):
    torch.set_num_threads(1)
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    with open(os.path.join(case_dir, "batch.json")) as f:
        batch = json.load(f)
    cfg = full_config(case["model"])
    weights, _ = safetensors_io.read(os.path.join(case_dir, "model.safetensors"))
    p = {n: t.to(torch.float64).requires_grad_(True) for n, t in weights.items()}
    inputs = torch.tensor(batch["inputs"], dtype=torch.long)
    targets = torch.tensor(batch["targets"], dtype=torch.long)
    lg = logits(p, cfg, inputs)
    l = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), targets.reshape(-1))
    l.backward()
    out = {"loss": l.detach().reshape(1), "logits": lg.detach()}
    for n, t in p.items():
        out["grad." + n] = t.grad.detach().clone()
    safetensors_io.write(os.path.join(case_dir, "reference.safetensors"), out)
    print(f"reference loss {l.item():.8f}")


# ---------------------------------------------------------------- self-test

def mha_by_loops(x, p, pre, cfg):
    """Multi-head attention written head by head and position by position, without repeat_kv,
    rotate_half or masks: the RoPE of each pair (i, i + hs/2) as a complex rotation."""
    B, T, C = x.shape
    NH = cfg["n_head"]
    hs = C // NH
    q = x @ p[pre + "self_attn.q_proj.weight"].T
    k = x @ p[pre + "self_attn.k_proj.weight"].T
    v = x @ p[pre + "self_attn.v_proj.weight"].T
    if cfg.get("qkv_bias"):  # each projection plus its bias, before RoPE
        q = q + p[pre + "self_attn.q_proj.bias"]
        k = k + p[pre + "self_attn.k_proj.bias"]
        v = v + p[pre + "self_attn.v_proj.bias"]
    kv_hs = k.shape[-1]
    group = NH // (kv_hs // hs)
    half = hs // 2

    def rot(vec, pos):  # vec (hs,): pairs (i, i + half) rotated by pos * theta^(-2i/hs)
        z = torch.complex(vec[:half], vec[half:])
        ang = pos * cfg["rope_theta"] ** (-2.0 * torch.arange(half, dtype=torch.float64) / hs)
        z = z * torch.polar(torch.ones_like(ang), ang)
        return torch.cat([z.real, z.imag])

    y = torch.zeros(B, T, C, dtype=torch.float64)
    for b in range(B):
        for h in range(NH):
            j = h // group  # the key/value head of query head h
            for t in range(T):
                qt = rot(q[b, t, h * hs:(h + 1) * hs], t)
                scores = torch.stack([qt @ rot(k[b, s, j * hs:(j + 1) * hs], s) for s in range(t + 1)]) / math.sqrt(hs)
                w = scores.softmax(0)
                y[b, t, h * hs:(h + 1) * hs] = sum(w[s] * v[b, s, j * hs:(j + 1) * hs] for s in range(t + 1))
    return F.linear(y, p[pre + "self_attn.o_proj.weight"])


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    return bool(cond)


def close(a, b, tol=1e-10):
    return (a - b).abs().max().item() <= tol * max(1.0, b.abs().max().item())


def engine_params(engine, model):
    """n_params of `traindeck-engine plan --json` for a model section."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.json")
        with open(path, "w") as f:
            json.dump({"model": model, "data": {"path": d}}, f)
        r = subprocess.run([engine, "plan", "--config", path, "--json"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"traindeck-engine plan failed ({r.returncode}): {r.stderr.strip()}")
        return json.loads(r.stdout)["n_params"]


def self_test(engine=None):
    torch.set_num_threads(1)
    ok = True
    gqa = full_config({"family": "llama", "vocab_size": 23, "seq_len": 6, "n_layer": 2, "n_head": 4, "n_kv_head": 2,
                       "d_model": 16, "d_ff": 24, "tie_embeddings": False})
    mha = dict(gqa, n_kv_head=4)
    B, T = 2, 6
    g = torch.Generator().manual_seed(7)
    x = torch.randn(B, T, 16, generator=g, dtype=torch.float64)

    # 1. Multi-head (n_kv_head = n_head) equals attention written out head by head.
    p = random_params(mha, 1)
    pre = "model.layers.0."
    ok &= check(close(attention(x, p, pre, mha), mha_by_loops(x, p, pre, mha)),
                "n_kv_head = n_head: attention equals per-head loops with complex-rotation RoPE")
    # 2. GQA equals the loops too (which pick kv head h // group directly) ...
    p = random_params(gqa, 2)
    ok &= check(close(attention(x, p, pre, gqa), mha_by_loops(x, p, pre, gqa)),
                "n_kv_head = 2 of 4: attention equals per-head loops (query head h reads kv head h // 2)")
    # ... and equals MHA whose k/v heads are each repeated for their group of query heads.
    hs = 4
    pm = dict(p)
    for w in ("k_proj", "v_proj"):
        kw = p[pre + f"self_attn.{w}.weight"].view(2, hs, 16)
        pm[pre + f"self_attn.{w}.weight"] = kw.repeat_interleave(2, dim=0).reshape(16, 16)
    ok &= check(close(attention(x, p, pre, gqa), attention(x, pm, pre, mha)),
                "GQA equals MHA with each k/v head copied to its group of query heads")
    # 3. Multi-query (n_kv_head = 1): every query head reads the same k, v.
    mqa = dict(gqa, n_kv_head=1)
    pq = random_params(mqa, 3)
    ok &= check(close(attention(x, pq, pre, mqa), mha_by_loops(x, pq, pre, mqa)), "n_kv_head = 1 (multi-query) equals per-head loops")

    # 4. RoPE is a rotation: it keeps each head vector's norm, and q.k depends only on the offset.
    q = torch.randn(1, 3, 9, 8, generator=g, dtype=torch.float64)
    k = torch.randn(1, 3, 9, 8, generator=g, dtype=torch.float64)
    cos, sin = rope_cos_sin(9, 8, 10000.0)
    ok &= check(close(apply_rope(q, cos, sin).norm(dim=-1), q.norm(dim=-1)), "RoPE preserves the norm of every head vector")
    cos5, sin5 = rope_cos_sin(9, 8, 10000.0, offset=5)
    d0 = apply_rope(q, cos, sin)[..., 3, :] @ apply_rope(k, cos, sin)[..., 1, :].transpose(-1, -2)
    d5 = apply_rope(q, cos5, sin5)[..., 3, :] @ apply_rope(k, cos5, sin5)[..., 1, :].transpose(-1, -2)
    ok &= check(close(d0, d5), "RoPE: q_m . k_n is unchanged when both positions move by 5 (relative position)")
    ok &= check(close(apply_rope(q, cos, sin)[..., 0, :], q[..., 0, :]), "RoPE leaves position 0 unchanged")
    # By hand: hs 2, theta any, position 1: (1, 0) rotated by 1 radian -> (cos 1, sin 1).
    c1, s1 = rope_cos_sin(2, 2, 10000.0)
    v = apply_rope(torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]], dtype=torch.float64), c1, s1)[0, 0, 1]
    ok &= check(close(v, torch.tensor([math.cos(1.0), math.sin(1.0)], dtype=torch.float64)), "RoPE by hand: (1, 0) at position 1 -> (cos 1, sin 1)")

    # 5. RMSNorm by hand: [3, 4] has mean square 12.5.
    y = rms_norm(torch.tensor([3.0, 4.0], dtype=torch.float64), torch.tensor([1.0, 2.0], dtype=torch.float64), 0.5)
    ok &= check(close(y, torch.tensor([3.0 / math.sqrt(13.0), 8.0 / math.sqrt(13.0)], dtype=torch.float64)),
                "RMSNorm by hand: [3, 4], weight [1, 2], eps 0.5 -> [3, 8] / sqrt(13)")

    # 6. SwiGLU by hand: C 1, F 1, gate 2, up 3, down 0.5 at x = 1: 0.5 * silu(2) * 3.
    pp = {"l.mlp.gate_proj.weight": torch.tensor([[2.0]], dtype=torch.float64),
          "l.mlp.up_proj.weight": torch.tensor([[3.0]], dtype=torch.float64),
          "l.mlp.down_proj.weight": torch.tensor([[0.5]], dtype=torch.float64)}
    out = mlp(torch.tensor([[1.0]], dtype=torch.float64), pp, "l.")
    ok &= check(abs(out.item() - 0.5 * (2.0 / (1.0 + math.exp(-2.0))) * 3.0) < 1e-12, "SwiGLU by hand: 0.5 * silu(2) * 3")

    # 7. Causal: a later token changes no earlier logit; tied uses embed_tokens as the head.
    pg = random_params(gqa, 4)
    ids = torch.randint(0, 23, (B, T), generator=g)
    ids2 = ids.clone()
    ids2[:, -1] = (ids2[:, -1] + 1) % 23
    ok &= check(close(logits(pg, gqa, ids)[:, :-1], logits(pg, gqa, ids2)[:, :-1]), "causal: the last token changes no earlier logits")
    tied = dict(gqa, tie_embeddings=True)
    pt = {n: t for n, t in pg.items() if n != "lm_head.weight"}
    pu = dict(pt, **{"lm_head.weight": pt["model.embed_tokens.weight"].clone()})
    ok &= check(close(logits(pt, tied, ids), logits(pu, gqa, ids)), "tied equals untied with lm_head = embed_tokens")
    engine_names = {n[len("model."):] if n.startswith("model.") else n: t for n, t in pg.items()}
    ok &= check(close(logits(engine_names, gqa, ids), logits(pg, gqa, ids)), "the engine's tensor names give the same logits")

    # 8. The backward: autograd's gradients against central differences (gradcheck, float64).
    small = full_config({"family": "llama", "vocab_size": 7, "seq_len": 4, "n_layer": 1, "n_head": 2, "n_kv_head": 1,
                         "d_model": 4, "d_ff": 6, "tie_embeddings": False})
    ps = random_params(small, 5)
    names = list(ps)
    ids = torch.randint(0, 7, (1, 4), generator=g)
    tg = torch.randint(0, 7, (1, 4), generator=g)
    leaves = [ps[n].clone().requires_grad_(True) for n in names]
    ok &= check(torch.autograd.gradcheck(lambda *ts: loss(dict(zip(names, ts)), small, ids, tg), leaves, eps=1e-6, atol=1e-8),
                "gradients of the loss equal central differences (gradcheck)")

    # 9. qwen2 (q/k/v biases): attention equals the loops that add each bias by hand; zero biases
    #    give llama's attention; a v bias alone adds o_proj @ (v bias of each head's kv group) to
    #    every position (softmax weights sum to 1).
    qw = dict(gqa, qkv_bias=True)
    pw = random_params(qw, 6)
    ok &= check(close(attention(x, pw, pre, qw), mha_by_loops(x, pw, pre, qw)), "qwen2: attention with q/k/v biases equals per-head loops")
    pz = dict(pw, **{pre + f"self_attn.{w}_proj.bias": torch.zeros_like(pw[pre + f"self_attn.{w}_proj.bias"]) for w in "qkv"})
    ok &= check(close(attention(x, pz, pre, qw), attention(x, pz, pre, gqa)), "qwen2 with zero biases equals llama")
    pv = dict(pz, **{pre + "self_attn.v_proj.bias": pw[pre + "self_attn.v_proj.bias"]})
    bv = pw[pre + "self_attn.v_proj.bias"].view(2, hs).repeat_interleave(2, dim=0).reshape(16)  # query head h reads kv head h // 2
    ok &= check(close(attention(x, pv, pre, qw), attention(x, pz, pre, gqa) + pw[pre + "self_attn.o_proj.weight"] @ bv),
                "qwen2: a v bias alone shifts every output by o_proj @ v_bias")
    smallq = dict(small, qkv_bias=True)
    psq = random_params(smallq, 8)
    namesq = list(psq)
    leavesq = [psq[n].clone().requires_grad_(True) for n in namesq]
    ok &= check(torch.autograd.gradcheck(lambda *ts: loss(dict(zip(namesq, ts)), smallq, ids, tg), leavesq, eps=1e-6, atol=1e-8),
                "qwen2: gradients of the loss (biases included) equal central differences (gradcheck)")

    # 10. Parameter counts: the closed form (docs/planner.md) and, with --engine, the planner's.
    qwen25 = full_config({"family": "qwen2", "vocab_size": 151936, "seq_len": 2048, "n_layer": 24, "n_head": 14, "n_kv_head": 2,
                          "d_model": 896, "d_ff": 4864, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6})
    shapes = [small, gqa, mha, mqa, tied,
              full_config({"family": "llama", "vocab_size": 49152, "seq_len": 2048, "n_layer": 30, "n_head": 9, "n_kv_head": 3,
                           "d_model": 576, "d_ff": 1536, "rope_theta": 100000}),
              smallq, qw, qwen25]
    for c in shapes:
        C, kvh = c["d_model"], c["n_kv_head"] * (c["d_model"] // c["n_head"])
        bias = C + 2 * kvh if c["qkv_bias"] else 0
        closed = (c["vocab_size"] * C * (1 if c["tie_embeddings"] else 2)
                  + c["n_layer"] * (2 * C + 2 * C * C + 2 * C * kvh + 3 * C * c["d_ff"] + bias) + C)
        ok &= check(num_params(c) == closed, f"parameters of L{c['n_layer']} C{C} KV{c['n_kv_head']} bias {c['qkv_bias']}: {num_params(c)} = closed form")
    ok &= check(num_params(shapes[5]) == 134515008, "SmolLM2-135M's shape has 134515008 parameters")
    # Qwen2.5-0.5B's model card: 0.49B parameters; its config.json's shape gives 494032768.
    ok &= check(num_params(qwen25) == 494032768, "Qwen2.5-0.5B's shape has 494032768 parameters")
    if engine:
        for c in shapes:
            model = {k: c[k] for k in ("vocab_size", "seq_len", "n_layer", "n_head", "n_kv_head", "d_model", "d_ff", "rope_theta",
                                       "tie_embeddings")}
            model["family"] = "qwen2" if c["qkv_bias"] else "llama"
            n = engine_params(engine, model)
            ok &= check(n == num_params(c), f"traindeck-engine plan: {n} parameters, the reference {num_params(c)}")
    else:
        print("skip the planner comparison: no --engine given")
    print("self-test " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--self-test":
        eng = sys.argv[sys.argv.index("--engine") + 1] if "--engine" in sys.argv else None
        sys.exit(self_test(eng))
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
