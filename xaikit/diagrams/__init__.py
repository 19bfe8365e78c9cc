"""Static diagrams for the lecture notebooks: pictures of what the code computes, drawn with matplotlib.

* :func:`attention_steps`: scaled dot-product attention step by step on the lecture's three-input worked
  example (notebook 03, section 2), every number computed by :mod:`xaikit.attention.scratch`.
* :func:`transformer_block`: BERT's post-LayerNorm encoder block (Devlin et al. 2019; Vaswani et al. 2017;
  notebook 03, section 8).
* :func:`gradsam_flow`: Grad-SAM's data flow (Barkan et al. 2021, "Grad-SAM: Explaining Transformers via
  Gradient Self-Attention Maps"; notebook 04, section 3) on a small random example.
* :func:`vit_patches`: a Vision Transformer's input (Dosovitskiy et al. 2021; notebook 05, section 1): the
  image cut into patches, a [CLS] token prepended, position embeddings added.
* :func:`cav_diagram`: a concept activation vector and the directional derivative (Kim et al. 2018, TCAV;
  notebook 05, section 3) in a two-dimensional sketch, the CAV fitted by :func:`xaikit.concepts.cav.train_cav`.

Each function returns a :class:`Diagram`, a matplotlib ``Figure`` built without pyplot (so no figure is
left open) that Jupyter shows as a PNG even before pyplot has drawn anything. Colours follow
:mod:`xaikit.plotting`: weights in [0, 1] on the sequential map with the fixed range [0, 1], signed values on
the diverging map centred at zero, categories in the Okabe-Ito palette.

Importing it loads matplotlib and NumPy only; :func:`attention_steps` imports torch when called
(the scratch implementation computes its numbers).

The drawing parts are :mod:`xaikit.diagrams.draw`; the diagrams of the text notebooks
:mod:`xaikit.diagrams.text`, those of the vision notebook :mod:`xaikit.diagrams.vision`.
"""

from xaikit.diagrams.draw import Diagram
from xaikit.diagrams.text import GRADSAM_TOKENS, attention_steps, gradsam_flow, transformer_block
from xaikit.diagrams.vision import cav_diagram, vit_patches

__all__ = ["Diagram", "attention_steps", "gradsam_flow", "vit_patches", "transformer_block", "cav_diagram",
           "GRADSAM_TOKENS"]
