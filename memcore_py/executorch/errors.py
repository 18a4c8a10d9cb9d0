"""Errors of memcore's ExecuTorch memory-planning algorithm.

Every error names the offending ``TensorSpec`` (shape, dtype, lifetime, mem_id) so that a
user can find it in the exported graph. All derive from
:class:`memcore_py.errors.PlanningError`, hence from :class:`memcore.MemcoreError`.
"""
from ..errors import PlanningError

__all__ = ["ExecuTorchPlanningError", "InvalidSpecError", "UnsupportedSpecError", "InvalidOptionError",
           "describe_spec"]


class ExecuTorchPlanningError(PlanningError):
    """memcore could not plan an ExecuTorch program (base of this package's errors)."""


class InvalidSpecError(ExecuTorchPlanningError, ValueError):
    """A ``TensorSpec`` handed to the algorithm is malformed: no lifetime (or one whose
    start is after its end), a negative size, a ``mem_id`` that is not an int ``>= 1``, a
    ``storage_base`` that is not among the specs, a chain of ``storage_base`` that loops, or
    an alias that does not fit inside its base."""


class UnsupportedSpecError(ExecuTorchPlanningError):
    """A well-formed ``TensorSpec`` asks for something the algorithm does not do (for
    example an alias at a ``storage_base_offset`` that breaks the alignment); the message
    says what and names the spec."""


class InvalidOptionError(ExecuTorchPlanningError, ValueError):
    """An argument of the algorithm is out of range: ``alignment < 1``, ``extra_padding < 0``,
    a bad ``input_mem_buffer_sizes`` reservation or an unknown keyword."""


def describe_spec(spec) -> str:
    """A short, readable name of a ``TensorSpec`` for error messages."""
    fields = []
    for name in ("shape", "dtype", "lifetime", "mem_id"):
        try:
            value = getattr(spec, name)
        except Exception:  # a property of a malformed spec may raise; name what we can
            continue
        if name == "shape":
            value = list(value)
        fields.append(f"{name}={value}")
    return f"TensorSpec({', '.join(fields)})"
