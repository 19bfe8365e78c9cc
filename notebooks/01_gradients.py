# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 01 — Gradients as explanations, and how they fail
#
# The simplest answer to *"which inputs mattered?"* is the gradient: $\partial f / \partial x_i$ says how
# much the output moves when input $x_i$ moves a little. It costs one backward pass and needs no
# choices. This notebook builds gradient explanations on models small enough to reason about by hand,
# then breaks them three ways, as in the lecture:
#
# 1. gradient and gradient × input on a smooth model of two inputs;
# 2. **saturation** (Shrikumar et al. 2017): the gradient is 0 although the input matters;
# 3. **thresholding**: the gradient jumps, and a softplus makes it continuous;
# 4. **noise** (Smilkov et al. 2017): a tiny input change moves the saliency map a lot; SmoothGrad helps;
# 5. **sanity checks** (Adebayo et al. 2018): which maps change when the model forgets what it learned;
# 6. a summary of the failures and the later methods that answer them.
#
# Every claim about a number is an executed `assert`: if this notebook runs, its claims hold.

# %%
# Instructors, before a lecture: uncomment the two lines below for presenter mode (bigger fonts and
# figures, fixed seeds, fast mode); xaikit.course.presenter.off() switches it back (README: "Presenter mode").
# import xaikit.course.presenter
# xaikit.course.presenter.on()

# %% cellView="form" jupyter={"source_hidden": true}
#@title Colab setup: on Google Colab this installs xaikit and builds its models; elsewhere it does nothing
import sys

if "google.colab" in sys.modules:
    import glob
    import importlib.util
    import os
    import subprocess

    found = importlib.util.find_spec("xaikit")
    if found is None or found.origin in (None, "namespace"):  # a clone named xaikit in /content is no install
        clones = [os.path.dirname(p) for p in sorted(glob.glob("/content/*/pyproject.toml"))
                  if 'name = "xaikit"' in open(p).read()]
        wheels = sorted(glob.glob("/content/xaikit-*.whl"))
        source = (os.environ.get("XAIKIT_SOURCE") or (wheels[-1] if wheels else None)
                  or (clones[0] if clones else None))
        if source is None:
            raise RuntimeError(
                "xaikit is not installed on this Colab runtime and no copy of it was found. Either upload "
                "its wheel (`pip wheel --no-deps .` in the repository) to /content, or clone the repository "
                "into /content, or set os.environ['XAIKIT_SOURCE'] to a pip requirement (e.g. "
                "'git+https://<host>/<owner>/xaikit.git'); then run this cell again.")
        loaded = sys.modules.get("ipywidgets")  # Colab ships ipywidgets 7; xaikit needs 8
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", source])
        importlib.invalidate_caches()
        from importlib.metadata import version

        if loaded is not None and getattr(loaded, "__version__", None) != version("ipywidgets"):
            raise RuntimeError(
                "xaikit is installed, and it upgraded ipywidgets, which this session had loaded already: restart "
                "the session (Runtime > Restart session), then run the notebook again from the top; this cell "
                "will then only build the models.")
    subprocess.check_call([sys.executable, "-m", "xaikit", "prepare"])
    from google.colab import output

    output.enable_custom_widget_manager()

# %%
import math

import torch

import xaikit
from xaikit import pick, widgets
from xaikit.tensor import toys
from xaikit.tensor.gradients import noisy_gradients, relative_change

xaikit.set_seed(0)

# The model of section 4. "digits" is a small CNN that xaikit trains in seconds on scikit-learn's bundled
# 8x8 digits (no download; cached afterwards). The toys of sections 1-3 are fixed functions.
MODEL = "digits"
N_SAMPLES = pick(50, 20)  # SmoothGrad samples (fast mode uses fewer)
N_SANITY_IMAGES = pick(12, 8)  # test digits of the sanity checks (section 5)

# %% [markdown]
# ## 1. Gradient and gradient × input
# *Lecture: Gradient/attention-based explanations (seeds/000), pp. 6-11.*
#
# Our first model takes two inputs: $f(x_1, x_2) = \sigma(1.5 x_1 - x_2 + 0.8 x_1 x_2 + 0.2)$, a logistic
# unit with an interaction. The **gradient** $\nabla f(x)$ points where $f$ rises fastest; **gradient ×
# input** $x_i \, \partial f / \partial x_i$ weighs each slope by how far the input is from 0. It is a
# first-order (Taylor) estimate of how $f(x) - f(0)$ splits over the inputs, exact only where $f$ is linear
# between 0 and $x$; on this curved $f$ the two numbers differ, as the cell below prints.
#
# xaikit's convention, shared by every method: `f` takes a batch `(B, d)` and returns `(B,)` (or `(B, C)`
# class scores, with `target` picking the class); `x` is one input without the batch dimension.

