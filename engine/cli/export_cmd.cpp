// traindeck-engine export: a checkpoint as a Hugging Face directory (GPT2LMHeadModel,
// LlamaForCausalLM or Qwen2ForCausalLM by model.family) or the engine's safetensors with a JSON
// sidecar (docs/export.md). engine/cli/command.h.
#include <cstdio>
#include <memory>

#include "engine/cli/command.h"
#include "engine/export/export.h"

namespace td::cli {

Command add_export_command(CLI::App& app) {
  struct State {
    ExportOptions opt;
    bool progress = false;
  };
  auto s = std::make_shared<State>();
  auto* exp = app.add_subcommand("export", "Export a checkpoint: Hugging Face GPT-2, Llama or Qwen2 (hf) or the engine's safetensors "
                                           "with a JSON sidecar");
  auto* xrun = exp->add_option("--run", s->opt.run_dir, "Run directory (its newest valid checkpoint)");
  auto* xck = exp->add_option("--checkpoint", s->opt.checkpoint, "One checkpoint directory (step_NNNNNNNN)");
  xrun->excludes(xck);
  exp->add_option("--format", s->opt.format,
                  "hf (transformers GPT2LMHeadModel, LlamaForCausalLM or Qwen2ForCausalLM, by model.family) or safetensors "
                  "(the engine's names)")
      ->check(CLI::IsMember({"hf", "safetensors"}));
  exp->add_option("--out", s->opt.out_dir, "Output directory (written atomically)")->required();
  exp->add_flag("--force", s->opt.force, "Replace an existing non-empty --out that is an earlier export (never another folder)");
  exp->add_option("--data", s->opt.data_dir, "Dataset directory whose tokenizer to export (default: the run's)");
  exp->add_flag("--progress", s->progress,
                "For programs: print \"progress DONE TOTAL\" on stdout (flushed) before the first write and after each "
                "tensor and file written, the last with DONE = TOTAL, before the result line");
  return {exp, [s] {
            ExportOptions& xopt = s->opt;
            if (s->progress)
              xopt.on_progress = [](int done, int total) {
                std::printf("progress %d %d\n", done, total);
                std::fflush(stdout);
              };
            ExportResult r = export_model(xopt);
            for (const auto& w : r.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
            std::printf("exported step %d of %s as %s to %s (%zu files, %.1f MB)\n", r.step, r.checkpoint.c_str(), xopt.format.c_str(),
                        r.out_dir.c_str(), r.files.size(), r.bytes / 1e6);
            return 0;
          }};
}

}  // namespace td::cli
