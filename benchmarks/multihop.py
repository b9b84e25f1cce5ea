"""Multi-hop retrieval on HotpotQA dev: how often each strategy finds both supporting paragraphs.

Reads the report `hyperfolio eval --dataset hotpotqa --scope collection` wrote (every question asked of
all 4,920 pooled paragraphs, each an article of its own) and prints, per strategy and question type
(bridge, comparison), recall@k of the supporting paragraphs (the share found, as the eval's table) and
the share of questions with both found in the top k, the figure a second hop exists for.

    HYPERFOLIO_DATA=../shared/data hyperfolio eval --dataset hotpotqa --scope collection \\
        --strategies bm25,dense,hybrid,dual,auto,auto-nograph --collection bench-out/hotpot --out bench-out/eval-hp
    python benchmarks/multihop.py bench-out/eval-hp/hotpotqa-collection.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the eval's JSON report over HotpotQA")
    args = parser.parse_args()
    report = json.loads(args.report.read_text(encoding="utf-8"))
    kinds = {q["qid"]: q["meta"].get("type", "") for q in report["questions"]}
    ks = [str(k) for k in report["k_values"]]
    table: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for record in report["records"]:
        recall = {k: float(record["recall"].get(k) or 0.0) for k in ks}
        for group in ("all", kinds.get(record["qid"], "")):
            table[(record["strategy"], group)].append(recall)
    header = " | ".join([f"R@{k}" for k in ks] + [f"both@{k}" for k in ks])
    print(f"| strategy | questions | n | {header} |")
    print("| --- | --- | --- |" + " --- |" * (2 * len(ks)))
    for strategy in report["strategies"]:
        for group in ("all", "bridge", "comparison"):
            rows = table.get((strategy, group), [])
            if not rows:
                continue
            mean = [100 * sum(r[k] for r in rows) / len(rows) for k in ks]
            both = [100 * sum(r[k] >= 1.0 for r in rows) / len(rows) for k in ks]
            cells = " | ".join(f"{v:.1f}" for v in mean + both)
            print(f"| {strategy} | {group} | {len(rows)} | {cells} |")


if __name__ == "__main__":
    main()
