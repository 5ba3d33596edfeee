#!/usr/bin/env python3
"""Regenerates ir/builtin_schemas.inc from the installed PyTorch.

    /usr/bin/python3 ir/gen_builtin_schemas.py > ir/builtin_schemas.inc

Selects every overload of the ops listed below from
torch._C._jit_get_all_schemas(), except out= variants (a kwarg-only argument
that is written) and named-tensor overloads (Dimname arguments print as
`str`, which would only add look-alike candidates). The output is data: one
C string literal per schema, in PyTorch's registration order.
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

PRIM_OPS = """
RaiseException Uninitialized NumToTensor dtype device layout is_cuda
TupleIndex TupleUnpack unchecked_cast min max abs Print PythonOp
IgnoredPythonOp data requires_grad rangelist
"""


def wanted(schema):
    name = schema.name
    ns, base = name.split("::", 1)
    if ns == "aten":
        ok = base in ATEN
    elif ns == "prim":
        ok = base in PRIM
    else:
        ok = False
    if not ok:
        return False
    overload = schema.overload_name
    if "Dimname" in overload or "dimname" in overload or "names" in overload:
        return False
    for arg in schema.arguments:
        if arg.kwarg_only and arg.alias_info is not None and arg.alias_info.is_write:
            return False
    return True


ATEN = set(ATEN_OPS.split())
PRIM = set(PRIM_OPS.split())

schemas = [s for s in torch._C._jit_get_all_schemas() if wanted(s)]
out = sys.stdout
out.write("// Generated by ir/gen_builtin_schemas.py from PyTorch %s: %d schemas.\n"
          % (torch.__version__.split("a")[0], len(schemas)))
out.write("// Do not edit; regenerate instead.\n")
for s in schemas:
    text = str(s)
    out.write('R"schema(%s)schema",\n' % text)
