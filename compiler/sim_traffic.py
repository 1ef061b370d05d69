"""The traffic a simulation serves: arrivals, prompt and output lengths, prefix caching.

Contract: pure functions of a `Workload` and a `numpy.random.Generator`, drawing in the order
`simulate.simulate` documents (arrival gaps, prompt lengths, output lengths); all quantities SI
(seconds, tokens); inputs out of their domain raise `ValueError`.

Workload (`Workload`)
- Arrivals: renewal process of rate `rate` (requests/s, the whole group). Gaps are exponential
  when `arrival_cv == 1`, Gamma with shape 1/cv² and mean 1/rate otherwise (vLLM's benchmark
  `--burstiness` is 1/cv²), constant when `arrival_cv == 0`.
- Prompt and output lengths: independent lognormals fitted to a mean and a p99 (`lognormal_fit`):
  sigma = z − sqrt(z² − 2 ln(p99/mean)) with z the p99 normal quantile, mu = ln(mean) − sigma²/2;
  constant when p99 == mean; p99/mean must lie in [1, exp(z²/2) ≈ 15]. Samples are rounded to
  integers ≥ 1. With `max_context`, the prompt is clipped to `max_context − 1` and the output to
  `max_context − prompt`, so that a request never exceeds the context window.
- Length histograms: `prompt_bins` or `output_bins`, when given, are (length, share) pairs, and
  the lengths are drawn from them instead (a bin by its normalised share, its length as given);
  the mean and p99 are then only their summary. A class has its own (`LengthClass`).
- Request classes: with `classes`, each request first draws its class (`share`s, normalised, are
  the probabilities), then its prompt and output from that class's lognormals (all prompts, then
  all outputs, class by class in order); the workload's own means and p99s are then only its
  summary. Without classes nothing is drawn for them, so a one-class workload's stream is as it
  was.
- Prefix caching: `prefix_hit_rate` h gives each request floor(h · prompt) cached tokens (at most
  prompt − 1: the last prompt token is always computed). They need no prefill, but their KV is
  counted in the request's own blocks (no sharing between requests is modelled: conservative on
  memory, exact on compute).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z99 = 2.3263478740408408
"""The 0.99 quantile of the standard normal distribution."""

@dataclass(frozen=True)
class LengthClass:
    """One request class of a mixed workload: its share of the requests and its lengths."""

    share: float
    prompt_mean: float
    prompt_p99: float
    output_mean: float
    output_p99: float
    prompt_bins: tuple[tuple[float, float], ...] = ()
    output_bins: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class Workload:
    """The traffic of the whole group (see the contract for each field's meaning)."""

    rate: float
    prompt_mean: float
    prompt_p99: float
    output_mean: float
    output_p99: float
    arrival_cv: float = 1.0
    prefix_hit_rate: float = 0.0
    max_context: int | None = None
    classes: tuple[LengthClass, ...] = ()
    prompt_bins: tuple[tuple[float, float], ...] = ()
    output_bins: tuple[tuple[float, float], ...] = ()


def lognormal_fit(mean: float, p99: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal with this mean and 99th percentile (sigma 0 when equal)."""
    if not (mean > 0 and p99 >= mean):
        raise ValueError(f"a length needs 0 < mean <= p99 (got mean {mean}, p99 {p99})")
    disc = Z99 * Z99 - 2 * math.log(p99 / mean)
    if disc < 0:
        raise ValueError(f"p99/mean = {p99 / mean:.3g} exceeds what a lognormal allows ({math.exp(Z99 * Z99 / 2):.3g})")
    sigma = Z99 - math.sqrt(disc)
    return math.log(mean) - sigma * sigma / 2, sigma


def sample_lengths(mean: float, p99: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n lengths from the fitted lognormal, rounded to integers >= 1."""
    mu, sigma = lognormal_fit(mean, p99)
    raw = np.full(n, mean) if sigma == 0 else rng.lognormal(mu, sigma, n)
    return np.maximum(np.rint(raw), 1).astype(np.int64)


def histogram_lengths(bins: tuple[tuple[float, float], ...], n: int, rng: np.random.Generator) -> np.ndarray:
    """n lengths drawn from (length, share) bins by their normalised shares, rounded to integers >= 1."""
    picked = np.array([length for length, _ in bins], dtype=float)[_pick([s for _, s in bins], n, rng, "bin")]
    return np.asarray(np.maximum(np.rint(picked), 1), dtype=np.int64)


def _pick(shares: list[float], n: int, rng: np.random.Generator, what: str) -> np.ndarray:
    """n indices into `shares`, each drawn with its normalised share as its probability."""
    weights = np.array(shares, dtype=float)
    if not (np.all(weights >= 0) and weights.sum() > 0):
        raise ValueError(f"{what} shares must be >= 0 and not all 0")
    return np.asarray(rng.choice(len(weights), size=n, p=weights / weights.sum()), dtype=np.int64)


def _draw(mean: float, p99: float, bins: tuple[tuple[float, float], ...], n: int, rng: np.random.Generator) -> np.ndarray:
    return histogram_lengths(bins, n, rng) if bins else sample_lengths(mean, p99, n, rng)


def arrival_times(rate: float, cv: float, duration: float, rng: np.random.Generator) -> np.ndarray:
    """Arrival instants in [0, duration) of the renewal process described in the contract."""
    expected = rate * duration
    n = int(expected + 8 * math.sqrt(expected) * max(cv, 1.0) + 16)
    gaps = np.empty(0)
    while gaps.sum() < duration:
        more = np.full(n, 1 / rate) if cv == 0 else rng.gamma(1 / (cv * cv), cv * cv / rate, n)
        gaps = np.concatenate([gaps, more])
    times = np.cumsum(gaps)
    return times[times < duration]


def lengths(workload: Workload, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n (prompt, output, class index) of requests, in this order from `rng`, clipped to the
    context window (class 0 throughout without classes)."""
    if not workload.classes:
        klass = np.zeros(n, dtype=np.int64)
        prompt = _draw(workload.prompt_mean, workload.prompt_p99, workload.prompt_bins, n, rng)
        output = _draw(workload.output_mean, workload.output_p99, workload.output_bins, n, rng)
    else:
        klass = _pick([c.share for c in workload.classes], n, rng, "class")
        prompt, output = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        for i, c in enumerate(workload.classes):
            prompt[klass == i] = _draw(c.prompt_mean, c.prompt_p99, c.prompt_bins, int((klass == i).sum()), rng)
        for i, c in enumerate(workload.classes):
            output[klass == i] = _draw(c.output_mean, c.output_p99, c.output_bins, int((klass == i).sum()), rng)
    if workload.max_context is not None:
        prompt = np.minimum(prompt, workload.max_context - 1)
        output = np.minimum(output, workload.max_context - prompt)
    return prompt, output, klass
