// The CUDA backend's host-side decisions (cuda/launch.h), checked on the CPU: the grid sizes
// every kernel launch uses (CUDA's limits, no silent truncation) and when cuBLASLt's bias
// epilogue may read a bias (16-byte aligned only). The last case computes, from the parameter
// table, which linear-layer biases of test_parity's odd-width models sit at unaligned offsets,
// so that the GPU rows there really take both bias paths.
#include <QtTest>

#include <cstdint>
#include <string>

#include "cuda/launch.h"
#include "engine/model/gpt.h"

using namespace td;

namespace {

bool throws_naming(const std::function<void()>& f, const std::string& what) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.what()).find(what) != std::string::npos;
  }
  return false;
}

// The linear layers' biases (the ones Matmul::forward gets; LayerNorm's are not GEMM biases).
bool is_gemm_bias(const std::string& name) {
  for (const char* s : {"attn.c_attn.bias", "attn.c_proj.bias", "mlp.c_fc.bias", "mlp.c_proj.bias"})
    if (name.ends_with(s)) return true;
  return false;
}

}  // namespace

class TestCudaLaunch : public QObject {
  Q_OBJECT
 private slots:
  void grid_for_is_ceil_div_within_the_limit() {
    QCOMPARE(cuda::grid_for(0, 256, "k"), 1u);  // an empty launch is legal
    QCOMPARE(cuda::grid_for(1, 256, "k"), 1u);
    QCOMPARE(cuda::grid_for(256, 256, "k"), 1u);
    QCOMPARE(cuda::grid_for(257, 256, "k"), 2u);
    QCOMPARE(cuda::grid_for(43008, 1, "k"), 43008u);
    // 2^31 - 1 blocks is the last grid that fits gridDim.x; one item more needs 2^31.
    const size_t max_items = (size_t(1) << 31) - 1;
    QCOMPARE(cuda::grid_for(max_items * 256, 256, "k"), 2147483647u);
    QVERIFY(throws_naming([&] { cuda::grid_for(max_items * 256 + 1, 256, "gelu_forward"); }, "gelu_forward"));
    QVERIFY(throws_naming([&] { cuda::grid_for(max_items * 256 + 1, 256, "k"); }, "2147483648 blocks"));
    // The old unchecked (unsigned) cast of 2^32 + 5 blocks would have launched 5.
    QVERIFY(throws_naming([&] { cuda::grid_for((size_t(1) << 32) + 5, 1, "k"); }, "split the tensor"));
    QVERIFY(throws_naming([&] { cuda::grid_for(10, 0, "k"); }, "0 items per block"));
  }

  void grid_yz_allows_1_to_65535() {
    QCOMPARE(cuda::grid_yz(1, "k"), 1u);
    QCOMPARE(cuda::grid_yz(64, "k"), 64u);
    QCOMPARE(cuda::grid_yz(65535, "k"), 65535u);
    QVERIFY(throws_naming([] { cuda::grid_yz(65536, "dbias_partials"); }, "dbias_partials: 65536 blocks"));
    QVERIFY(throws_naming([] { cuda::grid_yz(0, "k"); }, "1 to 65535"));
  }

  void ceil_div_does_not_truncate() {
    QCOMPARE(cuda::ceil_div(7, 2), size_t(4));
    QCOMPARE(cuda::ceil_div((size_t(1) << 40) + 1, 1024), (size_t(1) << 30) + 1);
  }

  // The packed LayerNorm/RMSNorm kernels' lane layout, worked out by hand: 32 lanes x packs of
  // 8 bf16 (or 4 fp32) elements, at most 8 packs a lane.
  void row_packs_per_lane_by_hand() {
    QCOMPARE(cuda::row_packs_per_lane(768, 8), 3);   // GPT-2 124M, bf16: 96 packs over 32 lanes
    QCOMPARE(cuda::row_packs_per_lane(768, 4), 6);   // fp32: 192 packs
    QCOMPARE(cuda::row_packs_per_lane(1000, 8), 4);  // 125 packs: the last lane's 4th is past the row
    QCOMPARE(cuda::row_packs_per_lane(1000, 4), 8);  // 250 packs
    QCOMPARE(cuda::row_packs_per_lane(40, 8), 1);    // 5 packs: 27 lanes idle
    QCOMPARE(cuda::row_packs_per_lane(2048, 8), 8);  // the widest packed row in bf16
    QCOMPARE(cuda::row_packs_per_lane(2056, 8), 0);  // 257 packs: 9 a lane, scalar kernel
    QCOMPARE(cuda::row_packs_per_lane(1028, 4), 0);  // 257 packs in fp32
    QCOMPARE(cuda::row_packs_per_lane(12, 8), 0);    // a pack would straddle two rows
    QCOMPARE(cuda::row_packs_per_lane(12, 4), 1);
    QCOMPARE(cuda::row_packs_per_lane(0, 8), 0);
  }

