"""The op catalog: every captured ATen op mapped to a category and a kernel-library family.

Categories are what the fusion rules reason about; families are which generator in core/kernels/ builds the
kernel. Op parameters (stride, padding, dims, approximate, eps, ...) come from the op schema at capture time
(`OpNode.attrs`), so the catalog only has to name each op once. An op that is not here is `unsupported`: it still
becomes a spec of its own and is listed under the completeness check's gaps.
"""

from __future__ import annotations

from dataclasses import dataclass

from .opgraph import OpNode


@dataclass(frozen=True)
class OpInfo:
    category: str  # see CATEGORIES
    family: str  # kernel-library family (core/kernels/<family>.py)

    @property
    def is_glue(self) -> bool:
        return self.category in ("data_movement", "allocation", "identity")

    @property
    def is_elementwise(self) -> bool:
        return self.category.startswith("elementwise")

    @property
    def is_anchor(self) -> bool:
        return not self.is_glue and not self.is_elementwise and self.category != "unsupported"


CATEGORIES = (
    "elementwise_unary", "elementwise_binary", "elementwise_ternary", "matmul", "convolution", "pooling",
    "reduction", "normalization", "softmax", "scan", "selection", "gather", "loss", "recurrent", "attention",
    "data_movement", "allocation", "identity", "unsupported",
)

