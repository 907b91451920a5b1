#!/usr/bin/env bash
# bench/gpu.sh: the GPU check of the CUDA backend in one go (bench/gpu/README.md).
#
#   bench/gpu.sh --prepare [DIR] [--build-dir B]   HERE (Debian build machine): build the engine,
#                     libtraindeck-cuda.so and test_parity in B (default build-gpubench), bundle
#                     them (remote/bundle.h, without NVIDIA's libraries) with the tinyshakespeare
#                     dataset into DIR/carry.tar.xz (DIR default .gpu-carry, inside the repository
#                     and git-ignored so the device tool can carry it).
#   bench/gpu.sh [--carry-dir DIR] RESULTS_DIR       THERE (GPU machine: nvcc, PyTorch, NVIDIA's pip
#                     wheels; no Qt, no Debian packages, no network): parity, GPT-2 124M engine vs
#                     PyTorch, tinyshakespeare on the GPU, a SmolLM2-135M-shaped llama engine vs
#                     PyTorch; results in RESULTS_DIR (8 files at most).
#   bench/gpu.sh --dry-run [--carry-dir DIR] RESULTS_DIR   HERE, no GPU: the same steps as far as a
#                     CPU allows (CUDA rows skipped, tiny models on train.device=cpu), to prove the
#                     plumbing; says what it skipped.
# Exit status (run): 0 when parity passed with no skipped row, else 1 (the other stages are
# reported, never fatal). Dry run: 0 when every stage that can run without a GPU ran.
# Every stage has its own time limit inside an overall budget (TD_GPU_BUDGET_S, default 465 s).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
gpu=$here/gpu

mode=run carry= build=$root/build-gpubench results=
die() { echo "gpu.sh: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --prepare) mode=prepare ;;
    --dry-run) mode=dry-run ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a folder"; build=$2; shift ;;
    --carry-dir) [ $# -ge 2 ] || die "--carry-dir needs a folder"; carry=$2; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) die "unknown option $1 (see bench/gpu.sh --help)" ;;
    *) if [ "$mode" = prepare ]; then carry=$1; else results=$1; fi ;;
  esac
  shift
