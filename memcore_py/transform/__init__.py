"""Passes: pass infrastructure, TVM's memory passes and the lowering passes they need.

Public names (fixed): StaticPlanBlockMemory, KillAfterLastUse, DataflowUseInplaceCalls,
AttachAttrLayoutFreeBuffers, DeadCodeElimination, LowerAllocTensor, CallTIRRewrite,
ToNonDataflow, RemovePurityChecking, CanonicalizeBindings, LowerForPlanning, Sequential,
PassContext.
"""
from .pass_infra import PASS_REGISTRY, FunctionPass, ModulePass, Pass, PassContext, Sequential, get_pass  # noqa: F401
from .call_tir_rewrite import CallTIRRewrite  # noqa: F401,E402
from .to_non_dataflow import ToNonDataflow  # noqa: F401,E402
from .remove_purity_checking import RemovePurityChecking  # noqa: F401,E402
from .lower_alloc_tensor import LowerAllocTensor  # noqa: F401,E402
from .canonicalize_bindings import CanonicalizeBindings  # noqa: F401,E402
from .kill_after_last_use import KillAfterLastUse  # noqa: F401,E402
from .static_plan_block_memory import StaticPlanBlockMemory  # noqa: F401,E402
from .dataflow_use_inplace_calls import DataflowUseInplaceCalls  # noqa: F401,E402
from .dead_code_elimination import DeadCodeElimination  # noqa: F401,E402
from .attach_attr_layout_free_buffers import AttachAttrLayoutFreeBuffers  # noqa: F401,E402
from .lower_for_planning import LowerForPlanning  # noqa: F401,E402
from .fuse_for_planning import fuse_for_planning  # noqa: F401,E402
