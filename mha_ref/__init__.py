"""Reference multi-head attention for Lesson 81, small and exact.

Every code block, printed output and table on the lesson's slides comes
from running this package, and the tests check it against PyTorch's own
``nn.MultiheadAttention`` and ``F.scaled_dot_product_attention``.

``python -m mha_ref.grade my_mha.py`` checks a student's own module,
milestone by milestone (:mod:`mha_ref.grade`); it is not imported here,
so importing the package stays as light as before.
"""

import importlib

#: What the package offers, and the module each name comes from. Loaded
#: on first use (PEP 562): ``python -m mha_ref.grade`` runs this file
#: before the grader, and an import of torch here would take a
#: ``torch.py`` (or any module) from the folder it runs in, next to a
#: submission's files, before the grader could drop that folder from
#: its path (an attacker's review: a ``secrets.py`` there forged 7 of 7).
EXPORTS = {
    "TABLES_ENV": "tables",
    "FlopCount": "counting",
    "MultiHeadAttention": "mha",
    "attend_flat": "traps",
    "attend_with_split": "traps",
    "causal_mask": "attention",
    "count_parameters": "counting",
    "direct_view_origins": "traps",
    "flat_row_origins": "traps",
    "forward_flops": "counting",
    "from_torch_mha": "mha",
    "merge_heads": "mha",
    "padding_mask": "attention",
    "publish_table": "tables",
    "scaled_dot_product_attention": "attention",
    "shape_str": "tables",
    "single_head_attention": "mha",
    "split_heads": "mha",
    "split_heads_direct_view": "traps",
    "split_heads_flat": "traps",
    "split_heads_transpose_first": "traps",
    "to_torch_mha": "mha",
}
__all__ = list(EXPORTS)


def __getattr__(name: str):
    if name not in EXPORTS:
        raise AttributeError(f"module 'mha_ref' has no attribute {name!r}")
    value = getattr(
        importlib.import_module(f".{EXPORTS[name]}", __name__), name
    )
    globals()[name] = value  # the next use finds it here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *EXPORTS})
