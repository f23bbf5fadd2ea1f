"""Build this folder's model.qrels and human.qrels from ../qrels.txt, reproducibly (seed 27).

model.qrels stands in for a lenient model labeller: every judged pair of ../qrels.txt regraded by drawing
the model's grade from the row of LENIENT for the people's grade. LENIENT is the same matrix as
benchmarks/ppi_validity.py's (see that script for where its shape comes from). human.qrels holds the
people's grades (../qrels.txt as it is) for H = 10 queries drawn at random from the 30.

    python examples/docsearch/estimate/make_model_qrels.py

writes both files beside this script; running it again writes the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: P(model grade = column | people's grade = row), grades 0..3.
LENIENT = np.array(
    [
        [0.70, 0.22, 0.06, 0.02],
        [0.15, 0.45, 0.30, 0.10],
        [0.04, 0.16, 0.50, 0.30],
        [0.02, 0.06, 0.22, 0.70],
    ]
)
SEED = 27
HUMAN_QUERIES = 10

HERE = Path(__file__).resolve().parent


def main() -> None:
    rows = [line.split() for line in (HERE.parent / "qrels.txt").read_text().splitlines() if line.strip()]
    rng = np.random.default_rng(SEED)
    model = []
    for qid, it, doc, grade in rows:
        g = int(rng.choice(4, p=LENIENT[int(grade)]))
        model.append(f"{qid} {it} {doc} {g}")
    queries = sorted({r[0] for r in rows})
    sample = set(rng.choice(queries, size=HUMAN_QUERIES, replace=False).tolist())
    human = [" ".join(r) for r in rows if r[0] in sample]
    (HERE / "model.qrels").write_text("\n".join(model) + "\n")
    (HERE / "human.qrels").write_text("\n".join(human) + "\n")
    print(f"model.qrels: {len(model)} pairs; human.qrels: {len(human)} pairs of {sorted(sample)}")


if __name__ == "__main__":
    main()
