"""The whole module in one file that needs nothing but torch.

The slide shows everything from the first import to the last print, so a
student can copy it, run it, and grade it (python -m mha_ref.grade
my_mha.py). The lines after the shown part are for the site only: they
check the program against mha_ref and publish the slide's table.
"""

# --8<-- [start:show]
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by h ({num_heads})"
            )
        self.num_heads = num_heads  # h
        self.d_k = d_model // num_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)

    def split(self, x):  # (B, T, d_model) -> (B, h, T, d_k)
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, mask=None, is_causal=False):
        B, T_q, d_model = query.shape
        q = self.split(self.W_Q(query))  # (B, h, T_q, d_k)
        k = self.split(self.W_K(key))  # (B, h, T_k, d_k)
        v = self.split(self.W_V(value))  # (B, h, T_k, d_k)
        scores = q @ k.transpose(-2, -1) / self.d_k**0.5  # (B, h, T_q, T_k)
        if is_causal:  # query i may see keys 0..i
            T_k = k.size(2)
            causal = torch.ones(  # on the scores' device (GPU or CPU)
                T_q, T_k, dtype=torch.bool, device=scores.device
            ).tril()  # (T_q, T_k)
            mask = causal if mask is None else mask & causal
        if mask is not None:  # bool, True = may attend
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, h, T_q, T_k)
        ctx = (weights @ v).transpose(1, 2).contiguous()  # (B, T_q, h, d_k)
        return self.W_O(ctx.view(B, T_q, d_model)), weights


def torch_twin(m, d_model, h):
    """nn.MultiheadAttention holding m's weights (batch_first!)."""
    ref = nn.MultiheadAttention(d_model, h, bias=False, batch_first=True)
    with torch.no_grad():
        stacked = torch.cat([m.W_Q.weight, m.W_K.weight, m.W_V.weight])
        ref.in_proj_weight.copy_(stacked)  # (3 * d_model, d_model)
        ref.out_proj.weight.copy_(m.W_O.weight)
    return ref


if __name__ == "__main__":
    torch.manual_seed(0)
    for d_model, h in [(8, 2), (512, 8)]:
        m = MultiHeadAttention(d_model, h)
        p = sum(x.numel() for x in m.parameters())
        x = torch.randn(2, 6, d_model)  # (B, T, d_model)
        out, w = m(x, x, x)
        print(
            f"d_model={d_model:3d} h={h} params={p:,} "
            f"out={tuple(out.shape)} weights={tuple(w.shape)}"
        )
        ref_out, ref_w = torch_twin(m, d_model, h)(
            x, x, x, average_attn_weights=False
        )
        same = torch.allclose(out, ref_out, atol=1e-5)
        same_w = torch.allclose(w, ref_w, atol=1e-6)
        print(f"  same as nn.MultiheadAttention: {same} {same_w}")
    # --8<-- [end:show]

    # Site only: the program computes what mha_ref computes, and the
    # table of the slide (and of its fill-in exercise) comes from it.
    from mha_ref import from_torch_mha, publish_table
    from mha_ref.tables import publish_value

    rows = []
    for d_model, h in [(8, 2), (512, 8)]:
        m = MultiHeadAttention(d_model, h)
        x = torch.randn(2, 6, d_model)  # (B, T, d_model)
        out, w = m(x, x, x)
        ref_out, ref_w = from_torch_mha(torch_twin(m, d_model, h))(x, x, x)
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(w, ref_w)
        params = sum(p.numel() for p in m.parameters())
        shapes = [tuple(out.shape), tuple(w.shape)]
        rows.append([d_model, h, f"{params:,}", *map(str, shapes)])
    columns = ["d_model", "h", "params", "output shape", "attn shape"]
    publish_table("runs", columns, rows)
    publish_value("weights", rows[-1][-1])  # the d_model=512 layer's
