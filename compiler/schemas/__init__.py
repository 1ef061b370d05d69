"""The JSON Schemas of the machine-readable outputs (plan.report, plan.diff, plan.check, plan.flags), shipped as data."""
