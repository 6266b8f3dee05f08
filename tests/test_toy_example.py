"""Seed 002's toy example, checked against plain math.exp (not against lib)."""

import math

import numpy as np

from sdpa_course import lib


def exact_toy_values():
    s = 1.0 / math.sqrt(2.0)  # q.k_0 = 1, q.k_1 = 0, scaled by 1/sqrt(2)
    a0 = math.exp(s) / (math.exp(s) + math.exp(0.0))
    a1 = 1.0 - a0
    return [a0, a1], [a0 * 2.0 + a1 * 4.0, a0 * 3.0 + a1 * 5.0]


def test_toy_example_matches_math_exp_to_1e_10():
    ex = lib.seed_toy_example()
    out, w = lib.scaled_dot_product_attention(ex["q"], ex["k"], ex["v"], return_weights=True)
    weights, output = exact_toy_values()
    np.testing.assert_allclose(w[0], weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(out[0], output, rtol=0, atol=1e-10)


def test_exact_values_are_the_ones_the_book_quotes_not_the_seeds_slip():
    weights, output = exact_toy_values()
    assert [round(x, 8) for x in weights] == [0.66976155, 0.33023845]
    assert [round(x, 8) for x in output] == [2.6604769, 3.6604769]
    # The seed prints 0.66974149 (off from the fifth decimal) and 2.66051702 (from the fourth).
    assert abs(weights[0] - 0.66974149) > 1e-5
    assert abs(output[0] - 2.66051702) > 1e-5


def test_one_query_form_gives_the_toy_numbers():
    ex = lib.seed_toy_example()
    o, a = lib.attend_one_query(ex["q"][0], ex["k"], ex["v"])
    weights, output = exact_toy_values()
    np.testing.assert_allclose(a, weights, atol=1e-12)
    np.testing.assert_allclose(o, output, atol=1e-12)
