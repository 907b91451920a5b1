// Element types of backend tensors: fp32 and bfloat16.
//
// bf16 is the upper half of an IEEE-754 binary32 (1 sign, 8 exponent, 7 mantissa bits): the
// range of fp32 at 3 significant decimal digits. The struct is storage only (no arithmetic);
// it has the size and bit layout of CUDA's __nv_bfloat16, so device buffers of one can be read
// as the other. Conversions round to nearest, ties to even (as __float2bfloat16_rn); NaN stays
// NaN. Source: Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep Learning Training".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace td {

enum class DType { kF32, kBF16 };
inline const char* dtype_name(DType d) { return d == DType::kF32 ? "fp32" : "bf16"; }
inline size_t dtype_size(DType d) { return d == DType::kF32 ? 4 : 2; }

struct bf16 {
  uint16_t bits;
};
static_assert(sizeof(bf16) == 2);

/// float -> bf16, round to nearest even; NaN maps to a quiet NaN of the same sign.
inline bf16 to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{(uint16_t)((u >> 16) | 0x0040u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{(uint16_t)(u >> 16)};
}
/// bf16 -> float (exact).
inline float to_float(bf16 b) {
  uint32_t u = (uint32_t)b.bits << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float to_float(float f) { return f; }

/// The DType of an element type (float or bf16).
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kF32; }
template <> constexpr DType dtype_of<bf16>() { return DType::kBF16; }

}  // namespace td
