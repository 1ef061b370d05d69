"""The analytic engine model against the simulator, at utilisation 0.3 to 0.9 on three workloads.

Contract: `python validation/sim_agreement.py [--utilizations 0.3,0.6,0.9] [--duration 200]
[--seeds N]` compiles the three workloads of `tests/test_engine_model.py` (chat, long prompts,
long outputs; Llama-3.1-8B on an H100) at each utilisation target, serves each deployment's peak
on two simulated replicas (`planc.replay`, the same call the tests make) and prints, per
workload and utilisation, the analytic figure's relative error against the simulated one for the
running batch, the mean TPOT and the p50 and p99 TTFT, with the simulated p99 TTFT, averaged
over the seeds. Beside each error, in brackets, is the error against the two ends of the
simulated figure's 90 % interval (`SimResult.intervals`, the run's sampling error; the first
seed's): an error whose bracket holds 0 is as small as the run can tell. It also prints the
analytic request rate at the simulated running batch against
the offered rate: the iteration model without the fixed point, whose conditioning grows as the
replica's throughput saturates (docs/physics.md §7.7). It asserts nothing: the tests hold the
tolerances; this measures how far the model is from the 15 % target and where.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planc.pipeline import compile_plan
from planc.replay import replay
from planc.vector import evaluate_many

from tests.test_engine_model import WORKLOADS, plan

FIGURES = ("mean_running", "tpot_mean", "ttft_p50", "ttft_p99")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--utilizations", default="0.3,0.6,0.9")
    args.add_argument("--duration", type=float, default=200.0)
    args.add_argument("--seeds", type=int, default=1)
    a = args.parse_args()
    print(f"{'workload':12s} {'util':>5s} " + " ".join(f"{f:>27s}" for f in FIGURES) + "   sim p99 TTFT   rate at sim batch")
    with tempfile.TemporaryDirectory() as tmp:
        for workload in sorted(WORKLOADS):
            for u in (float(x) for x in a.utilizations.split(",")):
                path = Path(tmp) / f"{workload}_{u}.plan"
                path.write_text(plan(workload, u), encoding="utf-8")
                lowered = compile_plan(path).lowered
                assert lowered is not None
                errors, p99, rate, brackets = [], [], [], []
                for seed in range(3, 3 + a.seeds):
                    run = replay(lowered, "d", duration=a.duration, replicas=2, seed=seed)
                    errors.append([run.analytic[f] / run.simulated[f] - 1 for f in FIGURES])
                    bands = run.result.intervals()
                    brackets = brackets or [(run.analytic[f] / bands[f][1] - 1, run.analytic[f] / bands[f][0] - 1) for f in FIGURES]
                    p99.append(run.simulated["ttft_p99"])
                    out = evaluate_many(lowered.elaborated, lowered.values, {"d.batch": np.array([run.simulated["mean_running"]])}, None)
                    rate.append(float(np.asarray(out["d.replica_request_rate"]).reshape(-1)[0]) * run.replicas / run.rate - 1)
                mean = np.mean(errors, axis=0)
                print(f"{workload:12s} {u:5.2f} " + " ".join(f"{e:+7.1%} ({lo:+6.1%}..{hi:+6.1%})" for e, (lo, hi) in zip(mean, brackets))
                      + f"   {np.mean(p99) * 1e3:9.0f} ms   {np.mean(rate):+9.1%}", flush=True)


if __name__ == "__main__":
    main()
