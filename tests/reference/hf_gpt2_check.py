"""An independent reading of a Hugging Face GPT-2 directory: the oracle for `traindeck-engine export --format hf`.

Written from GPT-2's published layout (transformers' modeling_gpt2.py, GPT2LMHeadModel), not from
the engine's code, and without transformers (not in Debian):
  * config.json: GPT2Config fields (n_embd, n_layer, n_head, n_inner, n_positions, vocab_size,
    layer_norm_epsilon, activation_function, tie_word_embeddings, ...).
  * model.safetensors: "transformer.wte.weight" (V, C), "transformer.wpe.weight" (n_positions, C),
    per block "transformer.h.{i}.ln_1.{weight,bias}", "attn.c_attn.{weight,bias}",
    "attn.c_proj.*", "ln_2.*", "mlp.c_fc.*", "mlp.c_proj.*"; "transformer.ln_f.*"; and
    "lm_head.weight" (V, C) only when the head is not tied to wte. Conv1D weights are stored
    [in, out] and applied as x @ W + b (torch.addmm(b, x, W)).
  * the block: h = h + c_proj(attn(ln_1(h))); h = h + mlp(ln_2(h)); attention scores divided by
    sqrt(head size), causal mask, softmax; mlp = c_proj(act(c_fc(x))) with act "gelu_new":
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (transformers' NewGELUActivation).
  * the byte tokenizer's vocab.json: keys are GPT-2's bytes_to_unicode() strings
    (openai/gpt-2 src/encoder.py), written out again here.

Computes in float64.
usage: hf_gpt2_check.py EXPORT_DIR CASE_JSON OUT_SAFETENSORS
  CASE_JSON  {"inputs": [[ids]] (B, T), "text": "..." (optional: encoded with vocab.json)}
  writes OUT_SAFETENSORS: "logits" (B, T, vocab_size); prints a JSON line {"config": ..., "ids": [...]}.
Exits non-zero with a message when the directory does not follow GPT-2's layout.
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def bytes_to_unicode():
    """openai/gpt-2 src/encoder.py: byte value -> the unicode character standing for it."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def conv1d(x, w, b):
    """transformers' Conv1D: weight [in, out]; x @ w + b."""
    assert w.shape[0] == x.shape[-1], f"Conv1D weight {list(w.shape)} is not [in={x.shape[-1]}, out]"
    return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).reshape(*x.shape[:-1], w.shape[1])


def expected_names(cfg):
    names = ["transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight", "transformer.ln_f.bias"]
    for i in range(cfg["n_layer"]):
        for part in ["ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"]:
            names += [f"transformer.h.{i}.{part}.weight", f"transformer.h.{i}.{part}.bias"]
    if not cfg.get("tie_word_embeddings", True):
        names.append("lm_head.weight")
    return set(names)


