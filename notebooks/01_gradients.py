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
# much the output moves when input $x_i$ moves a little. Drawn over an image, the size of the gradient at
# each pixel is a **saliency map**. It costs one backward pass and needs no choices. This lecture builds
# gradient explanations on models small enough to reason about by hand, then breaks them three ways.
#
# **Learning objectives.** After this lecture you can
#
# * compute the gradient and gradient × input of a model, and say what question each one answers;
# * show on a two-input model how saturation and thresholding make gradients mislead, and what answers each;
# * run SmoothGrad and occlusion on a digit classifier and say what each one trades for its stability;
# * run the sanity checks of Adebayo et al. and say why a map that multiplies by the input can pass as
#   plausible on a model that learned nothing.
#
# **Outline** (75 minutes):
#
# 1. gradient and gradient × input on a smooth model of two inputs;
# 2. **saturation** (Shrikumar et al. 2017): the gradient is 0 although the input matters;
# 3. **thresholding**: the gradient jumps, and a softplus makes it continuous;
# 4. **noise** (Smilkov et al. 2017): a tiny input change moves the saliency map a lot; SmoothGrad helps;
#    **occlusion** (Zeiler & Fergus 2014) perturbs the input instead of differentiating it;
# 5. **sanity checks** (Adebayo et al. 2018): which maps change when the model forgets what it learned;
# 6. a summary of the failures and the later methods that answer them.
#
# Every number the text states is printed by the code that computes it, and every claim about one is
# checked when its cell runs; numbers that depend on how a model happened to train are printed as this
# model's. Numbers quoted from a paper or the lecture are marked as theirs.

# %%
# Instructors, before a lecture: uncomment the two lines below for presenter mode (bigger fonts and
# figures, fixed seeds, fast mode); xaikit.course.presenter.off() switches it back (README: "Presenter mode").
# import xaikit.course.presenter
# xaikit.course.presenter.on()

# %%
import math

import torch

import xaikit
from xaikit import pick, widgets
from xaikit.course.claims import LEDGER, claim
from xaikit.policies import method_threads
from xaikit.tensor import toys
from xaikit.tensor.contrast import deeplift_rescale
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
slope_error = 0.0
for i in range(2):
    step = torch.zeros(2)
    step[i] = h
    slope = (f((x + step)[None]) - f((x - step)[None])).item() / (2 * h)
    slope_error = max(slope_error, abs(slope - g[i].item()))
claim("01.1-gradient-is-slope", slope_error)
assert torch.allclose(xaikit.grad_times_input(f, x), x * g)

# the formula above is the model's
z = 2 * torch.randn(200, 2)
assert torch.allclose(f(z), torch.sigmoid(1.5 * z[:, 0] - z[:, 1] + 0.8 * z[:, 0] * z[:, 1] + 0.2))
# gradient x input is only a first-order estimate: on this curved f it misses much of f(x) - f(0)
change_from_0 = (f(x[None]) - f(torch.zeros(1, 2))).item()
gxi_total = xaikit.grad_times_input(f, x).sum().item()
print(f"f(x) - f(0) = {change_from_0:.3f}; gradient x input adds up to {gxi_total:.3f}")
_ = claim("01.1-gxi-misses-change", abs(change_from_0 - gxi_total))

# %% [markdown]
# Move the point with the sliders: the arrow is the gradient direction on the contour of $f$, the bars
# the two attributions. Where $f$ is flat (the yellow plateau where $f \approx 1$, the dark one where
# $f \approx 0$) both attributions shrink, although out there the inputs clearly decide the output: a first
# hint of section 2.

# %%
panel1 = widgets.GradientPanel()
panel1.set(x1=2.5, x2=2.5)  # on the upper-right plateau: f is nearly 1 and nearly flat
assert panel1.result.value > 0.99
plateau_attr = max(a.abs().max().item() for a in panel1.result.attributions.values())  # both attributions
panel1.set(x1=-2.5, x2=2.5)  # on the dark plateau: f is nearly 0 and nearly flat
assert panel1.result.value < 0.01
plateau_attr = max(plateau_attr, *(a.abs().max().item() for a in panel1.result.attributions.values()))
claim("01.1-plateau-attributions-small", plateau_attr)
panel1.set(x1=1.0, x2=-0.5)
assert panel1.error is None
panel1

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_grad_times_input-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise 1.1 (10 min, ★★☆).** Write gradient × input from `xaikit.gradient` yourself: `my_grad_times_input(f, x)` returns one number per
# input; `xaikit.check_grad_times_input` compares it with the reference and says what differs.

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

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-1", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise 1.2 (5 min, ★☆☆).** At which points is gradient × input zero for an input whose gradient is not?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Wherever that input is 0: gradient × input multiplies the slope by $x_i$, so an input at 0 gets nothing
# however steep $f$ is there. This is also why gradient × input depends on where 0 is (shifting an
# input by a constant changes its attribution): it implicitly uses the baseline 0.
# </details>
# <!-- END SOLUTION -->

