"""Scaled dot-product attention, the course's reference implementation (numpy only).

Every chapter computes with these functions and every homework exercise is
graded against them. The conventions follow PyTorch's
``torch.nn.functional.scaled_dot_product_attention``.

Public API
----------
dot_product_scores      raw scores e_ij = x_i . x_j
softmax                 numerically stable softmax along an axis
project_qkv             Q, K, V = X W_Q, X W_K, X W_V
causal_mask             boolean mask, True where j <= i
sliding_window_mask     the causal mask with only the last ``window`` keys permitted
scaled_scores           Q K^T * scale with the mask applied (-inf = forbidden)
scaled_dot_product_attention   softmax(Q K^T / sqrt(d_k)) V, with weights on request
attend_one_query        the same for one query, step by step (loop form)
blocked_attention       the same output without the full score matrix (online softmax)
online_softmax, online_softmax_steps    softmax from a running max and sum over blocks
split_heads, merge_heads, multi_head_attention
seed_toy_example, example_sentence, example_projections, SENTENCE    shared example inputs
softmax_backward, attention_backward    gradients through the softmax and through attention
layer_norm, feed_forward, transformer_block, BlockWeights, random_block_weights    the block around the heads
grouped_query_attention, repeat_kv      query heads sharing key-value heads (MHA, GQA, MQA)
rotate, rotary_frequencies, sinusoidal_positions    rotary position embeddings and the sinusoid
KVCache, decode_with_cache, decoder_attention, kv_cache_bytes    decoding one token at a time

Submodules imported by name: ``lib.handbuilt`` (heads built by hand) and
``lib.tiny_lm`` (chapter 11's two-layer attention-only language model, its
training, and ``python -m sdpa_course.lib.tiny_lm train``).
"""

from .attention import attend_one_query, scaled_dot_product_attention, scaled_scores
from .backward import attention_backward, softmax_backward
from .block import BlockWeights, feed_forward, layer_norm, random_block_weights, transformer_block
from .blocked import blocked_attention, online_softmax, online_softmax_steps
from .examples import SENTENCE, example_projections, example_sentence, seed_toy_example
from .grouped import grouped_query_attention, repeat_kv
from .kv_cache import KVCache, decode_with_cache, decoder_attention, kv_cache_bytes
from .masks import causal_mask, sliding_window_mask
from .multihead import merge_heads, multi_head_attention, split_heads
from .projections import project_qkv
from .rotary import rotary_frequencies, rotate, sinusoidal_positions
from .scores import dot_product_scores
from .softmax import softmax

__all__ = [
    "BlockWeights",
    "KVCache",
    "SENTENCE",
    "attend_one_query",
    "attention_backward",
    "blocked_attention",
    "causal_mask",
    "decode_with_cache",
    "decoder_attention",
    "dot_product_scores",
    "example_projections",
    "example_sentence",
    "feed_forward",
    "grouped_query_attention",
    "kv_cache_bytes",
    "layer_norm",
    "merge_heads",
    "multi_head_attention",
    "online_softmax",
    "online_softmax_steps",
    "project_qkv",
    "random_block_weights",
    "repeat_kv",
    "rotary_frequencies",
    "rotate",
    "scaled_dot_product_attention",
    "scaled_scores",
    "seed_toy_example",
    "sinusoidal_positions",
    "sliding_window_mask",
    "softmax",
    "softmax_backward",
    "split_heads",
    "transformer_block",
]
