"""Rename claim ids in the claims matrix's record (``xaikit/course/claims/measured.json``) without retyping a value.

Used when a notebook's sections move to another notebook: the claims keep their measurements, only their
ids change. ``python scripts/rename_claims.py OLD=NEW ...`` or ``--map FILE`` (one ``OLD NEW`` pair a line);
it fails on an id that is not in the record or a new id that is already there.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

RECORD = Path(__file__).resolve().parent.parent / "xaikit" / "course" / "claims" / "measured.json"


def rename(record: dict, mapping: dict[str, str]) -> dict:
    claims = record["claims"]
    missing = sorted(set(mapping) - set(claims))
    if missing:
        raise KeyError(f"not in the record: {missing}")
    clash = sorted(set(mapping.values()) & (set(claims) - set(mapping)))
    if clash:
        raise KeyError(f"already in the record: {clash}")
    record["claims"] = {mapping.get(k, k): v for k, v in claims.items()}
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="*", help="OLD=NEW")
    parser.add_argument("--map", type=Path, help="a file of 'OLD NEW' lines")
    parser.add_argument("--record", type=Path, default=RECORD)
    args = parser.parse_args(argv)
    mapping = dict(p.split("=", 1) for p in args.pairs)
    if args.map:
        mapping.update(line.split() for line in args.map.read_text().splitlines() if line.strip())
    text = args.record.read_text()
    record = rename(json.loads(text), mapping)
    args.record.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")  # as claims_matrix writes it
    print(f"renamed {len(mapping)} claims in {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