# %% nbgrader={"grade": false, "grade_id": "my_grad_times_input-use", "locked": true, "schema_version": 3, "solution": false}
x = torch.tensor([0.0, 1.5])
mine = my_grad_times_input(f, x)
assert torch.allclose(mine, xaikit.grad_times_input(f, x))
# an input at 0 gets nothing, however steep f is (exact: 0 times a finite slope is 0)
assert mine[0] == 0 and xaikit.gradient(f, x)[0].abs() > 0.1

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
assert change == 1.0  # exact: f(1, 1) is the constant 1 and f(0, 0) = 0 + 0
# both gradients are 0 at (1, 1), and so is gradient x input
saturated = max(xaikit.gradient(sat, x).abs().max().item(),
                xaikit.grad_times_input(sat, x).abs().max().item())
_ = claim("01.2-saturated-gradient-zero", saturated)

# %% [markdown]
# Occlusion (set one input to the **baseline** 0, a reference value that stands for "absent", and watch the
# output drop) does not rescue us here: with
# either input removed, the other still reaches 1. Integrated Gradients (notebook 02) walks from the
# baseline to $x$ and adds up gradients along the way, before the model saturates: it splits the change
# of 1 equally. Here is a preview, checked against xaikit's IG implementation.

# %%
occ = xaikit.occlusion(sat, x, window=1, baseline=0.0)
ig = xaikit.integrated_gradients(sat, x, x0, steps=64, rule="riemann_middle")
print(f"occlusion = {occ.tolist()}, IG = {ig.attributions.tolist()}")
claim("01.2-occlusion-misses-both", occ.abs().max(), note="largest |occlusion|")  # misses both inputs too
claim("01.2-ig-splits-equally", (ig.attributions - 0.5).abs().max(), note="largest |IG attribution - 0.5|")
claim("01.2-ig-completeness", abs(ig.attributions.sum().item() - change),
      note="|sum of IG - (f(x) - f(x'))|")  # IG adds up to f(x) - f(x')

panel2 = widgets.GradientSaturationPanel()
r = panel2.result
assert torch.allclose(r.attributions["IG preview (64 steps)"], ig.attributions)
panel2.set(x1=0.3, x2=0.4)  # below the kink the attributions agree: each input gets its own share x_i
below = panel2.result.attributions
claim("01.2-below-kink-agree", max((below[name] - torch.tensor([0.3, 0.4])).abs().max().item()
                                   for name in ("gradient x input", "occlusion (to 0)",
                                                "IG preview (64 steps)")))
panel2.set(x1=1.0, x2=1.0)
assert panel2.error is None
panel2

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-2", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise 2.1 (5 min, ★☆☆).** Set $x = (0.8, 0.8)$ in the panel. Which methods now give non-zero attributions, and
# do they add up to $f(x) - f(0)$?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# $x_1 + x_2 = 1.6 \ge 1$, so the gradient and gradient × input are 0. Occlusion is not: removing $x_1$
# leaves $f(0, 0.8) = 0.8$, a drop of 0.2 for each input, which adds up to 0.4, not $f(x) - f(0) = 1$.
# IG gives 0.5 each and adds up to 1 (completeness, notebook 02).
# </details>
# <!-- END SOLUTION -->

# %%
panel2.set(x1=0.8, x2=0.8)
at_08 = panel2.result.attributions
expected_08 = {"gradient": 0.0, "gradient x input": 0.0, "occlusion (to 0)": 0.2,
               "IG preview (64 steps)": 0.5}
claim("01.2-attributions-at-0.8",
      max((at_08[name] - v).abs().max().item() for name, v in expected_08.items()))
# occlusion adds up to 0.4, not f(x) - f(0) = 1
assert abs(at_08["occlusion (to 0)"].sum().item() - 1.0) > 0.5

# %% [markdown]
# ## 3. Thresholding: gradients that jump
# *Lecture: Gradient/attention-based explanations (seeds/000), pp. 13-14.*
#
# $f(x) = \max(0, x - 10)$, a ReLU shifted to 10. Its gradient is 0 just below 10 and 1 just above: an
# input of 9.99 and one of 10.01 get completely different explanations although the outputs barely
# differ. Shrikumar, Greenside & Kundaje (2017, *Learning Important Features Through Propagating Activation
# Differences*, section 2.2 and figure 2) use this very function to show what the jump does to
# gradient × input: at $x = 10 + \varepsilon$ it gives the input an importance of $1 \cdot (10 + \varepsilon)$,
# although the output is only $\varepsilon$. Their fix is a **reference**: DeepLIFT explains the difference
# $f(x) - f(x')$ from a reference input $x'$ (here 0), with the multiplier $\Delta y / \Delta x$ in place of
# the gradient, so the input gets $\varepsilon$, exactly the change of the output (summation-to-delta). The
# same model, explained against a reference: both numbers below.

