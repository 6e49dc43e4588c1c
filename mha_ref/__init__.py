"""Reference multi-head attention for Lesson 81, small and exact.

Every code block, printed output and table on the lesson's slides comes
from running this package, and the tests check it against PyTorch's own
``nn.MultiheadAttention`` and ``F.scaled_dot_product_attention``.

``python -m mha_ref.grade my_mha.py`` checks a student's own module,
milestone by milestone (:mod:`mha_ref.grade`); it is not imported here,
so importing the package stays as light as before.
"""

from .attention import causal_mask, padding_mask, scaled_dot_product_attention
from .counting import FlopCount, count_parameters, forward_flops
from .mha import (
    MultiHeadAttention,
    from_torch_mha,
    merge_heads,
    single_head_attention,
    split_heads,
    to_torch_mha,
)
from .tables import TABLES_ENV, publish_table, shape_str
from .traps import (
    attend_flat,
    attend_with_split,
    direct_view_origins,
    flat_row_origins,
    split_heads_direct_view,
    split_heads_flat,
    split_heads_transpose_first,
)

__all__ = [
    "TABLES_ENV",
    "FlopCount",
    "MultiHeadAttention",
    "attend_flat",
    "attend_with_split",
    "causal_mask",
    "count_parameters",
    "direct_view_origins",
    "flat_row_origins",
    "forward_flops",
    "from_torch_mha",
    "merge_heads",
    "padding_mask",
    "publish_table",
    "scaled_dot_product_attention",
    "shape_str",
    "single_head_attention",
    "split_heads",
    "split_heads_direct_view",
    "split_heads_flat",
    "split_heads_transpose_first",
    "to_torch_mha",
]
