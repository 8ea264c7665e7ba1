"""Summarise a py-spy speedscope profile: where the samples went, per thread and by function.

python bench/speedscope_summary.py PROFILE.speedscope.json [--top 25] [--match ducklake] [--thread MainThread]
"""

from __future__ import annotations

import argparse
import collections
import json


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="", help="only frames whose file contains this (inclusive view)")
    parser.add_argument(
        "--thread", default="", help="only threads whose name contains this (the event loop: MainThread)"
    )
    args = parser.parse_args()
    doc = json.load(open(args.profile))
    frames = doc["shared"]["frames"]
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    per_thread: collections.Counter[str] = collections.Counter()
    total = 0
    for prof in doc["profiles"]:
        if args.thread not in prof["name"]:
            continue
        weights = prof.get("weights") or [1] * len(prof["samples"])
        for stack, w in zip(prof["samples"], weights, strict=True):
            total += w
            per_thread[prof["name"]] += w
            names = [f"{frames[i]['name']} ({frames[i].get('file', '').split('/')[-1]}:{frames[i].get('line', '')})"
                     for i in stack]  # fmt: skip
            files = [frames[i].get("file", "") for i in stack]
            for name in set(n for n, f in zip(names, files, strict=True) if args.match in f):
                inclusive[name] += w
            if names:
                own[names[-1]] += w
    print(f"{total} samples")
    print("threads:", ", ".join(f"{k} {v * 100 / total:.0f}%" for k, v in per_thread.most_common(8)))
    print(f"\ninclusive (frames matching {args.match!r}):")
    for name, w in inclusive.most_common(args.top):
        print(f"  {w * 100 / total:5.1f}%  {name}")
    print("\nself:")
    for name, w in own.most_common(args.top):
        print(f"  {w * 100 / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