# %%
thr = toys.thresholded
jump = max(abs(xaikit.gradient(thr, [9.99]).item()), abs(xaikit.gradient(thr, [10.01]).item() - 1.0))
claim("01.3-gradient-jumps", jump, note="largest gap of the two gradients from 0 and 1")  # 0 at 9.99, 1 at 10.01
claim("01.3-outputs-barely-differ", thr(torch.tensor([[10.01]])) - thr(torch.tensor([[9.99]])))

# Shrikumar et al.'s figure 2: at x = 10 + eps, gradient x input says 10 + eps, the output is eps
eps = 0.01
out_eps = thr(torch.tensor([[10 + eps]])).item()
gxi_eps = xaikit.grad_times_input(thr, [10 + eps]).item()
relu_net = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU()).eval()  # the same f as a ReLU network
with torch.no_grad():
    relu_net[0].weight.fill_(1.0)
    relu_net[0].bias.fill_(-10.0)
deeplift_eps = deeplift_rescale(relu_net, torch.tensor([10 + eps]), baseline=torch.tensor([0.0])).item()
print(f"x = 10 + {eps}: f(x) = {out_eps:.4f}, gradient x input = {gxi_eps:.4f}, "
      f"DeepLIFT (reference x' = 0) = {deeplift_eps:.4f}")
claim("01.3-gxi-is-ten-plus-eps", abs(gxi_eps - (10 + eps)))  # the importance is the input itself ...
out_ref = thr(torch.tensor([[0.0]])).item()  # f(x') = 0 at the reference
_ = claim("01.3-deeplift-is-output", abs(deeplift_eps - (out_eps - out_ref)))  # ... DeepLIFT's is f(x) - f(x')

# %% [markdown]
# The lecture's remedy is different: replace the ReLU by a **softplus**,
# $\mathrm{softplus}_\beta(x - 10) = \log(1 + e^{\beta (x - 10)}) / \beta$, whose gradient
# $\sigma(\beta (x - 10))$ is continuous. As $\beta$ grows softplus tends to the ReLU: the largest gap is
# $\log 2 / \beta$, at $x = 10$. Note what this changes: softplus gives smooth gradients of a *different
# model*, one that is never exactly 0 below 10; DeepLIFT's reference (and IG's baseline, notebook 02)
# explain the model we have.

# %%
grid = torch.linspace(5, 15, 2001, dtype=torch.float64)[:, None]
gaps = {}
for beta in (1, 10, 100, 1000):
    gaps[beta] = (toys.softplus_relu(beta)(grid) - thr(grid)).max().item()
print({b: round(v, 5) for b, v in gaps.items()})
claim("01.3-softplus-gap-log2-over-beta", max(abs(gaps[b] - math.log(2) / b) for b in gaps))
assert all(gaps[a] > gaps[b] for a, b in ((1, 10), (10, 100), (100, 1000)))  # softplus -> ReLU
assert gaps[1000] < 1e-3

# the gradient becomes a continuous ramp that steepens towards the step: 0.5 at 10 for every beta ...
claim("01.3-softplus-gradient-half", max(abs(xaikit.gradient(toys.softplus_relu(beta), [10.0]).item() - 0.5)
                                         for beta in (1.0, 10.0, 100.0, 1000.0)))
assert abs(xaikit.gradient(toys.softplus_relu(100.0), [10.5]).item() - 1.0) < 1e-6
# ... and for every beta it climbs from under 0.02 to over 0.98 between 10 - 4/beta and 10 + 4/beta
_ = claim("01.3-softplus-ramp", max(max(xaikit.gradient(toys.softplus_relu(beta), [10 - 4 / beta]).item(),
                                        1 - xaikit.gradient(toys.softplus_relu(beta), [10 + 4 / beta]).item())
                                    for beta in (1.0, 10.0, 100.0)))

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

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-3", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise 3.1 (5 min, ★★☆).** Whatever $\beta$ is, the softplus gradient at $x = 10$ is the same number. Which, and
# why? What does a large $\beta$ buy and cost?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# $\sigma(\beta \cdot 0) = 0.5$ for every $\beta$. A large $\beta$ makes the model closer to the ReLU (a
# gap of $\log 2 / \beta$) but its gradient climbs from below 0.02 to above 0.98 within $4/\beta$ of the
# threshold (checked above),
# so explanations near 10 are again fragile; a small $\beta$ gives smooth gradients of a different model.
# </details>
# <!-- END SOLUTION -->

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
trained = toys.digits_classifier()  # the cache's training seed (python -m xaikit prepare --seed N)
model, data = trained.model, trained.data
print(f"test accuracy {trained.accuracy:.3f} on {len(data.test_y)} digits "
      f"({'loaded from the cache' if trained.from_cache else f'trained in {trained.seconds:.1f} s'})")
