"""Reads what bench/gpu.sh collected and writes RESULTS_DIR/summary.md and summary.json.

usage: summarize.py parity PARITY_JSON          prints "rows N failed F skipped S" (exit 0), or exit 1
       summarize.py versus BASE_EVENTS EVENTS   one line: EVENTS' tokens/s, step ms and losses
                                                beside BASE_EVENTS' (the same run with another
                                                train.attention), exit 0
       summarize.py summary RESULTS_DIR WORK_DIR writes the summary and prints summary.md

WORK_DIR holds gpu.sh's stages.tsv (name, status, seconds, note) and meta.tsv (key, value);
RESULTS_DIR holds parity.json, engine_gpt2.jsonl (the engine's events, docs/events.md),
torch_gpt2.json (torch_gpt2.py's line), engine_llama.jsonl / torch_llama.json (the same for the
SmolLM2-135M-shaped llama, when it ran) and tinyshakespeare.jsonl.
Figures: tokens/s and step ms are medians over the steps after the first five (the first
steps hold cuBLAS heuristics, allocator growth and, in PyTorch, compilation); MFU =
flops_per_token * tokens_per_s / peak_flops with one peak for both sides (meta peak_flops_bf16,
else the engine's run_start peak_flops); flops_per_token = 6 N + 12 L C T (engine/plan/plan.h).
"""
import json
import os
import statistics
import sys

WARM = 5


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_events(path):
    ev = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    ev.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return ev