_UNARY = """relu relu6 leaky_relu elu selu celu gelu silu mish softplus hardtanh hardswish hardsigmoid sigmoid tanh
log_sigmoid softshrink hardshrink threshold rrelu abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal
sin cos tan asin acos atan sinh cosh asinh acosh atanh erf erfc erfinv sign sgn floor ceil round trunc frac square
logical_not bitwise_not isnan isinf isfinite nan_to_num clamp clamp_min clamp_max _to_copy to type_as positive
logit signbit tril triu fill zero lgamma digamma special_digamma special_psi i0 special_i0 special_erfcx
special_ndtri""".split()
_BINARY = """add sub rsub mul div true_divide floor_divide remainder fmod pow maximum minimum fmax fmin atan2 eq ne lt le
gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor hypot copysign xlogy prelu logaddexp
logaddexp2 heaviside bitwise_left_shift bitwise_right_shift
masked_fill __and__ __or__ __xor__ __lshift__ __rshift__""".split()
_TERNARY = "where addcmul addcdiv lerp".split()
_MATMUL = "linear matmul mm bmm addmm baddbmm addbmm einsum mv addmv dot vdot outer bilinear".split()
_CONV = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution _convolution
conv_tbc""".split()
_POOL = """max_pool1d max_pool2d max_pool3d max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices
avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d _adaptive_avg_pool2d
_adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d lp_pool1d lp_pool2d""".split()
_REDUCTION = """sum mean amax amin max min prod argmax argmin logsumexp norm linalg_vector_norm frobenius_norm var std
var_mean std_mean all any count_nonzero aminmax nansum nanmean median mode""".split()
_NORM = """batch_norm _native_batch_norm_legit_no_training native_batch_norm layer_norm native_layer_norm group_norm
native_group_norm instance_norm rms_norm local_response_norm""".split()
_SOFTMAX = "softmax log_softmax _softmax _log_softmax _safe_softmax".split()
_SCAN = "cumsum cumprod cummax cummin logcumsumexp".split()
_SELECTION = "topk sort argsort".split()
_GATHER = """embedding embedding_bag index_select gather index take flip roll repeat constant_pad_nd pad
reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d scatter scatter_add scatter_reduce index_put index_add index_copy
one_hot pixel_shuffle pixel_unshuffle upsample_nearest1d upsample_nearest2d upsample_nearest3d _upsample_nearest_exact1d
_upsample_nearest_exact2d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d upsample_trilinear3d
upsample_bicubic2d grid_sampler grid_sampler_2d channel_shuffle native_channel_shuffle im2col col2im diff cross linalg_cross diagonal
diag_embed tile repeat_interleave bucketize searchsorted""".split()
_LOSS = """mse_loss l1_loss smooth_l1_loss huber_loss cross_entropy_loss nll_loss nll_loss_nd nll_loss2d kl_div
hinge_embedding_loss cosine_similarity triplet_margin_loss binary_cross_entropy binary_cross_entropy_with_logits
margin_ranking_loss cosine_embedding_loss soft_margin_loss multilabel_margin_loss pairwise_distance cdist
poisson_nll_loss""".split()
_RECURRENT = "lstm gru rnn_tanh rnn_relu lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell".split()
_ATTENTION = "scaled_dot_product_attention".split()
_MOVEMENT = """view reshape _unsafe_view permute transpose t contiguous clone flatten unflatten unsqueeze squeeze
expand expand_as slice select narrow cat concat concatenate stack hstack vstack split split_with_sizes chunk unbind
alias detach view_as reshape_as movedim swapaxes swapdims numpy_T mT lift_fresh_copy as_strided
_reshape_alias getitem unfold_view broadcast_tensors broadcast_to atleast_1d atleast_2d atleast_3d
view_as_real split_copy""".split()
_ALLOCATION = """zeros ones empty full zeros_like ones_like empty_like full_like new_zeros new_ones new_empty
new_full arange scalar_tensor empty_strided tensor eye linspace logspace""".split()
_IDENTITY = """dropout feature_dropout alpha_dropout feature_alpha_dropout _assert_tensor_metadata
_assert_scalar""".split()

_TABLE: dict[str, OpInfo] = {}
for _names, _cat, _fam in (
    (_UNARY, "elementwise_unary", "elementwise"), (_BINARY, "elementwise_binary", "elementwise"),
    (_TERNARY, "elementwise_ternary", "elementwise"), (_MATMUL, "matmul", "matmul"),
    (_CONV, "convolution", "conv"), (_POOL, "pooling", "pool"), (_REDUCTION, "reduction", "reduction"),
    (_NORM, "normalization", "norm"), (_SOFTMAX, "softmax", "softmax"), (_SCAN, "scan", "scan"), (_SELECTION, "selection", "topk"),
    (_GATHER, "gather", "gather"), (_LOSS, "loss", "loss"), (_RECURRENT, "recurrent", "recurrent"),
    (_ATTENTION, "attention", "attention"), (_MOVEMENT, "data_movement", "glue"),
    (_ALLOCATION, "allocation", "glue"), (_IDENTITY, "identity", "glue"),
):
    for _name in _names:
        _TABLE[_name] = OpInfo(_cat, _fam)

UNSUPPORTED = OpInfo("unsupported", "unsupported")

# Ops whose in-place form ends in "_" (relu_, add_, mul_) but whose base name itself ends in "_" never occurs in
# the catalog, so stripping one trailing underscore is unambiguous.


def base_op(op: str) -> str:
    if op.endswith("_") and not op.startswith("_") and op[:-1] in _TABLE:
        return op[:-1]
    return op


def is_inplace(node: OpNode) -> bool:
    return node.op.endswith("_") and base_op(node.op) != node.op


def lookup(node: OpNode) -> OpInfo:
    """The catalog entry for a captured node (in-place variants share their functional entry)."""
    if node.target == "getitem":
        return _TABLE["getitem"]
    if node.target.startswith("tilestudio."):
        return OpInfo("recurrent", "recurrent")
    if not node.target.startswith("aten."):
        return UNSUPPORTED
    info = _TABLE.get(base_op(node.op), UNSUPPORTED)
    if info.category == "identity" and node.op in ("dropout", "feature_dropout", "alpha_dropout",
                                                   "feature_alpha_dropout") and node.attrs.get("train"):
        return UNSUPPORTED  # training-mode dropout is random: not a deterministic kernel
    return info


# Glue that neither moves nor changes data: fusion and dependency tracking look straight through it.
ALIAS_OPS = frozenset({"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "clone", "contiguous",
                       "alias", "detach", "lift_fresh_copy"})


def catalog_ops() -> dict[str, OpInfo]:
    """All catalogued op names (for documentation and tests)."""
    return dict(_TABLE)
