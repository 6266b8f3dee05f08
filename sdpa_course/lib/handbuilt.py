"""Hand-built attention heads whose patterns mean something.

The random example sentence of :mod:`lib.examples` shows how attention
computes; its patterns mean nothing. The inputs here are built by hand from
features a reader can name (a word, a position, "singular noun"), so the
reader can predict each heatmap before seeing it. As in :mod:`lib.examples`,
only inputs live here; every result comes from the library's attention.

- :func:`lookup_table` and :func:`lookup_query`: attention as a soft
  dictionary lookup over orthogonal keys (chapter 1).
- :func:`one_hot_words`: one-hot word vectors, whose raw scores only match a
  word with itself (chapter 2).
- :func:`pronoun_head`: a query projection that makes a pronoun look for a
  noun of the same number, and a key projection that makes nouns offer their
  number (chapters 3 and 4).
- :func:`previous_token_head`: one-hot position features and projections that
  make every position look at the position before it (chapter 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

__all__ = [
    "LOOKUP_NAMES",
    "PRONOUN_FEATURES",
    "PRONOUN_LEXICON",
    "PRONOUN_SENTENCE",
    "lookup_table",
    "lookup_query",
    "one_hot_words",
    "pronoun_head",
    "previous_token_head",
]

#: The entries of the soft dictionary of chapter 1.
LOOKUP_NAMES: tuple[str, ...] = ("apple", "banana", "cherry", "date")

#: The features of the pronoun head, one coordinate each of a token vector.
PRONOUN_FEATURES: tuple[str, ...] = (
    "singular noun",
    "plural noun",
    "singular pronoun",
    "plural pronoun",
    "other word",
)

#: Which feature each known word has; every other word is an "other word".
PRONOUN_LEXICON: dict[str, str] = {
    "cat": "singular noun",
    "dog": "singular noun",
    "mat": "singular noun",
    "girl": "singular noun",
    "cats": "plural noun",
    "dogs": "plural noun",
    "mats": "plural noun",
    "girls": "plural noun",
    "it": "singular pronoun",
    "she": "singular pronoun",
    "he": "singular pronoun",
    "they": "plural pronoun",
}

#: The sentence of the pronoun head: "it" refers to the cat, not to the nearer "dogs".
PRONOUN_SENTENCE: tuple[str, ...] = ("the", "cat", "saw", "the", "dogs", "and", "it", "ran")


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number; got {type(value).__name__}")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return float(value)


def _tokens(tokens: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens) or len(tokens) == 0:
        raise ValueError(f"tokens must be a non-empty sequence of words (strings); got {tokens!r}")
    return tuple(tokens)


def lookup_table() -> dict[str, np.ndarray | tuple[str, ...]]:
    """A four-entry dictionary stored as keys and values for attention.

    Returns ``{"names": LOOKUP_NAMES, "keys": (4, 4), "values": (4, 1)}``. Key
    j is the j-th unit vector, so the keys are orthogonal: each key has length
    1 and dot product 0 with every other key. Value j is the price stored
    under name j: 10, 20, 30 and 40.

    Examples
    --------
    >>> table = lookup_table()
    >>> table["names"]
    ('apple', 'banana', 'cherry', 'date')
    >>> table["keys"] @ table["keys"].T                 # orthogonal, length 1
    array([[1., 0., 0., 0.],
           [0., 1., 0., 0.],
           [0., 0., 1., 0.],
           [0., 0., 0., 1.]])
    >>> table["values"].ravel()
    array([10., 20., 30., 40.])
    """
    return {
        "names": LOOKUP_NAMES,
        "keys": np.eye(len(LOOKUP_NAMES)),
        "values": 10.0 * np.arange(1, len(LOOKUP_NAMES) + 1, dtype=float)[:, None],
    }


def lookup_query(*names: str, sharpness: float = 6.0) -> np.ndarray:
    """A query asking for one or more entries of :func:`lookup_table`.

    The query is ``sharpness`` times the mean of the named keys, shape (4,).
    Its dot product with a named key is ``sharpness / len(names)``, and 0 with
    every other key.

    Examples
    --------
    >>> lookup_query("cherry")
    array([0., 0., 6., 0.])
    >>> lookup_query("cherry", "date", sharpness=2.0)
    array([0., 0., 1., 1.])
    >>> lookup_query("kiwi")
    Traceback (most recent call last):
    ...
    ValueError: unknown entry 'kiwi'; the table holds ('apple', 'banana', 'cherry', 'date')
    """
    if not names:
        raise ValueError("name at least one entry of the table")
    sharpness = _positive("sharpness", sharpness)
    keys = cast(np.ndarray, lookup_table()["keys"])
    rows = []
    for name in names:
        if name not in LOOKUP_NAMES:
            raise ValueError(f"unknown entry {name!r}; the table holds {LOOKUP_NAMES}")
        rows.append(keys[LOOKUP_NAMES.index(name)])
    query: np.ndarray = sharpness * np.mean(rows, axis=0)
    return query


def one_hot_words(tokens: tuple[str, ...] | list[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """One-hot word vectors: ``(vocabulary, x)`` with x of shape (n, len(vocabulary)).

    The vocabulary is the sorted set of the words; row i of ``x`` has a 1 in
    the column of token i's word and 0 elsewhere. Two tokens of the same word
    get the same row.

    Examples
    --------
    >>> vocab, x = one_hot_words(("the", "cat", "sat", "on", "the", "mat"))
    >>> vocab
    ('cat', 'mat', 'on', 'sat', 'the')
    >>> x[0]
    array([0., 0., 0., 0., 1.])
    """
    tokens = _tokens(tokens)
    vocab = tuple(sorted(set(tokens)))
    x = np.zeros((len(tokens), len(vocab)))
    x[np.arange(len(tokens)), [vocab.index(t) for t in tokens]] = 1.0
    return vocab, x


def pronoun_head(
    tokens: tuple[str, ...] | list[str] = PRONOUN_SENTENCE, sharpness: float = 8.0
) -> dict[str, np.ndarray | tuple[str, ...]]:
    """A head in which a pronoun looks for a noun of the same number.

    Token i's vector ``x[i]`` is one-hot over :data:`PRONOUN_FEATURES`
    (d_model = 5), from :data:`PRONOUN_LEXICON`; a word not in the lexicon is
    an "other word". Queries and keys have d_k = 2 coordinates, "singular"
    and "plural":

    - ``w_q`` (5, 2) gives a singular pronoun the query ``sharpness * (1, 0)``
      ("I look for something singular") and a plural pronoun
      ``sharpness * (0, 1)``; every other token gets the query (0, 0).
    - ``w_k`` (5, 2) gives a singular noun the key (1, 0) ("I am something
      singular") and a plural noun (0, 1); every other token the key (0, 0).
    - ``w_v`` (5, 5) is the identity: a value is the token's own features.

    So the score q_i . k_j is ``sharpness`` when i is a pronoun and j a noun
    of the same number, and 0 for every other pair. Returns
    ``{"tokens", "features", "x", "w_q", "w_k", "w_v"}``.

    Examples
    --------
    >>> head = pronoun_head()
    >>> head["tokens"]
    ('the', 'cat', 'saw', 'the', 'dogs', 'and', 'it', 'ran')
    >>> q, k = head["x"] @ head["w_q"], head["x"] @ head["w_k"]
    >>> q[6], k[1], k[4]                            # "it"; "cat"; "dogs"
    (array([8., 0.]), array([1., 0.]), array([0., 1.]))
    """
    tokens = _tokens(tokens)
    sharpness = _positive("sharpness", sharpness)
    column = {name: c for c, name in enumerate(PRONOUN_FEATURES)}
    x = np.zeros((len(tokens), len(PRONOUN_FEATURES)))
    for i, word in enumerate(tokens):
        x[i, column[PRONOUN_LEXICON.get(word, "other word")]] = 1.0
    w_q = np.zeros((len(PRONOUN_FEATURES), 2))
    w_q[column["singular pronoun"], 0] = sharpness
    w_q[column["plural pronoun"], 1] = sharpness
    w_k = np.zeros((len(PRONOUN_FEATURES), 2))
    w_k[column["singular noun"], 0] = 1.0
    w_k[column["plural noun"], 1] = 1.0
    return {
        "tokens": tokens,
        "features": PRONOUN_FEATURES,
        "x": x,
        "w_q": w_q,
        "w_k": w_k,
        "w_v": np.eye(len(PRONOUN_FEATURES)),
    }


def previous_token_head(
    tokens: tuple[str, ...] | list[str], sharpness: float = 12.0
) -> dict[str, np.ndarray | tuple[str, ...]]:
    """A head in which every position looks at the position just before it.

    Token i's vector is its one-hot word (as :func:`one_hot_words`, width
    ``len(vocab)``) followed by a one-hot position: a 1 in coordinate i of n
    (0-based). d_model = len(vocab) + n, d_k = n, d_v = len(vocab).

    - ``w_q`` reads only the position part: position i gets the query
      ``sharpness`` times unit vector i - 1 ("I look for position i - 1");
      position 0 has no previous position and gets the zero query.
    - ``w_k`` reads only the position part: position j gets the key unit
      vector j ("I am position j").
    - ``w_v`` reads only the word part: a value is the token's one-hot word.

    So q_i . k_j is ``sharpness`` when j = i - 1 and 0 otherwise, and the
    output of position i is close to the word of position i - 1. Returns
    ``{"tokens", "vocab", "x", "w_q", "w_k", "w_v"}``.

    Examples
    --------
    >>> head = previous_token_head(("the", "cat", "sat"), sharpness=1.0)
    >>> head["vocab"], head["x"].shape
    (('cat', 'sat', 'the'), (3, 6))
    >>> head["x"] @ head["w_q"] @ (head["x"] @ head["w_k"]).T   # q_i . k_j
    array([[0., 0., 0.],
           [1., 0., 0.],
           [0., 1., 0.]])
    """
    tokens = _tokens(tokens)
    sharpness = _positive("sharpness", sharpness)
    vocab, words = one_hot_words(tokens)
    n, v = len(tokens), len(vocab)
    x = np.concatenate([words, np.eye(n)], axis=1)
    w_q = np.zeros((v + n, n))
    w_q[v + np.arange(1, n), np.arange(n - 1)] = sharpness  # position i -> unit vector i - 1
    w_k = np.zeros((v + n, n))
    w_k[v + np.arange(n), np.arange(n)] = 1.0  # position j -> unit vector j
    w_v = np.zeros((v + n, v))
    w_v[np.arange(v), np.arange(v)] = 1.0  # the word part, unchanged
    return {"tokens": tokens, "vocab": vocab, "x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v}
