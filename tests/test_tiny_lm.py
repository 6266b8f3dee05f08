"""The tiny attention-only language model of chapter 11 (``lib.tiny_lm``).

The forward pass is checked against ``tests/tiny_lm_reference.py`` (plain
loops over ``tests/naive.py``'s attention, and an independent numpy version),
the cross-entropy against ``math.log`` of a plain-Python softmax, every
gradient against central finite differences in float64, and training, re-run
through the documented commands with one BLAS thread, against the two
committed checkpoints the chapter shows (the two-layer model and the one-layer
baseline) and against the chapter's pass marks, recomputed with the
independent forward pass. The tools for reading a model (knock-outs, rerouted
projections, the QK and OV circuits, the loss floor, the loss by half, writing
token by token) are checked against the same independent forward pass, against
what each one means for the model's own outputs, and, for the loss floor,
against the Bayes-optimal predictor of ``tiny_lm_reference.bayes_loss``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from built_book import ROOT
from tiny_lm_reference import array_forward, array_loss, bayes_loss, loop_logits, loop_loss, repeat_accuracy, scores

from sdpa_course.lib import tiny_lm

SMALL = tiny_lm.Config(vocab=5, half=3, min_half=2, d_model=6, n_heads=2, d_head=3, batch=3)
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


@pytest.fixture
def small() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    params = tiny_lm.init_params(SMALL, rng)
    tokens, lengths = tiny_lm.make_batch(rng, SMALL.batch, SMALL.half, SMALL.vocab, SMALL.min_half)
    return params, tokens, lengths


def test_batches_repeat_a_block_of_distinct_tokens():
    tokens, lengths = tiny_lm.make_batch(np.random.default_rng(3), 200, 8, 16, 4)
    assert tokens.shape == (200, 16) and set(lengths.tolist()) == set(range(4, 9))
    for seq, length in zip(tokens, lengths):
        block = seq[:length]
        assert len(set(block.tolist())) == length
        assert np.array_equal(seq[length : 2 * length], block)
    assert tokens.min() >= 0 and tokens.max() < 16


def test_forward_matches_plain_loops(small):
    params, tokens, _ = small
    fw = tiny_lm.forward(params, tokens)
    assert fw.logits.shape == (SMALL.batch, SMALL.n, SMALL.vocab)
    assert [a.shape for a in fw.weights] == [(SMALL.batch, SMALL.n_heads, SMALL.n, SMALL.n)] * 2
    fast_logits, fast_weights = array_forward(params, tokens)
    for b, seq in enumerate(tokens.tolist()):
        logits, weights = loop_logits(params, seq)
        for mine in (fw.logits[b], fast_logits[b]):
            np.testing.assert_allclose(mine, logits, rtol=1e-12, atol=1e-12)
        for layer in range(2):
            for mine in (fw.weights[layer][b], fast_weights[layer][b]):
                np.testing.assert_allclose(mine, weights[layer], rtol=1e-12, atol=1e-14)


def test_cross_entropy_matches_logs_of_a_plain_softmax(small):
    params, tokens, lengths = small
    loss, _, _ = tiny_lm.loss_and_grads(params, tokens, lengths)
    assert loss == pytest.approx(loop_loss(params, tokens, lengths), rel=1e-12)
    assert array_loss(params, tokens, lengths) == pytest.approx(loop_loss(params, tokens, lengths), rel=1e-12)
    # A uniform guess costs log(vocab) per position, whatever the target.
    targets = np.array([[0, 3, 1]])
    uniform, grad = tiny_lm.cross_entropy(np.zeros((1, 3, 4)), targets, np.array([[1.0, 1.0, 0.0]]))
    assert uniform == pytest.approx(math.log(4), rel=1e-15)
    np.testing.assert_allclose(grad[0, 0], [-0.375, 0.125, 0.125, 0.125])
    assert not grad[0, 2].any()  # an unscored position gets no gradient


def test_every_gradient_matches_central_differences(small):
    params, tokens, lengths = small
    _, grads, _ = tiny_lm.loss_and_grads(params, tokens, lengths)
    assert set(grads) == set(params)
    h = np.finfo(np.float64).eps ** (1 / 3)  # balances truncation (h^2) and rounding (eps / h)
    for name, w in params.items():
        assert grads[name].shape == w.shape
        numeric = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            keep = w[idx]
            w[idx] = keep + h
            up = tiny_lm.loss_and_grads(params, tokens, lengths)[0]
            w[idx] = keep - h
            down = tiny_lm.loss_and_grads(params, tokens, lengths)[0]
            w[idx] = keep
            numeric[idx] = (up - down) / (2 * h)
        error = np.abs(grads[name] - numeric).max() / np.abs(numeric).max()
        assert error < 1e-7, (name, error)


def test_adam_takes_its_first_step_of_size_lr_against_the_gradient():
    params = {"w": np.array([1.0, -2.0, 3.0])}
    grads = {"w": np.array([0.5, -4.0, 0.0])}
    tiny_lm.adam_step(params, grads, {}, 1, 0.1)
    # At step 1 the bias-corrected m / sqrt(u) is g / |g|: a step of lr for every nonzero entry.
    np.testing.assert_allclose(params["w"], [0.9, -1.9, 3.0], atol=1e-8)


def test_bad_input_is_named():
    params = tiny_lm.init_params(SMALL, np.random.default_rng(0))
    with pytest.raises(ValueError, match="tokens must lie in 0 .. 4"):
        tiny_lm.forward(params, np.array([[0, 5]]))
    with pytest.raises(ValueError, match="only 6 position embeddings"):
        tiny_lm.forward(params, np.zeros((1, 7), dtype=int))
    with pytest.raises(ValueError, match="2-d integer array"):
        tiny_lm.forward(params, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="min_half <= half <= vocab"):
        tiny_lm.Config(vocab=4, half=6)
    with pytest.raises(ValueError, match="lr must be a positive"):
        tiny_lm.Config(lr=-1.0)


CHECKPOINT = ROOT / "chapters" / "tiny_lm.npz"
ONE_LAYER = ROOT / "chapters" / "tiny_lm_one_layer.npz"


def train_by_command(out, *options: str) -> tuple[tiny_lm.Config, tiny_lm.TrainResult]:
    """A run through the documented command with one BLAS thread."""
    subprocess.run(
        [sys.executable, "-m", "sdpa_course.lib.tiny_lm", "train", "--out", str(out), *options],
        cwd=ROOT,
        env={**os.environ, **ONE_THREAD},
        check=True,
        capture_output=True,
    )
    return tiny_lm.load(out)


@pytest.fixture(scope="module")
def retrained(tmp_path_factory) -> tuple[tiny_lm.Config, tiny_lm.TrainResult]:
    """The chapter's run again."""
    return train_by_command(tmp_path_factory.mktemp("tiny") / "tiny_lm.npz")


