"""Chapter 11's built page prints numbers that an independent computation reproduces.

The model's numbers are recomputed from the committed checkpoint with
``tests/tiny_lm_reference.py`` (a forward pass written from the model's
definition, not ``lib``'s); the losses of the first and last training steps
by regenerating those batches; the parameter counts from the shapes the
chapter states. ``test_tiny_lm`` checks that the training command reproduces
the checkpoint. The statements the chapter makes about the run (a plateau,
then a drop; scores that rise together; a best layer-1 head below one half)
are checked on the same numbers.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from built_book import ROOT
from chapter_pages import Page
from quiz_files import accepts, explains_as_a_mistake, question_starting, right_option
from tiny_lm_reference import array_loss, scores

from lib import tiny_lm

PAGE = "chapters/11_a_tiny_model_that_reads.html"
VOCAB, HALF, D, HEADS, D_HEAD, LAYERS = 32, 8, 32, 2, 16, 2


@pytest.fixture(scope="module")
def printed() -> str:
    return "\n".join(Page(PAGE).outputs)


@pytest.fixture(scope="module")
def run() -> tuple[tiny_lm.Config, tiny_lm.TrainResult]:
    return tiny_lm.load(ROOT / "chapters" / "tiny_lm.npz")


def number(printed: str, pattern: str) -> float:
    match = re.search(pattern, printed)
    assert match, f"chapter 11 does not print {pattern!r}"
    return float(match.group(1))


def close(shown: float, mine: float, decimals: int) -> bool:
    return abs(shown - mine) <= 0.5 * 10**-decimals + 1e-9


def count_parameters(vocab: int, n: int, d: int, heads: int, d_head: int, layers: int) -> int:
    """E and P, per layer W_Q, W_K, W_V (d x d_head) and W_O (d_head x d) per head, and W_U."""
    return vocab * d + n * d + layers * heads * (3 * d * d_head + d_head * d) + d * vocab


def test_the_sizes_are_the_chapters(printed, run):
    cfg, _ = run
    assert (cfg.vocab, cfg.half, cfg.d_model, cfg.n_heads, cfg.d_head, cfg.n_layers) == (
        VOCAB,
        HALF,
        D,
        HEADS,
        D_HEAD,
        LAYERS,
    )
    assert cfg.min_half == 4 and cfg.batch == 64 and cfg.lr == 0.01
    assert number(printed, r"parameters: (\d+)") == count_parameters(VOCAB, 2 * HALF, D, HEADS, D_HEAD, LAYERS)
    assert "'E': (32, 32)" in printed and "'Q0': (2, 32, 16)" in printed and "'O1': (2, 16, 32)" in printed


def test_the_gradient_check_covers_every_number_and_agrees(printed):
    checked = number(printed, r"(\d+) numbers checked")
    assert checked == count_parameters(5, 6, 6, 2, 3, 2)
    assert 0 < number(printed, r"largest relative error ([0-9.e+-]+)") < 1e-7


def test_the_first_and_last_losses_are_reproduced(printed, run):
    cfg, result = run
    rng = np.random.default_rng(cfg.seed)
    start = tiny_lm.init_params(cfg, rng)
    batches = [tiny_lm.make_batch(rng, cfg.batch, cfg.half, cfg.vocab, cfg.min_half) for _ in range(cfg.steps + 1)]
    first = array_loss(start, *batches[0])
    last = array_loss(result.params, *batches[-1])
    assert close(number(printed, r"loss at step 0: ([0-9.]+)"), first, 3)
    assert close(number(printed, rf"loss at step {cfg.steps}: ([0-9.]+)"), last, 3)
    assert close(number(printed, r"log 32 = ([0-9.]+)"), math.log(32), 3)
    # Before training the model guesses: its held-out accuracy is near chance, 1/32.
    tokens, lengths = tiny_lm.make_batch(np.random.default_rng(2024), 1000, cfg.half, cfg.vocab, cfg.min_half)
    assert scores(start, tokens, lengths)[0] < 0.15


def test_held_out_accuracy_and_head_scores_are_reproduced(printed, run):
    cfg, result = run
    tokens, lengths = tiny_lm.make_batch(np.random.default_rng(2024), 1000, cfg.half, cfg.vocab, cfg.min_half)
    acc, prev, ind = scores(result.params, tokens, lengths)
    assert close(number(printed, r"held-out accuracy on the repeated half: ([0-9.]+)"), acc, 3)
    assert close(number(printed, r"chance \(1 / vocabulary size\): ([0-9.]+)"), 1 / 32, 3)
    for layer in range(2):
        for head in range(2):
            line = rf"layer {layer + 1} head {head}: previous-token score ([0-9.]+), induction score ([0-9.]+)"
            match = re.search(line, printed)
            assert match, line
            assert close(float(match.group(1)), prev[layer, head], 3)
            assert close(float(match.group(2)), ind[layer, head], 3)
    # The pass marks, and what the chapter says of them.
    assert acc >= 0.99  # "from chance to nearly perfect"
    assert ind[1].min() >= 0.9  # layer 2's induction score "is near 1, and so is that of the other layer-2 head"
    assert 0.5 <= prev[0].max() < 0.6  # "only a little above one half"
    assert 0.85 <= prev[0].sum() <= 0.95  # "add up to about 0.9"
    best_prev, best_ind = int(np.argmax(prev[0])), int(np.argmax(ind[1]))
    assert f"layer 1's previous-token head: head {best_prev}; layer 2's induction head: head {best_ind}" in printed


def test_the_loss_plateaus_then_drops_as_the_heads_form(printed, run):
    cfg, result = run
    losses, steps = result.losses, result.snapshot_steps
    log_vocab = math.log(cfg.vocab)
    # "starts above log 32 ... falls within a few dozen steps to a plateau a little below log 32,
    # and stays there for about a hundred steps"
    plateau = losses[25:126]
    assert losses[0] > log_vocab and losses[40:50].mean() < log_vocab
    assert log_vocab - 0.2 < plateau.mean() < log_vocab
    # "Then it drops, within about a hundred and fifty steps, most of the way to its final level"
    final = losses[-50:].mean()
    assert plateau.mean() - losses[250:276].mean() > 0.6 * (plateau.mean() - final)
    ind_head = int(np.argmax(result.induction_scores[-1, 1]))
    prev_head = int(np.argmax(result.previous_scores[-1, 0]))
    ind, prev = result.induction_scores[:, 1, ind_head], result.previous_scores[:, 0, prev_head]
    first = int(steps[np.argmax(ind >= 0.5)])
    assert number(printed, r"first reaches 0\.5 at step (\d+)") == first
    assert 125 <= first <= 275  # within the drop
    # "in those same steps the previous-token score and the induction score rise together"
    before, after = np.searchsorted(steps, 125), np.searchsorted(steps, 275)
    assert ind[after] - ind[before] > 0.5 and prev[after] - prev[before] > 0.15
    assert ind[0] < 0.2 and prev[0] < 0.2  # "both start below 0.2"


# ---------------------------------------------------------------- the quiz's answers, recomputed

QUIZ = "11_a_tiny_model_that_reads"


def test_quiz_chance_accuracy_and_its_named_mistake():
    question = question_starting(QUIZ, "The same task with a vocabulary of 50")
    assert accepts(question, 1 / 50)
    assert explains_as_a_mistake(question, 1 / 32)  # the chapter's own chance level, for 32 kinds
    assert not accepts(question, 1 / 32)


def test_quiz_induction_key_is_i_minus_l_plus_one():
    seq, length, query = list("cafdcafd"), 4, 5
    key = query - length + 1
    assert seq[key] == "f" and seq[query + 1] == seq[key]  # the head copies the next token
    assert right_option(QUIZ, "The sequence is c a f d c a f d")["answer"].startswith(f"Key {key},")


def test_quiz_central_difference_step_is_eps_to_the_third():
    eps = np.finfo(np.float64).eps
    assert round(eps ** (1 / 3), 6) == 6e-6
    assert right_option(QUIZ, "You check a float64 gradient")["answer"].endswith("6 \\times 10^{-6}$")
    # The named mistake: sqrt(eps) is the best step of the one-sided difference.
    assert 1e-8 < math.sqrt(eps) < 1.5e-8
