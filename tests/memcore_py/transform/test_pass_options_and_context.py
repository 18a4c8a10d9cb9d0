"""Pass-level shortcuts keep their checks: StaticPlanBlockMemory validates its options again
at the call whenever one was replaced after construction (only unchanged option objects skip
the check), and PassContext.current() sees each thread's own entered contexts."""
import threading

import pytest

from memcore_py.errors import PassError
from memcore_py.testing.memory_programs import chain_module
from memcore_py.transform.pass_infra import PassContext
from memcore_py.transform.static_plan_block_memory import StaticPlanBlockMemory


@pytest.mark.parametrize("name, bad", [("mode", "fast"), ("alignment", 64.0), ("alignment", True),
                                       ("alignment", 0), ("time_limit", -1.0), ("time_limit", True)])
def test_replaced_options_are_validated_at_the_call(name, bad):
    mod = chain_module(3, width=64)
    p = StaticPlanBlockMemory(mode="arena")
    want = p(mod).script()
    good = getattr(p, name)
    setattr(p, name, bad)
    with pytest.raises(PassError):
        p(mod)
    setattr(p, name, good)
    assert p(mod).script() == want


def test_valid_replaced_options_take_effect():
    mod = chain_module(3, width=64)
    p = StaticPlanBlockMemory()
    p.mode = "arena"
    assert p(mod).script() == StaticPlanBlockMemory(mode="arena")(mod).script()


def test_context_stack_is_per_thread():
    outer = PassContext(verify=True)
    seen = []
    with outer:
        assert PassContext.current() is outer
        t = threading.Thread(target=lambda: seen.append(PassContext.current()))
        t.start()
        t.join()
        with PassContext() as inner:
            assert PassContext.current() is inner
        assert PassContext.current() is outer
    assert seen and seen[0] is not outer and not seen[0].verify
    assert PassContext.current() is not outer
