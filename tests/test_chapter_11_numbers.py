"""Chapter 11's built page prints and glues numbers that an independent computation reproduces.

The model's numbers are recomputed from the committed checkpoints with
``tests/tiny_lm_reference.py`` (a forward pass written from the model's
definition, not ``lib``'s, with its own knock-outs and rerouted projections);
the losses of the first and last training steps and the blocks training
draws by regenerating those batches; the parameter counts from the shapes the
chapter states. ``test_tiny_lm`` checks that the training commands reproduce
the checkpoints and that the loss floor is the Bayes-optimal loss. The
statements the chapter makes about the run (a plateau, then a drop; scores
that rise together; a layer-1 head sharp in the first block only; the
knock-outs; K-composition; the two circuits; a one-layer model above chance
and below two; what the model writes) are checked on the same numbers, and
every glued value (``chapter_pages.glued``) against its independent value.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from built_book import ROOT
from chapter_pages import Page, numbers, printed_flag
from glued import glued
from quiz_files import accepts, explains_as_a_mistake, question_starting, right_option
from tiny_lm_reference import array_forward, array_loss, repeat_accuracy, scores

from sdpa_course.lib import tiny_lm

PAGE = "chapters/11_a_tiny_model_that_reads.html"
VOCAB, HALF, D, HEADS, D_HEAD, LAYERS = 32, 8, 32, 2, 16, 2


@pytest.fixture(scope="module")
def printed() -> str:
    return "\n".join(Page(PAGE).outputs)


@pytest.fixture(scope="module")
def run() -> tuple[tiny_lm.Config, tiny_lm.TrainResult]:
    return tiny_lm.load(ROOT / "chapters" / "tiny_lm.npz")


@pytest.fixture(scope="module")
def glue() -> dict[str, object]:
    return glued("chapters/11_a_tiny_model_that_reads")


@pytest.fixture(scope="module")
def held_out(run) -> tuple[np.ndarray, np.ndarray]:
    cfg, _ = run
    return tiny_lm.make_batch(np.random.default_rng(2024), 1000, cfg.half, cfg.vocab, cfg.min_half)


@pytest.fixture(scope="module")
def training_blocks(run) -> list[tuple[int, ...]]:
    """The blocks of every batch training drew, regenerated as training draws them."""
    cfg, _ = run
    rng = np.random.default_rng(cfg.seed)
    tiny_lm.init_params(cfg, rng)
    blocks = []
    for _ in range(cfg.steps + 1):
        tokens, lengths = tiny_lm.make_batch(rng, cfg.batch, cfg.half, cfg.vocab, cfg.min_half)
        blocks += [tuple(t[:n].tolist()) for t, n in zip(tokens, lengths)]
    return blocks


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
    assert "'W_E': (32, 32)" in printed and "'Q0': (2, 32, 16)" in printed and "'O1': (2, 16, 32)" in printed


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


def test_held_out_accuracy_and_head_scores_are_reproduced(printed, run, held_out, glue):
    cfg, result = run
    tokens, lengths = held_out
    acc, prev, ind = scores(result.params, tokens, lengths)
    assert glue["accuracy"] == pytest.approx(acc, abs=1e-12) and glue["chance"] == 1 / 32
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
    assert glue["prev_sum"] == pytest.approx(prev[0].sum(), rel=1e-9)  # "the two heads' scores add up to"
    best_prev, best_ind = int(np.argmax(prev[0])), int(np.argmax(ind[1]))
    assert (glue["prev_head"], glue["ind_head"]) == (best_prev, best_ind)
    named = next(line for line in printed.splitlines() if "previous-token head: head" in line)
    assert numbers(named) == [1, best_prev, 2, best_ind], named  # layer 1's head, layer 2's head


def test_layer_one_is_a_clean_line_only_in_the_first_block(run, held_out, glue):
    cfg, result = run
    tokens, lengths = held_out
    _, weights = array_forward(result.params, tokens)
    head = int(glue["prev_head"])
    a = weights[0][:, head]
    first = [a[b, i, i - 1] for b, n in enumerate(lengths.tolist()) for i in range(1, n)]
    repeat = [a[b, i, i - 1] for b, n in enumerate(lengths.tolist()) for i in range(n, 2 * n)]
    every = first + repeat
    for name, values in (("prev_first", first), ("prev_repeat", repeat), ("prev_all", every)):
        assert glue[name] == pytest.approx(np.mean(values), rel=1e-9), name
    assert np.mean(first) > 0.7 and np.mean(repeat) < 0.5  # "a clean line only in the first block"
    # "the key it looks for, i - L + 1, always lies in the first block"
    assert all(1 <= i - n + 1 <= n - 1 for n in range(cfg.min_half, cfg.half + 1) for i in range(n, 2 * n - 1))


def test_the_heads_figure_as_its_alt_text_describes_it(run, glue):
    """Layer 1's head on the probe, after training: queries 1 to 6 weigh the key before them most; from
    query 9 on no key holds half the weight, and in several rows key 0 holds the largest share."""
    _, result = run
    final = result.snapshots[-1][0][int(glue["prev_head"])]
    assert all(int(np.argmax(final[i, : i + 1])) == i - 1 for i in range(1, 7))
    assert all(final[i, : i + 1].max() < 0.5 for i in range(9, 16))
    assert sum(int(np.argmax(final[i, : i + 1])) == 0 for i in range(9, 16)) >= 3
    induction = result.snapshots[-1][1][int(glue["ind_head"])]
    assert all(induction[i, i - 7] > 0.9 for i in range(8, 15))  # "near 1 after training"
    assert all(int(np.argmax(induction[i, : i + 1])) == i for i in range(1, 7))  # "put their weight on themselves"


def test_the_next_token_of_the_repeat_is_the_block_token_seen_least_recently(held_out):
    tokens, lengths = held_out
    for seq, n in zip(tokens.tolist(), lengths.tolist()):
        for i in range(n, 2 * n - 1):
            last_seen = {t: max(j for j in range(i + 1) if seq[j] == t) for t in seq[:n]}
            assert seq[i + 1] == min(last_seen, key=last_seen.get)


def test_a_block_is_almost_never_drawn_twice(training_blocks, held_out, glue):
    assert glue["blocks_drawn"] == len(training_blocks) == 601 * 64
    repeated = len(training_blocks) - len(set(training_blocks))
    assert glue["blocks_repeated"] == repeated and repeated < 0.01 * len(training_blocks)
    seen = set(training_blocks)
    tokens, lengths = held_out
    assert glue["also_trained"] == sum(tuple(t[:n].tolist()) in seen for t, n in zip(tokens, lengths)) <= 10


def test_the_knock_out_table(printed, run, held_out, glue):
    _, result = run
    tokens, lengths = held_out
    prev, ind = int(glue["prev_head"]), int(glue["ind_head"])
    cases = {
        "none": set(),
        f"layer 1 head {prev}": {(0, prev)},
        f"layer 1 head {1 - prev}": {(0, 1 - prev)},
        "both layer-1 heads": {(0, 0), (0, 1)},
        f"layer 2 head {ind}": {(1, ind)},
        f"layer 2 head {1 - ind}": {(1, 1 - ind)},
        "both layer-2 heads": {(1, 0), (1, 1)},
    }
    acc = {name: repeat_accuracy(result.params, tokens, lengths, frozenset(out)) for name, out in cases.items()}
    table = printed.split("knocked out", 1)[1].split("\n\n")[0]
    for name, value in acc.items():
        assert close(number(table, rf"{re.escape(name)}\s+([0-9.]+)"), value, 3), name
    for key, name in (
        ("ko_prev", f"layer 1 head {prev}"),
        ("ko_layer1", "both layer-1 heads"),
        ("ko_ind", f"layer 2 head {ind}"),
        ("ko_other_ind", f"layer 2 head {1 - ind}"),
        ("ko_layer2", "both layer-2 heads"),
    ):
        assert glue[key] == pytest.approx(acc[name], abs=1e-12), key
    # What the chapter says of them.
    assert acc["both layer-2 heads"] < 0.06  # "chance"
    assert acc["both layer-1 heads"] < acc[f"layer 1 head {prev}"] < acc["none"] - 0.2
    assert min(acc[f"layer 2 head {ind}"], acc[f"layer 2 head {1 - ind}"]) > 0.6  # "each ... keeps much of the job"


def test_only_the_keys_of_layer_two_need_layer_one(run, held_out, glue):
    _, result = run
    tokens, lengths = held_out
    acc = {name: repeat_accuracy(result.params, tokens, lengths, frozenset(), frozenset({(1, name)})) for name in "QKV"}
    for name in "QKV":
        assert glue[f"from_emb_{name.lower()}"] == pytest.approx(acc[name], abs=1e-12)
    assert acc["K"] < 0.5 and acc["Q"] > 0.95 and acc["V"] > 0.95  # "collapses" / "change little"


def test_the_two_circuits(run, glue):
    cfg, result = run
    p = result.params
    prev, ind = int(glue["prev_head"]), int(glue["ind_head"])
    # Positional scores of layer 1's head, by loops over the rows of W_pos.
    w_q, w_k = p["Q0"][prev], p["K0"][prev]
    pos = p["W_pos"]
    behind = 0
    for i in range(1, cfg.half):
        row = [float((pos[i] @ w_q) @ (pos[j] @ w_k)) for j in range(i + 1)]
        behind += int(np.argmax(row)) == i - 1
    assert glue["behind"] == behind >= 5 and glue["first_block_queries"] == cfg.half - 1

    # Copying: row s of W_E W_V W_O W_U, token by token.
    def copies(layer: int, head: int) -> float:
        hits = 0
        for s in range(cfg.vocab):
            row = p["W_E"][s] @ p[f"V{layer}"][head] @ p[f"O{layer}"][head] @ p["W_U"]
            hits += int(np.argmax(row)) == s
        return hits / cfg.vocab

    assert glue["copy_ind"] == copies(1, ind) == 1.0
    assert glue["copy_other_ind"] == copies(1, 1 - ind) > 0.9
    assert glue["copy_layer1_max"] == max(copies(0, 0), copies(0, 1)) < 0.2  # "neither layer-1 head copies"


def test_one_layer_is_above_chance_and_below_two(run, held_out, glue):
    cfg, result = run
    one_cfg, one = tiny_lm.load(ROOT / "chapters" / "tiny_lm_one_layer.npz")
    assert one_cfg.n_layers == 1 and one_cfg.n_heads == cfg.n_heads and one_cfg.steps == cfg.steps
    tokens, lengths = held_out
    one_acc = repeat_accuracy(one.params, tokens, lengths)
    assert glue["one_accuracy"] == pytest.approx(one_acc, abs=1e-12)
    assert glue["one_loss"] == one.losses[-1]
    assert 5 / 32 < one_acc < glue["accuracy"] - 0.3  # "far below ... and far above chance"
    per_length = {
        n: [repeat_accuracy(r.params, tokens[lengths == n], lengths[lengths == n]) for r in (one, result)]
        for n in range(cfg.min_half, cfg.half + 1)
    }
    ones, twos = [a for a, _ in per_length.values()], [b for _, b in per_length.values()]
    assert glue["one_worst"] == pytest.approx(min(ones)) and glue["one_best"] == pytest.approx(max(ones))
    assert glue["two_worst"] == pytest.approx(min(twos)) and min(twos) > 0.95
    assert max(ones) - min(ones) > 0.15  # "depends on the block length"


def test_the_loss_floor_and_where_the_model_loses_more(run, held_out, glue):
    cfg, result = run
    tokens, lengths = held_out
    logits, _ = array_forward(result.params, tokens)
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    count = int(sum(2 * n - 1 for n in lengths.tolist()))
    first = -sum(logp[b, i, tokens[b, i + 1]] for b, n in enumerate(lengths.tolist()) for i in range(n)) / count
    repeat = -sum(logp[b, i, tokens[b, i + 1]] for b, n in enumerate(lengths.tolist()) for i in range(n, 2 * n - 1))
    repeat /= count
    assert glue["held_first"] == pytest.approx(first, rel=1e-9) and glue["held_repeat"] == pytest.approx(
        repeat, rel=1e-9
    )
    assert glue["held_loss"] == pytest.approx(first + repeat, rel=1e-9)
    assert glue["floor"] == tiny_lm.loss_floor(cfg)  # its value is the Bayes loss (test_tiny_lm)
    assert glue["gap_first"] == pytest.approx(first - glue["floor"], rel=1e-9)
    assert repeat < 0.1 < first - glue["floor"]  # "the repeat holds only ...; the rest is in the first block"
    # "whose rules the model has not quite learned": at every position of the first block it loses more
    # than the best predictor's entropy there (which is 0 after 8 tokens: the block has ended).
    for i in range(cfg.half):
        r = 1 / (cfg.half - i) if i + 1 >= cfg.min_half else 0.0
        best = (-r * math.log(r) if r else 0.0) + (-(1 - r) * math.log((1 - r) / (cfg.vocab - i - 1)) if r < 1 else 0.0)
        mine = np.mean([-logp[b, i, tokens[b, i + 1]] for b, n in enumerate(lengths.tolist()) if n > i])
        assert mine > best, i


def test_the_model_writes_a_block_it_never_saw(printed, run, training_blocks, glue):
    cfg, result = run
    new_seq, _ = tiny_lm.make_batch(np.random.default_rng(31), 1, cfg.half, cfg.vocab)
    block = new_seq[0, : cfg.half].tolist()
    assert tuple(block) not in set(training_blocks)  # "and never in training"
    letters = "abcdefghijklmnopqrstuvwxyzABCDEF"
    written = [letters.index(c) for c in re.search(r"model writes:\s+([a-zA-Z ]+)\n", printed)[1].split()]
    shown = numbers(re.search(r"its probability:\s+([0-9. ]+)\n", printed)[1])
    assert written == block[1:]  # "The model writes the rest of the block"
    assert printed_flag(printed, "the model wrote the rest") is True
    # Token by token with the independent forward pass: each chosen token's probability.
    seq, probs = new_seq[0, : cfg.half + 1].tolist(), []
    for token in written:
        logits, _ = array_forward(result.params, np.array([seq]))
        soft = np.exp(logits[0, -1] - logits[0, -1].max())
        probs.append(float(soft[token] / soft.sum()))
        seq.append(token)
    assert all(close(a, b, 2) for a, b in zip(shown, probs)) and len(shown) == len(probs)
    assert glue["lowest_prob"] == pytest.approx(min(probs), rel=1e-9)


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


def test_quiz_one_layer_and_composition_answers_are_the_measured_ones(glue):
    # "Well above chance, but well below the two-layer model": the one-layer model's accuracy.
    assert right_option(QUIZ, "A model with ONE layer")["answer"].startswith("Well above chance")
    assert 5 * glue["chance"] < glue["one_accuracy"] < glue["accuracy"] - 0.3
    # Keys from the embeddings collapse the accuracy, queries and values do not: K-composition.
    assert "K-composition" in right_option(QUIZ, "Layer 2's keys are computed")["answer"]
    assert glue["from_emb_k"] < 0.5 < 0.95 < min(glue["from_emb_q"], glue["from_emb_v"])