done
carry=${carry:-$root/.gpu-carry}
case $carry in /*) ;; *) carry=$PWD/$carry ;; esac
case $build in /*) ;; *) build=$PWD/$build ;; esac
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# ---------------------------------------------------------------------------------------------
# --prepare: build, bundle, dataset, tarball
# ---------------------------------------------------------------------------------------------
prepare() {
  case $carry/ in "$root"/*) ;; *) die "$carry is outside the repository $root: the device tool carries only paths inside it" ;; esac
  mkdir -p "$carry" || die "cannot create $carry"
  git -C "$root" check-ignore -q "$carry/carry.tar.xz" ||
    die "$carry is not git-ignored: add it to .gitignore (the repository's copy carries it only through 'carry')"
  [ "$(uname -m)" = x86_64 ] || die "this is $(uname -m); the GPU machine is x86_64: prepare on an x86_64 machine"
  if [ ! -f "$build/build.ninja" ]; then
    echo "== configuring $build"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINDECK_CUDA=ON -DTRAINDECK_REMOTE=ON \
      -DTRAINDECK_GUI=OFF >"$carry/configure.log" 2>&1 || die "cmake configure failed: $carry/configure.log"
  fi
  [ -f "$build/build.ninja" ] || die "$build is not a Ninja build folder (configure it with -G Ninja)"
  local missing=() t
  echo "== building traindeck-engine gpu_make_bundle in $build"
  cmake --build "$build" --target traindeck-engine gpu_make_bundle >"$carry/build.log" 2>&1 ||
    die "build of traindeck-engine / gpu_make_bundle failed (configure with -DTRAINDECK_REMOTE=ON): tail $carry/build.log"
  local targets
  targets=$(ninja -C "$build" -t targets all 2>/dev/null)  # not piped into grep -q: pipefail + SIGPIPE
  for t in traindeck-cuda test_parity test_nccl; do
    if ! grep -q "^$t:" <<<"$targets"; then
      echo "   target $t is not defined in this build: left out"; missing+=("$t (no target)"); continue
    fi
    echo "== building $t"
    cmake --build "$build" --target "$t" >>"$carry/build.log" 2>&1 || { echo "   $t did not build: left out (see $carry/build.log)"; missing+=("$t (build failed)"); }
  done
  local engine=$build/engine/cli/traindeck-engine
  local module parity args=()
  module=$(find "$build" -name libtraindeck-cuda.so \( -type f -o -type l \) 2>/dev/null | head -1)
  parity=$(find "$build/tests" -name test_parity -type f -perm -u+x 2>/dev/null | head -1)
  [ -n "$parity" ] && args+=(--program "$parity")
  local nccl_test
  nccl_test=$(find "$build/tests" -name test_nccl -type f -perm -u+x 2>/dev/null | head -1)
  [ -n "$nccl_test" ] && args+=(--program "$nccl_test")
  [ -n "$module" ] && args+=(--module "$(readlink -f "$module")")
  [ -n "$parity" ] || [[ " ${missing[*]-} " == *" test_parity "* ]] || missing+=("test_parity")
  [ -n "$module" ] || [[ " ${missing[*]-} " == *" traindeck-cuda "* ]] || missing+=("libtraindeck-cuda.so")

  local stage=$carry/stage
  rm -rf "$stage" && mkdir -p "$stage/data" || die "cannot create $stage"
  echo "== bundling (remote/bundle.h; CUDA libraries left to the GPU machine)"
  "$build/bench/gpu/gpu_make_bundle" "$engine" "$stage/bundle" "${args[@]}" || die "gpu_make_bundle failed"

  local corpus=$root/../shared/data/tinyshakespeare.txt
  [ -f "$corpus" ] || corpus=$root/shared/data/tinyshakespeare.txt
  [ -f "$corpus" ] || { corpus=/usr/share/games/fortunes; missing+=("tinyshakespeare.txt (Debian fortunes instead)"); }
  echo "== preparing $(basename "$corpus") (byte tokenizer, as tests/engine/test_train.cpp's real-text run)"
  "$stage/bundle/bin/traindeck-engine" prepare --input "$corpus" --out "$stage/data/tinyshakespeare" --tokenizer byte --quiet ||
    die "prepare of $corpus failed"
  # The CPU's val losses of the tinyshakespeare config (fp32), which the GPU's fp32 and bf16 runs
  # must match within 0.05 at the same steps.
  echo "== the CPU reference of the tinyshakespeare run (fp32, $(nproc) threads)"
  "$stage/bundle/bin/traindeck-engine" train --config "$here/gpu/tinyshakespeare.json" --set "data.path=$stage/data/tinyshakespeare" \
    --set train.device=cpu --set train.threads=0 --out "$stage/cpu_ts_run" --quiet --no-events-stdout ||
    die "the CPU tinyshakespeare run failed"
  python3 -c '
import json, sys
v = {str(e["step"]): e["val_loss"] for e in map(json.loads, open(sys.argv[1])) if e.get("type") == "eval"}
json.dump(v, open(sys.argv[2], "w"), indent=1)
print("CPU val loss by step:", v)' "$stage/cpu_ts_run/events.jsonl" "$stage/cpu_tinyshakespeare.json" || die "no CPU val losses"
  rm -rf "$stage/cpu_ts_run"

  local commit dirty
  commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
  dirty=$(git -C "$root" status --porcelain 2>/dev/null | wc -l)
  python3 - "$stage/info.json" "$commit" "$dirty" "$build" "$corpus" "${missing[@]+"${missing[@]}"}" <<'PY'
import json, sys, time
out, commit, dirty, build, corpus, *missing = sys.argv[1:]
json.dump({"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git_commit": commit, "git_changed_files": int(dirty),
           "build_dir": build, "corpus": corpus, "missing": missing}, open(out, "w"), indent=1)
PY
  echo "== packing $carry/carry.tar.xz"
  tar -C "$stage" -cJf "$carry/carry.tar.xz.tmp" . && mv "$carry/carry.tar.xz.tmp" "$carry/carry.tar.xz" || die "tar failed"
  local unpacked packed tree
  unpacked=$(du -sb "$stage" | cut -f1)
  packed=$(stat -c %s "$carry/carry.tar.xz")
  rm -rf "$stage"
  # What the device tool sends besides: tracked and untracked-not-ignored files (and shared/ inside).
  tree=$(cd "$root" && git ls-files -z -co --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  [ -d "$root/shared" ] && tree=$((tree + $(du -sb "$root/shared" | cut -f1)))
  local total=$((packed + tree))
  echo "carry: ${carry#"$root"/}/carry.tar.xz $(mib "$packed") MiB (unpacked $(mib "$unpacked") MiB) + working tree $(mib "$tree") MiB = $(mib "$total") MiB of 64 MiB"
  [ ${#missing[@]} -eq 0 ] || echo "NOT in the carry: ${missing[*]}"
  [ "$total" -le $((64 * 1048576)) ] || die "the carry is over 64 MiB"
  echo "on the GPU machine: bench/gpu.sh \$OUT   (device run: carry [\"${carry#"$root"/}/carry.tar.xz\"], timeout_s 540)"
}

# ---------------------------------------------------------------------------------------------
# run / --dry-run
# ---------------------------------------------------------------------------------------------
dry=0 notbuilt=failed
[ "$mode" = dry-run ] && dry=1 notbuilt=not-built
t0=$(date +%s)
budget=${TD_GPU_BUDGET_S:-465}
now() { date +%s; }
remaining() { echo $((budget - ($(now) - t0))); }
# limit CAP RESERVE: seconds for a stage: CAP, cut so that RESERVE seconds stay for later stages.
# Never under 10 s: a stage that starts at all gets a chance to finish.
limit() { local c=$1 r; r=$(($(remaining) - $2)); [ "$r" -lt "$c" ] && c=$r; [ "$c" -lt 10 ] && c=10; echo "$c"; }
say() { printf '%s\n' "$*" | tee -a "$log"; }
# record STAGE STATUS START_EPOCH NOTE
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(($(now) - $3))" "$4" >>"$work/stages.tsv"; say "-- $1: $2${4:+ ($4)}"; }
meta() { printf '%s\t%s\n' "$1" "$2" >>"$work/meta.tsv"; }
# show NAME FILE: the stage's output into gpu.log; its last lines on the console.
show() { { echo "---- $1 output ($2)"; cat "$2"; echo "---- end of $1"; } >>"$log"; tail -n "${3:-12}" "$2" | sed 's/^/   | /'; }
is_oom() { grep -qiE 'out of memory|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED|OutOfMemory|\bOOM\b' "$@" 2>/dev/null; }
sampler_pid=
stop_sampler() { if [ -n "$sampler_pid" ]; then kill "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null; sampler_pid=; fi; }

# versus_stage NAME LABEL BASE OUT RESERVE SETTINGS...: inside run(), GPT-2 124M at the chosen
# micro batch with SETTINGS (--set ...) into $work/OUT, its speed and loss beside the run in
# $work/BASE (summarize.py versus), within `limit 100 RESERVE`. Skipped when no micro batch fitted
# or BASE has no events. Reads run()'s chosen, engine, gpu, syn, sets, peak16, work.
versus_stage() {
  local name=$1 label=$2 base=$3 out=$4 reserve=$5 ts lim erc vs
  shift 5
  ts=$(now)
  if [ -z "$chosen" ] || [ ! -f "$work/$base/events.jsonl" ]; then
    record "$name" skipped "$ts" "no $base run to compare with"
    return
  fi
  lim=$(limit 100 "$reserve")
  say "-- engine: GPT-2 124M, $label, micro_batch $chosen (limit ${lim} s)"
  timeout -k 10 "$lim" "$engine" train --config "$gpu/gpt2-124m.json" --set "data.path=$syn" --set "train.micro_batch=$chosen" \
    "${sets[@]+"${sets[@]}"}" "$@" --out "$work/$out" --quiet --no-events-stdout ${peak16:+--peak-flops "$peak16"} \
    >"$work/$out.log" 2>&1
  erc=$?
  show "engine $label" "$work/$out.log" 6
  vs=$(python3 "$gpu/summarize.py" versus "$work/$base/events.jsonl" "$work/$out/events.jsonl" 2>&1 | head -c 400)
  meta "$name" "$vs"
  if [ "$erc" = 0 ]; then record "$name" ok "$ts" "$vs"; else record "$name" failed "$ts" "exit $erc: $vs"; fi
}

run() {
  [ -n "$results" ] || die "usage: bench/gpu.sh [--dry-run] [--carry-dir DIR] RESULTS_DIR"
  mkdir -p "$results" || die "cannot create $results"
  results=$(cd "$results" && pwd)
  work=$(mktemp -d "${TMPDIR:-/tmp}/traindeck-gpu.XXXXXX") || die "mktemp failed"
  trap 'stop_sampler; [ -n "${TD_GPU_KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
  rm -f "$results"/{summary.md,summary.json,parity.json,nccl.json,engine_gpt2.jsonl,torch_gpt2.json,tinyshakespeare.jsonl,gpu.log}
  log=$results/gpu.log
  : >"$work/stages.tsv"; : >"$work/meta.tsv"
  meta mode "$mode"
  say "== TrainDeck GPU check ($mode), $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${budget} s, results in $results"
  local ts

  # -- unpack the carry ---------------------------------------------------------------------
  ts=$(now)
  local tarball=$carry/carry.tar.xz c=$work/carry
  mkdir -p "$c"
  if [ ! -f "$tarball" ]; then
    record unpack failed "$ts" "no $tarball: run bench/gpu.sh --prepare on the build machine and carry it"
  elif ! { tar -C "$c" -xJf "$tarball" 2>>"$log" ||
           python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$tarball" "$c" 2>>"$log"; }; then
    record unpack failed "$ts" "cannot unpack $tarball"
  else
    record unpack ok "$ts" "$(mib "$(stat -c %s "$tarball")") MiB"
  fi
  local bundle=$c/bundle
  local engine=$bundle/bin/traindeck-engine
  [ -f "$c/info.json" ] && { echo "---- carry info.json"; cat "$c/info.json"; } >>"$log"
  meta bundle_hash "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hash"])' "$bundle/manifest.json" 2>/dev/null || echo none)"

  # -- libraries: bundle lib/ (by the launcher) + NVIDIA's libraries of this machine ----------
  ts=$(now)
  local libdirs
  libdirs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
try:
    roots += [os.path.join(p, "nvidia") for p in site.getsitepackages() + [site.getusersitepackages()]]
except Exception:
    pass
seen = []
for r in roots:
    for pat in ("*/lib", "cu13/lib", "*/cu13/lib", "cu1*/lib"):
        for d in sorted(glob.glob(os.path.join(r, pat))):
            d = os.path.realpath(d)
            if d not in seen and any(glob.glob(os.path.join(d, n)) for n in ("libcublas*.so*", "libcudart.so*", "libnccl.so*")):
                seen.append(d)
