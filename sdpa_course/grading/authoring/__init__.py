"""What an assignment module (``grading/hwN.py``) is written with: the inputs and judges the assignments share.

An assignment module makes an :class:`~grading.check.Assignment`, builds each
check's cases with :func:`~grading.plain.make_case` and the helpers of
:mod:`~grading.authoring.inputs`, judges them with :func:`judge_each` and a
per-case function that raises :class:`~grading.compare.Mismatch` (or
:class:`~grading.compare.Partial`), and names each notebook's ``check_*``
function with :func:`grading.notebook.check_for`. The helpers here turn "the
numbers differ" into what a learner can act on: which row does not sum to 1,
which forbidden key gets weight, whether the scale was left out.

- :mod:`~grading.authoring.inputs`: seeded random arrays, the book's example sentence, a case's label;
- :mod:`~grading.authoring.judging`: :func:`judge_each` (each case an equal share; the dtype,
  in-place and edge shares) and :func:`unpack`;
- :mod:`~grading.authoring.tolerances`: tolerances derived from the dtype and the size of the logits;
- :mod:`~grading.authoring.hints`: the usual mistakes' phrases, each under a key (:data:`HINTS`;
  with the assignments' own tables, :func:`grading.all_hints`);
- :mod:`~grading.authoring.weights`: rows of softmax weights and their usual mistakes;
- :mod:`~grading.authoring.attention`: an attention output and weights and their usual mistakes.

Everything here is numpy only; ``lib`` is imported inside the judges, through
:func:`grading.compare.reference`.
"""

from .attention import check_attention, value_scale
from .hints import HINTS
from .inputs import BATCHES, DTYPES, describe_inputs, generator, inexact_root, normal, sentence_qkv
from .judging import CaseJudge, judge_each, unpack
from .tolerances import attention_rtol, logit_rtol, row_sum_tol
from .weights import (
    EDGE_SHARE,
    check_weight_rows,
    edge_rows,
    filled_weights,
    judge_softmax_case,
    near,
    softmax_hint,
)

__all__ = [
    "BATCHES",
    "CaseJudge",
    "DTYPES",
    "EDGE_SHARE",
    "HINTS",
    "attention_rtol",
    "check_attention",
    "check_weight_rows",
    "describe_inputs",
    "edge_rows",
    "filled_weights",
    "generator",
    "inexact_root",
    "judge_each",
    "judge_softmax_case",
    "logit_rtol",
    "near",
    "normal",
    "row_sum_tol",
    "sentence_qkv",
    "softmax_hint",
    "unpack",
    "value_scale",
]