# %%
f = toys.smooth_model
x = torch.tensor([1.0, -0.5])
g = xaikit.gradient(f, x)
print(f"f(x) = {f(x[None]).item():.4f}, gradient = {g.tolist()}, gradient x input = "
      f"{xaikit.grad_times_input(f, x).tolist()}")

# the gradient is the slope: a small step h along x_i changes f by about h * g_i (finite differences)
h = 1e-3
for i in range(2):
    step = torch.zeros(2)
    step[i] = h
    slope = (f((x + step)[None]) - f((x - step)[None])).item() / (2 * h)
    assert abs(slope - g[i].item()) < 1e-3, (i, slope, g[i])
assert torch.allclose(xaikit.grad_times_input(f, x), x * g)

# the formula above is the model's
z = 2 * torch.randn(200, 2)
assert torch.allclose(f(z), torch.sigmoid(1.5 * z[:, 0] - z[:, 1] + 0.8 * z[:, 0] * z[:, 1] + 0.2))
# gradient x input is only a first-order estimate: on this curved f it misses much of f(x) - f(0)
change_from_0 = (f(x[None]) - f(torch.zeros(1, 2))).item()
gxi_total = xaikit.grad_times_input(f, x).sum().item()
print(f"f(x) - f(0) = {change_from_0:.3f}; gradient x input adds up to {gxi_total:.3f}")
assert abs(change_from_0 - gxi_total) > 0.1

# %% [markdown]
# Move the point with the sliders: the arrow is the gradient direction on the contour of $f$, the bars
# the two attributions. Where $f$ is flat (the yellow plateau where $f \approx 1$, the dark one where
# $f \approx 0$) both attributions shrink, although out there the inputs clearly decide the output: a first
# hint of section 2.

# %%
panel1 = widgets.GradientPanel()
panel1.set(x1=2.5, x2=2.5)  # on the upper-right plateau: f is nearly 1 and nearly flat
assert panel1.result.value > 0.99
assert all(a.abs().max() < 0.05 for a in panel1.result.attributions.values())  # both attributions
panel1.set(x1=-2.5, x2=2.5)  # on the dark plateau: f is nearly 0 and nearly flat
assert panel1.result.value < 0.01
assert all(a.abs().max() < 0.05 for a in panel1.result.attributions.values())
panel1.set(x1=1.0, x2=-0.5)
assert panel1.error is None
panel1

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_grad_times_input-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise 1.1.** At which points is gradient × input zero for an input whose gradient is not?
# Write gradient × input from `xaikit.gradient` yourself: `my_grad_times_input(f, x)` returns one number per
# input; `xaikit.check_grad_times_input` compares it with the reference and says what differs.
#
# <details class="xk-answer"><summary>Answer</summary>
#
# Wherever that input is 0: gradient × input multiplies the slope by $x_i$, so an input at 0 gets nothing
# however steep $f$ is there. This is also why gradient × input depends on where 0 is (shifting an
# input by a constant changes its attribution): it implicitly uses the baseline 0.
# </details>

# %% nbgrader={"grade": false, "grade_id": "my_grad_times_input", "locked": false, "schema_version": 3, "solution": true}
@xaikit.exercise(xaikit.check_grad_times_input)  # while the body is a stub, later cells use xaikit's and say so
def my_grad_times_input(f, x):
    ### BEGIN SOLUTION
    return x * xaikit.gradient(f, x)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_grad_times_input-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert xaikit.check_grad_times_input(my_grad_times_input), "see the report above: which point, which mistake"
### BEGIN HIDDEN TESTS
assert xaikit.check_grad_times_input(my_grad_times_input, verbose=False).passed, "graded: my_grad_times_input must be written and pass every case"
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "my_grad_times_input-use", "locked": true, "schema_version": 3, "solution": false}
x = torch.tensor([0.0, 1.5])
mine = my_grad_times_input(f, x)
assert torch.allclose(mine, xaikit.grad_times_input(f, x))
assert mine[0] == 0 and xaikit.gradient(f, x)[0] != 0  # an input at 0 gets nothing, however steep f is