print("\n".join(seen))
PY
)
  local d extra=
  for d in /usr/local/cuda/lib64 /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [ -d "$d" ] && extra+=$d$'\n'; done
  if [ -d "$bundle/bin" ]; then
    printf '%s\n%s' "$libdirs" "$extra" | sed '/^$/d' >"$bundle/node-lib-path"
    { echo "---- node-lib-path (NVIDIA's libraries: pip wheels first, then the toolkit and driver folders)"; cat "$bundle/node-lib-path"; } >>"$log"
    local ldpath="$bundle/lib:$(paste -sd: "$bundle/node-lib-path")"
    local mod=$bundle/bin/libtraindeck-cuda.so
    if [ -f "$mod" ]; then
      LD_LIBRARY_PATH=$ldpath ldd "$mod" >"$work/ldd.txt" 2>&1
      show "ldd libtraindeck-cuda.so" "$work/ldd.txt" 0
      local libs
      libs=$(grep -E 'lib(cudart|cublas|cublasLt|nccl)\.so' "$work/ldd.txt" | awk '{print $1 " -> " $3}' | paste -sd ';' -)
      meta cuda_libs "${libs:-none}"
      if grep -q 'not found' "$work/ldd.txt"; then
        record libraries failed "$ts" "libtraindeck-cuda.so: $(grep 'not found' "$work/ldd.txt" | awk '{print $1}' | paste -sd ' ' -) not found"
      else
        record libraries ok "$ts" "${libs:-no CUDA library linked}"
      fi
    else
      meta cuda_libs "no CUDA module in the carry"
      record libraries "$notbuilt" "$ts" "no libtraindeck-cuda.so in the carry (not built at --prepare)"
    fi
  fi
  # glibc: the bundle's need against this machine's
  local need have
  need=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("glibc",""))' "$bundle/extras.json" 2>/dev/null)
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  meta bundle_glibc "${need:-?}"; meta machine_glibc "${have:-?}"
  if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -1)" != "$have" ]; then
    # Only Debian's libstdc++ / libgcc_s need more than 2.34 (bookworm: 2.36); the machine's own
    # (same or newer GCC on any distribution with glibc >= 2.34) can stand in for them.
    say "!! the bundle needs glibc $need, this machine has $have: using this machine's libstdc++ and libgcc_s instead of the bundled ones"
    for d in libstdc++.so.6 libgcc_s.so.1; do [ -f "$bundle/lib/$d" ] && mv "$bundle/lib/$d" "$bundle/lib/$d.off"; done
  fi

  # -- the GPU ----------------------------------------------------------------------------------
  local gpu_name= peak16= peak32= peak_src=
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >"$work/smi.txt" 2>&1; then
    show nvidia-smi "$work/smi.txt" 0
    head -n 20 "$work/smi.txt"
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    meta driver "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  else
    say "-- no nvidia-smi / no GPU here"
  fi
  meta gpu_name "${gpu_name:-none}"
  # The engine's own NVML reading (traindeck-engine gpus, docs/cuda.md "GPU telemetry"): the
  # JSON into gpu.log, one line per GPU into the summary's meta (nvml_gpus).
  if [ -x "$engine" ]; then
    timeout -k 5 30 "$engine" gpus >"$work/gpus.json" 2>"$work/gpus.err"
    show "traindeck-engine gpus (exit $?)" "$work/gpus.json" 0
    meta nvml_gpus "$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
