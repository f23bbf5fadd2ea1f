"""``qrelkit.engine.kernels`` was a module before the kernels were grouped (its contents are
``qrelkit.engine.kernels.ranked`` now): its names still import from the old name, as the same objects, and
a pickle of one of its functions still loads."""

from __future__ import annotations

import pickle
import subprocess
import sys


def test_the_old_module_s_names_are_the_ranked_kernels():
    from qrelkit.engine.kernels import MAX_EXPONENTIAL_GRADE, dcg, gain_overflows, ranked

    assert dcg is ranked.dcg and gain_overflows is ranked.gain_overflows
    assert MAX_EXPONENTIAL_GRADE == ranked.MAX_EXPONENTIAL_GRADE == 1000  # docs/judgments.md states it
    assert pickle.loads(pickle.dumps(dcg)) is dcg


def test_a_pickle_made_under_the_old_name_loads():
    # protocol 0 names the function by its module and name as a pickle written before the grouping did
    old = b"cqrelkit.engine.kernels\ndcg\np0\n."
    from qrelkit.engine.kernels.ranked import dcg

    assert pickle.loads(old) is dcg


def test_a_missing_name_is_an_attribute_error_in_a_fresh_process():
    code = (
        "import qrelkit.engine.kernels as k\n"
        "try:\n    k.no_such_kernel\nexcept AttributeError as e:\n    print(e)\n"
        "from qrelkit.engine.kernels import cascade\nprint(cascade.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "module 'qrelkit.engine.kernels' has no attribute 'no_such_kernel'",
        "qrelkit.engine.kernels.cascade",
    ]
