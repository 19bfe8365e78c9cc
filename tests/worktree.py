"""A throwaway copy of this checkout's working tree, for tests that must not touch the checkout itself
(tests/browser/test_start_lab.py runs start.sh in one; tests/test_install.py builds a wheel from one)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def copy_worktree(dest: Path, commit: bool = False) -> Path:
    """Copy the checkout's files as they are now (tracked files with their edits, and untracked files git
    does not ignore) to ``dest``; with ``commit``, make ``dest`` a git repository whose one commit holds
    them, so ``git status`` there starts clean."""
    files = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if commit:
        git(dest, "init", "-q")
        git(dest, "add", "-A")
        git(dest, "-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-qm", "snapshot")
        assert git(dest, "status", "--porcelain") == ""
    return dest