g = ["%s %s: %s %%, %s of %s MiB, %s W, %s C, SM %s MHz, throttle %s" % (
    x.get("index"), x.get("name", "?"), x.get("util_pct", "?"),
    x["mem_used_bytes"] >> 20 if "mem_used_bytes" in x else "?", x["mem_total_bytes"] >> 20 if "mem_total_bytes" in x else "?",
    x.get("power_w", "?"), x.get("temp_c", "?"), x.get("sm_clock_mhz", "?"), x.get("throttle", "?")) for x in j.get("gpus", [])]
print("; ".join(g) if g else "none (%s)" % j.get("nvml_error"))' "$work/gpus.json" 2>&1 | head -c 2000)"
  fi
  # Dense datasheet peaks (resources/devices.json) for MFU; TD_GPU_PEAK_FLOPS overrides bf16's.
  case $gpu_name in
    *H100*|*H200*|*H800*|*GH200*) peak16=989e12 peak32=67e12 peak_src="$gpu_name dense bf16 datasheet (resources/devices.json)" ;;
    *A100*|*A800*) peak16=312e12 peak32=19.5e12 peak_src="$gpu_name dense bf16 datasheet (resources/devices.json)" ;;
  esac
  [ -n "${TD_GPU_PEAK_FLOPS:-}" ] && { peak16=$TD_GPU_PEAK_FLOPS; peak_src="TD_GPU_PEAK_FLOPS"; }
  if [ $dry = 1 ]; then peak16=1e11 peak32=1e11 peak_src="dry run: a stand-in 100 GFLOP/s, not a measurement"; fi
  [ -n "$peak16" ] && { meta peak_flops_bf16 "$peak16"; meta peak_source "$peak_src"; }

  # -- a) parity ----------------------------------------------------------------------------------
  ts=$(now)
  local prc=
  if [ ! -x "$bundle/bin/test_parity" ]; then
    record parity "$notbuilt" "$ts" "no test_parity in the carry (not built at --prepare)"
  else
    local pargs=(--json "$results/parity.json")
    [ $dry = 1 ] || pargs=(--require-cuda "${pargs[@]}")
    timeout -k 5 "$(limit 150 200)" "$bundle/bin/test_parity" "${pargs[@]}" >"$work/parity.log" 2>&1
    prc=$?
    meta parity_rc "$prc"
    show test_parity "$work/parity.log" 6
    local counts
    counts=$(python3 "$gpu/summarize.py" parity "$results/parity.json" 2>&1)
    if [ $dry = 1 ]; then
      [ "$prc" = 0 ] && record parity ran "$ts" "dry run, exit 0, $counts (CUDA rows skip without a GPU)" ||
        record parity failed "$ts" "exit $prc, $counts"
    elif [ "$prc" = 0 ] && [[ $counts == *"failed 0 skipped 0" ]]; then
      record parity passed "$ts" "$counts"
    else
      record parity failed "$ts" "exit $prc$([ "$prc" = 124 ] && echo ' (timed out)'), $counts"
    fi
  fi

  # -- a2) NCCL, world size 1 (docs/distributed.md; NCCL refuses two ranks on one GPU) -----------
  ts=$(now)
  if [ ! -x "$bundle/bin/test_nccl" ]; then
    record nccl "$notbuilt" "$ts" "no test_nccl in the carry (not built at --prepare)"
  else
    local nargs=(--json "$results/nccl.json")
    [ $dry = 1 ] || nargs=(--require-cuda "${nargs[@]}")
    timeout -k 5 "$(limit 60 120)" "$bundle/bin/test_nccl" "${nargs[@]}" >"$work/nccl.log" 2>&1
    local nrc=$?
    meta nccl_rc "$nrc"
    show test_nccl "$work/nccl.log" 6
    if [ "$nrc" = 0 ]; then
      record nccl "$([ $dry = 1 ] && echo ran || echo passed)" "$ts" "exit 0$([ $dry = 1 ] && echo ' (dry run: skipped without a GPU)')"
    else
      record nccl failed "$ts" "exit $nrc$([ "$nrc" = 124 ] && echo ' (timed out)')"
    fi
  fi

  # -- b) GPT-2 124M on the engine: the largest micro batch that fits ------------------------------
  ts=$(now)
  local syn=$work/synthetic chosen= B sets=() batches=(64 32 16 8) erc last=
  if [ $dry = 1 ]; then
    batches=(4 2)
    sets=(--set train.device=cpu --set train.precision=fp32 --set train.threads=2 --set model.n_layer=2
          --set model.n_head=2 --set model.d_model=64 --set model.seq_len=64 --set train.steps=2)
  fi
  # Learnable tokens: the carried tinyshakespeare bytes re-labelled into the 50304-token
  # vocabulary (uniform random ids would keep the loss at ln 50304 whatever the kernels compute).
  local from=() learnable=0
  [ -f "$c/data/tinyshakespeare/manifest.json" ] && from=(--from-dataset "$c/data/tinyshakespeare") learnable=1
  if ! python3 "$gpu/synthetic_tokens.py" "$syn" --vocab 50304 "${from[@]+"${from[@]}"}" >>"$log" 2>&1; then
    record engine_gpt2 failed "$ts" "synthetic_tokens.py failed (gpu.log)"
  elif [ ! -x "$engine" ]; then
    record engine_gpt2 failed "$ts" "no engine in the carry"
  else
    for B in "${batches[@]}"; do
      local lim
      lim=$(limit 150 130)
      [ "$lim" -ge 20 ] || { say "-- engine: out of time before micro batch $B"; break; }
      last=$B
      if command -v nvidia-smi >/dev/null 2>&1 && [ $dry = 0 ]; then
        nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$work/smi_b$B.txt" 2>/dev/null &
        sampler_pid=$!
      fi
      say "-- engine: GPT-2 124M$([ $dry = 1 ] && echo ' (dry run: tiny model, CPU, 2 steps)'), micro_batch $B (limit ${lim} s)"
      timeout -k 10 "$lim" "$engine" train --config "$gpu/gpt2-124m.json" --set "data.path=$syn" --set "train.micro_batch=$B" \
        "${sets[@]+"${sets[@]}"}" --out "$work/gpt2_b$B" --quiet --no-events-stdout ${peak16:+--peak-flops "$peak16"} \
        >"$work/gpt2_b$B.log" 2>&1
      erc=$?
      stop_sampler
      show "engine micro_batch $B" "$work/gpt2_b$B.log" 6
      if [ "$erc" = 0 ]; then chosen=$B; break; fi
      if is_oom "$work/gpt2_b$B.log" "$work/gpt2_b$B/events.jsonl"; then say "-- engine: micro_batch $B does not fit (out of memory)"; continue; fi
      break
    done
    if [ -n "$last" ] && [ -f "$work/gpt2_b$last/events.jsonl" ]; then
      cp "$work/gpt2_b$last/events.jsonl" "$results/engine_gpt2.jsonl"
      [ -s "$work/smi_b$last.txt" ] && meta engine_smi_peak_mib "$(sort -n "$work/smi_b$last.txt" | tail -1)"
      # The step events' NVML figures (gpu_util_pct, ...): how busy, hot and throttled the GPU was.
      meta engine_gpu_telemetry "$(python3 -c '
