#!/usr/bin/env bash
# bench/cpu_train: training throughput of the engine beside the PyTorch reference (same model,
# batch, optimizer and thread count, warmed up, in one run), for two configs of the same size:
#   cpu-small        GPT-2: n_layer 6, n_head 6, d_model 384, seq_len 256, micro_batch 8, byte vocab
#   cpu-small-llama  Llama: the same with n_kv_head 2 (grouped-query), SwiGLU d_ff 1024, RoPE
# both fp32 on 2 threads. The target for each: engine >= 1.5x PyTorch with the same GEMM kernel.
#   usage: bench/cpu_train/run.sh [BUILD_DIR] [CONFIG...]   (after ./traindeck.sh test or any
#          Release build; CONFIG is a name above, default both)
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for this benchmark only (never in tests or CI).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
engine=$build/engine/cli/traindeck-engine
python=/usr/bin/python3   # Debian's python3, the one with python3-torch
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=$root/../shared/data/tinyshakespeare.txt
[ -f "$corpus" ] || corpus=/usr/share/games/fortunes
"$engine" prepare --input "$corpus" --out "$work/ds" --tokenizer byte --quiet >/dev/null
steps=14; warm=4
# A fresh sgemm peak (the MFU denominator) with the benchmark's thread count.
"$engine" calibrate --threads 2
# The kernel OpenBLAS picks for the engine (traindeck-engine re-executes itself with
# OPENBLAS_CORETYPE when OpenBLAS's own detection falls back to a generic kernel).
core=$("$python" -c "import sys; sys.path.insert(0, '$here'); import cpuinfo_hint; print(cpuinfo_hint.best())")
configs=("${@:2}")
[ ${#configs[@]} -gt 0 ] || configs=(cpu-small cpu-small-llama)
for cfg in "${configs[@]}"; do
  [ -f "$here/$cfg.json" ] || { echo "run.sh: no config $here/$cfg.json" >&2; exit 2; }
  "$engine" train --config "$here/$cfg.json" --set "data.path=$work/ds" --set "train.steps=$steps" \
    --out "$work/$cfg.run" --quiet >"$work/$cfg.events.jsonl"
  "$python" - "$work/$cfg.events.jsonl" "$warm" >"$work/$cfg.engine.json" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
start = next(e for e in ev if e["type"] == "run_start")
steps = [e for e in ev if e["type"] == "step"][int(sys.argv[2]):]
tps = sorted(e["tokens_per_s"] for e in steps)[len(steps) // 2]
print(json.dumps({"tokens_per_s": tps, "peak_flops": start["peak_flops"], "flops_per_token": start["flops_per_token"],
                  "n_params": start["n_params"]}))
PY
  "$python" "$here/torch_train.py" "$work/ds" "$here/$cfg.json" "$steps" "$warm" >"$work/$cfg.torch.json"
  # PyTorch again with the engine's GEMM kernel, for a like-for-like comparison.
  if [ -n "$core" ]; then
    OPENBLAS_CORETYPE=$core "$python" "$here/torch_train.py" "$work/ds" "$here/$cfg.json" "$steps" "$warm" >"$work/$cfg.torch_same.json"
  else
    cp "$work/$cfg.torch.json" "$work/$cfg.torch_same.json"
  fi
  "$python" - "$work/$cfg.engine.json" "$work/$cfg.torch.json" "$work/$cfg.torch_same.json" "$core" "$cfg" <<'PY'
import json, sys
e, t, ts = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
core = sys.argv[4] or "auto"
fpt, peak = e["flops_per_token"], e["peak_flops"]
mfu = lambda tps: f"{100 * fpt * tps / peak:5.1f}%" if peak else "  n/a"
print(f"{sys.argv[5]} ({e['n_params'] / 1e6:.2f} M parameters, {fpt / 1e6:.1f} MFLOP/token, sgemm peak {peak / 1e9:.0f} GFLOP/s)")
print(f"{'':30s} {'tokens/s':>10s} {'MFU':>7s}")
print(f"{'traindeck-engine':30s} {e['tokens_per_s']:10.0f} {mfu(e['tokens_per_s'])}")
print(f"{'PyTorch ' + t['torch'] + ' (auto)':30s} {t['tokens_per_s']:10.0f} {mfu(t['tokens_per_s'])}   OpenBLAS kernel as detected")
print(f"{'PyTorch ' + t['torch'] + ' (' + core + ')':30s} {ts['tokens_per_s']:10.0f} {mfu(ts['tokens_per_s'])}   OpenBLAS kernel {core}, as the engine")
print(f"ratio engine / PyTorch, same kernel: {e['tokens_per_s'] / ts['tokens_per_s']:.2f}x  (target >= 1.5x)")
print(f"ratio engine / PyTorch, detected kernel: {e['tokens_per_s'] / t['tokens_per_s']:.2f}x")
PY
  echo
done
