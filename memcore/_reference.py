"""Pure-Python references of every memcore kernel.

Used by tests and benchmarks only: the package never falls back to these. Each function
mirrors the public kernel of the same name and the same contract, written for clarity, not
speed.
"""
