"""benchmarks/notebook_words.py: what it counts as a student's words, code and exercises, and the word limits
of the notebooks split so far (lecture 04 at most 3,500 words, lab 06 at most 5,000)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xaikit.course import words as notebook_words

ROOT = Path(__file__).resolve().parent.parent

SOURCE = '''# %% [markdown]
# # 09 — Demo
#
# Four words of prose, and a formula $x^2 + y^2$ and $$\\\\int_0^1 f(x)\\\\,dx$$ that do not count.

# %%
import numpy as np  # a comment does not count

x = np.ones(3)

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-1", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (7 min, ★☆☆).** Why?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Because of many hidden words here that a student never reads on the sheet.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# **Homework.** Write it.

# %% nbgrader={"grade": false, "grade_id": "f", "locked": false, "schema_version": 3, "solution": true}
def f():
    ### BEGIN SOLUTION
    return 1
    ### END SOLUTION
'''


def test_counts_visible_prose_code_and_exercises(tmp_path):
    path = tmp_path / "09_demo.py"
    path.write_text(SOURCE, encoding="utf-8")
    c = notebook_words.count(path)
    # a word needs a letter or a digit: "09", "Demo"; the 12 words of the sentence without its formulas;
    # "**Exercise", "(7", "min,", "Why?" (not the stars); "**Homework.**", "Write", "it."
    assert c.words == 2 + 12 + 4 + 3, c.words
    assert c.code == 3  # the import, the assignment, "def f():"; the solution line is hidden
    assert c.exercise_minutes == [7.0, notebook_words.DEFAULT_EXERCISE_MIN] and c.untimed == 1
    assert c.lab and c.limit == notebook_words.LAB_WORDS  # 09: a lab (06 and up)
    assert notebook_words.count(path).minutes == pytest.approx(c.words / notebook_words.READING_WPM + 7 + 5)


@pytest.mark.parametrize("stem", ["04_gradsam_shap", "06_attention_lab"])
def test_split_notebooks_keep_their_word_limits_and_time_every_exercise(stem):
    c = notebook_words.count(ROOT / "notebooks" / f"{stem}.py")
    assert c.words <= c.limit, f"{stem}: {c.words} words of prose, limit {c.limit}"
    assert c.exercise_minutes and c.untimed == 0, f"{stem}: {c.untimed} exercises state no time"


def test_homework_minutes_are_counted_apart_from_class_time(tmp_path):
    path = tmp_path / "09_demo.py"
    path.write_text(SOURCE.replace("# **Homework.** Write it.", "# **Homework 1 (homework, 20 min, ★★☆).** Write it."),
                    encoding="utf-8")
    c = notebook_words.count(path)
    assert c.exercise_minutes == [7.0, 20.0] and c.homework_minutes == [20.0] and c.untimed == 0
    assert c.class_minutes == 7.0
    assert c.minutes == pytest.approx(c.words / notebook_words.READING_WPM + 7)  # homework is not class time


@pytest.mark.parametrize("stem", ["01_gradients", "02_integrated_gradients", "03_self_attention",
                                  "04_gradsam_shap"])
def test_lectures_time_every_exercise_and_fit_75_minutes_in_class(stem):
    c = notebook_words.count(ROOT / "notebooks" / f"{stem}.py")
    assert c.untimed == 0, f"{stem}: {c.untimed} exercises state no time"
    assert c.minutes <= 75, f"{stem}: {c.minutes:.0f} minutes of reading and in-class exercises"
