"""How much a student reads and does in each notebook: words of prose, lines of code, exercises, time.

Target: a lecture (01-05) at most 3,500 words of prose, a lab (06 and up) at most 5,000. The counting rules
are :mod:`xaikit.course.words`'s.

    python benchmarks/notebook_words.py            # the table; exit 1 when a notebook is over its limit
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xaikit.course import words

if __name__ == "__main__":
    sys.exit(words.table())
