"""plan: a compiler for ML-inference capacity plans.

The pipeline (see `planc.pipeline.compile_plan`): parse → resolve → elaborate (names, types,
units) → lower (sympy) → evaluate → answer questions → report.
"""

__version__ = "0.1.0"