def forward(cfg, p, ids):
    C, L, NH = cfg["n_embd"], cfg["n_layer"], cfg["n_head"]
    F = cfg.get("n_inner") or 4 * C
    V, P = cfg["vocab_size"], cfg["n_positions"]
    eps = cfg["layer_norm_epsilon"]
    hs = C // NH
    B, T = ids.shape
    assert T <= P
    assert list(p["transformer.wte.weight"].shape) == [V, C]
    assert list(p["transformer.wpe.weight"].shape) == [P, C]
    h = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][torch.arange(T)]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(L):
        w = lambda n: p[f"transformer.h.{i}.{n}"]  # noqa: E731
        assert list(w("attn.c_attn.weight").shape) == [C, 3 * C]
        assert list(w("attn.c_proj.weight").shape) == [C, C]
        assert list(w("mlp.c_fc.weight").shape) == [C, F]
        assert list(w("mlp.c_proj.weight").shape) == [F, C]
        a = torch.nn.functional.layer_norm(h, (C,), w("ln_1.weight"), w("ln_1.bias"), eps)
        q, k, v = conv1d(a, w("attn.c_attn.weight"), w("attn.c_attn.bias")).split(C, dim=2)
        q, k, v = (t.view(B, T, NH, hs).permute(0, 2, 1, 3) for t in (q, k, v))
        s = torch.matmul(q, k.transpose(-1, -2))
        if cfg.get("scale_attn_weights", True):
            s = s / math.sqrt(hs)
        s = torch.where(causal, s, torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype))
        y = torch.matmul(torch.softmax(s, dim=-1), v).permute(0, 2, 1, 3).reshape(B, T, C)
        h = h + conv1d(y, w("attn.c_proj.weight"), w("attn.c_proj.bias"))
        m = torch.nn.functional.layer_norm(h, (C,), w("ln_2.weight"), w("ln_2.bias"), eps)
        m = gelu_new(conv1d(m, w("mlp.c_fc.weight"), w("mlp.c_fc.bias")))
        h = h + conv1d(m, w("mlp.c_proj.weight"), w("mlp.c_proj.bias"))
    h = torch.nn.functional.layer_norm(h, (C,), p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
    head = p["transformer.wte.weight"] if cfg.get("tie_word_embeddings", True) else p["lm_head.weight"]
    assert list(head.shape) == [V, C]
    return h @ head.T  # lm_head is an nn.Linear (out, in)


def main(export_dir, case_path, out_path):
    torch.set_num_threads(1)
    with open(os.path.join(export_dir, "config.json")) as f:
        cfg = json.load(f)
    problems = []
    if cfg.get("model_type") != "gpt2" or cfg.get("architectures") != ["GPT2LMHeadModel"]:
        problems.append(f"model_type/architectures are {cfg.get('model_type')}/{cfg.get('architectures')}")
    if cfg.get("activation_function") != "gelu_new":
        problems.append(f"activation_function {cfg.get('activation_function')} (this oracle computes gelu_new)")
    if cfg.get("n_ctx", cfg["n_positions"]) != cfg["n_positions"]:
        problems.append("n_ctx differs from n_positions")
    for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop"):
        if cfg.get(k, 0.1) != 0:
            problems.append(f"{k} is {cfg.get(k)} (the engine has no dropout)")
    if cfg.get("scale_attn_by_inverse_layer_idx") or cfg.get("reorder_and_upcast_attn"):
        problems.append("attention variants set")
    weights, meta = safetensors_io.read(os.path.join(export_dir, "model.safetensors"))
    if meta.get("format") != "pt":
        problems.append(f'model.safetensors metadata format is {meta.get("format")!r}: transformers needs "pt"')
    if set(weights) != expected_names(cfg):
        problems.append(f"tensor names differ from GPT2LMHeadModel's: extra {sorted(set(weights) - expected_names(cfg))}, "
                        f"missing {sorted(expected_names(cfg) - set(weights))}")
    if problems:
        sys.exit("not GPT-2's layout: " + "; ".join(problems))

    with open(case_path) as f:
        case = json.load(f)
    p = {n: t.to(torch.float64) for n, t in weights.items()}
    ids = torch.tensor(case["inputs"], dtype=torch.long)
    logits = forward(cfg, p, ids)
    safetensors_io.write(out_path, {"logits": logits})

    report = {"config": cfg, "ids": None}
    vocab_path = os.path.join(export_dir, "vocab.json")
    if "text" in case and os.path.exists(vocab_path):
        # GPT-2's byte-level BPE with the given vocab: each UTF-8 byte -> its unicode stand-in ->
        # vocab id, then the merges (merges.txt must hold none for a byte vocabulary).
        with open(vocab_path, encoding="utf-8") as f:
            vocab = json.load(f)
        with open(os.path.join(export_dir, "merges.txt"), encoding="utf-8") as f:
            merges = [line for line in f.read().split("\n")[1:] if line]
        if merges:
            sys.exit("merges.txt of a byte vocabulary holds merges")
        enc = bytes_to_unicode()
        report["ids"] = [vocab[enc[b]] for b in case["text"].encode("utf-8")]
        report["eot"] = vocab.get("<|endoftext|>")
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
