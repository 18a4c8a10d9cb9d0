"""Passes: pass infrastructure, TVM's memory passes and the lowering passes they need.

Public names (fixed): StaticPlanBlockMemory, KillAfterLastUse, LowerAllocTensor,
CallTIRRewrite, ToNonDataflow, RemovePurityChecking, Sequential, PassContext.
"""
from .pass_infra import PASS_REGISTRY, FunctionPass, ModulePass, Pass, PassContext, Sequential, get_pass  # noqa: F401
