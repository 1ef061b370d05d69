"""The figures a kind may declare, and the roles each one reads: the contract between the
physics (the stdlib's kinds) and the report's drawings.

Contract
- A kind declares a figure with `figure NAME { role = field; ... }`: for each instance, the
  report draws figure NAME from the quantities the roles name, and from nothing else — it knows
  no field of any kind. `FIGURES` lists every NAME with its required and optional roles and what
  each role means; the elaborator checks each declaration against it (an unknown figure or role,
  a missing required one, is E0212 at the declaration; a role that names no quantity of the
  instance is the usual unknown-name error at the role), so renaming a field the physics
  declares a figure from is an error at the figure, never a figure that silently vanishes.
- A role names a quantity (a reference to a node), or, where `FIGURES` says `static`, a static
  value (an enumeration member, shown by its name).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FigureKind:
    description: str
    required: dict[str, str]  # role → what it is
    optional: dict[str, str]
    static: frozenset[str] = frozenset()  # roles whose value is an enumeration member, not a quantity

    @property
    def roles(self) -> dict[str, str]:
        return {**self.required, **self.optional}


_MEMORY = {
    "weights": "weight bytes on one device",
    "overhead": "the runtime's bytes on one device beside weights and KV",
    "kv": "KV-cache bytes of the batch on one device",
    "usable": "the memory one device can fill",
    "batch": "sequences per replica (an input the figure varies)",
    "context": "tokens per sequence (an input the figure varies)",
}

FIGURES: dict[str, FigureKind] = {
    "roofline": FigureKind(
        "attainable FLOP/s against arithmetic intensity, with the steps placed on the roof",
        required={"peak": "peak FLOP/s of one device", "ridge": "the ridge point, peak over bandwidth"},
        optional={"bandwidth": "memory bandwidth the ridge divides by (else peak over ridge)",
                  "compute_class": "the compute class of the peak (a dtype), named in the title",
                  "decode": "arithmetic intensity of a decode step", "prefill": "arithmetic intensity of a prefill chunk"},
        static=frozenset({"compute_class"})),
    "memory_batch": FigureKind(
        "memory per device stacked over the batch, against the usable memory",
        required={k: _MEMORY[k] for k in ("batch", "context", "weights", "overhead", "kv", "usable")},
        optional={"max_batch": "the admission limit, which widens the axis"}),
    "memory_context": FigureKind(
        "memory per device stacked over the context, against the usable memory",
        required={k: _MEMORY[k] for k in ("batch", "context", "weights", "overhead", "kv", "usable")},
        optional={"max_context": "the model's longest context, the end of the axis (else 16 × the context)"}),
    "latency_throughput": FigureKind(
        "time per output token against one replica's output rate over batch 1..512",
        required={"batch": _MEMORY["batch"], "tpot": "time per output token",
                  "rate": "output tokens per second of one replica"},
        optional={"tpot_worst": "time per output token with every sequence at the full context",
                  "headroom": "memory left at the batch (negative: does not fit)"}),
}
