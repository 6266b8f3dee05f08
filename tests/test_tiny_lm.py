"""The tiny attention-only language model of chapter 11 (``lib.tiny_lm``).

The forward pass is checked against ``tests/tiny_lm_reference.py`` (plain
loops over ``tests/naive.py``'s attention, and an independent numpy version),
the cross-entropy against ``math.log`` of a plain-Python softmax, every
gradient against central finite differences in float64, and training, re-run
through the documented command with one BLAS thread, against the committed
checkpoint the chapter shows and against the chapter's pass marks, recomputed
with the independent forward pass.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from built_book import ROOT
from tiny_lm_reference import array_forward, array_loss, loop_logits, loop_loss, scores

from lib import tiny_lm

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


@pytest.fixture(scope="module")
def retrained(tmp_path_factory) -> tuple[tiny_lm.Config, tiny_lm.TrainResult]:
    """The chapter's run again, through the documented command with one BLAS thread."""
    out = tmp_path_factory.mktemp("tiny") / "tiny_lm.npz"
    subprocess.run(
        [sys.executable, "-m", "lib.tiny_lm", "train", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, **ONE_THREAD},
        check=True,
        capture_output=True,
    )
    return tiny_lm.load(out)


def test_the_command_reproduces_the_committed_checkpoint(retrained):
    cfg, again = retrained
    committed_cfg, committed = tiny_lm.load(CHECKPOINT)
    assert cfg == committed_cfg == tiny_lm.Config()
    for name, w in committed.params.items():
        np.testing.assert_allclose(again.params[name], w, rtol=1e-9, atol=1e-9, err_msg=name)
    np.testing.assert_allclose(again.losses, committed.losses, rtol=1e-9)
    np.testing.assert_allclose(again.induction_scores, committed.induction_scores, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(again.previous_scores, committed.previous_scores, rtol=1e-9, atol=1e-12)
    for mine, theirs in zip(again.snapshots, committed.snapshots):
        np.testing.assert_allclose(np.stack(mine), np.stack(theirs), rtol=1e-9, atol=1e-12)
    assert np.array_equal(again.probe, committed.probe)


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
        [sys.executable, "-m", "lib.tiny_lm", "train", "--out", str(out), "--steps", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "exists" in done.stderr
    assert out.read_bytes() == b"mine"
