"""Chapter 9's statements about numerics, positions and Adam, checked apart
from its training numbers (which ``test_chapter_09_numbers.py`` recomputes).

- The optional note on finite differences: machine epsilons from numpy's
  ``finfo``, and the best step and error of a central difference measured
  here on smooth functions whose derivatives are known exactly.
- The lesson's sentence about projected spaces lives in chapter 3, where the
  projections are introduced, not in chapter 9's argument for positions.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SEED_SENTENCE = "They are not the original token embeddings"

# (f, f') pairs and points: the derivative is known in closed form.
FUNCTIONS = [(np.sin, np.cos), (np.exp, np.exp), (np.tanh, lambda t: 1 - np.tanh(t) ** 2)]
POINTS = (0.3, 0.7, 1.9)
STEPS = 10.0 ** np.arange(-9, -0.9, 0.25)


def _errors(dtype: type) -> list[tuple[float, float, float]]:
    """(best step, its relative error, the relative error at h = 1e-6) per case."""
    found = []
    for f, df in FUNCTIONS:
        for x0 in POINTS:
            x, exact = dtype(x0), float(df(x0))
            errors = [
                abs(float((f(x + dtype(h)) - f(x - dtype(h))) / (dtype(2) * dtype(h))) - exact) / abs(exact)
                for h in STEPS
            ]
            at_1e6 = errors[int(np.argmin(abs(np.log10(STEPS) + 6)))]
            i = int(np.argmin(errors))
            found.append((float(STEPS[i]), errors[i], at_1e6))
    return found


def test_float32_rounding_is_2_to_the_29_times_float64s():
    # "the rounding term is 2^29, about 5 x 10^8 times larger"
    ratio = np.finfo(np.float32).eps / np.finfo(np.float64).eps
    assert ratio == 2.0**29
    assert round(ratio / 1e8) == 5
    assert np.finfo(np.float32).eps == 2.0**-23 and np.finfo(np.float64).eps == 2.0**-52


def test_the_balancing_step_is_eps_to_the_third():
    # "the best step is near eps^(1/3) ~ 6 x 10^-6" (float64) and "~ 5 x 10^-3" (float32)
    assert round(np.finfo(np.float64).eps ** (1 / 3) * 1e6) == 6
    assert round(np.finfo(np.float32).eps ** (1 / 3) * 1e3) == 5


def test_measured_best_steps_and_errors_of_central_differences():
    f64, f32 = _errors(np.float64), _errors(np.float32)
    # float64: the best step lies within a factor of ten of eps^(1/3), and h = 1e-6 is close to it.
    assert all(1e-6 <= h <= 3e-5 for h, _, _ in f64)
    assert all(at < 1e-9 for _, _, at in f64)
    # float32: the best step is near 5e-3 and leaves about five digits...
    assert all(1e-3 <= h <= 1e-2 for h, _, _ in f32)
    digits = -math.log10(math.exp(np.mean([math.log(e) for _, e, _ in f32])))
    assert 4.5 <= digits <= 6.0, digits
    # ...while h = 1e-6 keeps two digits at most (relative errors of half a percent or more).
    assert all(5e-3 < at < 1 for _, _, at in f32)


def test_the_seed_sentence_on_projected_spaces_is_in_chapter_3_not_9():
    ch03 = (ROOT / "chapters/03_queries_keys_values.md").read_text(encoding="utf-8")
    ch09 = (ROOT / "chapters/09_a_head_that_learns.md").read_text(encoding="utf-8")
    assert SEED_SENTENCE in " ".join(ch03.split())
    assert SEED_SENTENCE not in " ".join(ch09.split())
    # the seed's T is mapped to the book's n
    said = " ".join(ch03.split())
    assert "number of tokens *T*" in said and "this book calls it $n$" in said
