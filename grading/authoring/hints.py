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
}
