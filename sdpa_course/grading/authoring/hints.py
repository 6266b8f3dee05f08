"""The usual mistakes that the messages name, each under a key.

``HINTS[key]`` is the phrase that every message naming that mistake contains,
whichever check writes it; the judges build their messages from these phrases,
so that the learners' corpus can say by key, rather than by a sentence, which
mistakes a message names (and a test, that it names no other).
"""

from __future__ import annotations

HINTS: dict[str, str] = {
    # exp of a row's logits overflowed (or all underflowed to 0): the row was not shifted by its maximum
    "shift_by_max": "subtract the row's maximum before exp",
    # a running (or row) maximum of -inf was subtracted: -inf - (-inf) = NaN
    "shift_by_zero": "-inf - (-inf) is NaN: shift by 0 instead",
    # a fill such as -1e9 or -1e6 in place of -inf: a row with nothing permitted spreads its weight evenly
    "large_negative_fill": "did you use a large negative number (such as -1e9) instead of -inf?",
    # the softmax over every key, the forbidden weights zeroed and the rest renormalised: a row whose
    # permitted scores lie far below a forbidden one underflows to all 0
    "renormalised_after_softmax": "the softmax was taken over every key and the forbidden weights zeroed afterwards",
    # the softmax over every key, the forbidden weights zeroed and not renormalised
    "masked_after_softmax": "the mask was applied after the softmax",
    # softmax(Q K^T): the scores never divided by sqrt(d_k)
    "no_scale": "without the scale 1/sqrt(d_k)",
    # softmax(Q K^T / d_k)
    "scale_by_dk": "divide by sqrt(d_k), not d_k",
    # softmax(Q K^T) / sqrt(d_k) (or / d_k): each row of weights sums to the factor, not 1
    "scaled_after_softmax": "the weights were scaled after the softmax",
    # the softmax along axis -2: each column sums to 1
    "softmax_wrong_axis": "the softmax was taken over the wrong axis",
    # e / e.sum(axis=-1) on a square matrix: entry (i, j) divided by row j's sum
    "sum_without_keepdims": "the row sums were broadcast along the wrong axis",
    # z - np.max(z, axis=-1) on a square matrix: row j's maximum subtracted from column j
    "max_without_keepdims": "row j's maximum was subtracted from column j",
    # a maximum or sum without keepdims=True that cannot broadcast back against the rows: an error
    "keepdims_left_out": "did you leave out keepdims=True",
    # the weights (or scores) with queries along the columns
    "transposed": "transposed: row i is query i, column j is key j",
    # x.T on a batch reverses the batch axes too: the matrix product's batch axes no longer line up
    "transpose_all_axes": ".T reverses every axis",
    # Q = X W_K or the like: one projection's weights used for another (homework 3)
    "projections_mixed_up": "the projections are mixed up",
    # the raw scores asked for, scaled by 1/sqrt(d_k) already (homework 3)
    "scaled_too_early": "the scale 1/sqrt(d_k) comes in chapter 4",
    # the scaled scores' variance estimated for S / d_k (homework 5)
    "variance_scaled_by_dk": "it looks like S / d_k",
    # random numbers drawn from np.random instead of the generator given (homework 5)
    "global_rng": "not from np.random",
    # (..., n, h*d) reshaped straight to (..., h, n, d), or back, without swapping n and h (homework 7)
    "reshape_without_swap": "mixes tokens between heads",
    # multi-head attention without the final product with W_O (homework 7)
    "no_output_projection": "the output projection W_O is missing",
    # every head scaled by 1/sqrt of the full width h*d_k (homework 7)
    "full_width_scale": "not of the full width",
    # the heads merged as (..., n, d, h): the columns feature by feature (homework 7)
    "merged_feature_by_feature": "the heads are merged in the wrong order",
    # the softmax's backward pass as grad_a - rowsum(grad_a * a), never multiplied by a (homework 9)
    "not_times_a": "by a, entry by entry",
    # dK computed with dQ's formula, dS K (homework 9)
    "dk_as_dq": "dK = dS^T Q / sqrt(d_k)",
    # the softmax's backward pass as a * grad_a (homework 9)
    "no_row_sum_term": "without the row-sum term",
    # dV = A dO instead of A^T dO (homework 9)
    "dv_not_transposed": "dV = A^T dO (the transpose of the weights), not A dO",
    # dQ and dK without the chain rule's 1/sqrt(d_k) (homework 9)
    "chain_rule_scale_missing": "of the chain rule; it is missing",
    # NaN from a forward softmax that gives NaN for a query with no permitted key (homework 9)
    "softmax_nan_empty_row": "softmax_rows must give zeros for a row of -inf",
    # weights right, output not weights @ v
    "output_not_weights_v": "the output should be the weights times the values, weights @ v",
    # an online running sum (and weighted sum of values) not multiplied by exp(m_old - m_new)
    "not_rescaled": "not rescaled by exp(m_old - m_new) when the maximum grew",
    # an online running sum multiplied by exp(m_new - m_old), the inverse factor
    "rescaled_wrong_way": "the factor is exp(m_old - m_new), at most 1",
    # blocked attention that keeps only the last block's state
    "last_block_only": "attention over the last block only",
}