claim("01.4-digits-accuracy", trained.accuracy)

image = data.test_x[0]  # (1, 8, 8), pixels in [0, 1]
sg = xaikit.smoothgrad(model, image, sigma=0.15, n=N_SAMPLES, seed=0, value_range=(0, 1))
assert sg.shape == image.shape
# sigma -> 0 gives back the plain gradient (the difference relative to the gradient's largest |value|)
plain = xaikit.gradient(model, image)
claim("01.4-smoothgrad-sigma0-is-gradient",
      (xaikit.smoothgrad(model, image, sigma=0.0, n=3, seed=0) - plain).abs().max() / plain.abs().max())
# the three variants summarise the same n gradients g_k: mean(g^2) = var(g) + mean(g)^2, pixel by pixel
noisy = noisy_gradients(model, image, sigma=0.15, n=N_SAMPLES, seed=0, value_range=(0, 1))
assert torch.allclose(noisy.reduce("smoothgrad"), sg)
squared = noisy.reduce("squared")  # mean(g^2) > 0 on every pixel; the gap relative to it, pixel by pixel
var_plus_mean2 = noisy.reduce("vargrad") + noisy.reduce("smoothgrad") ** 2
_ = claim("01.4-squared-is-var-plus-mean2", ((squared - var_plus_mean2).abs() / squared.clamp(min=1e-9)).max())

# %% [markdown]
# **A measurement.** Nudge each test image by Gaussian noise of 2% of the pixel range (invisible) and
# measure how much each map moves, as $\lVert m(x + \delta) - m(x) \rVert / \lVert m(x) \rVert$. Each of
# the two SmoothGrad maps gets its own noise draw (its own seed), as it does for a user who explains the two
# images one after the other, so the change we measure includes SmoothGrad's own sampling noise. To see how
# much of it that is, we also compare two independent draws on the *same*, unchanged image: that is the
# noise floor, the change SmoothGrad shows with no nudge at all. And we compare the two images under the
# *same* noise draw (the same seed, "common random numbers"), which removes the floor and leaves the nudge's
# own effect on the smoothed map.

# %%
n_images = pick(20, 12)
N_MEASURE = 50  # SmoothGrad samples for this measurement in both modes: fewer would drown it in sampling noise
nudge = torch.Generator().manual_seed(1)
raw_change, smooth_change, resample_change, same_draw_change = [], [], [], []
with method_threads():  # many small gradient passes: one thread, as in section 5
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
        same_draw = xaikit.smoothgrad(model, x_nudged, sigma=0.15, n=N_MEASURE, target=target, seed=3 * i,
                                      value_range=(0, 1))  # the nudged image under smooth's own noise draw
        same_draw_change.append(relative_change(smooth, same_draw))  # the nudge alone, no sampling noise
raw_median = torch.tensor(raw_change).median().item()
smooth_median = torch.tensor(smooth_change).median().item()
resample_median = torch.tensor(resample_change).median().item()
same_draw_median = torch.tensor(same_draw_change).median().item()
print(f"median change of the map over {n_images} digits (n = {N_MEASURE} for SmoothGrad):")
print(f"  raw gradient, nudged image:                     {raw_median:6.1%}   <- the effect")
print(f"  SmoothGrad, nudged image, independent draws:    {smooth_median:6.1%}")
print(f"  SmoothGrad, same image, two draws (noise floor): {resample_median:6.1%}")
print(f"  SmoothGrad, nudged image, the same draw:        {same_draw_median:6.1%}   <- the nudge without the floor")
# how much less SmoothGrad moves depends on the trained CNN (medians 0.5-0.9 of the raw gradient's over
# training seeds 0-2), so the claim says only "less"; sampling noise alone was 0.7-1.0 of its change
claim("01.4-raw-gradient-change", raw_median)
claim("01.4-smoothgrad-moves-less", smooth_median / raw_median)  # SmoothGrad moves less than the gradient ...
claim("01.4-smoothgrad-less-on-most",  # ... on most images
      sum(s < r for s, r in zip(smooth_change, raw_change, strict=True)) / n_images)
claim("01.4-resampling-noise", resample_median / smooth_median)  # and much of it is its own sampling noise
_ = claim("01.4-smoothgrad-same-draw", same_draw_median / raw_median)  # with one draw: under half the raw change

