"""The command line shared by the plot scripts that read results JSON files and write one figure:
`SCRIPT RESULT.json [...] --out PREFIX`."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _style import load_json  # noqa: E402


def results_and_out(doc, keys, what, many=False):
    """Parses the command line; returns (the results, one dict or a list if many, PREFIX)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("results", nargs="+" if many else None)
    p.add_argument("--out", required=True, help="writes PREFIX.png and PREFIX.svg")
    a = p.parse_args()
    if many:
        return [load_json(r, keys, what) for r in a.results], a.out
    return load_json(a.results, keys, what), a.out