def assert_same_run(again: tiny_lm.TrainResult, committed: tiny_lm.TrainResult) -> None:
    assert set(again.params) == set(committed.params)
    for name, w in committed.params.items():
        np.testing.assert_allclose(again.params[name], w, rtol=1e-9, atol=1e-9, err_msg=name)
    np.testing.assert_allclose(again.losses, committed.losses, rtol=1e-9)
    np.testing.assert_allclose(again.induction_scores, committed.induction_scores, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(again.previous_scores, committed.previous_scores, rtol=1e-9, atol=1e-12)
    for mine, theirs in zip(again.snapshots, committed.snapshots):
        np.testing.assert_allclose(np.stack(mine), np.stack(theirs), rtol=1e-9, atol=1e-12)
    assert np.array_equal(again.probe, committed.probe)


def test_the_command_reproduces_the_committed_checkpoint(retrained):
    cfg, again = retrained
    committed_cfg, committed = tiny_lm.load(CHECKPOINT)
    assert cfg == committed_cfg == tiny_lm.Config()
    assert_same_run(again, committed)


def test_the_command_reproduces_the_one_layer_baseline(tmp_path):
    cfg, again = train_by_command(tmp_path / "one_layer.npz", "--n-layers", "1")
    committed_cfg, committed = tiny_lm.load(ONE_LAYER)
    assert cfg == committed_cfg == dataclasses.replace(tiny_lm.Config(), n_layers=1)
    assert_same_run(again, committed)


def test_training_passes_the_chapters_marks(retrained):
    cfg, result = retrained
    tokens, lengths = tiny_lm.make_batch(np.random.default_rng(99), 300, cfg.half, cfg.vocab, cfg.min_half)
    acc, prev, induction = scores(result.params, tokens, lengths)
    assert acc >= 0.9, acc  # chance is 1 / 32
    assert induction[1].max() >= 0.5, induction  # an induction head in layer 2
    assert prev[0].max() >= 0.5, prev  # a previous-token head in layer 1
    assert induction[0].max() < 0.1  # and layer 1 alone does not do layer 2's job


def test_a_short_run_lowers_the_loss_deterministically(tmp_path):
    cfg = tiny_lm.Config(steps=20, snapshot_every=10)
    first, second = tiny_lm.train(cfg), tiny_lm.train(cfg)
    assert first.losses[-1] < first.losses[0]
    for name in first.params:
        assert np.array_equal(first.params[name], second.params[name])
    assert list(first.snapshot_steps) == [0, 10, 20]
    tiny_lm.save(first, cfg, tmp_path / "short.npz")
    loaded_cfg, loaded = tiny_lm.load(tmp_path / "short.npz")
    assert loaded_cfg == cfg and np.array_equal(loaded.losses, first.losses)


def test_the_command_refuses_to_overwrite(tmp_path):
    out = tmp_path / "keep.npz"
    out.write_bytes(b"mine")
    done = subprocess.run(
        [sys.executable, "-m", "sdpa_course.lib.tiny_lm", "train", "--out", str(out), "--steps", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "exists" in done.stderr
    assert out.read_bytes() == b"mine"


# ---------------------------------------------------------------- reading a model


def test_knock_outs_and_rerouted_projections_match_the_independent_pass(small):
    params, tokens, lengths = small
    changes = [
        ({(0, 1)}, set()),
        ({(0, 0), (1, 1)}, set()),
        (set(), {(1, "K")}),
        (set(), {(1, "Q"), (1, "V")}),
        ({(1, 0)}, {(0, "K"), (1, "K")}),
    ]
    for out, rerouted in changes:
        fw = tiny_lm.forward(params, tokens, knock_out=out, from_embeddings=rerouted)
        logits, weights = array_forward(params, tokens, frozenset(out), frozenset(rerouted))
        np.testing.assert_allclose(fw.logits, logits, rtol=1e-12, atol=1e-12)
        for mine, theirs in zip(fw.weights, weights):
            np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)
        assert tiny_lm.accuracy(params, tokens, lengths, knock_out=out, from_embeddings=rerouted) == repeat_accuracy(
            params, tokens, lengths, frozenset(out), frozenset(rerouted)
        )
    # Layer 0's projections read the embeddings anyway: rerouting them changes nothing.
    plain = tiny_lm.forward(params, tokens).logits
    assert np.array_equal(tiny_lm.forward(params, tokens, from_embeddings={(0, "Q"), (0, "K"), (0, "V")}).logits, plain)
    # Knocking out every head leaves the direct path: logits = (W_E[t] + W_pos) W_U.
    every = {(layer, g) for layer in range(2) for g in range(SMALL.n_heads)}
    direct = (params["W_E"][tokens] + params["W_pos"][: tokens.shape[1]]) @ params["W_U"]
    np.testing.assert_allclose(tiny_lm.forward(params, tokens, knock_out=every).logits, direct, rtol=1e-12)


def test_a_changed_pass_is_for_reading_only_and_bad_changes_are_named(small):
    params, tokens, lengths = small
    fw = tiny_lm.forward(params, tokens, knock_out={(0, 0)})
    with pytest.raises(ValueError, match="backward needs the model's own forward pass"):
        tiny_lm.backward(params, fw, np.zeros_like(fw.logits))
    with pytest.raises(ValueError, match="knock_out names layer 2 head 0"):
        tiny_lm.forward(params, tokens, knock_out={(2, 0)})
    with pytest.raises(ValueError, match="from_embeddings names"):
        tiny_lm.forward(params, tokens, from_embeddings={(1, "W")})
    with pytest.raises(ValueError, match="part must be one of"):
        tiny_lm.previous_token_score(fw.weights[0], lengths, part="second")


def test_previous_token_scores_of_each_half(small):
    params, tokens, lengths = small
    weights = tiny_lm.forward(params, tokens).weights[0]
    for part, queries in (
        ("all", lambda n: range(1, 2 * n)),
        ("first", lambda n: range(1, n)),
        ("repeat", lambda n: range(n, 2 * n)),
    ):
        picked = [weights[b, :, i, i - 1] for b, n in enumerate(lengths.tolist()) for i in queries(n)]
        np.testing.assert_allclose(tiny_lm.previous_token_score(weights, lengths, part), np.mean(picked, axis=0))


def test_the_qk_circuit_gives_the_heads_scores(small):
    params, tokens, _ = small
    fw = tiny_lm.forward(params, tokens)
    for layer in range(2):
        x = fw.streams[layer]
        for g in range(SMALL.n_heads):
            q, k = x @ params[f"Q{layer}"][g], x @ params[f"K{layer}"][g]
            w_qk = tiny_lm.qk_circuit(params, layer, g)
            assert w_qk.shape == (SMALL.d_model, SMALL.d_model)
            np.testing.assert_allclose(x @ w_qk @ x.transpose(0, 2, 1), q @ k.transpose(0, 2, 1), rtol=1e-12)


def test_the_ov_circuit_is_what_a_head_adds_to_the_logits_when_it_reads_one_token():
    params = tiny_lm.init_params(SMALL, np.random.default_rng(4))
    params["W_pos"][:] = 0.0  # so that a one-token sequence's stream is W_E[s] alone
    others = {(layer, g) for layer in range(2) for g in range(SMALL.n_heads)}
    for g in range(SMALL.n_heads):
        circuit = tiny_lm.ov_circuit(params, 0, g)
        assert circuit.shape == (SMALL.vocab, SMALL.vocab)
        for s in range(SMALL.vocab):
            # One token: the head's only key is the token itself, with weight 1.
            alone = tiny_lm.forward(params, np.array([[s]]), knock_out=others - {(0, g)}).logits[0, 0]
            direct = params["W_E"][s] @ params["W_U"]
            np.testing.assert_allclose(alone - direct, circuit[s], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="no layer 0 head 5"):
        tiny_lm.ov_circuit(params, 0, 5)


def test_copying_fraction_counts_rows_that_favour_their_own_token():
    assert tiny_lm.copying_fraction(np.eye(4) + 0.1) == 1.0
    assert tiny_lm.copying_fraction(np.roll(np.eye(4), 1, axis=1)) == 0.0
    mixed = np.array([[2.0, 1.0, 0.0], [3.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert tiny_lm.copying_fraction(mixed) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="square matrix"):
        tiny_lm.copying_fraction(np.ones((2, 3)))


def test_the_loss_floor_is_the_loss_of_the_bayes_optimal_predictor():
    rng = np.random.default_rng(11)
    for cfg in (tiny_lm.Config(), tiny_lm.Config(vocab=10, half=5, min_half=2)):
        tokens, lengths = tiny_lm.make_batch(rng, 3000, cfg.half, cfg.vocab, cfg.min_half)
        best = bayes_loss(tokens, lengths, cfg.vocab, cfg.min_half, cfg.half)
        # The batch's loss is a ratio of sums over random sequences; 3000 of them put
        # it within a few hundredths of the expectation (a generous allowance).
        assert tiny_lm.loss_floor(cfg) == pytest.approx(best, abs=0.03)
    # With one block length and no room to guess, only the first block's new tokens cost.
    fixed = tiny_lm.Config(vocab=4, half=2, min_half=2)
    # positions 0, 1 score log 3 and 0 (after two tokens the repeat is certain), then 0 twice: over 3 positions.
    assert tiny_lm.loss_floor(fixed) == pytest.approx(math.log(3) / 3, rel=1e-12)


def test_the_loss_by_half_adds_up_to_the_training_loss(small):
    params, tokens, lengths = small
    parts = tiny_lm.loss_by_part(params, tokens, lengths)
    assert parts["all"] == pytest.approx(array_loss(params, tokens, lengths), rel=1e-12)
    assert parts["first"] + parts["repeat"] == pytest.approx(parts["all"], rel=1e-12)
    logits, _ = array_forward(params, tokens)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    count = int(sum(2 * n - 1 for n in lengths.tolist()))
    repeat = -sum(logp[b, i, tokens[b, i + 1]] for b, n in enumerate(lengths.tolist()) for i in range(n, 2 * n - 1))
    assert parts["repeat"] == pytest.approx(repeat / count, rel=1e-10)


def test_writing_token_by_token_follows_the_models_own_probabilities(small):
    params, tokens, _ = small
    prompt = tokens[0, :2]
    greedy, probs = tiny_lm.continue_tokens(params, prompt, SMALL.n - 2)
    seq = prompt.tolist()
    for token, p in zip(greedy.tolist(), probs.tolist()):
        logits, _ = array_forward(params, np.array([seq]))
        soft = np.exp(logits[0, -1] - logits[0, -1].max())
        soft /= soft.sum()
        assert token == int(soft.argmax()) and p == pytest.approx(soft[token], rel=1e-12)
        seq.append(token)
    first, _ = tiny_lm.continue_tokens(params, prompt, 4, np.random.default_rng(1))
    again, _ = tiny_lm.continue_tokens(params, prompt, 4, np.random.default_rng(1))
    assert np.array_equal(first, again)
    with pytest.raises(ValueError, match="must be 1 to 6 tokens"):
        tiny_lm.continue_tokens(params, prompt, 5)


def test_training_blocks_are_the_blocks_training_draws():
    cfg = tiny_lm.Config(steps=3, batch=5)
    blocks = tiny_lm.training_blocks(cfg)
    assert len(blocks) == 4 * 5
    rng = np.random.default_rng(cfg.seed)
    tiny_lm.init_params(cfg, rng)  # training draws its starting weights first
    for step in range(4):
        tokens, lengths = tiny_lm.make_batch(rng, cfg.batch, cfg.half, cfg.vocab, cfg.min_half)
        assert blocks[5 * step : 5 * step + 5] == [tuple(t[:n].tolist()) for t, n in zip(tokens, lengths)]


def test_position_scores_are_a_layer_one_heads_scores_when_every_token_embedding_is_zero(small):
    params, tokens, _ = small
    params = {**params, "W_E": np.zeros_like(params["W_E"])}
    _, weights = array_forward(params, tokens)
    for g in range(SMALL.n_heads):
        scores = tiny_lm.position_scores(params, 0, g)[: SMALL.n, : SMALL.n]
        assert np.isneginf(scores[np.triu_indices(SMALL.n, 1)]).all()
        soft = np.exp(scores - scores.max(axis=1, keepdims=True))
        np.testing.assert_allclose(soft / soft.sum(axis=1, keepdims=True), weights[0][0, g], rtol=1e-12, atol=1e-14)