# %% [markdown]
# So under an invisible nudge the raw gradient moves by the median printed above, SmoothGrad's map, drawn
# afresh, moves less on most images, and much of that is not the nudge at all: two draws on the same,
# unchanged image differ by well over half as much. That noise floor is the sampling error of an average of
# $n$ gradients, which shrinks like $1/\sqrt{n}$ (try a larger $n$ below). Read the effect against the floor:
# with the floor removed (the same draw on both images) SmoothGrad's map moves by less than half of what the
# raw gradient moves, which is the stability Smilkov et al. (2017) describe.

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

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-4", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise 4.1 (5 min, ★☆☆).** Set $\sigma = 0$ in the panel. What do you see, and why? Then set $n = 1$ with
# $\sigma = 0.3$: is one noisy gradient a better explanation than the raw one?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# With $\sigma = 0$ every copy is $x$ itself, so SmoothGrad equals the raw gradient (checked above). With
# $n = 1$ it is the gradient at one random nearby point: just as noisy, and now random. The averaging over
# many samples is what removes the noise; its standard error falls like $1/\sqrt{n}$.
# </details>
# <!-- END SOLUTION -->

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-5", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise 4.2 (5 min, ★★☆).** SmoothGrad changes less under a nudge. Does that make it *more faithful* to the model?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Not necessarily. SmoothGrad explains a smoothed version of the model (the gradient of $f$ convolved with
# a Gaussian), not the model at $x$. Stability is desirable, but whether the highlighted pixels matter to
# the prediction is a separate question, tested by removing them (faithfulness, later notebooks).
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ### Perturbation instead of gradients: occlusion
#
# The lecture on gradient/attention-based explanations opens with the other family, perturbation-based methods: treat the model as a black box, change the input and watch the
# output. **Occlusion** (Zeiler & Fergus 2014) covers a $k \times k$ patch of the image with a blank value
# (0 here, the digits' background), records how much the predicted class's
# **logit** (its score before the softmax turns scores into probabilities) drops, and slides the
# patch on by one pixel; each pixel gets the mean drop over the patches that covered it. No gradient is
# needed, only forward passes, one per patch position: $(8 - k + 1)^2$ of them on an $8 \times 8$ digit. It
# measures a finite change, "what if this part were gone", where the gradient measures an infinitesimal one,
# and its answer depends on two choices, the patch size and the value put in its place. First the method
# against the definition written as a loop over the patches, on the same digit as above; then how alike its
# map is to gradient × input's, by the **Spearman rank correlation** of the two maps: the correlation of the
# pixels' ranks, +1 when both maps order the pixels the same way, near 0 when the orders are unrelated.

# %%
c = int(model(image[None]).argmax())  # the predicted class, explained by every map below
k = 2
occluded = xaikit.occlusion(model, image, window=k, stride=1, baseline=0.0, target=c)  # (1, 8, 8)
drop_sum, covered = torch.zeros_like(image), torch.zeros_like(image)
with torch.no_grad():
    f_x = model(image[None])[0, c]
    for i in range(8 - k + 1):
        for j in range(8 - k + 1):
            patched = image.clone()
            patched[:, i:i + k, j:j + k] = 0.0  # the patch set to the blank background
            drop_sum[:, i:i + k, j:j + k] += f_x - model(patched[None])[0, c]
            covered[:, i:i + k, j:j + k] += 1
loop_gap = (occluded - drop_sum / covered).abs().max() / occluded.abs().max()
claim("01.4-occlusion-is-the-loop", loop_gap)  # the mean drop over the patches covering each pixel

# how alike are the maps? Spearman correlation of the pixel values with gradient x input, on this digit
from scipy.stats import spearmanr

gxi = xaikit.grad_times_input(model, image, target=c)
for size in (1, 2, 3):
    occ_map = xaikit.occlusion(model, image, window=size, stride=1, target=c)  # not `occ`: section 2's, used at the end
    rho = spearmanr(occ_map.flatten().numpy(), gxi.flatten().numpy()).statistic
    print(f"occlusion with a {size}x{size} patch vs gradient x input: Spearman {rho:+.2f}")

# %% [markdown]
# With a $1 \times 1$ patch and a blank baseline, occlusion asks of each pixel what gradient × input
# estimates from the slope at $x$ alone: the change of the logit when the pixel goes to 0. The two agree
# only as far as the network is linear between $x$ and the occluded image (the correlation above is for this
# digit and this trained CNN). Larger patches remove strokes rather than pixels and give coarser, smoother
# maps. Explore: pick a digit and move the patch size.

# %%
panel4b = widgets.OcclusionPanel(trained, patch=2)
assert torch.allclose(panel4b.result.occlusion, occluded)  # the panel draws the same map
panel4b.set(patch=3)
assert panel4b.error is None
assert torch.allclose(panel4b.result.occlusion, xaikit.occlusion(model, image, window=3, stride=1, target=c))
panel4b

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
from xaikit.lab import tensor_sanity as sanity