import json, sys
st = [e for e in map(json.loads, open(sys.argv[1])) if e.get("type") == "step"]
r = [e for e in st if "gpu_util_pct" in e]
if not r:
    print("no gpu_* fields in %d steps (no NVML?)" % len(st)); sys.exit()
v = lambda k: [e[k] for e in r if k in e]
mx = lambda k: max(v(k)) if v(k) else "?"
why = sorted({x for e in r for x in e.get("gpu_throttle_reasons", "none").split(",")})
print("%d of %d steps read: util mean %.0f %%, power max %s W, temp max %s C, SM clock %s-%s MHz, NVML memory used max %s MiB, throttle reasons seen: %s" % (
    len(r), len(st), sum(v("gpu_util_pct")) / len(r), mx("gpu_power_w"), mx("gpu_temp_c"),
    min(v("gpu_sm_clock_mhz") or ["?"]), mx("gpu_sm_clock_mhz"), (mx("gpu_mem_used_bytes") >> 20) if v("gpu_mem_used_bytes") else "?", ",".join(why)))' \
        "$work/gpt2_b$last/events.jsonl" 2>&1 | head -c 2000)"
    fi
    # The planner's memory per rank for the chosen micro batch, beside the measured peak (summary).
    if [ -n "$chosen" ]; then
      meta engine_plan_total_bytes "$("$engine" plan --config "$gpu/gpt2-124m.json" --set "data.path=$syn" --set "train.micro_batch=$chosen" \
        "${sets[@]+"${sets[@]}"}" --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["memory_per_rank"]["total_bytes"])' 2>/dev/null)"
    fi
    # The loss must fall on learnable tokens (by more than 1 nat in the config's 30 steps).
    local falls=
    if [ -n "$chosen" ] && [ $learnable = 1 ] && [ $dry = 0 ]; then
      falls=$(python3 -c '
import json, sys
l = [e["loss"] for e in map(json.loads, open(sys.argv[1])) if e.get("type") == "step"]
print("loss %.3f -> %.3f %s" % (l[0], l[-1], "falls" if l[-1] < l[0] - 1.0 else "DOES NOT FALL")) if l else print("no steps")' \
        "$work/gpt2_b$chosen/events.jsonl" 2>&1 | head -c 200)
      meta engine_gpt2_loss "$falls"
    fi
    if [ -n "$chosen" ] && [[ "$falls" == *"DOES NOT FALL"* || "$falls" == "no steps" ]]; then
      record engine_gpt2 failed "$ts" "micro_batch $chosen: $falls on tinyshakespeare's tokens"
    elif [ -n "$chosen" ]; then
      record engine_gpt2 ok "$ts" "micro_batch $chosen${falls:+, $falls}$([ $learnable = 0 ] && echo ', uniform random tokens (no tinyshakespeare in the carry)')"
    elif [ -z "$last" ]; then
      record engine_gpt2 failed "$ts" "out of time"
    else
      record engine_gpt2 failed "$ts" "micro_batch $last: exit $erc$([ "$erc" = 124 ] && echo ' (timed out; figures from the steps done)'): $(grep -m1 -iE 'error' "$work/gpt2_b$last.log" | cut -c1-200)"
    fi
  fi

  # -- b2) the same run with fused attention (train.attention=fused, docs/cuda.md): its parity
  # rows ran in a); here its speed and loss beside the simple kernel's at the chosen micro batch.
  versus_stage engine_gpt2_fused "train.attention=fused" "gpt2_b$chosen" gpt2_fused 200 --set train.attention=fused
  # -- b2b) fused attention with GELU in the GEMM epilogues (train.gelu_fusion=epilogue,
  # docs/cuda.md): its parity rows (matmul_gelu_forward*, matmul_backward_dgelu*) ran in a);
  # here its speed and loss beside the fused-attention run's.
  versus_stage engine_gpt2_gelu_epilogue "train.attention=fused, train.gelu_fusion=epilogue" gpt2_fused gpt2_gelu 170 \
    --set train.attention=fused --set train.gelu_fusion=epilogue

  # -- b3) where a step's time goes: traindeck-engine profile (each op synchronised and timed) for
  # the simple kernels and for every fusion (fused attention, GELU epilogues) at the chosen micro
  # batch; the tables into gpu.log, the top ops as meta.
  ts=$(now)
  if [ -n "$chosen" ]; then
    local a plim top
    for a in simple fused; do
      local g=none
      [ "$a" = fused ] && g=epilogue
      plim=$(limit 60 180)
      timeout -k 10 "$plim" "$engine" profile --config "$gpu/gpt2-124m.json" --set "data.path=$syn" \
        --set "train.micro_batch=$chosen" "${sets[@]+"${sets[@]}"}" --set "train.attention=$a" --set "train.gelu_fusion=$g" \
        --steps 2 --json \
        >"$work/profile_$a.json" 2>"$work/profile_$a.err"
      top=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("step %.1f ms (ops %.1f ms): " % (r["step_ms"], r["op_ms"]) + ", ".join(
    "%s %.1f ms (%.0f%%)" % (o["op"], o["ms_per_step"], 100 * o["share"]) for o in r["ops"][:6]))' "$work/profile_$a.json" 2>&1 | head -c 600)
      { echo "---- profile, attention $a"; cat "$work/profile_$a.json" "$work/profile_$a.err"; echo; } >>"$log"
      meta "engine_profile_$a" "$top"
      say "   profile ($a): $top"
    done
    record engine_profile ok "$ts" "per-op times in gpu.log and the summary"
  else
    record engine_profile skipped "$ts" "no micro batch fitted"
  fi

  # -- e) tinyshakespeare on the GPU (before PyTorch, so that a slow torch.compile cannot starve it) -
  ts=$(now)
  local tsd=$c/data/tinyshakespeare tsets=()
  # Dry run: 100 steps on the CPU, whose one evaluation (step 100) meets the CPU reference's.
  [ $dry = 1 ] && tsets=(--set train.device=cpu --set train.steps=100 --set train.eval_interval=100 --set train.log_interval=50)
  if [ ! -f "$tsd/manifest.json" ] || [ ! -x "$engine" ]; then
    record tinyshakespeare failed "$ts" "no dataset or engine in the carry"
  else
    local lim trc
    lim=$(limit 90 70)
    say "-- engine: tinyshakespeare (limit ${lim} s)"
    timeout -k 10 "$lim" "$engine" train --config "$gpu/tinyshakespeare.json" --set "data.path=$tsd" "${tsets[@]+"${tsets[@]}"}" \
      --out "$work/tinyshakespeare" --quiet --no-events-stdout ${peak32:+--peak-flops "$peak32"} >"$work/ts.log" 2>&1
    trc=$?
    show tinyshakespeare "$work/ts.log" 6
    [ -f "$work/tinyshakespeare/events.jsonl" ] && cp "$work/tinyshakespeare/events.jsonl" "$results/tinyshakespeare.jsonl"
    local val
    val=$(python3 -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; v=[x["val_loss"] for x in e if x.get("type")=="eval"]; print("%.4f" % v[-1] if v else "none")' "$results/tinyshakespeare.jsonl" 2>/dev/null || echo none)
    # The same run in bf16, and a ZeRO-3 world-size-1 smoke run (fp32: its losses must equal the
    # fp32 run's), then every eval step against the CPU reference carried from --prepare.
    local brc=0 zrc cmp
    if [ $dry = 1 ]; then
      say "-- engine: tinyshakespeare bf16 skipped (dry run: the CPU backend computes in fp32)"
    else
      lim=$(limit 90 60)
      say "-- engine: tinyshakespeare bf16 (limit ${lim} s)"
      timeout -k 10 "$lim" "$engine" train --config "$gpu/tinyshakespeare.json" --set "data.path=$tsd" "${tsets[@]+"${tsets[@]}"}" \
        --set train.precision=bf16 --out "$work/tinyshakespeare_bf16" --quiet --no-events-stdout >"$work/ts_bf16.log" 2>&1
      brc=$?
      show "tinyshakespeare bf16" "$work/ts_bf16.log" 4
    fi
    lim=$(limit 40 50)
    # The same steps (the learning-rate schedule depends on train.steps); a time-out still leaves
    # the steps done to compare.
    say "-- engine: ZeRO-3 on one device (limit ${lim} s)"
    timeout -k 10 "$lim" "$engine" train --config "$gpu/tinyshakespeare.json" --set "data.path=$tsd" "${tsets[@]+"${tsets[@]}"}" \
      --set train.zero=3 --out "$work/tinyshakespeare_zero3" --quiet --no-events-stdout >"$work/ts_zero3.log" 2>&1
    zrc=$?
    [ "$zrc" = 124 ] && zrc=0  # timed out: the steps it did are compared
    show "tinyshakespeare ZeRO-3" "$work/ts_zero3.log" 4
    # Determinism: two 20-step runs with the same seed (bf16 on the GPU) must give the same losses
    # bit for bit.
    local det=() drc=0 k
    [ $dry = 0 ] && det=(--set train.precision=bf16)
    for k in 1 2; do
      lim=$(limit 30 40)
      timeout -k 10 "$lim" "$engine" train --config "$gpu/tinyshakespeare.json" --set "data.path=$tsd" "${tsets[@]+"${tsets[@]}"}" \
        "${det[@]+"${det[@]}"}" --set train.steps=20 --set train.eval_interval=0 --out "$work/determinism_$k" --quiet --no-events-stdout \
        >"$work/det_$k.log" 2>&1 || drc=$?
    done
    meta determinism "$(python3 -c '
import json, sys
runs = [[repr(e["loss"]) for e in map(json.loads, open(f)) if e.get("type") == "step"] for f in sys.argv[1:]]
same = runs[0] == runs[1] and len(runs[0]) == 20
first = next((i for i, (a, b) in enumerate(zip(*runs)) if a != b), None)
print("two 20-step runs, same seed: %s" % ("losses bit-identical" if same else "DIFFER (first at step %s; %d and %d steps)" % (
    None if first is None else first + 1, len(runs[0]), len(runs[1]))))' "$work/determinism_1/events.jsonl" "$work/determinism_2/events.jsonl" 2>&1 | tail -1 | head -c 200) (exit $drc)"
    cmp=$(python3 - "$work" "$c/cpu_tinyshakespeare.json" <<'PY' 2>&1 | head -c 600
import json, os, sys
work, ref = sys.argv[1:]
def events(name, kind):
    f = os.path.join(work, name, "events.jsonl")
    return [e for e in map(json.loads, open(f)) if e.get("type") == kind] if os.path.exists(f) else []
cpu = json.load(open(ref)) if os.path.exists(ref) else {}
out, ok = [], True
for name, label in (("tinyshakespeare", "fp32"), ("tinyshakespeare_bf16", "bf16")):
    if not os.path.exists(os.path.join(work, name)):
        out.append("%s: not run" % label); continue
    val = {str(e["step"]): e["val_loss"] for e in events(name, "eval")}
    common = sorted(set(val) & set(cpu), key=int)
    if not common:
        out.append("%s: no eval step in common with the CPU's" % label); ok = False; continue
    worst = max(abs(val[s] - cpu[s]) for s in common)
    last = common[-1]
    out.append("%s val %.4f vs CPU %.4f at step %s, max |diff| %.4f over %d evals%s" % (
        label, val[last], cpu[last], last, worst, len(common), "" if worst <= 0.05 else " (OVER 0.05)"))
    ok = ok and worst <= 0.05
z = [e["loss"] for e in events("tinyshakespeare_zero3", "step")]
f = [e["loss"] for e in events("tinyshakespeare", "step")][:len(z)]
if len(z) >= 20 and len(z) == len(f):
    d = max(abs(a - b) for a, b in zip(z, f))
    out.append("ZeRO-3 x1 %d steps vs fp32: max |loss diff| %.2e" % (len(z), d)); ok = ok and d <= 1e-5
else:
    out.append("ZeRO-3 x1: %d steps (fp32 run %d)" % (len(z), len(f))); ok = False
print(("OK " if ok else "MISMATCH ") + "; ".join(out))
PY
)
    meta tinyshakespeare_vs_cpu "$cmp"
    if [ "$trc" = 0 ] && [ "$brc" = 0 ] && [ "$zrc" = 0 ] && [[ "$cmp" == OK* ]]; then
      record tinyshakespeare ok "$ts" "final val loss $val; $cmp"
    else
      record tinyshakespeare failed "$ts" "exit fp32 $trc bf16 $brc zero3 $zrc$([ "$trc" = 124 ] && echo ' (timed out)'), last val loss $val; $cmp: $(grep -m1 -iE 'error' "$work/ts.log" "$work/ts_bf16.log" "$work/ts_zero3.log" | cut -c1-200)"
    fi
  fi

  # -- c) PyTorch's own training step of the same model ---------------------------------------------
  ts=$(now)
  local tb=${chosen:-64}
  python3 -m py_compile "$gpu/torch_gpt2.py" 2>>"$log" || say "!! torch_gpt2.py does not compile"
  if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    record torch_gpt2 skipped "$ts" "$(python3 -c 'import torch' >/dev/null 2>&1 && echo 'PyTorch sees no GPU' || echo 'no PyTorch on this machine')"
  else
    local mode_c=auto trc=1 tries=0 lim
    while [ $tries -lt 3 ]; do
      tries=$((tries + 1))
      lim=$(limit 240 0)
      [ "$lim" -ge 30 ] || { say "-- torch: out of time"; break; }
      say "-- torch: micro_batch $tb, compile $mode_c (limit ${lim} s)"
      PYTHONUNBUFFERED=1 timeout -k 10 "$lim" python3 "$gpu/torch_gpt2.py" --micro-batch "$tb" --steps 30 --compile "$mode_c" \
        ${peak16:+--peak-flops "$peak16"} --out "$work/torch.json" >"$work/torch.log" 2>&1
      trc=$?
      show "torch micro_batch $tb compile $mode_c" "$work/torch.log" 4
      [ -f "$work/torch.json" ] && cp "$work/torch.json" "$results/torch_gpt2.json"
      case $trc in
        0) break ;;
        3) [ "$tb" -gt 1 ] && [ $tries -lt 3 ] || break; tb=$((tb / 2)); say "-- torch: out of memory, micro_batch $tb" ;;
        124|137) [ $mode_c = off ] && break; mode_c=off; say "-- torch: timed out (torch.compile?): eager" ;;
        *) [ $mode_c = off ] && break; mode_c=off ;;
      esac
    done
    [ "$trc" = 0 ] && record torch_gpt2 ok "$ts" "micro_batch $tb, $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("torch.compile" if j.get("compiled") else "eager")' "$work/torch.json" 2>/dev/null)" ||
      record torch_gpt2 failed "$ts" "exit $trc"
  fi

  # -- c2) the SmolLM2-135M-shaped llama (issue 17): engine, then PyTorch, one micro batch each, in
  # whatever time the GPT-2 stages left (the GPT-2 figures come first) -------------------------------
  ts=$(now)
  local lsets=() lB=16 lrc=skipped lnote=
  [ $dry = 1 ] && lsets=(--set train.device=cpu --set train.precision=fp32 --set train.threads=2 --set model.n_layer=2
                         --set model.n_head=4 --set model.n_kv_head=2 --set model.d_model=64 --set model.d_ff=128
                         --set model.vocab_size=50304 --set model.seq_len=64 --set train.steps=2) lB=2
  if [ ! -x "$engine" ] || [ ! -f "$syn/manifest.json" ]; then
    record engine_llama failed "$ts" "no engine or synthetic tokens"
  elif [ "$(remaining)" -lt 60 ]; then
    record engine_llama skipped "$ts" "out of time ($(remaining) s left)"
  else
    local lim
    lim=$(limit 100 30)
    say "-- engine: llama SmolLM2-135M shape, micro_batch $lB (limit ${lim} s)"
    timeout -k 10 "$lim" "$engine" train --config "$gpu/smollm2-135m.json" --set "data.path=$syn" --set "train.micro_batch=$lB" \
      "${lsets[@]+"${lsets[@]}"}" --out "$work/llama" --quiet --no-events-stdout ${peak16:+--peak-flops "$peak16"} >"$work/llama.log" 2>&1
    lrc=$?
    show "engine llama" "$work/llama.log" 6
    # The llama figures go into summary.json/.md only: the device tool brings back 8 files at most.
    [ -f "$work/llama/events.jsonl" ] && cp "$work/llama/events.jsonl" "$work/engine_llama.jsonl"
    [ "$lrc" = 0 ] && record engine_llama ok "$ts" "micro_batch $lB" ||
      record engine_llama failed "$ts" "exit $lrc$([ "$lrc" = 124 ] && echo ' (timed out)'): $(grep -m1 -iE 'error' "$work/llama.log" | cut -c1-200)"
  fi
  ts=$(now)
  if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    record torch_llama skipped "$ts" "$(python3 -c 'import torch' >/dev/null 2>&1 && echo 'PyTorch sees no GPU' || echo 'no PyTorch on this machine')"
  elif [ "$(remaining)" -lt 40 ]; then
    record torch_llama skipped "$ts" "out of time ($(remaining) s left)"
  else
    local lim trc
    lim=$(limit 120 0)
    say "-- torch: llama SmolLM2-135M shape, micro_batch $lB, eager (limit ${lim} s)"
    PYTHONUNBUFFERED=1 timeout -k 10 "$lim" python3 "$gpu/torch_gpt2.py" --family llama --vocab 49152 --n-layer 30 --n-head 9 \
      --n-kv-head 3 --d-model 576 --d-ff 1536 --rope-theta 100000 --micro-batch "$lB" --steps 30 --compile off \
      ${peak16:+--peak-flops "$peak16"} --out "$work/torch_llama.json" >"$work/torch_llama.log" 2>&1
    trc=$?
    show "torch llama" "$work/torch_llama.log" 4
    [ "$trc" = 0 ] && record torch_llama ok "$ts" "micro_batch $lB, eager" || record torch_llama failed "$ts" "exit $trc"
  fi

  # -- d) summary ---------------------------------------------------------------------------------
  say ""
  python3 "$gpu/summarize.py" summary "$results" "$work" | tee -a "$log" || say "!! summarize.py failed"
  say "== done in $(($(now) - t0)) s"
  if [ $dry = 1 ]; then
    say "dry run: not exercised here (no GPU): CUDA parity rows, the CUDA backend's training path, bf16, the micro-batch search's out-of-memory step, PyTorch"
    grep -P '\tnot-built\t' "$work/stages.tsv" | cut -f1,4 | sed 's/^/dry run: not exercised (missing from the carry): /' | tee -a "$log"
    ! grep -qP '\tfailed\t' "$work/stages.tsv"
    return
  fi
  grep -qP '^parity\tpassed\t' "$work/stages.tsv"
}

if [ "$mode" = prepare ]; then prepare; else run; fi
