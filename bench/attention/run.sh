#!/usr/bin/env bash
# bench/attention: train.attention "simple" against "fused" (FlashAttention-2 tiles, docs/cuda.md
# "Fused attention") on this machine's CPU: tokens/s, peak RSS and the planner's activation bytes
# side by side, for a small GPT-2 (n_layer 4, n_head 4, d_model 256, byte vocabulary, fp32,
# micro_batch 4) at seq_len 256, 512 and 1024. The simple kernel's (B, n_head, T, T)
# probabilities and score-gradient scratch grow with T^2; the fused one keeps a (B, n_head, T)
# log-sum-exp. Same seed and tokens: the losses agree to rounding (the last column).
#   usage: bench/attention/run.sh [BUILD_DIR] [STEPS]   (after ./traindeck.sh test or any Release build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
steps=${2:-8}
engine=$build/engine/cli/traindeck-engine
[ -x "$engine" ] || { echo "run.sh: no engine at $engine (build first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=$root/../shared/data/tinyshakespeare.txt
[ -f "$corpus" ] || corpus=/usr/share/games/fortunes
[ -f "$corpus" ] || { echo "run.sh: no corpus (tinyshakespeare or Debian's fortunes)" >&2; exit 2; }
"$engine" prepare --input "$corpus" --out "$work/ds" --tokenizer byte --quiet >/dev/null
cat >"$work/cfg.json" <<JSON
{"model": {"vocab_size": 257, "n_layer": 4, "n_head": 4, "d_model": 256},
 "train": {"micro_batch": 4, "steps": $steps, "warmup": 2, "lr": 1e-3, "eval_interval": 0, "sample_interval": 0,
           "checkpoint_interval": 0, "log_interval": 1000}}
JSON
printf '%-6s %-7s %12s %10s %14s %10s %12s\n' seq_len kernel tokens/s RSS_MiB plan_act_MiB "vs simple" loss_rel_diff
for T in 256 512 1024; do
  for a in simple fused; do
    "$engine" train --config "$work/cfg.json" --set "data.path=$work/ds" --set "model.seq_len=$T" \
      --set "train.attention=$a" --out "$work/run_${T}_$a" --quiet >"$work/ev_${T}_$a.jsonl"
    "$engine" plan --config "$work/cfg.json" --set "data.path=$work/ds" --set "model.seq_len=$T" \
      --set "train.attention=$a" --json >"$work/plan_${T}_$a.json"
  done
  python3 - "$work" "$T" <<'PY'
import json, sys
work, T = sys.argv[1], sys.argv[2]
def fig(a):
    ev = [json.loads(l) for l in open("%s/ev_%s_%s.jsonl" % (work, T, a))]
    st = [e for e in ev if e["type"] == "step"]
    timed = st[2:] if len(st) > 2 else st
    tps = sorted(e["tokens_per_s"] for e in timed)[len(timed) // 2]
    rss = max(e.get("rss_bytes", 0) for e in st)
    plan = json.load(open("%s/plan_%s_%s.json" % (work, T, a)))["memory_per_rank"]["activations_bytes"]
    return tps, rss, plan, [e["loss"] for e in st]
s, f = fig("simple"), fig("fused")
diff = max(abs(a - b) / abs(a) for a, b in zip(s[3], f[3]))
for name, x in (("simple", s), ("fused", f)):
    ratio = "tok %.2fx, RSS %.2fx" % (x[0] / s[0], x[1] / s[1]) if name == "fused" else ""
    print("%-6s %-7s %12.0f %10.1f %14.1f %21s %s" % (T, name, x[0], x[1] / 2**20, x[2] / 2**20, ratio,
                                                    "%.1e" % diff if name == "fused" else ""))
PY
done
