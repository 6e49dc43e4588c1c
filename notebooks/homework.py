# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 81 homework
#
# Three tasks on multi-head attention; the third uses **your own** module
# from the project notebook (`my_mha.py`, which it writes beside this one).
#
# 1. **Heads that specialise**: train a small model and measure how its
#    heads divide the work.
# 2. **The parameter count, proved**: $4\,d_{model}^2$ for every $h$ that
#    divides $d_{model}$.
# 3. **Masking**: turn your module into decoder self-attention.
#
# Replace every `TODO`, then run the cells tagged `check`: each prints
# `PASS task N` and what it verified once its task is done, and until
# then `FAIL task N` and what is still wrong. The solutions are a
# separate notebook, linked from the home page of the lesson's site,
# for after you have tried.

# %%
import sympy
import torch

from mha_ref import (
    MultiHeadAttention,
    causal_mask,
    count_parameters,
    homework_checks,
    specialise,
)

# %% [markdown]
# ## 1. Heads that specialise
#
# The task: every position must name **the token just before it** and
# **the first token of the sequence**. The model is one causal
# `MultiHeadAttention` layer with two heads and no residual path, so each
# answer has to arrive through attention. Untrained heads attend almost
# uniformly; after training, does each relationship get a head of its own?

# %%
untrained, _ = specialise.train(seed=0, steps=0, cache_dir=None)
# TODO: train for enough steps that the loss falls near 0.
model, history = specialise.train(seed=0, steps=1)
print(
    f"loss: {history['loss'][0]:.2f} at step 1, "
    f"{history['loss'][-1]:.1e} at step {len(history['loss'])}"
)


# %% [markdown]
# `attention_mass(weights, keys)`: `weights` is `(B, h, T, T)`, `keys[t]`
# is the key position query row `t` should read (`t - 1` for *previous*,
# `0` for *first*). Return each head's weight on those keys, averaged over
# the batch and over rows `t >= 2` (at `t = 1` both relationships read key
# 0, so those rows cannot tell them apart).


# %%
def attention_mass(weights, keys):
    # TODO: pick weights[b, i, t, keys[t]], keep rows t >= 2, and average
    # over the batch and the rows: one number per head, shape (h,).
    return torch.zeros(weights.size(1))


batch = specialise.held_out_batch()
keys = specialise.relationship_keys(specialise.SEQ_LEN)  # (R, T)
for label, m in (("untrained", untrained), ("trained", model)):
    with torch.no_grad():
        _, weights = m(batch.tokens)  # (B, h, T, T)
    for r, name in enumerate(specialise.RELATIONSHIPS):
        masses = attention_mass(weights, keys[r]).tolist()
        print(
            f"{label:9} {name:8} mass per head: "
            + ", ".join(f"{v:.3f}" for v in masses)
        )

for label, m in (("untrained", untrained), ("trained", model)):
    figure = specialise.specialisation_figure(m, batch)
    print(f"specialisation figure, {label}: {figure:.3f}")

# %% tags=["check"]
homework_checks.report(
    1, homework_checks.check_specialisation, model, attention_mass
)

# %% [markdown]
# Per-head heatmaps on one held-out sequence: row = query position,
# column = key position. The blank upper triangle is the causal mask.

# %%
# The only cell that needs matplotlib (the setup cell installs it where
# it can): without it, every other cell still runs.
import matplotlib.pyplot as plt

example = batch.tokens[0]  # (T,)
result = specialise.specialisation(model, batch)
role = {head: name for name, head in result["heads"].items()}
fig, axes = plt.subplots(2, model.attention.num_heads, figsize=(8, 8))
for row, (label, m) in enumerate(
    (("untrained", untrained), ("trained", model))
):
    maps = specialise.attention_maps(m, example)  # (h, T, T)
    for head, ax in enumerate(axes[row]):
        shown = maps[head].masked_fill(
            ~causal_mask(*maps[head].shape), float("nan")
        )
        ax.imshow(shown, vmin=0, vmax=1, cmap="viridis")
        name = role.get(head, "-") if label == "trained" else "-"
        ax.set_title(f"{label} head {head} ({name})")
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 2. The parameter count, proved
#
# Write $d_{model} = h \cdot d_k$: that is exactly "$h$ divides
# $d_{model}$". The proof has two terms: what one head owns of $W_Q$,
# $W_K$ and $W_V$ (`per_head`), and $W_O$ (`w_o`); `total` is their sum
# over the heads. The check compares each term with real modules.

# %%
h, d_k = sympy.symbols("h d_k", positive=True, integer=True)
d_model = h * d_k
# TODO: parameters of one head's slices of W_Q, W_K and W_V
per_head = sympy.Integer(0)
# TODO: parameters of W_O
w_o = sympy.Integer(0)
# TODO: all heads, plus W_O
total = sympy.Integer(0)
print("W_Q, W_K, W_V over all heads:", h * per_head)
print("W_O:", w_o)
print("total =", total)
print("total - 4*d_model**2 =", sympy.expand(total - 4 * d_model**2))

# %% [markdown]
# When the difference expands to 0 as a polynomial in $h$ and $d_k$, the
# count is $4\,d_{model}^2$ for every $h$ and every $d_{model}$ it
# divides. Now the numbers, counted on real modules:

# %%
for dm, heads in ((8, 1), (8, 2), (12, 3), (512, 8)):
    counted = count_parameters(MultiHeadAttention(dm, heads))
    predicted = total.subs({h: heads, d_k: dm // heads})
    print(f"d_model={dm:3}, h={heads}: counted {counted}, formula {predicted}")

# %% tags=["check"]
homework_checks.report(
    2, homework_checks.check_parameter_formula, per_head, w_o, total, h, d_k
)


# %% [markdown]
# ## 3. Masking: decoder self-attention
#
# A decoder predicts position $t$ from positions $0..t$ only. Make
# `DecoderSelfAttention(d_model, h)(x)` self-attention (`x` is query, key
# and value) in which no position sees a later one, on **your** module:
# the cell below imports `MultiHeadAttention` from `my_mha.py` (the
# project notebook writes it; without it, `mha_ref`'s module stands in).
# The check compares the weights as well as the outputs with
# `torch.nn.MultiheadAttention` under a causal mask, at lengths from 1 to
# 20, and the gradients after a backward pass (the layer is trained);
# your module's own `forward` must do the work.


# %%
try:
    from my_mha import MultiHeadAttention as YourAttention
except ModuleNotFoundError as missing:
    if missing.name != "my_mha":
        raise  # my_mha.py is here, and imports what is not installed
    print("No my_mha.py beside this notebook: mha_ref's module stands in.")
    from mha_ref import MultiHeadAttention as YourAttention


class DecoderSelfAttention(YourAttention):
    def forward(self, x):
        # TODO: no position may attend to a later one.
        return super().forward(x, x, x)


# %% tags=["check"]
homework_checks.report(
    3,
    homework_checks.check_causal_self_attention,
    DecoderSelfAttention,
    YourAttention,
)