# %% [markdown]
# ## 2. Saturation
# *Lecture: Gradient/attention-based explanations (seeds/000), p. 12.*
#
# Shrikumar et al. (2017): $f(x_1, x_2) = x_1 + x_2$ if $x_1 + x_2 < 1$, else $1$, i.e.
# $\min(1, x_1 + x_2)$. At $x_1 = x_2 = 1$ the output has saturated: both partial derivatives are 0, so
# gradient and gradient × input say *neither input matters*. Yet $f(1, 1) - f(0, 0) = 1$: the inputs are
# the whole reason the output is 1.

# %%
sat = toys.saturating
x, x0 = torch.tensor([1.0, 1.0]), torch.zeros(2)
change = (sat(x[None]) - sat(x0[None])).item()
print(f"f(1,1) - f(0,0) = {change}; gradient = {xaikit.gradient(sat, x).tolist()}")
assert change == 1.0
assert torch.equal(xaikit.gradient(sat, x), torch.zeros(2))          # both gradients are 0 at (1, 1)
assert torch.equal(xaikit.grad_times_input(sat, x), torch.zeros(2))  # and so is gradient x input

# %% [markdown]
# Occlusion (set one input to the baseline 0 and watch the output drop) does not rescue us here: with
# either input removed, the other still reaches 1. Integrated Gradients (notebook 02) walks from the
# baseline to $x$ and adds up gradients along the way, before the model saturates: it splits the change
# of 1 equally. Here is a preview, checked against xaikit's IG implementation.

# %%
occ = xaikit.occlusion(sat, x, window=1, baseline=0.0)
ig = xaikit.integrated_gradients(sat, x, x0, steps=64, rule="riemann_middle")
print(f"occlusion = {occ.tolist()}, IG = {ig.attributions.tolist()}")
assert torch.equal(occ, torch.zeros(2))                     # occlusion misses both inputs too
assert torch.allclose(ig.attributions, torch.tensor([0.5, 0.5]))
assert abs(ig.attributions.sum().item() - change) < 1e-6    # IG adds up to f(x) - f(x')

panel2 = widgets.GradientSaturationPanel()
r = panel2.result
assert torch.allclose(r.attributions["IG preview (64 steps)"], ig.attributions)
panel2.set(x1=0.3, x2=0.4)  # below the kink the attributions agree: each input gets its own share x_i
for name in ("gradient x input", "occlusion (to 0)", "IG preview (64 steps)"):
    assert torch.allclose(panel2.result.attributions[name], torch.tensor([0.3, 0.4]), atol=1e-6), name
panel2.set(x1=1.0, x2=1.0)
assert panel2.error is None
panel2

# %% [markdown]
# **Exercise 2.1.** Set $x = (0.8, 0.8)$ in the panel. Which methods now give non-zero attributions, and
# do they add up to $f(x) - f(0)$?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# $x_1 + x_2 = 1.6 \ge 1$, so the gradient and gradient × input are 0. Occlusion is not: removing $x_1$
# leaves $f(0, 0.8) = 0.8$, a drop of 0.2 for each input, which adds up to 0.4, not $f(x) - f(0) = 1$.
# IG gives 0.5 each and adds up to 1 (completeness, notebook 02).
# </details>

# %%
panel2.set(x1=0.8, x2=0.8)
at_08 = panel2.result.attributions
assert torch.equal(at_08["gradient"], torch.zeros(2)) and torch.equal(at_08["gradient x input"], torch.zeros(2))
occ = at_08["occlusion (to 0)"]
assert torch.allclose(occ, torch.tensor([0.2, 0.2]), atol=1e-6) and abs(occ.sum().item() - 1.0) > 0.5
assert torch.allclose(at_08["IG preview (64 steps)"], torch.tensor([0.5, 0.5]), atol=1e-6)