  void bias_epilogue_needs_16_byte_alignment() {
    alignas(256) static unsigned char buf[512];
    QVERIFY(cuda::lt_bias_epilogue_ok(buf, 2));
    QVERIFY(cuda::lt_bias_epilogue_ok(buf, 4));
    QVERIFY(cuda::lt_bias_epilogue_ok(buf + 16, 2));
    QVERIFY(cuda::lt_bias_epilogue_ok(buf + 48, 4));
    for (int off : {2, 4, 8, 12, 14, 18, 250}) {
      QVERIFY2(!cuda::lt_bias_epilogue_ok(buf + off, 2), qPrintable(QString("offset %1").arg(off)));
      QVERIFY2(!cuda::lt_bias_epilogue_ok(buf + off, 4), qPrintable(QString("offset %1").arg(off)));
    }
    QVERIFY(!cuda::lt_bias_epilogue_ok(nullptr, 4));
    QVERIFY(!cuda::lt_bias_epilogue_ok(buf, 8));  // no double biases in the backend
    QVERIFY(!cuda::lt_bias_epilogue_ok(buf, 1));
  }

  // GELU epilogue aux (train.gelu_fusion = "epilogue"): ld a multiple of 8 and 16-byte aligned.
  // GPT-2's d_ff 3072 and d_model 768 pass; test_parity's odd model (d_ff 90) falls back.
  void gelu_aux_needs_ld_multiple_of_8_and_alignment() {
    alignas(256) static unsigned char buf[512];
    QVERIFY(cuda::lt_gelu_aux_ok(buf, 3072));
    QVERIFY(cuda::lt_gelu_aux_ok(buf + 32, 768));
    QVERIFY(cuda::lt_gelu_aux_ok(buf, 8));
    for (int64_t ld : {90, 4, 12, 1, 0, -8})
      QVERIFY2(!cuda::lt_gelu_aux_ok(buf, ld), qPrintable(QString("ld %1").arg(ld)));
    for (int off : {2, 4, 8, 12})
      QVERIFY2(!cuda::lt_gelu_aux_ok(buf + off, 3072), qPrintable(QString("offset %1").arg(off)));
    QVERIFY(!cuda::lt_gelu_aux_ok(nullptr, 3072));
  }

  // test_parity's odd-width model (d_model 30, d_ff 90; kOddModel there) has GEMM biases on
  // both sides of the 16-byte rule in the parameter buffer (based at a cudaMalloc address,
  // 256-byte aligned), in bf16 and in fp32; the GPT-2 124M shape has every bias aligned.
  void odd_width_model_has_aligned_and_unaligned_biases() {
    ModelConfig odd;
    odd.vocab_size = 67;
    odd.seq_len = 16;
    odd.n_layer = 2;
    odd.n_head = 3;
    odd.d_model = 30;
    odd.d_ff = 90;
    ModelConfig gpt2;
    gpt2.vocab_size = 50304;
    gpt2.seq_len = 1024;
    gpt2.n_layer = 12;
    gpt2.n_head = 12;
    gpt2.d_model = 768;
    gpt2.d_ff = 3072;
    alignas(256) static unsigned char base[256];
    for (size_t elem : {size_t(2), size_t(4)}) {
      int aligned = 0, unaligned = 0;
      for (const ParamTensor& t : gpt_param_tensors(odd)) {
        if (!is_gemm_bias(t.name)) continue;
        // The decision equals the byte offset's remainder mod 16, worked out by hand here.
        const bool ok = cuda::lt_bias_epilogue_ok(base + (t.offset * elem) % 256, elem);
        QCOMPARE(ok, (t.offset * elem) % 16 == 0);
        (ok ? aligned : unaligned)++;
      }
      QVERIFY2(aligned > 0 && unaligned > 0,
               qPrintable(QString("elem %1: %2 aligned, %3 unaligned").arg(elem).arg(aligned).arg(unaligned)));
      for (const ParamTensor& t : gpt_param_tensors(gpt2))
        if (is_gemm_bias(t.name))
          QVERIFY2(cuda::lt_bias_epilogue_ok(base + (t.offset * elem) % 256, elem), t.name.c_str());
    }
  }