print(sanity.layers_from_top(model))
assert sanity.layers_from_top(model) == ["head", "conv2", "conv1"]
weights_before = {k: v.clone() for k, v in model.state_dict().items()}
randomised = sanity.cascading_randomisation(model, upto=1, seed=0)  # a copy with a new output layer
# torch.equal is exact here: a parameter that was not re-drawn is a copy of the trained one, bit for bit
changed = [k for k, v in randomised.state_dict().items() if not torch.equal(v, weights_before[k])]
assert changed == ["head.weight", "head.bias"]  # exactly the top layer's parameters ...
assert all(torch.equal(v, weights_before[k]) for k, v in model.state_dict().items())  # ... of a copy (exact: the trained model is left as it was)

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
# high rank correlation whatever is randomised (the table above), and an SSIM well above the gradient's (the
# lines below print the smallest SSIM over the cascade and its distance to the gradient's). Without absolute
# values all four correlations drop near 0: the signs do follow the model. Each statement below holds for
# every one of the three randomisation seeds. Why gradient × input and IG keep their correlation is the
# next cell.

# %%
G_, GXI, SG, IG_ = (sanity.METHODS.index(m) for m in ("gradient", "gradient x input", "SmoothGrad",
                                                      "Integrated Gradients"))  # the tables' columns
worst = {"grad_rank": -1.0, "grad_rank_all": -1.0, "gxi_rank": 2.0, "grad_ssim": -1.0, "gxi_ssim": 2.0,
         "signed": 0.0}
for c in cascades:  # the worst case over the randomisation seeds
    rank_abs, rank, ssim = c.mean("spearman_abs")[1:], c.mean("spearman")[1:], c.mean("ssim")[1:]  # k = 1..3
    worst["grad_rank"] = max(worst["grad_rank"], rank_abs[:, [G_, SG]].max())
    worst["grad_rank_all"] = max(worst["grad_rank_all"], rank_abs[-1, [G_, SG]].max())
    worst["gxi_rank"] = min(worst["gxi_rank"], rank_abs[:, [GXI, IG_]].min())
    worst["grad_ssim"] = max(worst["grad_ssim"], ssim[:, [G_, SG]].max())
    worst["gxi_ssim"] = min(worst["gxi_ssim"], ssim[:, [GXI, IG_]].min())
    worst["signed"] = max(worst["signed"], abs(rank).max())
claim("01.5-cascade-gradient-changes", worst["grad_rank"])  # the map changes ...
claim("01.5-cascade-gradient-all-layers", worst["grad_rank_all"])
claim("01.5-cascade-gxi-ig-keep-input", worst["gxi_rank"])  # ... but the input's structure stays in these two
claim("01.5-cascade-ssim-gradient", worst["grad_ssim"])
claim("01.5-cascade-ssim-gxi-ig", worst["gxi_ssim"])
claim("01.5-cascade-ssim-gxi-over-gradient", worst["gxi_ssim"] - worst["grad_ssim"])
claim("01.5-cascade-signed-changes", worst["signed"])  # with signs, every method's map changes
zero_share = float((sanity_images == 0).float().mean())
print(f"{zero_share:.0%} of these digits' pixels are exactly 0")
assert zero_share > 0.3  # a fact of the bundled data set, the same for every build

# %% [markdown]
# **Why gradient × input and IG survive: ties and the input.** Both multiply the gradient by the input (IG
# by $x - x'$ with $x' = 0$). A background pixel is exactly 0, so it gets exactly 0 from *any* model: in
# both maps all those pixels tie for the lowest |rank|, and that shared block of ties alone makes a rank
# correlation over all 64 pixels high. Two checks: the same correlation on the digit's own pixels only
# ($x > 0$), and the trained model's |gradient × input| against the input itself.

# %%
targets5 = [int(model(x[None]).argmax()) for x in sanity_images]  # the class the trained model predicts
RANKED = ("gradient", "gradient x input", "Integrated Gradients")
on_all = {m: [] for m in RANKED}  # method -> mean Spearman |map| over the digits, one per randomisation seed
on_digit = {m: [] for m in RANKED}
with method_threads():  # many tiny backward passes: one thread is faster than several fighting over 2 cores
    trained_maps = [sanity.sanity_maps(model, x, target=t, methods=RANKED, steps=16)
                    for x, t in zip(sanity_images, targets5, strict=True)]
    for s in range(3):  # every layer randomised, the seeds of the cascade above
        randomised_all = sanity.cascading_randomisation(model, upto=3, seed=s)
        other_maps = [sanity.sanity_maps(randomised_all, x, target=t, methods=RANKED, steps=16)
                      for x, t in zip(sanity_images, targets5, strict=True)]
        for m in RANKED:
            pairs = [(a[m], b[m], x > 0) for a, b, x in zip(trained_maps, other_maps, sanity_images, strict=True)]
            on_all[m].append(sum(sanity.spearman(a, b, absolute=True) for a, b, _ in pairs) / len(pairs))
            on_digit[m].append(sum(sanity.spearman(a[d], b[d], absolute=True) for a, b, d in pairs) / len(pairs))
