#include "codegen/c_prelude.h"

namespace kiln::codegen {

const char kCSemanticsPrelude[] = R"KILN(
// NaN-propagating maximum/minimum (torch.maximum/minimum).
template <typename T> KILN_FN T kiln_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> KILN_FN T kiln_min(T a, T b) { return (a < b || a != a) ? a : b; }
// Python-style floor division and remainder; integer division by zero
// gives 0 and INT_MIN / -1 wraps instead of trapping (signed types only:
// for unsigned T, T(-1) is the largest value, an ordinary divisor).
template <typename T> KILN_FN T kiln_idiv(T a, T b) {
  if (b == 0) return 0;
  if (T(0) > T(-1) && b == T(-1)) return static_cast<T>(0ULL - static_cast<unsigned long long>(a));
  return a / b;
}
template <typename T> KILN_FN T kiln_ifloordiv(T a, T b) {
  if (b == 0) return 0;
  if (T(0) > T(-1) && b == T(-1)) return static_cast<T>(0ULL - static_cast<unsigned long long>(a));
  T q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> KILN_FN T kiln_imod(T a, T b) {
  if (b == 0 || (T(0) > T(-1) && b == T(-1))) return 0;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
KILN_FN float kiln_fmod_py(float a, float b) {
  float r = fmodf(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
KILN_FN double kiln_fmod_py(double a, double b) {
  double r = fmod(a, b);
  return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
}
template <typename T> KILN_FN T kiln_ipow(T base, T exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  unsigned long long r = 1, b = static_cast<unsigned long long>(base);
  while (exp > 0) {
    if (exp & 1) r *= b;
    b *= b;
    exp >>= 1;
  }
  return static_cast<T>(r);
}
// Float to integer conversions, defined where C++ leaves them undefined:
// NaN gives 0 and values past int64's range saturate; narrower integer
// types then wrap from the int64 (the interpreter's SetDouble).
KILN_FN long long kiln_float_to_int64(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return 0x7fffffffffffffffLL;
  if (v <= -9.2233720368547758e18) return -0x7fffffffffffffffLL - 1;
  return static_cast<long long>(v);
}
KILN_FN unsigned long long kiln_float_to_uint64(double v) {
  if (v >= 1.8446744073709552e19) return 0xffffffffffffffffULL;
  if (v >= 9.2233720368547758e18) return static_cast<unsigned long long>(v);
  return static_cast<unsigned long long>(kiln_float_to_int64(v));
}
template <typename T> KILN_FN T kiln_sign(T a) {
  return a != a ? a : static_cast<T>((T(0) < a) - (a < T(0)));
}
)KILN";

}  // namespace kiln::codegen