  // The fused attention kernels' shared memory (cuda/flash_attention.cu), by hand for GPT-2's
  // head size 64 in bf16 with 64-row tiles: Act tiles 64 x (64 + 8) x 2 = 9216 bytes, fp32
  // score tiles 64 x 68 x 4 = 17408, their bf16 copies 64 x 72 x 2 = 9216, accumulators
  // 64 x 68 x 4 = 17408, row vectors 256. Forward: q k v, s, p, acc0, m l = 3 x 9216 + 17408 +
  // 9216 + 17408 + 2 x 256 = 72192. dkv: q k v dout, s dp, p ds, dk dv, lse D = 4 x 9216 +
  // 2 x 17408 + 2 x 9216 + 2 x 17408 + 2 x 256 = 125440. Every buffer starts at a multiple of 128
  // bytes (WMMA loads need 32) and no two overlap.
  void flash_attention_layout_by_hand() {
    using cuda::FlashKernel;
    const cuda::FlashLayout f = cuda::flash_layout(FlashKernel::kForward, 64, 64, 2);
    QCOMPARE(f.ld_act, 72);
    QCOMPARE(f.ld_s, 68);
    QCOMPARE(f.ld_p, 72);
    QCOMPARE(f.ld_acc, 68);
    QCOMPARE(f.bytes, size_t(72192));
    QCOMPARE(f.dout, size_t(0));
    QCOMPARE(f.acc1, size_t(0));
    const cuda::FlashLayout kv = cuda::flash_layout(FlashKernel::kBackwardDkv, 64, 64, 2);
    QCOMPARE(kv.bytes, size_t(125440));
    for (FlashKernel k : {FlashKernel::kForward, FlashKernel::kBackwardDq, FlashKernel::kBackwardDkv})
      for (int hs : {4, 24, 64, 128})
        for (size_t act : {size_t(2), size_t(4)}) {
          const cuda::FlashLayout L = cuda::flash_layout(k, 32, hs, act);
          // (offset, bytes) of every buffer the kernel uses, in carving order.
          const size_t at = 32 * (size_t)L.ld_act * act, st = 32 * (size_t)L.ld_s * 4, pt = 32 * (size_t)L.ld_p * act,
                       ac = 32 * (size_t)L.ld_acc * 4;
          std::vector<std::pair<size_t, size_t>> used = {{L.q, at}, {L.k, at}, {L.v, at}};
          if (k != FlashKernel::kForward) used.push_back({L.dout, at});
          used.push_back({L.s, st});
          if (k != FlashKernel::kForward) used.push_back({L.dp, st});
          if (k != FlashKernel::kBackwardDq) used.push_back({L.p, pt});
          if (k != FlashKernel::kForward) used.push_back({L.ds, pt});
          used.push_back({L.acc0, ac});
          if (k == FlashKernel::kBackwardDkv) used.push_back({L.acc1, ac});
          used.push_back({L.row0, 128});
          used.push_back({L.row1, 128});
          for (size_t i = 0; i < used.size(); i++) {
            QCOMPARE(used[i].first % 128, size_t(0));
            if (i > 0) QVERIFY(used[i].first >= used[i - 1].first + used[i - 1].second);
          }
          QVERIFY(L.bytes >= used.back().first + used.back().second);
          if (cuda::flash_uses_tensor_cores(hs, act)) {  // WMMA: ldm a multiple of 16 bytes
            QCOMPARE((L.ld_act * act) % 16, size_t(0));
            QCOMPARE((L.ld_p * act) % 16, size_t(0));
            QCOMPARE((L.ld_acc * 4) % 16, size_t(0));
          }
        }
  }
  // The plan takes the largest tile that fits the GPU's opt-in shared memory (A100: 163 KiB =
  // 166912 bytes, H100/H200: 227 KiB = 232448) and says what to do when none fits.
  void flash_attention_plan_fits_the_shared_memory() {
    using cuda::FlashKernel;
    QCOMPARE(cuda::flash_attention_plan(FlashKernel::kBackwardDkv, 64, 2, 166912).br, 64);
    // hs 128 bf16 dkv at 64 rows: 4 x 64 x 136 x 2 + 2 x 17408 + 2 x 9216 + 2 x 64 x 132 x 4 + 512
    // = 69632 + 34816 + 18432 + 67584 + 512 = 190976 > 166912 (A100: 32-row tiles), < 232448.
    QCOMPARE(cuda::flash_layout(FlashKernel::kBackwardDkv, 64, 128, 2).bytes, size_t(190976));
    QCOMPARE(cuda::flash_attention_plan(FlashKernel::kBackwardDkv, 128, 2, 166912).br, 32);
    QCOMPARE(cuda::flash_attention_plan(FlashKernel::kBackwardDkv, 128, 2, 232448).br, 64);
    try {
      cuda::flash_attention_plan(FlashKernel::kForward, 4096, 4, 232448);
      QFAIL("a head size of 4096 fits no tile");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("train.attention = \"simple\""), e.what());
    }
    QVERIFY(cuda::flash_uses_tensor_cores(64, 2));
    QVERIFY(!cuda::flash_uses_tensor_cores(24, 2));  // not a multiple of 16
    QVERIFY(!cuda::flash_uses_tensor_cores(64, 4));  // fp32: FMAs (TF32 is too coarse)
  }
};

QTEST_APPLESS_MAIN(TestCudaLaunch)
#include "test_cuda_launch.moc"
