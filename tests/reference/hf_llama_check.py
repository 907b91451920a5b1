"""An independent reading of a Hugging Face Llama (or Qwen2) directory: the oracle for
`traindeck-engine export --format hf` of a llama or qwen2 model.

Reads only what transformers' LlamaForCausalLM.from_pretrained(dir) reads, by its names, without
transformers (not in Debian) and without the engine's code or its run config:
  * config.json: LlamaConfig fields (hidden_size, intermediate_size, num_hidden_layers,
    num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps, rope_theta, rope_scaling,
    hidden_act, attention_bias, mlp_bias, tie_word_embeddings, vocab_size,
    max_position_embeddings), with LlamaConfig's defaults for the ones left out.
  * model.safetensors: LlamaForCausalLM's state dict, "model.embed_tokens.weight",
    "model.layers.{i}.{input_layernorm,self_attn.{q,k,v,o}_proj,post_attention_layernorm,
    mlp.{gate,up,down}_proj}.weight", "model.norm.weight", and "lm_head.weight" only when
    tie_word_embeddings is false; F32, metadata format "pt" (transformers refuses others).
  * Qwen2 (model_type "qwen2", Qwen2ForCausalLM): the same names plus
    "model.layers.{i}.self_attn.{q,k,v}_proj.bias" (Qwen2Attention always has them, o_proj
    none); Qwen2Config has no attention_bias field; use_sliding_window must be false.
The forward pass is tests/reference/llama_reference.py's float64 Llama (rotate_half RoPE,
repeat_kv GQA, SwiGLU, RMSNorm; the q/k/v biases for qwen2), fed the config mapped from the
names above.

usage: hf_llama_check.py EXPORT_DIR CASE_JSON OUT_SAFETENSORS
  CASE_JSON  {"inputs": [[ids]] (B, T)}
  writes OUT_SAFETENSORS: "logits" (B, T, vocab_size); prints a JSON line {"config": {...}}.
Exits 1 with a message when the directory does not follow LlamaForCausalLM's layout.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference  # noqa: E402  (exits 77 without torch)
import safetensors_io  # noqa: E402
import torch  # noqa: E402


def engine_cfg(c):
    """LlamaConfig or Qwen2Config (with its defaults) -> the reference's field names."""
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    return {"vocab_size": c["vocab_size"], "d_model": c["hidden_size"], "n_layer": c["num_hidden_layers"],
            "n_head": heads, "n_kv_head": kv, "d_ff": c["intermediate_size"],
            "rope_theta": c.get("rope_theta", 10000.0), "rms_norm_eps": c.get("rms_norm_eps", 1e-6),
            "tie_embeddings": c.get("tie_word_embeddings", False), "seq_len": c.get("max_position_embeddings", 2048),
            "qkv_bias": c.get("model_type") == "qwen2"}


def main(export_dir, case_path, out_path):
    torch.set_num_threads(1)
    with open(os.path.join(export_dir, "config.json")) as f:
        c = json.load(f)
    problems = []
    archs = {"llama": ["LlamaForCausalLM"], "qwen2": ["Qwen2ForCausalLM"]}
    if c.get("model_type") not in archs or c.get("architectures") != archs[c.get("model_type")]:
        problems.append(f"model_type/architectures are {c.get('model_type')}/{c.get('architectures')}")
    if c.get("model_type") == "qwen2" and c.get("use_sliding_window"):
        problems.append("use_sliding_window is true (this oracle attends over the whole context)")
    if c.get("hidden_act", "silu") != "silu":
        problems.append(f"hidden_act {c.get('hidden_act')} (this oracle computes silu)")
    if c.get("rope_scaling") is not None:
        problems.append(f"rope_scaling {c.get('rope_scaling')} (this oracle computes plain RoPE)")
    if c.get("attention_bias") or c.get("mlp_bias"):
        problems.append("biases set")
    if c.get("head_dim", c["hidden_size"] // c["num_attention_heads"]) != c["hidden_size"] // c["num_attention_heads"]:
        problems.append("head_dim is not hidden_size / num_attention_heads")
    cfg = engine_cfg(c)
    weights, meta = safetensors_io.read(os.path.join(export_dir, "model.safetensors"))
    if meta.get("format") != "pt":
        problems.append(f'model.safetensors metadata format is {meta.get("format")!r}: transformers needs "pt"')
    want = dict(llama_reference.param_shapes(cfg))  # LlamaForCausalLM's names and shapes
    if set(weights) != set(want):
        problems.append(f"tensor names differ from {c.get('architectures')}'s: extra {sorted(set(weights) - set(want))}, "
                        f"missing {sorted(set(want) - set(weights))}")
    for n, t in weights.items():
        if n in want and tuple(t.shape) != tuple(want[n]):
            problems.append(f"{n} has shape {list(t.shape)}, LlamaConfig says {list(want[n])}")
        if t.dtype != torch.float32:
            problems.append(f"{n} is {t.dtype}, config.json says torch_dtype {c.get('torch_dtype')}")
    if problems:
        sys.exit(f"not {c.get('architectures')}'s layout: " + "; ".join(problems))

    with open(case_path) as f:
        case = json.load(f)
    p = {n: t.to(torch.float64) for n, t in weights.items()}
    ids = torch.tensor(case["inputs"], dtype=torch.long)
    assert ids.shape[1] <= cfg["seq_len"], "more positions than max_position_embeddings"
    with torch.no_grad():
        logits = llama_reference.logits(p, cfg, ids)
    safetensors_io.write(out_path, {"logits": logits})
    print(json.dumps({"config": cfg}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