# %% [markdown]
# ## 3. Thresholding: gradients that jump
# *Lecture: Gradient/attention-based explanations (seeds/000), pp. 13-14.*
#
# $f(x) = \max(0, x - 10)$, a ReLU shifted to 10. Its gradient is 0 just below 10 and 1 just above: an
# input of 9.99 and one of 10.01 get completely different explanations although the outputs barely
# differ. The lecture's remedy is to replace the ReLU by a **softplus**,
# $\mathrm{softplus}_\beta(x - 10) = \log(1 + e^{\beta (x - 10)}) / \beta$, whose gradient
# $\sigma(\beta (x - 10))$ is continuous. As $\beta$ grows softplus tends to the ReLU: the largest gap is
# $\log 2 / \beta$, at $x = 10$.

# %%
thr = toys.thresholded
assert xaikit.gradient(thr, [9.99]).item() == 0.0 and xaikit.gradient(thr, [10.01]).item() == 1.0
assert (thr(torch.tensor([[10.01]])) - thr(torch.tensor([[9.99]]))).item() < 0.011

grid = torch.linspace(5, 15, 2001, dtype=torch.float64)[:, None]
gaps = {}
for beta in (1, 10, 100, 1000):
    gaps[beta] = (toys.softplus_relu(beta)(grid) - thr(grid)).max().item()
    assert abs(gaps[beta] - math.log(2) / beta) < 1e-6 * max(1, 1 / beta)
print({b: round(v, 5) for b, v in gaps.items()})
assert all(gaps[a] > gaps[b] for a, b in ((1, 10), (10, 100), (100, 1000)))  # softplus -> ReLU
assert gaps[1000] < 1e-3

# the gradient becomes a continuous ramp that steepens towards the step
assert abs(xaikit.gradient(toys.softplus_relu(1.0), [10.0]).item() - 0.5) < 1e-6
assert abs(xaikit.gradient(toys.softplus_relu(100.0), [10.5]).item() - 1.0) < 1e-6
# ... and for every beta it climbs from under 0.02 to over 0.98 between 10 - 4/beta and 10 + 4/beta
for beta in (1.0, 10.0, 100.0):
    assert xaikit.gradient(toys.softplus_relu(beta), [10 - 4 / beta]).item() < 0.02
    assert xaikit.gradient(toys.softplus_relu(beta), [10 + 4 / beta]).item() > 0.98

# %%
panel3 = widgets.ThresholdPanel()
panel3.set(x=10.5, beta=1.0)
soft_gap = panel3.result.max_gap
panel3.set(beta=30.0)
assert panel3.result.max_gap < soft_gap
assert abs(panel3.result.max_gap - math.log(2) / 30.0) < 0.01
panel3.set(beta=1.0)
assert panel3.error is None
panel3

# %% [markdown]
# **Exercise 3.1.** Whatever $\beta$ is, the softplus gradient at $x = 10$ is the same number. Which, and
# why? What does a large $\beta$ buy and cost?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# $\sigma(\beta \cdot 0) = 0.5$ for every $\beta$. A large $\beta$ makes the model closer to the ReLU (a
# gap of $\log 2 / \beta$) but its gradient climbs from below 0.02 to above 0.98 within $4/\beta$ of the
# threshold (asserted above),
# so explanations near 10 are again fragile; a small $\beta$ gives smooth gradients of a different model.
# </details>

# %% [markdown]
# ## 4. Noisy gradients and SmoothGrad
# *Lecture: Gradient/attention-based explanations (seeds/000), pp. 15-17.*
#
# On a real image classifier the raw gradient ("saliency map", Simonyan et al. 2014) looks noisy, and it
# can change a lot when the input changes imperceptibly: the partial derivatives of a ReLU network
# fluctuate sharply at small scales (Smilkov et al. 2017). **SmoothGrad** averages the gradient over $n$
# noisy copies $x + \mathcal N(0, \sigma^2)$, with $\sigma$ a fraction of the input range (the paper found
# 10-20% works well). Two later variants use the same noisy gradients: **SmoothGrad-squared** (Hooker et
# al. 2019) averages their squares, **VarGrad** (Adebayo et al. 2018) takes their variance.
#
# The classifier: a small CNN trained on scikit-learn's 8x8 digits.

# %%
assert MODEL == "digits", "notebook 01 uses the digits CNN; other models plug into the same functions"
trained = toys.digits_classifier(seed=0)
model, data = trained.model, trained.data
print(f"test accuracy {trained.accuracy:.3f} on {len(data.test_y)} digits "
      f"({'loaded from the cache' if trained.from_cache else f'trained in {trained.seconds:.1f} s'})")