def read_tsv(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                rows.append(line.rstrip("\n").split("\t"))
    except OSError:
        pass
    return rows


def parity_counts(j):
    """(rows, failed, skipped, worst rows) of test_parity's JSON (tests/engine/test_parity.cpp)."""
    rows = j.get("rows", []) if isinstance(j, dict) else []
    failed = [r for r in rows if not r.get("pass", False)]
    skipped = j.get("skipped", None) if isinstance(j, dict) else None
    if isinstance(skipped, list):
        skipped = len(skipped)
    return rows, failed, skipped


def median(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def peak_memory_field(events):
    """Largest gpu_mem_peak_bytes of the step events (docs/events.md), else of any other GPU-memory
    field (gpu_mem_bytes ...; not gpu_memory_total, the card's size)."""
    peaks = [e["gpu_mem_peak_bytes"] for e in events if isinstance(e.get("gpu_mem_peak_bytes"), (int, float))]
    if peaks:
        return max(peaks), "gpu_mem_peak_bytes"
    best, name = None, None
    for e in events:
        for k, v in e.items():
            lk = k.lower()
            if (isinstance(v, (int, float)) and ("gpu" in lk or "device" in lk or "cuda" in lk) and "mem" in lk
                    and "total" not in lk):
                if best is None or v > best:
                    best, name = v, k
    return best, name


def engine_figures(events):
    start = next((e for e in events if e.get("type") == "run_start"), {})
    steps = [e for e in events if e.get("type") == "step"]
    end = next((e for e in events if e.get("type") == "run_end"), {})
    timed = steps[WARM:] if len(steps) > WARM else steps
    mem, mem_field = peak_memory_field(events)
    cfg = start.get("config", {})
    return {
        "device": start.get("device_name") or start.get("device"), "n_params": start.get("n_params"), "flops_per_token": start.get("flops_per_token"),
        "peak_flops": start.get("peak_flops"), "micro_batch": cfg.get("train", {}).get("micro_batch"),
        "precision": start.get("precision") or cfg.get("train", {}).get("precision"), "steps_done": len(steps),
        "tokens_per_s": median(e.get("tokens_per_s") for e in timed), "step_ms": median(e.get("step_ms") for e in timed),
        "mfu_reported": median(e.get("mfu") for e in timed), "loss_first": steps[0].get("loss") if steps else None,
        "loss_last": steps[-1].get("loss") if steps else None, "gpu_memory_peak_bytes": mem, "gpu_memory_field": mem_field,
        "rss_bytes": max((e.get("rss_bytes") or 0 for e in steps), default=None), "status": end.get("status"),
        "reason": end.get("reason"), "warnings": [e.get("message") for e in events if e.get("type") == "warning"][:5],
    }


def fmt(x, spec="{:.0f}", none="n/a"):
    return none if x is None else spec.format(x)


def gib(b):
    return None if b is None else b / 2**30


def compare(results, meta, dry, family):  # results: the folder holding the two files
    """The engine's run of FAMILY ("gpt2": GPT-2 124M, "llama": SmolLM2-135M's shape) beside
    PyTorch's (DIR/engine_FAMILY.jsonl, DIR/torch_FAMILY.json): (figures, markdown lines); no
    lines for llama when neither ran."""
    title = {"gpt2": "GPT-2 124M", "llama": "Llama, SmolLM2-135M's shape (GQA 9/3 heads, SwiGLU 1536, tied)"}[family]
    ev = load_events(os.path.join(results, "engine_%s.jsonl" % family))
    eng = engine_figures(ev) if ev else None
    if eng:
        smi = meta.get("engine_smi_peak_mib")
        eng["gpu_memory_used_smi_bytes"] = float(smi) * 2**20 if smi else None
    tj = load_json(os.path.join(results, "torch_%s.json" % family))
    peak = float(meta["peak_flops_bf16"]) if meta.get("peak_flops_bf16") else (eng or {}).get("peak_flops")
    fpt = (eng or {}).get("flops_per_token") or (tj or {}).get("flops_per_token")
    mfu = lambda tps: fpt * tps / peak if (fpt and peak and tps) else None  # noqa: E731
    gpt = {"engine": eng, "torch": tj, "peak_flops": peak, "flops_per_token": fpt}
    if eng:
        eng["mfu"] = mfu(eng.get("tokens_per_s"))
    if tj and "error" not in tj:
        tj["mfu"] = mfu(tj.get("tokens_per_s"))
    e_tps, t_tps = (eng or {}).get("tokens_per_s"), (tj or {}).get("tokens_per_s") if tj and "error" not in tj else None
    gpt["ratio_tokens_per_s"] = e_tps / t_tps if e_tps and t_tps else None
    gpt["target_tokens_per_s_ge_torch"] = (e_tps >= t_tps) if e_tps and t_tps else None
    gpt["target_mfu_ge_40"] = (eng["mfu"] >= 0.40) if eng and eng.get("mfu") is not None else None

    L = []
    if family != "gpt2" and not ev and not tj:
        return gpt, L
    L.append("## %s training (synthetic tokens, seq_len 1024%s)" % (title, ", tiny CPU stand-in model" if dry else ", bf16"))
    L.append("")
    tn = "PyTorch %s%s" % ((tj or {}).get("torch", ""), " (torch.compile)" if (tj or {}).get("compiled") else " (eager)" if tj else "")
    L.append("| | traindeck-engine | %s | engine / PyTorch |" % tn)
    L.append("|---|---|---|---|")
    tok = tj if (tj and "error" not in tj) else {}
    e = eng or {}

    def row(name, ev_, tv, spec, ratio=True):
        r = fmt(ev_ / tv, "{:.2f}x") if (ratio and ev_ and tv) else ""
        L.append("| %s | %s | %s | %s |" % (name, fmt(ev_, spec), fmt(tv, spec), r))

    row("micro batch", e.get("micro_batch"), tok.get("micro_batch"), "{}", False)
    row("tokens/s", e.get("tokens_per_s"), tok.get("tokens_per_s"), "{:,.0f}")
    row("step ms", e.get("step_ms"), tok.get("step_ms"), "{:.1f}")
    row("MFU", e.get("mfu"), tok.get("mfu"), "{:.1%}")
    row("peak GPU memory GiB (engine event / torch max_memory_allocated)", gib(e.get("gpu_memory_peak_bytes")),
        gib(tok.get("max_memory_allocated_bytes")), "{:.2f}")
    row("GPU memory used GiB (nvidia-smi peak / torch max_memory_reserved)", gib(e.get("gpu_memory_used_smi_bytes")),
        gib(tok.get("max_memory_reserved_bytes")), "{:.2f}")
    row("loss at the last step", e.get("loss_last"), tok.get("loss_last"), "{:.3f}", False)
    L.append("")
    planned = meta.get("engine_plan_total_bytes", "") if family == "gpt2" else ""
    if planned.isdigit() and e.get("gpu_memory_peak_bytes"):
        measured = e["gpu_memory_peak_bytes"]
        L.append("Planner's memory per rank %.2f GiB vs the engine's measured peak %.2f GiB (%s): error %+.1f %% "
                 "(the peak leaves out the CUDA context and library workspaces, docs/cuda.md)." % (
                     gib(int(planned)), gib(measured), e.get("gpu_memory_field"), 100.0 * (int(planned) - measured) / measured))
    elif planned.isdigit():
        L.append("Planner's memory per rank %.2f GiB (no measured GPU peak in the events)." % gib(int(planned)))
    L.append("MFU = flops_per_token x tokens/s / peak: %s FLOP/token, peak %s FLOP/s (%s). Engine steps: %s%s." % (
        fmt(fpt, "{:.4g}"), fmt(peak, "{:.4g}"), meta.get("peak_source", "engine run_start"), e.get("steps_done", 0),
        ("; engine's own mfu field %s" % fmt(e.get("mfu_reported"), "{:.1%}")) if e.get("mfu_reported") is not None else ""))
    if tj and "error" in tj:
        L.append("PyTorch failed: %s %s" % (tj.get("error"), tj.get("message", "")[:300]))
    if tj and tj.get("compile_error"):
        L.append("torch.compile failed, eager ran: " + tj["compile_error"][:300])
    if not dry and family == "gpt2":  # the targets are GPT-2 124M's (issue 5)
        L.append("Targets (H200): engine tokens/s >= PyTorch: %s; engine MFU >= 40%%: %s" % (
            {True: "MET", False: "NOT MET", None: "n/a"}[gpt["target_tokens_per_s_ge_torch"]],
            {True: "MET", False: "NOT MET", None: "n/a"}[gpt["target_mfu_ge_40"]]))
    L.append("")
    return gpt, L


def summary(results, work):
    meta = {r[0]: r[1] for r in read_tsv(os.path.join(work, "meta.tsv")) if len(r) >= 2}
    stages = [{"stage": r[0], "status": r[1], "seconds": float(r[2]) if len(r) > 2 and r[2] else None,
               "note": r[3] if len(r) > 3 else ""} for r in read_tsv(os.path.join(work, "stages.tsv")) if r and r[0]]
    dry = meta.get("mode") == "dry-run"
    out = {"mode": meta.get("mode"), "meta": meta, "stages": stages}

    # Parity
    pj = load_json(os.path.join(results, "parity.json"))
    par = {"ran": pj is not None, "rc": int(meta["parity_rc"]) if meta.get("parity_rc", "").lstrip("-").isdigit() else None}
    if pj is not None:
        rows, failed, skipped = parity_counts(pj)
        par.update({"rows": len(rows), "failed": len(failed), "skipped": skipped, "skipped_why": pj.get("skipped_why"),
                    "backends": pj.get("backends"), "failed_rows": failed[:20]})
        cuda_rows = [r for r in rows if r.get("backend") == "cuda" and r.get("max_error") is not None]
        worst = sorted(cuda_rows, key=lambda r: -(r["max_error"] / r["tolerance"] if r.get("tolerance") else 0))[:5]
        par["worst_cuda_rows"] = worst
    par["passed"] = bool(pj is not None and par.get("rc") == 0 and par.get("failed") == 0 and par.get("skipped") == 0)
    out["parity"] = par

    # GPT-2 124M and the SmolLM2-135M-shaped llama: engine vs PyTorch
    gpt, gpt_md = compare(results, meta, dry, "gpt2")  # the llama run's files stay in WORK (8 files come back)
    out["gpt2_124m"] = gpt
    llama, llama_md = compare(work, meta, dry, "llama")
    out["llama_smollm2_135m"] = llama

    # tinyshakespeare
    ts = load_events(os.path.join(results, "tinyshakespeare.jsonl"))
    tsr = None
    if ts:
        evals = [e for e in ts if e.get("type") == "eval"]
        f = engine_figures(ts)
        tsr = {"device": f["device"], "steps_done": f["steps_done"], "tokens_per_s": f["tokens_per_s"], "step_ms": f["step_ms"],
               "loss_first": f["loss_first"], "loss_last": f["loss_last"], "status": f["status"],
               "val_loss_final": evals[-1].get("val_loss") if evals else None, "val_step": evals[-1].get("step") if evals else None,
               "val_loss_best": min((e.get("val_loss") for e in evals), default=None), "evals": [(e.get("step"), e.get("val_loss")) for e in evals]}
        tsr["target_val_lt_2_5"] = tsr["val_loss_final"] < 2.5 if tsr["val_loss_final"] is not None else None
    out["tinyshakespeare"] = tsr

    # Markdown
    L = []
    L.append("# TrainDeck GPU check" + (" (DRY RUN: no GPU, CPU stand-ins)" if dry else ""))
    L.append("")
    L.append("GPU: %s; driver %s; engine bundle %s (glibc >= %s, machine %s); CUDA libraries: %s" % (
        meta.get("gpu_name", "none"), meta.get("driver", "?"), meta.get("bundle_hash", "?"), meta.get("bundle_glibc", "?"),
        meta.get("machine_glibc", "?"), meta.get("cuda_libs", "?")))
    L.append("")
    L.append("## Stages")
    L.append("")
    L.append("| stage | status | seconds | note |")
    L.append("|---|---|---|---|")
    for s in stages:
        L.append("| %s | %s | %s | %s |" % (s["stage"], s["status"], fmt(s["seconds"], "{:.0f}"), s["note"].replace("|", "/")))
    L.append("")
    L.append("## Parity (test_parity%s)" % ("" if dry else " --require-cuda"))
    L.append("")
    if pj is None:
        L.append("no parity.json: the harness did not run (see the stages)")
    else:
        L.append("%s: %d rows run, %d failed, %s skipped%s; exit %s" % (
            "PASS" if par["passed"] else ("dry run" if dry else "FAIL"), par["rows"], par["failed"], par["skipped"],
            (" (" + par["skipped_why"].splitlines()[0] + ")") if par.get("skipped_why") else "", par.get("rc")))
        for r in par.get("failed_rows", [])[:10]:
            L.append("- failed: %s %s %s error %s tol %s %s" % (r.get("backend"), r.get("op"), r.get("dtype"), r.get("max_error"),
                                                               r.get("tolerance"), r.get("note", "")))
        if par.get("worst_cuda_rows"):
            L.append("- closest to tolerance (cuda): " + "; ".join(
                "%s %s %.2g/%.2g" % (r["op"], r["dtype"], r["max_error"], r["tolerance"]) for r in par["worst_cuda_rows"]))
    L.append("")
    L += gpt_md + llama_md
    L.append("## tinyshakespeare (byte tokens; n_layer 2, n_head 4, d_model 128, seq_len 64, micro_batch 16; the engine issue's run)")
    L.append("")
    if tsr:
        L.append("device %s: %d steps, final val loss %s at step %s (best %s; target < 2.5: %s), train loss %s -> %s, %s tokens/s, %s ms/step" % (
            tsr["device"], tsr["steps_done"], fmt(tsr["val_loss_final"], "{:.4f}"), tsr["val_step"], fmt(tsr["val_loss_best"], "{:.4f}"),
            "dry run, not judged" if dry else {True: "met", False: "NOT met", None: "n/a"}[tsr["target_val_lt_2_5"]], fmt(tsr["loss_first"], "{:.3f}"),
            fmt(tsr["loss_last"], "{:.3f}"), fmt(tsr["tokens_per_s"], "{:,.0f}"), fmt(tsr["step_ms"], "{:.2f}")))
    else:
        L.append("no events: the run did not start (see the stages)")
    L.append("")
    for key, what in (("tinyshakespeare_vs_cpu", "fp32 / bf16 against the CPU, ZeRO-3 x1 against fp32"),
                      ("determinism", "determinism"), ("engine_gpt2_loss", "GPT-2 124M on learnable tokens"),
                      ("engine_gpt2_fused", "GPT-2 124M, train.attention fused vs simple (same micro batch and tokens)"),
                      ("engine_profile_simple", "per-op time of a GPT-2 124M step, simple attention (traindeck-engine profile)"),
                      ("engine_gpt2_gelu_epilogue", "GPT-2 124M, fused attention + train.gelu_fusion epilogue vs fused attention alone"),
                      ("engine_profile_fused", "per-op time of a GPT-2 124M step, fused attention and GELU epilogues")):
        if meta.get(key):
            L.append("- %s: %s" % (what, meta[key]))
    L.append("")
    md = "\n".join(L) + "\n"
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write(md)
    with open(os.path.join(results, "summary.json"), "w") as f:
        json.dump(out, f, indent=1, default=str)
    sys.stdout.write(md)


def versus(base_path, path):
    """One line comparing two runs of one config that differ in a kernel choice: tokens/s and
    step ms (medians after WARM steps) as the ratio new / base, and the largest relative loss
    difference over the steps both did (the same tokens: a correct kernel stays within bf16's
    rounding, about 1e-2)."""
    a, b = load_events(base_path), load_events(path)
    fa, fb = engine_figures(a), engine_figures(b)
    la = {e["step"]: e["loss"] for e in a if e.get("type") == "step" and "loss" in e}
    lb = {e["step"]: e["loss"] for e in b if e.get("type") == "step" and "loss" in e}
    common = sorted(set(la) & set(lb))
    worst = max((abs(lb[s] - la[s]) / max(abs(la[s]), 1e-12) for s in common), default=None)
    ratio = lambda x, y: "%.2fx" % (x / y) if x and y else "n/a"  # noqa: E731
    print("tokens/s %s vs %s (%s), step ms %s vs %s, %d steps compared, max relative loss difference %s, status %s" % (
        fmt(fb["tokens_per_s"], "{:,.0f}"), fmt(fa["tokens_per_s"], "{:,.0f}"), ratio(fb["tokens_per_s"], fa["tokens_per_s"]),
        fmt(fb["step_ms"], "{:.1f}"), fmt(fa["step_ms"], "{:.1f}"), len(common), fmt(worst, "{:.2e}"), fb["status"]))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "versus":
        versus(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "parity":
        j = load_json(sys.argv[2])
        if j is None:
            print("no parity JSON at " + sys.argv[2])
            return 1
        rows, failed, skipped = parity_counts(j)
        print("rows %d failed %d skipped %s" % (len(rows), len(failed), skipped))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
