// GPT-2's input embedding: out (B,T,C) = wte[inp[b,t]] + wpe[t] (llm.c encoder_forward), and
// its backward without atomics, summing in the CPU reference's order (td::cpu::encoder_backward).
#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

// One thread per kVec-wide slice of a row (kVec = 1, or a 16-byte pack when C and every
// pointer allow it); C % kVec == 0, so a slice never crosses a row.
template <class Act, int kVec>
__global__ void encoder_forward_kernel(Act* __restrict__ out, const int32_t* __restrict__ inp,
                                       const Act* __restrict__ wte, const Act* __restrict__ wpe,
                                       size_t BT, int T, int C) {
  const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (i >= BT * (size_t)C) return;
  const size_t bt = i / C;
  const int c = (int)(i % C), t = (int)(bt % T);
  const int32_t id = inp[bt];
  const Act* pe = wpe + (size_t)t * C + c;
  if (id < 0) {  // another tensor-parallel rank's row (engine/ops/ops.h): the position only
#pragma unroll
    for (int k = 0; k < kVec; k++) out[i + k] = pe[k];
    return;
  }
  const Act* te = wte + (size_t)id * C + c;
  if constexpr (kVec == 1) {
    out[i] = store_as<Act>(load_f(*te) + load_f(*pe));
  } else {
    Pack16<Act> a = load_pack(te), b = load_pack(pe), o;
#pragma unroll
    for (int k = 0; k < kVec; k++) o.v[k] = store_as<Act>(load_f(a.v[k]) + load_f(b.v[k]));
    store_pack(out + i, o);
  }
}

// dwpe (T,C) += sum over b of dout (B,T,C): one thread per (t,c), b in order (the CPU's order).
template <class Act>
__global__ void encoder_backward_wpe_kernel(float* __restrict__ dwpe, const Act* __restrict__ dout,
                                            int B, int T, int C) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;  // t * C + c
  const size_t TC = (size_t)T * C;
  if (i >= TC) return;
  float acc = dwpe[i];
  for (int b = 0; b < B; b++) acc += load_f(dout[(size_t)b * TC + i]);
  dwpe[i] = acc;
}

// dwte (V,C) += dout (B,T,C) scattered by token id. Block (32, kWarps): lane = channel
// c = blockIdx.x*32 + lane, warp = bucket of token ids (id % nbuckets == bucket, nbuckets a
// power of two, blockIdx.y*kWarps + warp). Each warp scans all B*T positions in order, 256 at a
// time (8 coalesced loads in flight per lane), selects the positions of its bucket with a
// ballot and adds them one by one, lowest position first. A cell (id, c) is therefore written
// only by one thread, in position order: no atomics, no races, and the CPU's summation order
// (deterministic, bit-identical in fp32).
// Cost: every warp reads all B*T ids (from L2); the adds of one warp are serial and latency
// bound, so a very frequent token slows its bucket. Future work: llm.c's bucketed version
// (sort positions by token on the host, one block per (token, channel slice)).
constexpr int kWteWarps = 8;
template <class Act>
__global__ void __launch_bounds__(32 * kWteWarps)
    encoder_backward_wte_kernel(float* __restrict__ dwte, const Act* __restrict__ dout,
                                const int32_t* __restrict__ inp, size_t BT, int C, unsigned nbuckets) {
  constexpr int kUnroll = 8;
  const int lane = threadIdx.x;
  const unsigned bucket = blockIdx.y * kWteWarps + threadIdx.y;
  const int c = blockIdx.x * 32 + lane;
  for (size_t base = 0; base < BT; base += 32 * kUnroll) {
    int ids[kUnroll];
#pragma unroll
    for (int r = 0; r < kUnroll; r++) {
      const size_t pos = base + (size_t)r * 32 + lane;
      ids[r] = pos < BT ? inp[pos] : -1;
    }
#pragma unroll
    for (int r = 0; r < kUnroll; r++) {
      const int id = ids[r];
      unsigned mask = __ballot_sync(kFullMask, id >= 0 && ((unsigned)id & (nbuckets - 1)) == bucket);
      while (mask) {  // warp-uniform
        const int k = __ffs(mask) - 1;
        mask &= mask - 1;
        const int tok = __shfl_sync(kFullMask, id, k);
        if (c < C) {
          const size_t pos = base + (size_t)r * 32 + k;
          float* cell = dwte + (size_t)tok * C + c;
          *cell += load_f(dout[pos * C + c]);
        }
      }
    }
  }
}

}  // namespace

template <class Act>
void encoder_forward(Act* out, const int32_t* inp, const Act* wte, const Act* wpe, int B, int T, int C,
                     cudaStream_t stream) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  const size_t BT = (size_t)B * T, n = BT * C;
  constexpr int kW = Pack16<Act>::kN, kThreads = 256;
  if (C % kW == 0 && aligned16(out) && aligned16(wte) && aligned16(wpe)) {
    encoder_forward_kernel<Act, kW><<<grid_for(n / kW, kThreads, "encoder_forward"), kThreads, 0, stream>>>(
        out, inp, wte, wpe, BT, T, C);
  } else {
    encoder_forward_kernel<Act, 1><<<grid_for(n, kThreads, "encoder_forward"), kThreads, 0, stream>>>(
        out, inp, wte, wpe, BT, T, C);
  }
  check_launch("encoder_forward_kernel");
}

template <class Act>
void encoder_backward(float* dwte, float* dwpe, const Act* dout, const int32_t* inp, int B, int T, int C,
                      cudaStream_t stream) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  constexpr int kThreads = 256;
  const size_t TC = (size_t)T * C;
  encoder_backward_wpe_kernel<Act><<<grid_for(TC, kThreads, "encoder_backward"), kThreads, 0, stream>>>(
      dwpe, dout, B, T, C);
  check_launch("encoder_backward_wpe_kernel");

  // Buckets: aim at ~2048 warps in all (enough to fill an H100/H200), between kWteWarps and 256
  // (more buckets cost every warp a full scan of the ids for fewer adds each).
  const unsigned channel_blocks = grid_for((size_t)C, 32, "encoder_backward_wte");
  unsigned nbuckets = kWteWarps;
  while (nbuckets < 256 && (size_t)channel_blocks * nbuckets < 2048) nbuckets *= 2;
  dim3 grid(channel_blocks, grid_yz(nbuckets / kWteWarps, "encoder_backward_wte")), block(32, kWteWarps);
  encoder_backward_wte_kernel<Act><<<grid, block, 0, stream>>>(dwte, dout, inp, (size_t)B * T, C, nbuckets);
  check_launch("encoder_backward_wte_kernel");
}

template void encoder_forward<float>(float*, const int32_t*, const float*, const float*, int, int, int, cudaStream_t);
template void encoder_forward<__nv_bfloat16>(__nv_bfloat16*, const int32_t*, const __nv_bfloat16*,
                                             const __nv_bfloat16*, int, int, int, cudaStream_t);
template void encoder_backward<float>(float*, float*, const float*, const int32_t*, int, int, int, cudaStream_t);
template void encoder_backward<__nv_bfloat16>(float*, float*, const __nv_bfloat16*, const int32_t*, int, int,
                                              int, cudaStream_t);

}  // namespace td::cuda