assert trained.accuracy > 0.9

image = data.test_x[0]  # (1, 8, 8), pixels in [0, 1]
sg = xaikit.smoothgrad(model, image, sigma=0.15, n=N_SAMPLES, seed=0, value_range=(0, 1))
assert sg.shape == image.shape
# sigma -> 0 gives back the plain gradient
assert torch.allclose(xaikit.smoothgrad(model, image, sigma=0.0, n=3, seed=0), xaikit.gradient(model, image),
                      atol=1e-6)
# the three variants summarise the same n gradients g_k: mean(g^2) = var(g) + mean(g)^2, pixel by pixel
noisy = noisy_gradients(model, image, sigma=0.15, n=N_SAMPLES, seed=0, value_range=(0, 1))
assert torch.allclose(noisy.reduce("smoothgrad"), sg)
assert torch.allclose(noisy.reduce("squared"), noisy.reduce("vargrad") + noisy.reduce("smoothgrad") ** 2,
                      rtol=1e-4, atol=1e-9)

# %% [markdown]
# **A measured claim.** Nudge each test image by Gaussian noise of 2% of the pixel range (invisible) and
# measure how much each map moves, as $\lVert m(x + \delta) - m(x) \rVert / \lVert m(x) \rVert$. Each of
# the two SmoothGrad maps gets its own noise draw (its own seed), as it does for a user who explains the two
# images one after the other, so the change we measure includes SmoothGrad's own sampling noise. To see how
# much of it that is, we also compare two independent draws on the *same*, unchanged image.

# %%
n_images = pick(20, 12)
N_MEASURE = 50  # SmoothGrad samples for this measurement in both modes: fewer would drown it in sampling noise
nudge = torch.Generator().manual_seed(1)
raw_change, smooth_change, resample_change = [], [], []
for i in range(n_images):
    x = data.test_x[i]
    x_nudged = x + 0.02 * torch.randn(x.shape, generator=nudge)
    target = int(model(x[None]).argmax())
    raw_change.append(relative_change(xaikit.gradient(model, x, target=target),
                                      xaikit.gradient(model, x_nudged, target=target)))
    smooth, nudged, again = (xaikit.smoothgrad(model, z, sigma=0.15, n=N_MEASURE, target=target, seed=seed,
                                               value_range=(0, 1))
                             for z, seed in ((x, 3 * i), (x_nudged, 3 * i + 1), (x, 3 * i + 2)))  # 3 draws
    smooth_change.append(relative_change(smooth, nudged))   # the nudge, with independent draws
    resample_change.append(relative_change(smooth, again))  # no nudge: sampling noise alone
raw_median = torch.tensor(raw_change).median().item()
smooth_median = torch.tensor(smooth_change).median().item()
resample_median = torch.tensor(resample_change).median().item()
print(f"median change of the map over {n_images} digits: raw gradient {raw_median:.1%}, SmoothGrad "
      f"{smooth_median:.1%} (n = {N_MEASURE}); two SmoothGrad draws on the same image: {resample_median:.1%}")
# how much less SmoothGrad moves depends on the trained CNN (medians 0.5-0.9 of the raw gradient's over
# training seeds 0-2), so the assert says only "less"; sampling noise alone was 0.7-1.0 of its change
assert smooth_median < raw_median  # SmoothGrad moves less than the raw gradient ...
assert sum(s < r for s, r in zip(smooth_change, raw_change, strict=True)) > 0.5 * n_images  # ... on most images
assert resample_median > 0.6 * smooth_median  # and much of what it moves is its own sampling noise

# %% [markdown]
# So under an invisible nudge the raw gradient moves by the median printed above, SmoothGrad's map, drawn
# afresh, moves less on most images, and much of that is not the nudge at all: two draws on the same,
# unchanged image differ by well over half as much. That part is the sampling error of an average of $n$
# gradients, which shrinks like $1/\sqrt{n}$ (try a larger $n$ below).

# %% [markdown]
# Explore: pick a digit, raise $\sigma$ and $n$, switch the variant. The panel keeps one seed, unlike the
# measurement above: changing the image or $\sigma$ shows the effect of that change alone, not of a new draw.

