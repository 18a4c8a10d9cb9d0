"""StaticPlanBlockMemory's one-pass block rewrite (AllocRewrite.rewrite_block) gives what the
general path builds from its pieces: storages emitted at their positions
(AllocRewrite.emit_storages), planned allocations rebuilt (rebuild / rebuild_views) and the
insertions spliced in (splice). The reference rewriter below takes the general path for every
block; the outputs must be the same text and structurally equal, in both modes, with and
without zero-offset views, on modules with dataflow blocks, Ifs and symbolic shapes.
"""
import pytest

from memcore_py.analysis.storage_tokens import analyze_storage_tokens
from memcore_py.ir.construct import new_block
from memcore_py.ir.expr import BindingBlock, DataflowBlock, DataflowVar, Var
from memcore_py.ir.structural import structural_equal
from memcore_py.planning.allocate import plan_memory
from memcore_py.testing.memory_programs import chain_module, random_memory_module
from memcore_py.transform import static_plan_block_memory as spbm


class _GeneralPath(spbm._StorageAllocationRewriter):
    """The rewriter with every changed block taking the general path (special positions, then
    rebuild, then splice)."""

    def _block(self, block, bid):
        emit = self.emit_before.get(bid) or {}
        allocs = self.allocs.get(bid)
        dynamic = self.dynamic.get(bid) or {}
        ifs = self.sites.block_ifs.get(bid) or ()
        dirty_ifs = {i: sids for i, sids in ifs if sids[0] in self.dirty or sids[1] in self.dirty}
        if not (emit or allocs or dynamic or dirty_ifs):
            return block
        is_df = type(block) is DataflowBlock
        out = list(block.bindings)
        inserts = self._special_positions(out, emit, dynamic, dirty_ifs, is_df)
        view_positions, views = [], []
        if allocs:
            if self.zero_offset_views:
                self._allocs_rewrite.rebuild_views(out, allocs, self._alloc_tensor_args, spbm._ENSURE_ZERO_OFFSET,
                                                   DataflowVar if is_df else Var, self._offset_imm,
                                                   view_positions, views)
            else:
                self._allocs_rewrite.rebuild(out, allocs, self._alloc_tensor_args, self._offset_imm)
        if inserts or views:
            out = self._compiled.splice(out, inserts, view_positions, views)
        return new_block(DataflowBlock if is_df else BindingBlock, out)


def _modules():
    for n in (2, 3, 7):
        yield f"chain{n}", chain_module(n, width=64)
    for seed in range(30):
        opts = dict(p_if=0.5, p_dataflow=0.5, p_symbolic=0.3) if seed % 2 else {}
        yield f"random{seed}", random_memory_module(seed, n_functions=1 + seed % 3, n_steps=(4, 10)[seed % 2], **opts)


@pytest.mark.parametrize("mode, views", [("tvm", False), ("arena", False), ("arena", True)])
@pytest.mark.parametrize("name, mod", list(_modules()), ids=lambda x: x if isinstance(x, str) else "")
def test_one_pass_block_equals_the_general_path(name, mod, mode, views):
    st = analyze_storage_tokens(mod)
    plan = plan_memory(st.program, mode, time_limit=None)  # some modules plan nothing: both keep them
    fast = spbm._StorageAllocationRewriter(mod, st, plan, views).rewrite()
    general = _GeneralPath(mod, st, plan, views).rewrite()
    assert fast.script() == general.script()
    assert structural_equal(fast, general)


def test_allocation_positions_must_increase():
    mod = chain_module(4, width=64)
    st = analyze_storage_tokens(mod)
    plan = plan_memory(st.program, "tvm")
    r = spbm._StorageAllocationRewriter(mod, st, plan)
    (bid, allocs), = r.allocs.items()
    assert len(allocs) > 1
    block = r.sites.functions[0].func.body.blocks[0]
    backwards = dict(reversed(list(allocs.items())))
    with pytest.raises(ValueError, match="allocation position"):
        r._allocs_rewrite.rewrite_block(block.bindings, r.emit_before[bid], backwards, plan.storages,
                                        r.sites.tok_binding, r.storage_site, r._scope_imm,
                                        r._alloc_tensor_args, r._offset_imm, None, False)


def _storage_shapes(mod):
    out = []
    for _gv, func in mod.functions.items():
        for block in getattr(getattr(func, "body", None), "blocks", ()):
            for b in block.bindings:
                if getattr(getattr(b.value, "op", None), "name", "") == "relax.memory.alloc_storage":
                    out.append(b.value.args[0])
    return out


def test_storage_sizes_share_their_shape_node():
    """R.shape([size]) of a storage is an immutable leaf shared by equal sizes (across calls
    too); the output stays well-formed and prints the same."""
    from memcore_py.ir.well_formed import well_formed_report

    a = spbm.StaticPlanBlockMemory()(chain_module(7, width=64))
    b = spbm.StaticPlanBlockMemory()(chain_module(7, width=64))
    sa, sb = _storage_shapes(a), _storage_shapes(b)
    assert len(sa) == len(sb) > 1
    for x, y in zip(sa, sb):
        assert x is y and x.values[0].value == y.values[0].value
    assert well_formed_report(a) == [] and a.script() == b.script()


@pytest.mark.parametrize("bad", [-1, 10**6])
def test_token_out_of_range_is_an_index_error(bad):
    """The compiled rebuild reads its tables unchecked, so a token id is range-checked first."""
    mod = chain_module(4, width=64)
    st = analyze_storage_tokens(mod)
    plan = plan_memory(st.program, "tvm")
    r = spbm._StorageAllocationRewriter(mod, st, plan)
    (bid, allocs), = r.allocs.items()
    block = r.sites.functions[0].func.body.blocks[0]
    first = next(iter(allocs))
    with pytest.raises(IndexError, match="out of range"):
        r._allocs_rewrite.rewrite_block(block.bindings, r.emit_before[bid], {first: bad}, plan.storages,
                                        r.sites.tok_binding, r.storage_site, r._scope_imm,
                                        r._alloc_tensor_args, r._offset_imm, None, False)
