"""Load profiles (k6's six test types, rounds, manual), the open-model pacer and thresholds (NFRs).

Pure timing and judging logic: no network, no files except the thresholds TOML it is asked to read.
Entry points: scenarios.registry (build_profile, add_arguments) and scenarios.thresholds/evaluator.
"""