print("every layer randomised, mean Spearman |map| with the trained model's (3 randomisation seeds):")
print(f"{'':22s}{'all 64 pixels':>16s}{'digit pixels only':>20s}")
for m in RANKED:
    print(f"{m:22s}{sum(on_all[m]) / 3:16.2f}{sum(on_digit[m]) / 3:20.2f}")


def follows(method, digit_only):
    """Mean Spearman of the trained model's |map| with the input itself (on the digit's pixels, or on all 64)."""
    return sum(sanity.spearman(a[method][x > 0] if digit_only else a[method], x[x > 0] if digit_only else x,
                               absolute=True) for a, x in zip(trained_maps, sanity_images, strict=True)) / len(trained_maps)


follows_input, follows_digit = follows("gradient x input", False), follows("gradient x input", True)
gradient_digit = follows("gradient", True)  # the control: the gradient's map has no input factor
print(f"trained model: Spearman of |gradient x input| with the input itself {follows_input:.2f} "
      f"(digit pixels only {follows_digit:.2f}); of |gradient| with the input on the digit pixels {gradient_digit:.2f}")
claim("01.5-gxi-ig-digit-pixels",  # on the digit's pixels the correlation is far lower
      sum(on_digit["gradient x input"] + on_digit["Integrated Gradients"]) / 6)
# ... but what is left there stays above the gradient's: the input factor survives the randomisation
claim("01.5-digit-left-above-gradient",
      min(sum(on_digit[m]) / 3 for m in ("gradient x input", "Integrated Gradients")) - sum(on_digit["gradient"]) / 3)
claim("01.5-trained-gxi-follows-input", follows_input)  # all 64 pixels: inflated by the tied background
# on the digit's pixels, against the control: gradient x input follows the input more than the gradient does
_ = claim("01.5-trained-gxi-follows-input-digit", follows_digit - gradient_digit)

# %% [markdown]
# On the digit's own pixels the correlation of gradient × input and IG falls far below its all-pixel value:
# much of the agreement was the tied background. What is left stays above the gradient's (checked),
# because there too each pixel's attribution is the gradient *times the pixel's value*, and the pixel
# values are the same for both models. The last line says the same from the other side, and again the
# all-pixel number flatters: over all 64 pixels the trained model's |gradient × input| ranks its pixels
# much as the input does, but that is the tied background once more; on the digit's pixels the
# correlation is moderate, and what can be checked is the comparison with the control, the gradient's own
# map, which has no input factor: gradient × input follows the input more than the gradient does. This is what Adebayo et al. (2018) call the input dominating the
# explanation: when an explanation is a product with the input, the input's structure can survive any
# change of the weights, so such a map looks plausible on a model that learned nothing, just as an edge
# detector's output does (their section comparing saliency maps with edge detectors).

# %% [markdown]
# **Data randomisation.** The same CNN trained on shuffled labels (seeded, a few seconds with a progress bar
# the first time, then cached). It fits part of its random labels, and it cannot tell digits apart. (Adebayo
# et al. trained theirs until it had memorised nearly all of its random labels; this small CNN memorises
# less, so here the test asks only whether the maps tell a model that learned digits from one that did not.)

# %%
shuffled = sanity.data_randomised_digits()  # the same training seed as the trained CNN
print(f"trained on shuffled labels: {shuffled.train_accuracy:.0%} of its (random) training labels, "
      f"{shuffled.accuracy:.0%} of the true test labels (chance: 10%)")
claim("01.5-shuffled-cannot-tell-digits", shuffled.accuracy)
claim("01.5-shuffled-fits-labels", shuffled.train_accuracy)
data_sims = sanity.compare_models(model, shuffled.model, sanity_images, n=N_SAMPLES, steps=16)  # (4, N, 3)
data_rank = dict(zip(sanity.METHODS, data_sims[:, :, 1].mean(1).tolist(), strict=True))  # Spearman |map|
with method_threads():  # the same digits and classes as the trained maps above, on the digit's pixels only
    shuffled_maps = [sanity.sanity_maps(shuffled.model, x, target=t, methods=RANKED, steps=16)
                     for x, t in zip(sanity_images, targets5, strict=True)]
data_digit = {m: sum(sanity.spearman(a[m][x > 0], b[m][x > 0], absolute=True)
                     for a, b, x in zip(trained_maps, shuffled_maps, sanity_images, strict=True)) / len(sanity_images)
              for m in RANKED}
print("mean Spearman |map|, shuffled-label model vs trained")
print("  on the digit's own pixels: " + ", ".join(f"{m} {v:.2f}" for m, v in data_digit.items()))
print("  over all 64 pixels, the tied zero background included: "
      + ", ".join(f"{m} {v:.2f}" for m, v in data_rank.items()))
