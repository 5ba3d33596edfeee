"""aten -> aten decompositions kiln adds where torch has none (the way
Inductor keeps its own next to torch._decomp): the backward ops that
AOTAutograd puts into training graphs, and the CUDA kernels that
scaled_dot_product_attention dispatches to (torch decomposes only the CPU
one). Each is written with aten ops kiln compiles; a case it does not cover
returns NotImplemented, so the op stays and its graph falls back to eager
with a warning naming it.
"""
import math

import torch

aten = torch.ops.aten


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias) of a (non-transposed, ungrouped)
    convolution, as convolutions: the input's gradient is the transposed
    convolution of grad_output with the weight; the weight's is a convolution
    of the input (channels as batch) with grad_output (batch as channels),
    strides and dilations swapped."""
    if transposed or groups != 1:
        return NotImplemented
    spatial = input.dim() - 2
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        # The output padding that makes the transposed convolution give back
        # the input's spatial size (the rows a strided window never reached).
        extra = []
        for i in range(spatial):
            covered = (grad_output.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + \
                dilation[i] * (weight.shape[2 + i] - 1) + 1
            extra.append(input.shape[2 + i] - covered)
        if any(e < 0 or (e >= stride[i] and e >= dilation[i]) for i, e in enumerate(extra)):
            return NotImplemented
        grad_input = aten.convolution(grad_output, weight, None, list(stride), list(padding), list(dilation),
                                      True, extra, 1)
    if output_mask[1]:
        x_t = aten.transpose(input, 0, 1)
        g_t = aten.transpose(grad_output, 0, 1)
        w = aten.convolution(x_t, g_t, None, list(dilation), list(padding), list(stride), False,
                             [0] * spatial, 1)
        w = aten.transpose(w, 0, 1)
        for i in range(spatial):
            if w.shape[2 + i] != weight.shape[2 + i]:
                w = aten.slice(w, 2 + i, 0, weight.shape[2 + i])
        grad_weight = aten.clone(w)
    if output_mask[2]:
        grad_bias = aten.sum(grad_output, [0] + list(range(2, 2 + spatial)))
    return grad_input, grad_weight, grad_bias


def max_pool2d_with_indices_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode,
                                     indices):
    """Each output's gradient added at the input position its index names
    (indices are flat offsets within each H*W plane)."""
    lead = list(input.shape[:-2])
    plane = input.shape[-2] * input.shape[-1]
    zeros = aten.new_zeros(grad_output, lead + [plane])
    grad = aten.scatter_add(zeros, len(lead), aten.reshape(indices, lead + [-1]),
                            aten.reshape(grad_output, lead + [-1]))
    return aten.reshape(grad, list(input.shape))


def _attention(query, key, value, bias, dropout_p, is_causal, scale, log_sumexp):
    """softmax(q k^T * scale + bias [causal]) v as matmuls and a softmax
    (kiln's attention pass fuses the pattern again); with log_sumexp, also
    the rows' logsumexp of the scaled scores that the training kernels save.
    Dropout has no decomposition here (NotImplemented)."""
    if dropout_p != 0.0 or query.dim() < 2:
        return NotImplemented
    scale = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = aten.mul(aten.matmul(query, aten.transpose(key, -2, -1)), scale)
    if is_causal:
        rows, cols = query.shape[-2], key.shape[-2]
        keep = aten.tril(aten.ones([rows, cols], dtype=torch.bool, device=query.device))
        scores = aten.masked_fill(scores, aten.logical_not(keep), float("-inf"))
    if bias is not None:
        scores = aten.masked_fill(scores, aten.logical_not(bias), float("-inf")) \
            if bias.dtype == torch.bool else aten.add(scores, bias)
    out = aten.matmul(aten._softmax(scores, -1, False), value)
    lse = aten.logsumexp(scores, [-1]) if log_sumexp else \
        aten.new_empty(query, list(query.shape[:-2]) + [0], dtype=torch.float32)
    return out, lse


def _empty_int64(like):
    return aten.new_empty(like, [0], dtype=torch.int64)


def scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0,
                                           is_causal=False, *, scale=None):
    r = _attention(query, key, value, attn_bias, dropout_p, is_causal, scale, compute_log_sumexp)
    if r is NotImplemented:
        return r
    return r[0], r[1], _empty_int64(query), _empty_int64(query)


def _nine_outputs(query, key, value, bias, log_sumexp, dropout_p, is_causal, return_debug_mask, scale):
    """The flash and cuDNN kernels' outputs: (output, logsumexp, cum_seq_q,
    cum_seq_k, max_q, max_k, rng state or philox seed and offset, debug
    mask), the sequence and random-state ones empty."""
    if return_debug_mask:
        return NotImplemented
    r = _attention(query, key, value, bias, dropout_p, is_causal, scale, log_sumexp)
    if r is NotImplemented:
        return r
    empty = _empty_int64(query)
    return (r[0], r[1], empty, empty, query.shape[-2], key.shape[-2], empty, empty,
            aten.new_empty(query, [0]))


def scaled_dot_product_flash_attention(query, key, value, dropout_p=0.0, is_causal=False,
                                       return_debug_mask=False, *, scale=None):
    return _nine_outputs(query, key, value, None, True, dropout_p, is_causal, return_debug_mask, scale)


def scaled_dot_product_cudnn_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0,
                                       is_causal=False, return_debug_mask=False, *, scale=None):
    return _nine_outputs(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal,
                         return_debug_mask, scale)


TABLE = {
    aten.convolution_backward.default: convolution_backward,
    aten.max_pool2d_with_indices_backward.default: max_pool2d_with_indices_backward,
}
# The CUDA attention kernels exist from torch 2.0 on (not in Debian's 1.13).
for _name, _fn in [("_scaled_dot_product_efficient_attention", scaled_dot_product_efficient_attention),
                   ("_scaled_dot_product_flash_attention", scaled_dot_product_flash_attention),
                   ("_scaled_dot_product_cudnn_attention", scaled_dot_product_cudnn_attention)]:
    if hasattr(aten, _name):
        TABLE[getattr(aten, _name).default] = _fn