# %%
panel4 = widgets.SmoothGradPanel(trained, n=N_SAMPLES)
assert torch.allclose(panel4.result.smoothed, noisy.reduce("smoothgrad"))  # the panel draws the same map
wider = noisy_gradients(model, image, sigma=0.25, n=N_SAMPLES, seed=0, value_range=(0, 1))
panel4.set(kind="vargrad", sigma=0.25)
assert torch.allclose(panel4.result.smoothed, wider.reduce("vargrad"))
panel4.set(kind="smoothgrad", sigma=0.15)
assert panel4.error is None
panel4

# %% [markdown]
# **Exercise 4.1.** Set $\sigma = 0$ in the panel. What do you see, and why? Then set $n = 1$ with
# $\sigma = 0.3$: is one noisy gradient a better explanation than the raw one?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# With $\sigma = 0$ every copy is $x$ itself, so SmoothGrad equals the raw gradient (asserted above). With
# $n = 1$ it is the gradient at one random nearby point: just as noisy, and now random. The averaging over
# many samples is what removes the noise; its standard error falls like $1/\sqrt{n}$.
# </details>

# %% [markdown]
# **Exercise 4.2.** SmoothGrad changes less under a nudge. Does that make it *more faithful* to the model?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# Not necessarily. SmoothGrad explains a smoothed version of the model (the gradient of $f$ convolved with
# a Gaussian), not the model at $x$. Stability is desirable, but whether the highlighted pixels matter to
# the prediction is a separate question, tested by removing them (faithfulness, later notebooks).
# </details>

# %% [markdown]
# ## 5. Sanity checks: does the map depend on what the model learned?
# *Beyond the lectures: Adebayo et al., 2018.*
#
# A saliency map is meant to show what the *model* uses. Adebayo et al. (2018, "Sanity Checks for Saliency
# Maps") ask what happens to it when the model no longer knows anything:
#
# * **cascading model randomisation**: re-initialise the output layer's weights, then also the layer below,
#   and so on down to the input, and compare each map with the trained model's map;
# * **data randomisation**: train the same network on labels shuffled before training, so no digit keeps a
#   reason for its label, and compare again.
#
# A method whose map barely changes fails the check: it shows the input (or the architecture), not what the
# weights learned; an edge detector would draw much the same picture. Similarity is measured by three of
# the paper's four measures: the **Spearman rank correlation** of the two maps, with and without absolute
# values, and **SSIM** (structural similarity, Wang et al. 2004) of the maps scaled to [0, 1] (the fourth,
# the correlation of histograms of oriented gradients (HOG), is left out here). Every model is asked about the
# class the trained model predicts. The digits CNN has three layers; from the top:

# %%
from xaikit.tensor import sanity

print(sanity.layers_from_top(model))
assert sanity.layers_from_top(model) == ["head", "conv2", "conv1"]
weights_before = {k: v.clone() for k, v in model.state_dict().items()}
randomised = sanity.cascading_randomisation(model, upto=1, seed=0)  # a copy with a new output layer
changed = [k for k, v in randomised.state_dict().items() if not torch.equal(v, weights_before[k])]
assert changed == ["head.weight", "head.bias"]  # exactly the top layer's parameters ...
assert all(torch.equal(v, weights_before[k]) for k, v in model.state_dict().items())  # ... of a copy

# %% [markdown]
# Now the whole cascade on several test digits, for three randomisation seeds: the table gives the mean
# Spearman correlation of the *absolute* maps with the trained model's, as more layers are re-drawn.

# %%
sanity_images = data.test_x[:N_SANITY_IMAGES]
cascades = [sanity.cascade_scores(model, sanity_images, seed=s, n=N_SAMPLES, steps=16) for s in range(3)]
steps_names = ["none", *(" + ".join(cascades[0].layers[:k]) for k in range(1, 4))]
table = sum(c.mean("spearman_abs") for c in cascades) / len(cascades)  # (4 steps, 4 methods)
print("mean Spearman |map| with the trained model's, 3 randomisation seeds; rows: layers randomised")
print(f"{'':20s}" + "".join(f"{m:>22s}" for m in sanity.METHODS))
for k, name in enumerate(steps_names):
    print(f"{name:20s}" + "".join(f"{v:22.2f}" for v in table[k]))
signed_all = sum(c.mean("spearman")[-1] for c in cascades) / len(cascades)
print("Spearman of the signed maps with every layer randomised: "
      + ", ".join(f"{m} {v:.2f}" for m, v in zip(sanity.METHODS, signed_all, strict=True)))
