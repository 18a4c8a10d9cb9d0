"""TVMScript text of the IR: the lexer, the printer, the parser and PrimFunc text.

- :mod:`~memcore_py.ir.text.lexer`: the tokenizer the parser and PrimFunc text share;
- :mod:`~memcore_py.ir.text.printer`: IR -> TVMScript (``IRModule.script()``);
- :mod:`~memcore_py.ir.text.parser`: TVMScript -> IR (:func:`memcore_py.parse`), its work
  split by job over the ``parse_*`` modules beside it;
- :mod:`~memcore_py.ir.text.prim_func_text`: reading, writing and editing the text of a
  PrimFunc, and the TVMScript spelling of PrimExprs and attribute values.

The package imports nothing itself: import the submodule you need.
"""
