#include "lowering/attention_layouts.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::lowering {

Layout PadLayoutTo(const Layout& l, size_t rank) {
  Layout p = l;
  p.sizes.insert(p.sizes.begin(), rank - l.sizes.size(), 1);
  p.strides.insert(p.strides.begin(), rank - l.strides.size(), 0);
  return p;
}

absl::StatusOr<AttentionDims> CheckAttentionLayouts(const Layout& q, const Layout& kt, const Layout& v,
                                                    const Layout& out, const std::optional<Layout>& mask) {
  auto bad = [](const std::string& why) { return absl::UnimplementedError(absl::StrCat("attention kernel: ", why)); };
  const size_t r = q.sizes.size();
  if (r < 2 || kt.sizes.size() != r || v.sizes.size() != r || out.sizes.size() != r) return bad("ranks differ");
  for (const Layout* l : {&q, &kt, &v, &out}) {
    if (l->strides.size() != r) return bad("malformed layout");
  }
  AttentionDims a;
  a.s = q.sizes[r - 2];
  a.d = q.sizes[r - 1];
  a.t = kt.sizes[r - 1];
  a.dv = v.sizes[r - 1];
  if (kt.sizes[r - 2] != a.d || v.sizes[r - 2] != a.t || out.sizes[r - 2] != a.s || out.sizes[r - 1] != a.dv) {
    return bad("shapes do not match");
  }
  if (a.s <= 0 || a.t <= 0 || a.d <= 0 || a.dv <= 0) return bad("empty operands");
  for (size_t i = 0; i + 2 < r; ++i) {
    for (const Layout* l : {&kt, &v, &out}) {
      if (l->sizes[i] != q.sizes[i]) return bad("batch dims differ");
    }
    a.batches *= q.sizes[i];
  }
  if (mask) {
    if (mask->sizes.size() > r || mask->strides.size() != mask->sizes.size()) return bad("mask rank");
    a.mask = PadLayoutTo(*mask, r);
    for (size_t i = 0; i < r; ++i) {
      const int64_t want = i == r - 2 ? a.s : i == r - 1 ? a.t : q.sizes[i];
      if (a.mask->sizes[i] != 1 && a.mask->sizes[i] != want) return bad("mask does not broadcast");
    }
  }
  return a;
}

}  // namespace kiln::lowering