ssim_all = sum(c.mean("ssim")[-1] for c in cascades) / len(cascades)
print("SSIM with every layer randomised: " + ", ".join(f"{m} {v:.2f}" for m, v in zip(sanity.METHODS, ssim_all, strict=True)))

# %% [markdown]
# Gradient and SmoothGrad pass the check: re-drawing the output layer alone leaves their maps almost
# uncorrelated with the trained model's. Gradient × input and Integrated Gradients (black baseline) keep a
# rank correlation near 0.9 whatever is randomised, and an SSIM between about 0.35 and 0.6 (printed above; asserted above 0.25). Both multiply the gradient
# by the input (IG by $x - x'$ with $x' = 0$): every background pixel is 0, so it gets 0 from *any* model,
# and the digit's strokes dominate the magnitudes. Without absolute values all four correlations drop near
# 0: the signs do follow the model. The asserts below hold for each seed separately; over training seeds
# 0-2, randomisation seeds 0-2, 8 or 12 digits and two CPU kernel sets (`benchmarks/sanity_checks.py`)
# the gradient's and SmoothGrad's means stayed within 0.25 of 0 and gradient × input's and IG's between
# 0.89 and 0.93.

# %%
G_, GXI, SG, IG_ = (sanity.METHODS.index(m) for m in ("gradient", "gradient x input", "SmoothGrad",
                                                      "Integrated Gradients"))  # the tables' columns
for c in cascades:
    rank_abs, rank, ssim = c.mean("spearman_abs")[1:], c.mean("spearman")[1:], c.mean("ssim")[1:]  # k = 1..3
    assert (rank_abs[:, [G_, SG]] < 0.4).all() and (rank_abs[-1, [G_, SG]] < 0.3).all()  # the map changes ...
    assert (rank_abs[:, [GXI, IG_]] > 0.8).all()  # ... but the input's structure stays in these two
    assert (ssim[:, [G_, SG]] < 0.3).all() and (ssim[:, [GXI, IG_]] > 0.25).all()
    assert (abs(rank) < 0.3).all()  # with signs, every method's map changes
zero_share = float((sanity_images == 0).float().mean())
print(f"{zero_share:.0%} of these digits' pixels are exactly 0")
assert zero_share > 0.3

# %% [markdown]
# **Data randomisation.** The same CNN trained on shuffled labels (seeded, a few seconds with a progress bar
# the first time, then cached). It fits part of its random labels, and it cannot tell digits apart. (Adebayo
# et al. trained theirs until it had memorised nearly all of its random labels; this small CNN memorises
# less, so here the test asks only whether the maps tell a model that learned digits from one that did not.)

# %%
shuffled = sanity.data_randomised_digits(seed=0)
print(f"trained on shuffled labels: {shuffled.train_accuracy:.0%} of its (random) training labels, "
      f"{shuffled.accuracy:.0%} of the true test labels (chance: 10%)")
assert shuffled.accuracy < 0.2 and shuffled.train_accuracy > 0.2
data_sims = sanity.compare_models(model, shuffled.model, sanity_images, n=N_SAMPLES, steps=16)  # (4, N, 3)
data_rank = dict(zip(sanity.METHODS, data_sims[:, :, 1].mean(1).tolist(), strict=True))  # Spearman |map|
print("mean Spearman |map|, shuffled-label model vs trained: "
      + ", ".join(f"{m} {v:.2f}" for m, v in data_rank.items()))
assert data_rank["gradient"] < 0.35 and data_rank["SmoothGrad"] < 0.35
assert data_rank["gradient x input"] > 0.8 and data_rank["Integrated Gradients"] > 0.8

# %% [markdown]
# The same verdict: a model that learned nothing about digits gets gradient × input and IG maps that
# correlate about 0.9 with the trained model's. Explore one digit at a time: the slider re-draws the top
# layers (0: the trained model), the titles give each map's similarity to the trained model's map.

# %%
panel5 = widgets.SanityCheckPanel(trained, shuffled, n=N_SAMPLES)
panel5.set(layers=0)
assert all(s == sanity.Similarity(1.0, 1.0, 1.0) for s in panel5.result.similarity["randomised"].values())
panel5.set(layers=3)
sims5 = panel5.result.similarity["randomised"]
assert panel5.result.randomised == ["head", "conv2", "conv1"]
assert sims5["gradient x input"].spearman_abs > sims5["gradient"].spearman_abs + 0.4
panel5.set(layers=1)
assert panel5.error is None
panel5

