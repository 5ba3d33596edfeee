#!/usr/bin/env python3
"""Regenerates ir/builtin_schemas.inc from PyTorch 2.11's schema list.

    /usr/bin/python3 ir/gen_builtin_schemas.py ir/torch_2.11_schemas.txt \
        > ir/builtin_schemas.inc

Two sources:
  * PyTorch 2.11's schemas (the text file given as the first argument, one
    `str(schema)` of torch._C._jit_get_all_schemas() per line, checked in as
    ir/torch_2.11_schemas.txt): what torch.export programs (.pt2) name.
  * PyTorch 1.13's schemas, from the installed PyTorch (Debian's
    python3-torch): TorchScript text printed by 1.13 calls overloads that 2.11
    removed, so those are kept.

Selects every overload of the ops listed below, except out= variants (a
kwarg-only argument that is written) and named-tensor overloads (Dimname
arguments print as `str`, which would only add look-alike candidates). A
qualified name (ns::op.overload) present in both lists takes 2.11's text.

Order matters: the registry breaks ties between equally specific overloads by
registration order. Overloads 1.13 had come first, in 1.13's registration
order (so TorchScript graphs keep matching the overloads they always did),
then the overloads new in 2.11, in 2.11's order. The output is data: one C
string literal per schema.
"""
import re
import sys

import torch

ATEN_OPS = """
abs neg exp exp2 log log2 log10 log1p expm1 sqrt rsqrt sin cos tan asin acos
atan sinh cosh sigmoid reciprocal floor ceil round trunc sign erf erfc
square logical_not bitwise_not isnan isinf isfinite frac nan_to_num
abs_ neg_ exp_ log_ sqrt_ rsqrt_ sin_ cos_ reciprocal_ floor_ ceil_ round_
trunc_ erf_ sign_
add sub mul div pow remainder fmod floor_divide maximum minimum atan2 rsub
true_divide add_ sub_ mul_ div_ pow_ floordiv
eq ne lt le gt ge eq_ ne_ lt_ le_ gt_ ge_
logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor
__and__ __or__ __xor__ __not__ __is__ __isnot__ __contains__
where clamp clamp_ clamp_min clamp_min_ clamp_max clamp_max_ to type_as
sum mean max min prod argmax argmin var std logsumexp norm amax amin all any
softmax log_softmax
matmul bmm mm addmm linear t dot baddbmm
conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
_convolution convolution
max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d
adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
adaptive_max_pool1d adaptive_max_pool2d max_pool2d_with_indices
batch_norm layer_norm group_norm instance_norm
view reshape flatten squeeze unsqueeze permute transpose contiguous expand
expand_as view_as reshape_as select narrow slice unbind chunk split
split_with_sizes stack cat concat gather scatter scatter_add index_select index
constant_pad_nd pad repeat flip topk sort cumsum cumprod one_hot nonzero arange
full zeros ones zeros_like ones_like full_like empty empty_like masked_fill
masked_fill_ clone detach numel dim size upsample_nearest2d
upsample_bilinear2d squeeze_ unsqueeze_ transpose_ t_ fill_ zero_ copy_
relu relu_ leaky_relu leaky_relu_ gelu silu silu_ elu elu_ selu selu_
hardswish hardswish_ hardsigmoid hardsigmoid_ softplus mish mish_ tanh tanh_
sigmoid_ hardtanh hardtanh_ relu6 relu6_ prelu glu threshold threshold_ celu
log_sigmoid
dropout dropout_ feature_dropout alpha_dropout feature_alpha_dropout
native_dropout
rand rand_like randn randn_like randint randint_like randperm bernoulli
multinomial normal poisson rrelu _standard_gamma binomial
warn manual_seed save
Int Float Bool ScalarImplicit IntImplicit FloatImplicit len __getitem__ append
list str format item tensor scalar_tensor __range_length __derive_index
_set_item _unwrap_optional
tril triu tile roll einsum det linalg_det pixel_shuffle pixel_unshuffle
grid_sampler scatter_reduce index_put index_put_ take_along_dim unique_dim
_unique2 unique_consecutive argsort asinh acosh atanh erfinv cummax cummin
nll_loss nll_loss_nd nll_loss2d cross_entropy_loss embedding eye hardshrink
softshrink reflection_pad1d reflection_pad2d reflection_pad3d replication_pad1d
replication_pad2d replication_pad3d bitwise_left_shift bitwise_right_shift
__lshift__ __rshift__ max_unpool2d max_unpool3d upsample_nearest1d
upsample_nearest3d upsample_linear1d upsample_trilinear3d upsample_bicubic2d
_upsample_nearest_exact1d _upsample_nearest_exact2d _upsample_nearest_exact3d
masked_select index_fill diag diagonal outer addcmul addcdiv mv heaviside
isclose var_mean std_mean count_nonzero logcumsumexp new_zeros new_ones new_full
new_empty fill logit lerp movedim swapaxes hstack vstack split_copy
max_pool1d_with_indices max_pool3d_with_indices adaptive_max_pool3d
native_layer_norm native_batch_norm native_group_norm im2col col2im
unfold frobenius_norm linalg_vector_norm linalg_norm hann_window hamming_window
blackman_window stft fft_fft fft_rfft fft_ifft view_as_real view_as_complex
log_softmax softmin pairwise_distance cosine_similarity quantize_per_tensor
local_response_norm lp_pool1d lp_pool2d logaddexp special_expit expand_copy
sgn angle bucketize searchsorted histc kthvalue median mode quantile
"""

