#!/usr/bin/env bash
# bench/parallel: the same model and global batch trained with data parallelism (ZeRO-0), ZeRO-1,
# ZeRO-2, ZeRO-3 and tensor parallelism 2 (alone, and with ZeRO-3 over its data-parallel
# replicas where there are some) on local CPU ranks (`traindeck-engine launch`), one table per
# world size:
# tokens/s and its ratio to DP, collective bytes per step and rank by kind (measured: the step
# events' ranks[].all_reduce_bytes / reduce_scatter_bytes / all_gather_bytes; planned:
# `plan --json`'s cluster.collective_bytes_by_kind), and peak RSS per rank beside the plan.
#   usage: bench/parallel/run.sh [BUILD_DIR] [WORLD_SIZE...]   (default world sizes: 2 4)
# Model (parallel.json): GPT-2, n_layer 6, n_head 6, d_model 384, seq_len 128, byte vocab (10.8 M
# parameters), fp32; global batch 8 sequences = micro_batch x grad_accum 2 x world size.
# train.threads 0: cores / ranks (at least 1). Timings only inform; nothing here fails on them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
engine=$build/engine/cli/traindeck-engine
python=/usr/bin/python3
[ -x "$engine" ] || { echo "run.sh: no engine at $engine (build traindeck-engine first)" >&2; exit 2; }
worlds=("${@:2}")
[ ${#worlds[@]} -gt 0 ] || worlds=(2 4)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config  # no user catalogue, no calibration
corpus=$root/../shared/data/tinyshakespeare.txt
[ -f "$corpus" ] || corpus=/usr/share/games/fortunes
[ -f "$corpus" ] || { "$python" -c "print('the quick brown fox jumps over the lazy dog\n' * 20000)" >"$work/corpus.txt"; corpus=$work/corpus.txt; }
"$engine" prepare --input "$corpus" --out "$work/ds" --tokenizer byte --quiet >/dev/null
steps=10; warm=3
global=8; accum=2
echo "bench/parallel: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $("$python" -c "import re; print(re.search(r'model name\s*:\s*(.*)', open('/proc/cpuinfo').read()).group(1))"); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${worlds[@]}"; do
  # Variants "zero:tp": the four ZeRO stages, then tensor parallel 2 (with ZeRO-3 over its
  # replicas when there are at least 2).
  variants=("0:1" "1:1" "2:1" "3:1")
  [ $((n % 2)) -eq 0 ] && variants+=("0:2")
  [ $((n % 2)) -eq 0 ] && [ "$n" -ge 4 ] && variants+=("3:2")
  for v in "${variants[@]}"; do
    z=${v%:*}; tp=${v#*:}; dp=$((n / tp))
    mb=$((global / accum / dp))
    [ "$mb" -ge 1 ] && [ $((mb * accum * dp)) -eq "$global" ] || { echo "run.sh: $dp replicas do not divide the global batch $global / grad_accum $accum" >&2; exit 2; }
    set_args=(--set "data.path=$work/ds" --set "train.steps=$steps" --set "train.micro_batch=$mb" --set "train.grad_accum=$accum"
              --set "train.zero=$z" --set "train.tensor_parallel=$tp")
    "$engine" launch --quiet --nproc "$n" -- train --config "$here/parallel.json" "${set_args[@]}" \
      --out "$work/run_${n}_${z}_$tp" --quiet --no-events-stdout --peak-flops 1e10
    "$engine" plan --config "$here/parallel.json" "${set_args[@]}" --world-size "$n" --zero "$z" --tensor-parallel "$tp" --json \
      >"$work/plan_${n}_${z}_$tp.json"
  done
  echo "($n ranks done; load average $(cut -d' ' -f1-3 /proc/loadavg))"
  "$python" - "$work" "$n" "$warm" "$accum" "${variants[@]}" <<'PY'
import json, statistics, sys
work, n, warm, accum = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
variants = [tuple(int(x) for x in v.split(":")) for v in sys.argv[5:]]
MiB = 2**20
kinds = ["all_reduce", "reduce_scatter", "all_gather"]
rows = []
for z, tp in variants:
    ev = [json.loads(l) for l in open(f"{work}/run_{n}_{z}_{tp}/events.jsonl")]
    steps = [e for e in ev if e["type"] == "step"]
    late = steps[warm:]
    tps = statistics.median(e["tokens_per_s"] for e in late)
    step_s = statistics.median(e["step_ms"] for e in late) / 1e3
    # Bytes per step and rank: the median over steps of each kind, the largest rank's.
    meas = {k: max(statistics.median(e["ranks"][r][k + "_bytes"] for e in late) for r in range(n)) for k in kinds}
    rss = max(r["rss_bytes"] for e in steps for r in e["ranks"])
    plan = json.load(open(f"{work}/plan_{n}_{z}_{tp}.json"))
    pk = plan["cluster"]["collective_bytes_by_kind"]
    rows.append(dict(z=z, tp=tp, tps=tps, step_s=step_s, meas=meas, plan=pk, rss=rss, plan_mem=plan["memory_per_rank"]["total_bytes"],
                     n_params=plan["n_params"]))
print(f"\n{n} ranks (grad_accum {accum}, 8 sequences of 128 tokens a step over the data-parallel replicas; {rows[0]['n_params'] / 1e6:.2f} M parameters, fp32)")
mb_ = lambda b: f"{b / 1e6:8.2f}"
W = 14
print(f"{'layout':{W}s} {'tokens/s':>9s} {'vs DP':>6s} {'step s':>7s} | {'all-reduce MB':>17s} | {'reduce-scatter MB':>17s} | {'all-gather MB':>17s} | {'peak RSS/rank MiB':>17s}")
print(f"{'':{W}s} {'':>9s} {'':>6s} {'':>7s} | {'meas':>8s} {'plan':>8s} | {'meas':>8s} {'plan':>8s} | {'meas':>8s} {'plan':>8s} | {'meas':>8s} {'plan':>8s}")
for r in rows:
    name = "DP" if r["z"] == 0 else f"ZeRO-{r['z']}"
    if r["tp"] > 1:
        name = f"TP {r['tp']}" + (f" x DP {n // r['tp']}" if n > r["tp"] else "") + (f" Z{r['z']}" if r["z"] else "")
    cells = " | ".join(f"{mb_(r['meas'][k])} {mb_(r['plan'][k])}" for k in kinds)
    print(f"{name:{W}s} {r['tps']:9.0f} {r['tps'] / rows[0]['tps']:6.2f} {r['step_s']:7.2f} | {cells} | {r['rss'] / MiB:8.1f} {(r['plan_mem'] + 16 * MiB) / MiB:8.1f}")
print("MB = 10^6 bytes per step and rank (sent); measured: the largest rank's median over the steps after the first "
      f"{warm}; planned RSS: make_plan + the 16 MiB process baseline (docs/planner.md). The measured bytes also hold the "
      "trainer's own few bytes a step (the stop flags' 8-byte all-reduce, the loss and norm, the per-rank figures).")
PY
done