# %% [markdown]
# **Exercise 5.1.** Passing the sanity checks is necessary, not sufficient. Name one thing a method that
# passes them may still get wrong, and one reason gradient × input can still be useful although it fails.
#
# <details class="xk-answer"><summary>Answer</summary>
#
# The checks only show that the map depends on the weights; a map can depend on them and still point at
# pixels the prediction does not need (faithfulness is tested by removing pixels, notebook 04), or be
# noisy (section 4). Gradient × input fails because it multiplies by $x$; where the question is "how much
# of $f(x) - f(0)$ does each pixel carry?" that factor is the point (it is exact for a linear model, and
# IG's completeness rests on it), but its *picture* must not be read as evidence of what the model learned.
# </details>

# %% [markdown]
# ## 6. Summary: how gradients fail, and what answers each failure
# *Lecture: Gradient/attention-based explanations (seeds/000), pp. 12-18.*
#
# | failure | seen in | why | what answers it | where |
# | --- | --- | --- | --- | --- |
# | **saturation**: gradient 0 although the input matters | §2, $\min(1, x_1 + x_2)$ at (1, 1) | the gradient is local; a flat region hides the path that led there | Integrated Gradients (sensitivity, completeness); DeepLIFT | notebook 02 |
# | **redundancy**: occlusion of one input misses inputs that are each sufficient | §2 | removing one of two sufficient causes changes nothing | IG, Shapley values / SHAP (all coalitions) | notebooks 02, 04 |
# | **thresholding**: the gradient jumps at a kink | §3, $\max(0, x - 10)$ | ReLU derivatives are step functions | smooth activations (softplus); IG integrates across the jump | §3, notebook 02 |
# | **noise**: tiny input changes move the map | §4 | piecewise-linear networks have sharply fluctuating gradients | SmoothGrad and variants; IG with expected-gradient baselines | §4, notebook 02 |
# | **baseline-free**: "important compared with what?" | §1, gradient × input uses 0 implicitly | a gradient compares with infinitesimal changes only | IG and SHAP make the baseline explicit | notebooks 02, 04 |
# | **pixels, not concepts** | §4 | a saliency map says where, not what | concept tests (TCAV) | notebook 05 |
# | **insensitivity to the model**: the map survives randomised weights or labels | §5, gradient × input and IG on the digits CNN | multiplying by the input keeps the input's structure in any model | sanity checks before reading a map (Adebayo et al. 2018); removal tests of faithfulness | §5, notebook 04 |
#
# The numbers behind the first four rows and the last, all measured above:

# %%
findings = {
    "saturation: both gradients are 0 at (1, 1) while f(1,1) - f(0,0) = 1":
        bool(xaikit.gradient(sat, [1.0, 1.0]).abs().max() == 0) and change == 1.0,
    "redundancy: occlusion gives 0 to both inputs at (1, 1)":
        bool(xaikit.occlusion(sat, [1.0, 1.0]).abs().max() == 0),
    "IG splits the change: 0.5 each, sum 1": bool(torch.allclose(ig.attributions, torch.tensor([0.5, 0.5]))),
    "thresholding: gradient 0 at 9.99, 1 at 10.01": xaikit.gradient(thr, [9.99]).item() == 0.0
        and xaikit.gradient(thr, [10.01]).item() == 1.0,
    "softplus -> ReLU: largest gap log(2)/beta < 0.001 at beta = 1000": gaps[1000] < 1e-3,
    f"noise: raw map moves {raw_median:.0%}, SmoothGrad {smooth_median:.0%} (resampling alone "
    f"{resample_median:.0%})": smooth_median < raw_median,
    f"sanity checks: every layer randomised, mean Spearman |map| gradient {table[-1, G_]:.2f}, gradient x input "
    f"{table[-1, GXI]:.2f}; shuffled labels: {data_rank['gradient']:.2f} and {data_rank['gradient x input']:.2f}":
        table[-1, G_] < 0.3 < 0.8 < table[-1, GXI] and data_rank["gradient"] < 0.35 < 0.8 < data_rank["gradient x input"],
}
for claim, holds in findings.items():
    print(("holds  " if holds else "FAILS  ") + claim)
assert all(findings.values())