# What torch.export programs name beyond the above: the training IR's and
# core ATen's functional, in-place and view ops, symbolic-size queries and
# runtime assertions (frontend/pt2 maps them onto kiln ops).
EXPORT_OPS = """
_assert_tensor_metadata _assert_scalar sym_constrain_range
sym_constrain_range_for_size sym_size sym_numel sym_stride sym_storage_offset
_softmax _log_softmax _safe_softmax _to_copy lift_fresh lift_fresh_copy
detach_ alias as_strided slice_scatter select_scatter diagonal_scatter
scaled_dot_product_attention unflatten copy _unsafe_view repeat_interleave
_native_batch_norm_legit _native_batch_norm_legit_no_training
_native_batch_norm_legit_functional hardtanh_ bitwise_not_
"""

PRIM_OPS = """
RaiseException Uninitialized NumToTensor dtype device layout is_cuda
TupleIndex TupleUnpack unchecked_cast min max abs Print PythonOp
IgnoredPythonOp data requires_grad rangelist
"""

ATEN = set(ATEN_OPS.split()) | set(EXPORT_OPS.split())
PRIM = set(PRIM_OPS.split())


def split_schema(text):
    """(qualified name, overload name, argument text) of a schema string."""
    open_paren = text.index("(")
    qualified = text[:open_paren]
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return qualified, qualified.partition(".")[2], text[open_paren + 1:i]
    raise ValueError("unbalanced parentheses in schema: " + text)


def top_level_args(args):
    """Splits an argument list at the commas outside brackets."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(args):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
    if args.strip():
        out.append(args[start:].strip())
    return out


def wanted(text):
    qualified, overload, args = split_schema(text)
    ns, _, rest = qualified.partition("::")
    base = rest.partition(".")[0]
    if not ((ns == "aten" and base in ATEN) or (ns == "prim" and base in PRIM)):
        return False
    if "Dimname" in overload or "dimname" in overload or "names" in overload:
        return False
    kwarg_only = False
    for arg in top_level_args(args):
        if arg == "*":
            kwarg_only = True
        elif kwarg_only and re.search(r"\([a-z]+!\)", arg):
            return False  # an out= variant
    return True


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_builtin_schemas.py TORCH_2.11_SCHEMAS.txt")
    with open(sys.argv[1]) as f:
        new = [line.rstrip("\n") for line in f if line.strip()]
    new = [s for s in new if wanted(s)]
    new_by_name = {}
    for s in new:
        new_by_name.setdefault(split_schema(s)[0], s)
    old = [str(s) for s in torch._C._jit_get_all_schemas()]
    old = [s for s in old if wanted(s)]
    old_names = []
    seen = set()
    for s in old:
        name = split_schema(s)[0]
        if name not in seen:
            seen.add(name)
            old_names.append((name, s))
    schemas = []
    kept_old = 0
    for name, text in old_names:
        if name in new_by_name:
            schemas.append(new_by_name[name])
        else:
            schemas.append(text)
            kept_old += 1
    emitted = {split_schema(s)[0] for s in schemas}
    for name, text in new_by_name.items():
        if name not in emitted:
            schemas.append(text)
            emitted.add(name)
    out = sys.stdout
    out.write("// Generated by ir/gen_builtin_schemas.py: %d schemas, PyTorch 2.11's text\n"
              "// (%d of them PyTorch %s overloads that 2.11 lacks, kept for TorchScript).\n"
              % (len(schemas), kept_old, torch.__version__.split("a")[0]))
    out.write("// Do not edit; regenerate instead.\n")
    for s in schemas:
        out.write('R"schema(%s)schema",\n' % s)


if __name__ == "__main__":
    main()