claim("01.5-data-gradient-changes", max(data_rank["gradient"], data_rank["SmoothGrad"]))
_ = claim("01.5-data-gxi-ig-keep-input", min(data_rank["gradient x input"], data_rank["Integrated Gradients"]))

# %% [markdown]
# The same verdict. On the digit's own pixels (the first line above) the shuffled-label model's gradient ×
# input and IG maps keep only part of their rank correlation with the trained model's, though more than the
# gradient's: what is left is the input factor. Over all 64 pixels (the second line) the same two maps look
# almost like the trained model's, but that is the tied zero background again, as under model
# randomisation: a model that learned nothing about digits gets maps that look plausible. Explore one digit
# at a time: the slider re-draws the top
# layers (0: the trained model), the titles give each map's similarity to the trained model's map.

# %%
panel5 = widgets.SanityCheckPanel(trained, shuffled, n=N_SAMPLES)
panel5.set(layers=0)
claim("01.5-panel-unrandomised-similarity-one",
      max(abs(v - 1.0) for s in panel5.result.similarity["randomised"].values()
          for v in (s.spearman, s.spearman_abs, s.ssim)))
panel5.set(layers=3)
sims5 = panel5.result.similarity["randomised"]
assert panel5.result.randomised == ["head", "conv2", "conv1"]
claim("01.5-panel-gxi-above-gradient",
      sims5["gradient x input"].spearman_abs - sims5["gradient"].spearman_abs)
panel5.set(layers=1)
assert panel5.error is None
panel5

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-6", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise 5.1 (10 min, ★★★).** Passing the sanity checks is necessary, not sufficient. Name one thing a method that
# passes them may still get wrong, and one reason gradient × input can still be useful although it fails.
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# The checks only show that the map depends on the weights; a map can depend on them and still point at
# pixels the prediction does not need (faithfulness is tested by removing the highest-ranked inputs and
# watching the output fall; lab notebook 06 does it for the tokens of a sentence), or be noisy (section 4).
# Gradient × input fails because it multiplies by $x$; where the question is "how much
# of $f(x) - f(0)$ does each pixel carry?" that factor is the point (it is exact for a linear model, and
# IG's completeness rests on it), but its *picture* must not be read as evidence of what the model learned.
# </details>
# <!-- END SOLUTION -->

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
# | **insensitivity to the model**: the map survives randomised weights or labels | §5, gradient × input and IG on the digits CNN | multiplying by the input keeps the input's structure in any model | sanity checks before reading a map (Adebayo et al. 2018); removal tests of faithfulness | §5; lab 06, sections 5-6 |
#
# The numbers behind the first four rows and the last, all measured above:

# %%
def holds(claim_id, value):  # whether a value measured above passes its check (claim() checked it there)
    return LEDGER[claim_id].holds(value)


findings = {
    "saturation: both gradients are 0 at (1, 1) while f(1,1) - f(0,0) = 1":
        holds("01.2-saturated-gradient-zero", saturated) and change == 1.0,
    "redundancy: occlusion gives 0 to both inputs at (1, 1)":
        holds("01.2-occlusion-misses-both", occ.abs().max()),
    "IG splits the change: 0.5 each, sum 1":
        holds("01.2-ig-splits-equally", (ig.attributions - 0.5).abs().max())
        and holds("01.2-ig-completeness", abs(ig.attributions.sum().item() - change)),
    "thresholding: gradient 0 at 9.99, 1 at 10.01": holds("01.3-gradient-jumps", jump),
    "softplus -> ReLU: largest gap log(2)/beta < 0.001 at beta = 1000": gaps[1000] < 1e-3,
    f"noise: raw map moves {raw_median:.0%}, SmoothGrad {smooth_median:.0%} (resampling alone "
    f"{resample_median:.0%}, the same draw {same_draw_median:.0%})":
        holds("01.4-smoothgrad-moves-less", smooth_median / raw_median)
        and holds("01.4-smoothgrad-same-draw", same_draw_median / raw_median),
    f"sanity checks: every layer randomised, mean Spearman |map| gradient {table[-1, G_]:.2f}, gradient x input "
    f"{table[-1, GXI]:.2f}; shuffled labels: {data_rank['gradient']:.2f} and {data_rank['gradient x input']:.2f}":
        holds("01.5-cascade-gradient-all-layers", worst["grad_rank_all"])
        and holds("01.5-cascade-gxi-ig-keep-input", worst["gxi_rank"])
        and holds("01.5-data-gradient-changes", max(data_rank["gradient"], data_rank["SmoothGrad"]))
        and holds("01.5-data-gxi-ig-keep-input",
                  min(data_rank["gradient x input"], data_rank["Integrated Gradients"])),
}
for finding, ok in findings.items():
    print(("holds  " if ok else "FAILS  ") + finding)
assert all(findings.values())
